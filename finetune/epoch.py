"""One epoch of the 🔥 trainer (finetune/trainer.py): its batches from where a resumed run
stopped (the order is a function of seed and epoch), each a forward pass, backward (L2-SP's
pull added), clipping and a step, a checkpoint every `checkpoint_every` steps, and the
selection split scored `curve_points` times within it for the learning curve."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from snowfire.tasks import decode, epoch_batches, example_length, gold_of

from .model import predict, to_device


def train_epoch(fit, cfg, train_set, epoch: int, state, checkpoint, on_step, dev_set=None):
    """The batches of `epoch` from `state.batch` on (the order is a function of seed and
    epoch, so a resumed epoch sees the same batches); the selection split scored
    `cfg.curve_points` times within it for the learning curve."""
    from tqdm import tqdm

    model, device = fit.model, fit.device
    if state.batch == 0:
        model.refresh_state()  # ELMo: mid-epoch resumption keeps the restored state
    model.train()
    batches = epoch_batches(
        [example_length(e) for e in train_set], cfg.batch_size, cfg.bucket_pool, cfg.seed, epoch
    )
    bar = tqdm(
        total=len(train_set),
        initial=sum(len(b) for b in batches[: state.batch]),
        desc=f"epoch {epoch}",
        unit="ex",
        disable=not cfg.progress,
        leave=False,
    )
    from .methods import l2sp_penalty

    # the weights L2-SP pulls, found once per epoch rather than per batch
    pulled = [(n, p) for n, p in model.named_parameters() if n in (fit.anchors or ())]
    n_batches = len(batches)
    marks = {round(k * n_batches / (cfg.curve_points + 1)) for k in range(1, cfg.curve_points + 1)}
    marks -= {0, n_batches}  # the epoch's end is scored anyway
    for i in range(state.batch, n_batches):
        idx = batches[i]
        batch = to_device(model.collate([train_set[j] for j in idx]), device)
        with torch.autocast(device.type, dtype=torch.float16, enabled=fit.amp):
            _, loss = model(batch)
        task_loss = loss.item()
        if pulled and fit.anchors is not None:  # L2-SP: λ ||θ − θ₀||² over the trained encoder
            loss = loss + cfg.l2sp * l2sp_penalty(pulled, fit.anchors)
        fit.optimizer.zero_grad(set_to_none=True)
        fit.scaler.scale(loss).backward()
        if cfg.max_grad_norm > 0:
            fit.scaler.unscale_(fit.optimizer)
            nn.utils.clip_grad_norm_(
                [p for p in model.parameters() if p.grad is not None], cfg.max_grad_norm
            )
        fit.scaler.step(fit.optimizer)
        fit.scaler.update()
        fit.scheduler.step()
        state.step += 1
        state.batch = i + 1
        state.loss_sum += task_loss * len(idx)
        state.loss_n += len(idx)
        bar.update(len(idx))
        bar.set_postfix(loss=f"{state.loss_sum / state.loss_n:.4f}")
        if (i + 1) in marks:  # a point of the learning curve within the epoch
            state.within.append(curve_point(fit, cfg, dev_set, epoch - 1 + (i + 1) / n_batches))
        if cfg.checkpoint_every and state.step % cfg.checkpoint_every == 0:
            checkpoint()
        if on_step is not None:
            on_step(state.step, model)
    bar.close()


def curve_point(fit, cfg, chosen, at: float) -> dict[str, Any]:
    """The selection split scored mid-epoch at position `at` (epochs), for the curve only;
    training resumes unchanged (BERT family: no state, no random numbers drawn)."""
    from snowfire.tasks import evaluate

    spec = cfg.spec
    preds = decode(spec, predict(fit.model, chosen, cfg.batch_size, fit.device))
    fit.model.train()
    gold = gold_of(spec, chosen)
    assert gold is not None  # the selection split is labelled: read_training checks
    return {"epoch": round(at, 4), "selection": evaluate(spec, gold, preds)}
