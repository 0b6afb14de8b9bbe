"""How far ELMo's `fixed` state policy is from the reference `stateful` one, per layer.

    python -m snowfire.extractor.elmo.compare_policies --data ../shared/data [--model DIR] [--n 300]

Encodes the first `n` SST-2 dev sentences in order with both policies (and, for scale, from
zero state every batch) and prints, per layer, the mean and max absolute difference to
`stateful` and the mean cosine similarity of the token vectors. The default model is the tiny
test biLM in ../fixtures/allennlp_elmo, which is not a trained LM: its numbers show the size
of the effect for that network only.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..base import TextInput
from .chars import batch_to_ids
from .encoder import ElmoEncoder


@dataclass(frozen=True)
class CompareConfig:
    data: Path  # folder holding sst2/dev.tsv
    model: Path  # ELMo spec: a directory or OPTIONS.json,WEIGHTS.hdf5
    n: int = 300  # sentences from the start of SST-2 dev
    batch_size: int = 32  # examples per biLM call (the stateful rows)


def read_sst2_dev(data: Path, n: int) -> list[tuple[str, ...]]:
    """First `n` sentences of GLUE SST-2 dev.tsv (already tokenised; header skipped)."""
    path = data / "sst2" / "dev.tsv"
    lines = path.read_text(encoding="utf-8").splitlines()[1:]
    sentences = [tuple(line.split("\t")[0].split()) for line in lines if line.strip()]
    if len(sentences) < n:
        raise ValueError(f"{path}: expected at least {n} sentences, found {len(sentences)}")
    return sentences[:n]


def encode_all(encoder: ElmoEncoder, sentences: list[tuple[str, ...]]) -> list[np.ndarray]:
    """Features (T, L, D) per sentence, in order, `batch_size` examples per call."""
    prepared = [encoder.prepare(i, TextInput(s)) for i, s in enumerate(sentences)]
    out: list[np.ndarray] = []
    for start in range(0, len(prepared), encoder.batch_size):
        out.extend(e.features for e in encoder.encode(prepared[start : start + encoder.batch_size]))
    return out


@torch.inference_mode()
def encode_zero_state(encoder: ElmoEncoder, sentences: list[tuple[str, ...]]) -> list[np.ndarray]:
    """Features (T, L, D) per sentence with every batch started from zero state."""
    out: list[np.ndarray] = []
    for start in range(0, len(sentences), encoder.batch_size):
        chunk = sentences[start : start + encoder.batch_size]
        layers, _, _ = encoder.bilm(batch_to_ids(chunk).to(encoder.device))  # (L, B, T+2, D)
        layers = layers.permute(1, 2, 0, 3).cpu().numpy()  # (B, T+2, L, D)
        out.extend(layers[b, 1 : len(s) + 1] for b, s in enumerate(chunk))
    return out


def layer_stats(a: list[np.ndarray], b: list[np.ndarray]) -> list[dict[str, float]]:
    """Per layer: mean/max |a - b| over all token entries and mean cosine of token vectors."""
    x, y = np.concatenate(a), np.concatenate(b)  # (N_tokens, L, D)
    diff = np.abs(x - y)  # (N_tokens, L, D)
    norms = np.linalg.norm(x, axis=-1) * np.linalg.norm(y, axis=-1)  # (N_tokens, L)
    cos = (x * y).sum(-1) / np.maximum(norms, 1e-12)  # (N_tokens, L)
    return [
        {
            "mean_abs": float(diff[:, k].mean()),
            "max_abs": float(diff[:, k].max()),
            "cosine": float(cos[:, k].mean()),
            "mean_abs_value": float(np.abs(y[:, k]).mean()),
        }
        for k in range(x.shape[1])
    ]


def compare(cfg: CompareConfig) -> dict[str, list[dict[str, float]]]:
    """Stats of `fixed` and of zero state, each against `stateful`."""
    sentences = read_sst2_dev(cfg.data, cfg.n)
    spec = str(cfg.model)
    stateful = ElmoEncoder.from_spec(spec, state="stateful", batch_size=cfg.batch_size)
    fixed = ElmoEncoder.from_spec(spec, state="fixed", batch_size=cfg.batch_size)
    reference = encode_all(stateful, sentences)
    return {
        "fixed vs stateful": layer_stats(encode_all(fixed, sentences), reference),
        "zero vs stateful": layer_stats(encode_zero_state(stateful, sentences), reference),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="data folder (sst2/dev.tsv)")
    parser.add_argument("--model", type=Path, default=None, help="ELMo dir or OPTIONS,WEIGHTS")
    parser.add_argument("--n", type=int, default=CompareConfig.n)
    parser.add_argument("--batch-size", type=int, default=CompareConfig.batch_size)
    args = parser.parse_args(argv)
    model = args.model or args.data.resolve().parent / "fixtures" / "allennlp_elmo"
    cfg = CompareConfig(data=args.data, model=model, n=args.n, batch_size=args.batch_size)
    print(f"model {cfg.model}, {cfg.n} SST-2 dev sentences, batch size {cfg.batch_size}")
    for name, stats in compare(cfg).items():
        print(f"\n{name}")
        print(f"{'layer':>5} {'mean|diff|':>11} {'max|diff|':>10} {'cosine':>8} {'mean|ref|':>10}")
        for k, s in enumerate(stats):
            print(
                f"{k:>5} {s['mean_abs']:>11.5f} {s['max_abs']:>10.5f} {s['cosine']:>8.5f} "
                f"{s['mean_abs_value']:>10.5f}"
            )


if __name__ == "__main__":
    main()
