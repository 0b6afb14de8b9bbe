"""`snowfire analyze NAME`: the paper's analyses, each writing OUT/NAME.json, NAME.md, NAME.png.

    pairs   ❄️ with pairs encoded jointly vs separately (Table 4): SICK-E, SICK-R, STS-B, MRPC
    probes  a probe per layer (logistic / linear regression on the layer's token mean; the
            `probe` head) on CoLA, SST-2, MRPC, STS-B (Figure 1), for the pretrained encoder and,
            with --finetuned TASK=RUN, for a 🔥 run's saved encoder re-extracted
    mi      mutual information between each layer's mean activation and the labels (Figure 2;
            compare/mi.py says which estimator and why)
    ner-params        parameters added on NER (Table 5): ❄️ + CRF vs ❄️ + BiLSTM + CRF, and 🔥
                      + CRF, 🔥 + BiLSTM + CRF, each with and without gradual unfreezing
    elmo-biattention  ELMo 🔥 on pairs with and without bi-attention (Table 3)

Features come from OUT/store (or --store) and are extracted where missing; every run is an
ordinary run directory under OUT/NAME/, so a rerun recomputes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from .run import find_or_extract
from .verdict import mean_sd

PAPER_PAIRS = {
    "sick-e": (85.5, 81.2),
    "sick-r": (86.4, 86.8),
    "stsb": (88.1, 86.8),
    "mrpc": (83.3, 81.4),
}  # fmt: skip  (BERT-base ❄️ dev: joint, separate)
DEFAULT_TASKS = {"pairs": ("sick-e", "sick-r", "stsb", "mrpc"),
                 "probes": ("cola", "sst2", "mrpc", "stsb"),
                 "mi": ("cola", "sst2", "mrpc", "stsb"),
                 "ner-params": ("conll2003",),
                 "elmo-biattention": ("sick-e", "sick-r", "stsb", "mrpc")}  # fmt: skip
#: ELMo, CoNLL-2003 dev F1 (Table 5); the paper lists no 🔥 + BiLSTM + CRF without unfreezing
PAPER_NER = {"❄️ + CRF": 91.9, "❄️ + BiLSTM + CRF": 95.5, "🔥 + CRF": 95.1,
             "🔥 + CRF + gradual unfreezing": 95.5, "🔥 + BiLSTM + CRF": None,
             "🔥 + BiLSTM + CRF + gradual unfreezing": 95.2}  # fmt: skip
#: ELMo 🔥 dev (Table 3), with and without bi-attention, where PAPER.md quotes it
PAPER_BIATTENTION = {"stsb": (80.2, 38.5)}


def _train(store, encoder, task, head, data, out, pair, seed=0, **kw) -> dict:
    from heads import TrainConfig, train

    cfg = TrainConfig(store=store, encoder=encoder, task=task, head=head, data=data,
                      out=str(out), pair_encoding=pair, seed=seed, progress=False,
                      **kw)  # fmt: skip
    return train(cfg)


def pairs(encoder, data, out: Path, store, tasks, seeds=1, head="esim", epochs=None,
          max_train_examples=None) -> dict:  # fmt: skip
    """Table 4: the same head on jointly and separately encoded pairs, dev scores (on the same
    `max_train_examples` training examples per seed both ways, when given)."""
    from extractor import PAIR_ENCODINGS
    from tasks import get_task

    result: dict[str, Any] = {}
    for task in tasks:
        metric = get_task(task).metric
        result[task] = {}
        for pair in PAIR_ENCODINGS:
            for split in ("train", "dev"):
                find_or_extract(encoder, store, task, data, split, pair)
            scores = [
                _train(store, encoder, task, head, data, out / "pairs" / task / pair / f"seed{s}",
                       pair, seed=s, max_train_examples=max_train_examples,
                       **({"epochs": epochs} if epochs else {}))["dev"][metric]
                for s in range(seeds)
            ]  # fmt: skip
            result[task][pair] = mean_sd(scores)
    rows = _paired_rows(
        result,
        PAIR_ENCODINGS,
        PAPER_PAIRS,
        "| task | joint | separate | paper BERT-base joint | separate |",
    )
    _bars(result, PAIR_ENCODINGS, out / "pairs.png", f"{encoder}: {head} on pairs (dev)")
    caps = (f", {epochs} epochs at most" if epochs else "") + (
        f", the same {max_train_examples} training examples per seed both ways"
        if max_train_examples else "")  # fmt: skip
    caption = (f"❄️ {head}, pairs encoded jointly vs separately: dev scores (x100), "
               f"{seeds} seed(s){caps}; the paper's columns are its dev scores")  # fmt: skip
    return _write(out, "pairs", result, rows, caption)


def _layer_means(reader, info, limit: int | None = None) -> np.ndarray:
    """(n, L, D) token mean of every layer of each example."""
    n = info.num_examples if limit is None else min(limit, info.num_examples)
    out = np.empty((n, info.num_layers, info.dim), dtype=np.float32)
    for start in range(0, n, 512):
        idx = list(range(start, min(start + 512, n)))
        eb = reader.read(info.id, indices=idx)
        for j, i in enumerate(idx):
            out[i] = eb.example(j).astype(np.float32).mean(axis=0)  # (L, D)
    return out


def mi(encoder, data, out: Path, store, tasks, limit: int = 2000, dims: int = 16) -> dict:
    """Figure 2: MI (nats) between each layer's mean activation and the labels (train split,
    at most `limit` examples; regression labels in 5 equal-frequency bins)."""
    from cache import open_reader
    from tasks import get_task, read_split

    from .mi import discretise, mi_knn, reduce

    result = {}
    for task in tasks:
        spec = get_task(task)
        info = find_or_extract(encoder, store, task, data, "train", "joint")
        means = _layer_means(open_reader(store), info, limit)
        labels = [e.label for e in read_split(task, data, "train")][: len(means)]
        if spec.kind == "regression":
            y = discretise(np.array(labels, dtype=np.float64))
        else:
            y = np.array([spec.labels.index(str(v)) for v in labels])
        reduced = reduce([means[:, layer] for layer in range(means.shape[1])], dims=dims)
        shuffled = np.random.default_rng(0).permutation(y)
        result[task] = {"mi": [mi_knn(z, y) for z in reduced],
                        "mi_shuffled_labels": [mi_knn(z, shuffled) for z in reduced],
                        "examples": int(len(y))}  # fmt: skip
    rows = [
        "| task | "
        + " | ".join(f"layer {i}" for i in range(len(next(iter(result.values()))["mi"])))
        + " |"
    ]
    rows.append("|" + " --- |" * (len(rows[0].split("|")) - 2))
    for task, r in result.items():
        rows.append(f"| {task} | " + " | ".join(f"{v:.3f}" for v in r["mi"]) + " |")
    _lines({t: r["mi"] for t, r in result.items()}, out / "mi.png", "MI with the labels (nats)")
    return _write(out, "mi", result, rows,
                  f"MI (nats, Ross 2014 kNN on {dims} principal components) per layer; the same "
                  "with shuffled labels is in mi.json (≈ 0)")  # fmt: skip


def probes(encoder, data, out: Path, store, tasks, finetuned: dict[str, str] | None = None,
           epochs: int = 10) -> dict:  # fmt: skip
    """Figure 1: a probe per layer, dev score, pretrained and (optionally) fine-tuned."""
    from tasks import get_task

    states = {"pretrained": encoder}
    result: dict[str, Any] = {}
    for task in tasks:
        metric = get_task(task).metric
        result[task] = {}
        encs = dict(states)
        if finetuned and task in finetuned:
            encs["fine-tuned"] = f"hf:{Path(finetuned[task]) / 'encoder'}"
        for state, enc in encs.items():
            info = None
            for split in ("train", "dev"):
                info = find_or_extract(enc, store, task, data, split, "joint")
            scores = []
            for layer in range(info.num_layers):
                run = out / "probes" / task / state / f"layer{layer}"
                m = _train(store, enc, task, "probe", data, run, "joint", layer=layer,
                           epochs=epochs, lr=1e-2)  # fmt: skip
                scores.append(m["dev"][metric])
            result[task][state] = scores
    lines = {f"{t} ({s})": v for t, r in result.items() for s, v in r.items()}
    _lines(lines, out / "probes.png", "probe dev score")
    rows = [
        "| task | state | "
        + " | ".join(f"L{i}" for i in range(len(next(iter(lines.values())))))
        + " |"
    ]
    rows.append("|" + " --- |" * (len(rows[0].split("|")) - 2))
    for task, r in result.items():
        for state, v in r.items():
            rows.append(f"| {task} | {state} | " + " | ".join(f"{100 * x:.1f}" for x in v) + " |")
    return _write(out, "probes", result, rows, "probe dev score per layer (x100)")


def _finetune(encoder, task, data, out: Path, seed: int, **kw) -> dict:
    from finetune import FinetuneConfig
    from finetune import train as finetune

    kw = {k: v for k, v in kw.items() if v is not None}
    return finetune(FinetuneConfig(encoder=encoder, task=task, data=data, out=str(out),
                                   seed=seed, progress=False, **kw))  # fmt: skip


def ner_params(encoder, data, out: Path, store, tasks, seeds=1, epochs=None,
               max_train_examples=None, lstm: int = 200) -> dict:  # fmt: skip
    """Table 5: dev F1 of ❄️ + CRF and ❄️ + BiLSTM + CRF (the `crf` and `bilstm-crf` heads),
    and of 🔥 with a CRF output, with and without a BiLSTM (`lstm` units per direction) under
    it, each with and without gradual unfreezing; every cell a mean over `seeds`."""
    from tasks import get_task

    (task,) = tasks
    metric = get_task(task).metric
    for split in ("train", "dev"):
        find_or_extract(encoder, store, task, data, split, "joint")
    root, cells = out / "ner-params", {}
    for head, name in (("crf", "❄️ + CRF"), ("bilstm-crf", "❄️ + BiLSTM + CRF")):
        cells[name] = mean_sd([
            _train(store, encoder, task, head, data, root / head / f"seed{s}", "joint", seed=s,
                   max_train_examples=max_train_examples,
                   **({"epochs": epochs} if epochs else {}))["dev"][metric]
            for s in range(seeds)
        ])  # fmt: skip
    for units, layer in ((0, "🔥 + CRF"), (lstm, "🔥 + BiLSTM + CRF")):
        for gradual in (False, True):
            name = layer + (" + gradual unfreezing" if gradual else "")
            run = root / f"fire-lstm{units}-{'gu' if gradual else 'all'}"
            cells[name] = mean_sd([
                _finetune(encoder, task, data, run / f"seed{s}", s, crf=True, output_lstm=units,
                          gradual_unfreezing=gradual, epochs=epochs,
                          max_train_examples=max_train_examples)["dev"][metric]
                for s in range(seeds)
            ])  # fmt: skip
    result = {task: cells}
    rows = ["| set-up | dev F1 | sd | paper, ELMo |", "| --- | --- | --- | --- |"]
    for name, (mean, sd) in cells.items():
        paper = PAPER_NER.get(name)
        rows.append(f"| {name} | {100 * mean:.1f} | {'–' if sd is None else f'{100 * sd:.1f}'} "
                    f"| {'–' if paper is None else paper} |")  # fmt: skip
    _hbars(cells, out / "ner-params.png", f"{encoder}: parameters added on {task} (dev F1)")
    caption = (
        f"{task} dev {metric}, {seeds} seed(s); 🔥 BiLSTM: {lstm} units per direction"
        + (f"; {epochs} epochs" if epochs else "")
        + (
            f"; ❄️ and 🔥 on the same {max_train_examples} training sentences per seed"
            if max_train_examples
            else ""
        )
    )
    return _write(out, "ner-params", result, rows, caption)


def elmo_biattention(encoder, data, out: Path, store, tasks, seeds=1, epochs=None,
                     max_train_examples=None) -> dict:  # fmt: skip
    """Table 3: ELMo 🔥 on pair tasks with bi-attention and ESIM's enhanced pooling, and
    without (each text max-pooled alone, then concatenated), dev scores."""
    from extractor import encoder_family
    from tasks import get_task

    if encoder_family(encoder) != "elmo":
        raise ValueError(f"elmo-biattention fine-tunes ELMo: --encoder elmo:..., got {encoder!r}")
    result: dict[str, Any] = {}
    for task in tasks:
        spec = get_task(task)
        if not spec.pair:
            raise ValueError(f"elmo-biattention is about pairs: {task} is a single-text task")
        result[task] = {}
        for bi, key in ((True, "bi-attention"), (False, "none")):
            result[task][key] = mean_sd([
                _finetune(encoder, task, data, out / "elmo-biattention" / task / key / f"seed{s}",
                          s, bi_attention=bi, epochs=epochs,
                          max_train_examples=max_train_examples)["dev"][spec.metric]
                for s in range(seeds)
            ])  # fmt: skip
    header = "| task | with bi-attention | without | paper ELMo with | without |"
    rows = _paired_rows(result, ("bi-attention", "none"), PAPER_BIATTENTION, header)
    _bars(result, ("bi-attention", "none"), out / "elmo-biattention.png",
          "ELMo fine-tuned on pairs, with and without bi-attention (dev)")  # fmt: skip
    return _write(out, "elmo-biattention", result, rows,
                  f"ELMo 🔥 dev scores, {seeds} seed(s)")  # fmt: skip


ANALYSES = {"pairs": pairs, "probes": probes, "mi": mi, "ner-params": ner_params,
            "elmo-biattention": elmo_biattention}  # fmt: skip


def _write(out: Path, name: str, result: dict, rows: list[str], caption: str) -> dict:
    from tasks.runs import atomic_write_text

    atomic_write_text(out / f"{name}.json", json.dumps(result, indent=2))
    atomic_write_text(out / f"{name}.md", f"# {name}\n\n{caption}\n\n" + "\n".join(rows)
                      + f"\n\n![{name}]({name}.png)\n")  # fmt: skip
    return result


def _figure(size):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=size)


def _save(fig, ax, path: Path, legend_size: int = 8) -> None:
    import matplotlib.pyplot as plt

    ax.legend(fontsize=legend_size)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _bars(result, keys, path: Path, title: str) -> None:
    tasks = list(result)
    fig, ax = _figure((1.4 * len(tasks) + 2, 3.4))
    for j, key in enumerate(keys):
        means = [100 * result[t][key][0] for t in tasks]
        sds = [100 * (result[t][key][1] or 0) for t in tasks]
        xs = [i + 0.4 * j - 0.2 for i in range(len(tasks))]
        ax.bar(xs, means, 0.4, yerr=sds, capsize=3, label=key)
    ax.set_xticks(range(len(tasks)), tasks)
    ax.set_ylabel("dev score (x100)")
    ax.set_title(title)
    _save(fig, ax, path)


def _paired_rows(result: dict, keys: tuple[str, str], paper: dict, header: str) -> list[str]:
    """A markdown table: per task, our mean for each of two set-ups, then the paper's two."""
    rows = [header, "| --- | --- | --- | --- | --- |"]
    for task, r in result.items():
        theirs = paper.get(task, ("–", "–"))
        rows.append(f"| {task} | {100 * r[keys[0]][0]:.1f} | {100 * r[keys[1]][0]:.1f} | "
                    f"{theirs[0]} | {theirs[1]} |")  # fmt: skip
    return rows


def _hbars(cells: dict[str, tuple[float, float | None]], path: Path, title: str) -> None:
    names = list(cells)
    fig, ax = _figure((6.5, 0.45 * len(names) + 1.2))
    means = [100 * cells[n][0] for n in names]
    ax.barh(range(len(names)), means, xerr=[100 * (cells[n][1] or 0) for n in names],
            capsize=3, label="dev")  # fmt: skip
    plain = [n.replace("❄️", "frozen").replace("🔥", "fine-tuned") for n in names]  # the font
    ax.set_yticks(range(len(names)), plain)
    ax.invert_yaxis()
    ax.set_xlim(max(0.0, min(means) - 10), max(means) + 3)
    fig.suptitle(title, fontsize=9)  # over the whole figure: the long tick labels eat the axes
    _save(fig, ax, path)


def _lines(series: dict[str, list[float]], path: Path, ylabel: str) -> None:
    fig, ax = _figure((5.5, 3.6))
    for label, values in series.items():
        ax.plot(range(len(values)), values, "o-", label=label)
    ax.set_xlabel("layer (0: embeddings)")
    ax.set_ylabel(ylabel)
    _save(fig, ax, path, legend_size=7)
