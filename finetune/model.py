"""Which 🔥 model an encoder spec builds (`BertFinetuner` for "minilm" / "hf:...",
`ElmoFinetuner` for "elmo:..."), and running a model over examples for predictions. (The
batches of a training epoch are `tasks.epoch_batches`, ❄️ heads' order too.)"""

from __future__ import annotations

from pathlib import Path

import torch

from snowfire.tasks import example_length

from .base import FireModel
from .config import FinetuneConfig


def model_source(encoder: str) -> tuple[Path, str]:
    """(the model folder, the model's name) of a BERT-family encoder spec: the bundled MiniLM,
    or hf:NAME_OR_DIR (a hub name fetched when online)."""
    from snowfire.extractor import MINILM_NAME, minilm_dir, resolve_model_dir

    if encoder == "minilm":
        return minilm_dir(), MINILM_NAME
    name = encoder.split(":", 1)[1]
    return resolve_model_dir(name), name


def build_model(cfg: FinetuneConfig, spec, shared=None) -> tuple[FireModel, dict]:
    """The model for `cfg.encoder` and the task, and the identity of the starting encoder.
    shared: a `finetune.shared.Slot`, the encoder it runs on (a partial-method run served with
    others: finetune/shared.py) instead of a copy of its own."""
    num_labels = 1 if spec.kind == "regression" else len(spec.labels)
    if cfg.family == "hf":
        from snowfire.extractor import hf_identity

        from .bert import BertFinetuner

        if shared is not None:
            model_dir, identity = shared.shared.model_dir, shared.shared.identity
        else:
            model_dir, name = model_source(cfg.encoder)
        model = BertFinetuner(
            model_dir,
            kind=spec.kind,
            num_labels=num_labels,
            labels=spec.labels,
            dropout=cfg.dropout,
            max_length=cfg.max_length,
            crf=bool(cfg.crf),  # None: the BERT family's softmax
            lstm=cfg.output_lstm,
            method=cfg.method,
            adapter_size=cfg.adapter_size,
            lora_rank=cfg.lora_rank,
            lora_alpha=cfg.lora_alpha,
            lora_targets=cfg.lora_targets,
            shared=shared,
        )
        if shared is not None:
            return model, identity
        # the extractor's identity of the starting encoder: the same hashes a store keys on
        config = model.encoder.config
        return model, hf_identity(Path(model_dir), config, name=name, spec=cfg.encoder)
    from snowfire.cache import file_sha256
    from snowfire.extractor import ElmoBiLM, resolve_elmo_spec

    from .elmo import ElmoFinetuner

    options, weights = resolve_elmo_spec(cfg.encoder.split(":", 1)[1])
    elmo = ElmoFinetuner(
        ElmoBiLM.from_files(options, weights),
        kind=spec.kind,
        pair=spec.pair,
        num_labels=num_labels,
        labels=spec.labels,
        dropout=cfg.dropout,
        bi_attention=cfg.bi_attention,
        crf=cfg.crf is not False,  # None: ELMo's CRF
        lstm=cfg.output_lstm,
    )
    identity = {
        "kind": "elmo",
        "spec": cfg.encoder,
        "options_sha256": file_sha256(options),
        "weights_sha256": file_sha256(weights),
        "state_policy": "fixed",
        "num_layers": elmo.bilm.num_layers,
        "dim": elmo.bilm.output_dim,
    }
    return elmo, identity


def start_hashes(cfg: FinetuneConfig, identity: dict | None = None) -> dict[str, str]:
    """What a run starts from, by content, where its config names it only by place: the
    encoder's weights and an LP-FT probe's weights. A folder can be retrained in place (arm
    seq's intermediate run, a probe), so a finished or checkpointed run is reused only when
    these are unchanged (`check_start`). `identity`: the built model's (`build_model`), whose
    weights hash is taken as it is; without it, `encoder_sha256`."""
    start = {}
    encoder = identity["weights_sha256"] if identity is not None else encoder_sha256(cfg)
    if encoder is not None:
        start["encoder_weights_sha256"] = encoder
    if cfg.init_head:
        start["init_head_sha256"] = probe_sha256(cfg.init_head)
    return start


