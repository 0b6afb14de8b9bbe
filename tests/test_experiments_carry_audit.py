"""experiments/carry_audit.py: a data sentence, a run of 8 of its words or a gold column planted
in an archive is found and named; a clean archive passes."""

from __future__ import annotations

import io
import json
import sys
import tarfile
from pathlib import Path

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"
sys.path.insert(0, str(EXPERIMENTS))

LONG = "the quiet film moves slowly through a long winter of grief and memory"
OTHER = "a bright loud comedy that never quite finds the joke it keeps promising"


def _data(root: Path) -> Path:
    (root / "sst2").mkdir(parents=True)
    for split, rows in (("train", [LONG, "fine"]), ("dev", [OTHER, "dull"])):
        lines = ["sentence\tlabel", *(f"{s}\t1" for s in rows)]
        (root / "sst2" / f"{split}.tsv").write_text("\n".join(lines) + "\n")
    return root


def _archive(path: Path, files: dict[str, tuple[str, dict]]) -> Path:
    manifest = {"files": {rel: entry for rel, (_, entry) in files.items()}}
    with tarfile.open(path, "w:xz") as tar:
        blobs = {"manifest.json": json.dumps(manifest)}
        blobs |= {f"files/{rel}": text for rel, (text, _) in files.items()}
        for name, text in blobs.items():
            raw = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    return path


def test_a_clean_archive_passes_and_planted_data_is_named(tmp_path, capsys):
    import carry_audit

    data = _data(tmp_path / "data")
    table = ("0\tpositive\n1\tnegative\n", {"split": "dev", "sha256": "x"})
    clean = _archive(
        tmp_path / "clean.tar.xz",
        {"r/log.jsonl": ('{"epoch": 1, "loss": 0.5}\n', {}), "r/predictions/dev.tsv": table},
    )
    got = carry_audit.audit(clean, data)
    assert got["hits"] == [] and got["gold"] == [] and got["tables"] == 1
    assert carry_audit.main(["--archive", str(clean), "--data", str(data)]) == 0

    eight = " ".join(OTHER.split()[2:10])  # 8 words of a dev sentence, inside other text
    planted = _archive(
        tmp_path / "planted.tar.xz",
        {
            "r/config.json": (json.dumps({"note": {"why": LONG}}), {}),
            "r/log.jsonl": (f'{{"text": "so {eight} here"}}\n', {}),
            "r/predictions/dev.tsv": ("0\tpositive\tpositive\n", {"split": "dev"}),
        },
    )
    got = carry_audit.audit(planted, data)
    assert any(h.startswith("files/r/config.json: sentence") for h in got["hits"])
    assert any(h.startswith("files/r/log.jsonl: 8 words") for h in got["hits"])
    assert got["gold"] == ["files/r/predictions/dev.tsv: 1 rows not index<TAB>predicted"]
    assert carry_audit.main(["--archive", str(planted), "--data", str(data)]) == 1
    assert f"{len(got['hits'])} hits, 1 of 1 prediction tables" in capsys.readouterr().out
    assert len(got["hits"]) == 3  # the sentence; its 8 words in config.json; the log's 8 words
