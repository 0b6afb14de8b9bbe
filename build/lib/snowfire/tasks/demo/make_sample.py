"""Regenerate the demo sample in this folder from a full data directory.

    python tasks/demo/make_sample.py /path/to/data [--out tasks/demo]

Lines are copied byte for byte, in their original file order. Each sampled file draws with its
own `random.Random(SEED)` (SEED = 2019), so the sample is the same on every machine:

  sst2/train.tsv    header + 3,000 rows drawn among the rows whose sentence has >= 4 words
  sst2/dev.tsv      the full dev file (872 rows + header)
  stsb/sts-train.csv  1,500 lines drawn among the lines not from MSRpar
  stsb/sts-dev.csv    500 lines drawn among the lines not from MSRpar
  stsb/LICENSE.txt  copied unchanged

STS-B's MSRpar pairs are sentences of the Microsoft Research Paraphrase Corpus (MRPC), whose
licence does not allow shipping them with the project, so the sample leaves them out.
"""

from __future__ import annotations

import argparse
import random
import shutil
from pathlib import Path

SEED = 2019
SST2_TRAIN_ROWS = 3000
SST2_MIN_WORDS = 4
STSB_TRAIN_LINES = 1500
STSB_DEV_LINES = 500
STSB_EXCLUDED_SOURCES = {b"MSRpar"}  # column 2 of an STS-B line names its source corpus


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _draw(rows: list[bytes], k: int, eligible: list[int] | None = None) -> list[bytes]:
    """k of `rows` (only among `eligible` positions if given), kept in file order."""
    pool = list(range(len(rows))) if eligible is None else eligible
    if len(pool) < k:
        raise ValueError(f"expected at least {k} rows to draw from, got {len(pool)}")
    chosen = sorted(random.Random(SEED).sample(pool, k))
    return [rows[i] for i in chosen]


def make_sample(data_dir: Path, out: Path) -> list[Path]:
    """Write the sample files under `out`; returns their paths."""
    (out / "sst2").mkdir(parents=True, exist_ok=True)
    (out / "stsb").mkdir(parents=True, exist_ok=True)

    header, *rows = _lines(data_dir / "sst2" / "train.tsv")
    long_enough = [
        i
        for i, row in enumerate(rows)
        if len(row.decode("utf-8").split("\t")[0].split()) >= SST2_MIN_WORDS
    ]
    (out / "sst2" / "train.tsv").write_bytes(
        header + b"".join(_draw(rows, SST2_TRAIN_ROWS, long_enough))
    )
    shutil.copyfile(data_dir / "sst2" / "dev.tsv", out / "sst2" / "dev.tsv")

    for name, k in (("sts-train.csv", STSB_TRAIN_LINES), ("sts-dev.csv", STSB_DEV_LINES)):
        lines = _lines(data_dir / "stsb" / name)
        allowed = [
            i for i, line in enumerate(lines) if line.split(b"\t")[1] not in STSB_EXCLUDED_SOURCES
        ]
        (out / "stsb" / name).write_bytes(b"".join(_draw(lines, k, allowed)))
    shutil.copyfile(data_dir / "stsb" / "LICENSE.txt", out / "stsb" / "LICENSE.txt")

    names = [
        "sst2/train.tsv",
        "sst2/dev.tsv",
        "stsb/sts-train.csv",
        "stsb/sts-dev.csv",
        "stsb/LICENSE.txt",
    ]
    return [out / name for name in names]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", type=Path, help="folder holding sst2/ and stsb/")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent,
        help="where to write the sample (default: this folder)",
    )
    args = parser.parse_args()
    for path in make_sample(args.data_dir, args.out):
        print(f"{path}  {path.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