def encoder_sha256(cfg: FinetuneConfig) -> str | None:
    """The hash of the weights `cfg.encoder` names, loading nothing and never asking the hub:
    only an encoder in local files (the bundled MiniLM, a model folder, an ELMo file) is
    hashed; None for a hub name (its run keeps its revision in its record instead)."""
    from snowfire.cache import file_sha256

    if cfg.family == "hf":
        from snowfire.extractor import minilm_dir, weights_sha256

        name = cfg.encoder.split(":", 1)[-1]
        folder = minilm_dir() if cfg.encoder == "minilm" else Path(name).expanduser()
        return weights_sha256(folder) if folder.is_dir() else None
    from snowfire.extractor import resolve_elmo_spec

    _, weights = resolve_elmo_spec(cfg.encoder.split(":", 1)[1])
    return file_sha256(weights)


def probe_sha256(run: str | Path) -> str:
    """The hash of an LP-FT probe run's weights (RUN/weights.safetensors), "(missing)" when
    they are gone."""
    from snowfire.cache import file_sha256
    from snowfire.rundir import WEIGHTS

    probe = Path(run) / WEIGHTS
    return file_sha256(probe) if probe.is_file() else "(missing)"


def saved_start(record: dict) -> dict[str, str]:
    """`start_hashes` as a run's RUN/config.json (or checkpoint) saved them; a run made before
    they were saved has its encoder's weights hash in its `encoder` identity, and no probe's."""
    start = {"encoder_weights_sha256": (record.get("encoder") or {}).get("weights_sha256")}
    return start | record.get("start", {})


def check_start(
    saved: dict[str, str], start: dict[str, str], what: str, keep: bool = False
) -> None:
    """Refuse (rundir.RunConfigError) a run whose saved start differs from `start`; the message
    starts with `what` and names each hash, saved and now. `keep`: say so on stdout instead
    (the run is reused with the start it recorded: --keep-remade-start)."""
    from snowfire.rundir import RunConfigError

    changed = {k: (saved.get(k, "(not saved)"), v) for k, v in start.items() if saved.get(k) != v}
    if changed:
        detail = "; ".join(f"{k}: saved {old}, now {new}" for k, (old, new) in changed.items())
        if keep:
            print(f"{what} other starting weights ({detail}): kept (--keep-remade-start)")
            return
        raise RunConfigError(
            f"{what} other starting weights ({detail}): they were retrained or replaced since; "
            "use a new --out, restore the weights the run started from, or keep it with the "
            "start it recorded (finetune --keep-remade-start; compare, experiments/results.py: "
            "--keep-remade-starts)"
        )


def to_device(batch: dict[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    return {k: v.to(device) for k, v in batch.items()}


def predict(model: FireModel, examples: list, batch_size: int, device: torch.device) -> list:
    """The model's predictions (indices, floats or tag-index lists) for `examples`, in order
    (`predict_outputs` without the probabilities)."""
    return predict_outputs(model, examples, batch_size, device)[0]


def predict_outputs(
    model: FireModel, examples: list, batch_size: int, device: torch.device
) -> tuple[list, list | None]:
    """(predictions, probabilities) for `examples`, in order: indices, floats or tag-index
    lists, and for classification each example's softmax(z) over the classes (else None).

    Batches hold examples of similar length (less padding). Padding changes an example's
    output only in the last bits of a float (the sums run in another order), so the batches
    are a function of the examples alone: the same examples give the same numbers, whoever
    asks (`snowfire predict`, the trainer, /v1/predict).
    """
    model.eval()
    model.refresh_state()  # ELMo: the warm-up state of the current weights
    order = sorted(range(len(examples)), key=lambda i: example_length(examples[i]))
    preds: list = [None] * len(examples)
    probs: list | None = None
    with (
        torch.inference_mode(),
        torch.autocast(device.type, dtype=torch.float16, enabled=device.type == "cuda"),
    ):
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            out, _ = model(to_device(model.collate([examples[i] for i in chunk]), device))
            for i, p in zip(chunk, model.predict(out), strict=True):
                preds[i] = p
            if isinstance(out, torch.Tensor) and out.ndim == 2:  # (B, K) class logits
                probs = probs or [None] * len(examples)
                rows = torch.softmax(out.float(), dim=-1).tolist()  # (B, K)
                for i, row in zip(chunk, rows, strict=True):
                    probs[i] = row
    return preds, probs
