"""Task data in the tasks' real file formats (tiny, seeded), and the 🔥 run helpers.

write_sst2, write_stsb, write_conll   one task folder each, sizes per split (WRITERS)
write_task_data                       sst2, stsb, sick and conll2003 folders at once
                                      (the `data_dir` fixture)
write_films, FILMS_SPEC               a user's own task: a CSV set and its spec (a YAML
                                      file, or the object a job gives inline)
finetune_config, check_run            a small 🔥 config; every output of a finished run
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from . import WORDS

TINY_WORDS = WORDS[:40]
PER, LOC = {"man", "woman", "people", "someone"}, {"park", "street"}
GOOD, BAD = ["good", "great", "funny"], ["bad", "terrible", "boring"]


#: films' spec as a job gives it inline (split paths relative to the job's data directory).
FILMS_SPEC = {
    "name": "films",
    "kind": "classification",
    "columns": {"text": "review", "label": "verdict"},
    "splits": {"train": "films/train.csv", "dev": "films/dev.csv"},
}


def write_films(root: Path, n_train: int = 40, n_dev: int = 16, seed: int = 0) -> Path:
    """A labelled CSV set of our own (quoted texts with commas, labels pos/neg) in
    ROOT/films/, and its YAML spec ROOT/films.yaml (returned)."""
    rng = random.Random(seed)
    good, bad = "good great funny very".split(), "bad terrible boring not".split()
    filler = "the a movie film story some people".split()

    def rows(n):
        out = ["review,verdict"]
        for i in range(n):
            positive = i % 2 == 0
            words = rng.sample(good if positive else bad, 2) + rng.sample(filler, 3)
            rng.shuffle(words)
            text = f"{' '.join(words[:2])}, {' '.join(words[2:])}"
            out.append(f'"{text}",{"pos" if positive else "neg"}')
        return "\n".join(out) + "\n"

    (root / "films").mkdir(parents=True, exist_ok=True)
    (root / "films" / "train.csv").write_text(rows(n_train))
    (root / "films" / "dev.csv").write_text(rows(n_dev))
    spec = root / "films.yaml"
    spec.write_text(
        "name: films\nkind: classification\nformat: csv\n"
        "columns: {text: review, label: verdict}\n"
        "splits:\n  train: films/train.csv\n  dev: films/dev.csv\n"
    )
    return spec


def _sentence(rng: random.Random, low: int = 3, high: int = 9) -> str:
    return " ".join(rng.choice(TINY_WORDS) for _ in range(rng.randint(low, high)))


def write_sst2(root: Path, sizes=(("train", 40), ("dev", 12), ("test", 12))) -> Path:
    """GLUE SST-2 layout: header `sentence<TAB>label`; label 1 when the sentence has "good"."""
    rng = random.Random(0)
    (root / "sst2").mkdir(parents=True, exist_ok=True)
    for split, n in sizes:
        lines = ["sentence\tlabel"]
        for _ in range(n):
            s = _sentence(rng)
            lines.append(f"{s}\t{int('good' in s.split() or 'great' in s.split())}")
        (root / "sst2" / f"{split}.tsv").write_text("\n".join(lines) + "\n")
    return root


def write_stsb(root: Path, sizes=(("train", 32), ("dev", 10), ("test", 10))) -> Path:
    """STS-B release layout: 7 tab-separated fields, no header; score = 5 x word overlap."""
    rng = random.Random(1)
    (root / "stsb").mkdir(parents=True, exist_ok=True)
    for split, n in sizes:
        lines = []
        for i in range(n):
            a = _sentence(rng).split()
            b = a[: rng.randint(1, len(a))] + _sentence(rng, 1, 4).split()
            score = 5.0 * len(set(a) & set(b)) / len(set(a) | set(b))
            lines.append(
                f"main-captions\tMSRvid\t2012test\t{i:04d}\t{score:.3f}\t{' '.join(a)}\t"
                f"{' '.join(b)}"
            )
        name = {"train": "sts-train.csv", "dev": "sts-dev.csv", "test": "sts-test.csv"}[split]
        (root / "stsb" / name).write_text("\n".join(lines) + "\n")
    return root


def write_conll(root: Path, sizes=(("train", 30), ("dev", 10), ("test", 10))) -> Path:
    """CoNLL-2003 layout: `token POS chunk NER`, -DOCSTART- lines, IOB1 tags."""
    rng = random.Random(2)
    (root / "conll2003").mkdir(parents=True, exist_ok=True)
    for split, n in sizes:
        lines = ["-DOCSTART- -X- O O", ""]
        vocab = list(TINY_WORDS[:20]) + sorted(PER | LOC)
        for _ in range(n):
            for w in rng.choices(vocab, k=rng.randint(2, 8)):
                tag = "I-PER" if w in PER else "I-LOC" if w in LOC else "O"
                lines.append(f"{w} NN I-NP {tag}")
            lines.append("")
        name = {"train": "eng.train", "dev": "eng.testa", "test": "eng.testb"}[split]
        (root / "conll2003" / name).write_text("\n".join(lines) + "\n")
    return root


WRITERS = {"sst2": write_sst2, "stsb": write_stsb, "conll2003": write_conll}


def _labelled(rng: random.Random, label: int) -> str:
    """A sentence carrying its label as one word (good, great, funny vs bad, ...)."""
    words = rng.choices(TINY_WORDS, k=rng.randint(3, 9))
    words.insert(rng.randrange(len(words)), rng.choice(GOOD if label else BAD))
    return " ".join(words)


def write_task_data(root: Path) -> Path:
    """Tiny sst2, stsb, sick and conll2003 folders (train and dev) in the real file formats,
    learnable: an sst2 label is written in one word."""
    rng = random.Random(0)
    (root / "sst2").mkdir(parents=True)
    for split, n in (("train", 120), ("dev", 40)):
        rows = [(lambda y: f"{_labelled(rng, y)} \t{y}")(rng.randint(0, 1)) for _ in range(n)]
        (root / "sst2" / f"{split}.tsv").write_text("sentence\tlabel\n" + "\n".join(rows) + "\n")
    (root / "stsb").mkdir()
    for split, n in (("train", 80), ("dev", 30)):
        lines = []
        for i in range(n):
            a, b = _labelled(rng, 1), _labelled(rng, rng.randint(0, 1))
            score = round(5 * sum(w in b.split() for w in a.split()) / len(a.split()), 2)
            lines.append(f"main-captions\tMSRvid\t2012test\t{i:04d}\t{score}\t{a}\t{b}")
        (root / "stsb" / f"sts-{split}.csv").write_text("\n".join(lines) + "\n")
    (root / "sick").mkdir()
    judgments = ["ENTAILMENT", "NEUTRAL", "CONTRADICTION"]
    for name, n in (("SICK_train.txt", 60), ("SICK_trial.txt", 20)):
        lines = ["pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment"]
        for i in range(n):
            a, b = _labelled(rng, 1), _labelled(rng, rng.randint(0, 1))
            lines.append(f"{i + 1}\t{a}\t{b}\t{rng.uniform(1, 5):.1f}\t{rng.choice(judgments)}")
        (root / "sick" / name).write_text("\n".join(lines) + "\n")
    (root / "conll2003").mkdir()
    for split, n in (("train", 60), ("testa", 20)):
        out = ["-DOCSTART- -X- O O", ""]
        for _ in range(n):
            words = rng.choices(["the", "man", "plays", "in", "park", "dog"], k=rng.randint(2, 6))
            tags = ["O"] * len(words)
            if rng.random() < 0.7:
                j = rng.randrange(len(words))
                words[j], tags[j] = rng.choice(["someone", "people"]), "I-PER"
            out += [f"{w} NN O {t}" for w, t in zip(words, tags, strict=True)] + [""]
        (root / "conll2003" / f"eng.{split}").write_text("\n".join(out))
    return root


def finetune_config(encoder: str, task: str, data: Path, out: Path, **kw):
    """A small 🔥 config (2 epochs of batches of 8 at 1e-3, quiet); `kw` overrides."""
    from snowfire.finetune import FinetuneConfig

    defaults = dict(epochs=2, batch_size=8, lr=1e-3, progress=False, patience=5)
    return FinetuneConfig(
        encoder=encoder, task=task, data=str(data), out=str(out), **(defaults | kw)
    )


def check_run(run: Path, task: str, data: Path, metrics: dict) -> None:
    """Every output of a run is there and metrics.json == metrics from the prediction files."""
    import torch

    from snowfire.tasks import evaluate, get_task, read_predictions, read_split

    spec = get_task(task)
    for name in ("config.json", "metrics.json", "log.jsonl", "best.pt"):
        assert (run / name).is_file(), name
    assert not (run / "checkpoint.pt").exists()  # a finished run does not keep it
    saved = json.loads((run / "metrics.json").read_text())
    assert saved == metrics
    assert set(saved) == {"train", "dev", "test"}
    for split in ("train", "dev", "test"):
        gold, pred = read_predictions(run / "predictions" / f"{split}.tsv", spec.kind)
        examples = read_split(task, data, split)
        assert len(gold) == len(examples)
        assert evaluate(task, gold, pred) == saved[split]
        assert spec.metric in saved[split]
    config = json.loads((run / "config.json").read_text())
    assert config["finetune"]["task"] == task
    assert {"encoder", "versions", "seed", "layer_groups", "seconds"} <= set(config)
    assert config["versions"]["torch"] == torch.__version__
    # the CPU kernels torch ran: another CPU's differ in the last bits (cache/provenance.py)
    assert config["versions"]["torch_cpu"] == torch.backends.cpu.get_cpu_capability()
    log = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in log] == list(range(1, len(log) + 1))
    # a labelled test split reports, so dev selects (tasks/selection.py)
    assert config["roles"] == {"selection": "dev", "report": "test", "carved": False}
    assert all(spec.metric in r["selection"] and r["split"] == "dev" for r in log)


def permute_labels(src: Path, dst: Path, task: str = "sst2", split: str = "dev") -> Path:
    """A copy of a data folder whose `split` labels of `task` (a one-text TSV task: text, tab,
    label) are shuffled, the texts as they were: what no choice may notice (the honest
    protocol's black-box check)."""
    import random
    import shutil

    shutil.copytree(src, dst)
    path = dst / task / f"{split}.tsv"
    header, *rows = path.read_text().splitlines()
    texts, labels = zip(*(r.rsplit("\t", 1) for r in rows), strict=True)
    shuffled = list(labels)
    random.Random(0).shuffle(shuffled)
    assert shuffled != list(labels)
    lines = [f"{t}\t{lab}" for t, lab in zip(texts, shuffled, strict=True)]
    path.write_text("\n".join([header, *lines]) + "\n")
    return dst
