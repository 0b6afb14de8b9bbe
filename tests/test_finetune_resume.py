"""A run killed after K steps and started again with the same config ends exactly like an
uninterrupted run: same metrics, predictions, log, best weights and saved encoder."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from tests.helpers import FIXTURES, need_shared
from tests.helpers.tasks import finetune_config, write_sst2, write_stsb


class Killed(RuntimeError):
    pass


def _kill_after(k: int):
    def on_step(step, model):
        if step == k:
            raise Killed(f"killed after step {k}")

    return on_step


def _outputs(run: Path) -> dict:
    log = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    for record in log:
        record.pop("seconds")
    files = {
        str(p.relative_to(run)): p.read_bytes()
        for p in sorted((run / "predictions").iterdir()) + sorted((run / "encoder").iterdir())
        if p.is_file()
    }
    return {
        "metrics": json.loads((run / "metrics.json").read_text()),
        "log": log,
        "files": files,
        "best": torch.load(run / "best.pt", weights_only=True),
    }


def _same(a: dict, b: dict) -> None:
    assert a["metrics"] == b["metrics"]
    assert a["log"] == b["log"]
    assert a["files"].keys() == b["files"].keys()
    for name in a["files"]:
        assert a["files"][name] == b["files"][name], name
    assert a["best"].keys() == b["best"].keys()
    for key in a["best"]:
        assert torch.equal(a["best"][key], b["best"][key]), key


def _killed_then_resumed(
    encoder: str, task: str, data: Path, tmp_path: Path, kill_after: int, **kw
) -> None:
    """A run killed after step `kill_after` and started again ends as an uninterrupted one:
    same metrics, log, predictions, encoder files and best weights."""
    from snowfire.finetune import train

    reference = train(finetune_config(encoder, task, data, tmp_path / "a", **kw))
    cfg = finetune_config(encoder, task, data, tmp_path / "b", **kw)
    with pytest.raises(Killed, match=f"killed after step {kill_after}$"):
        train(cfg, on_step=_kill_after(kill_after))
    assert not (tmp_path / "b" / "metrics.json").exists()
    ckpt, earlier = tmp_path / "b" / "checkpoint.pt", 0.0
    if ckpt.exists():  # the killed process's CPU time is kept and counted by the resumed one
        saved = torch.load(ckpt, weights_only=True)
        assert saved["state"]["cpu_seconds"] > 0
        earlier = saved["state"]["cpu_seconds"] = 1e6  # marked, to be found in the total
        torch.save(saved, ckpt)
    assert train(cfg) == reference
    _same(_outputs(tmp_path / "a"), _outputs(tmp_path / "b"))
    cpu = json.loads((tmp_path / "b" / "config.json").read_text())["cost"]["cpu_seconds"]
    assert earlier <= cpu < earlier + 600


# 24 examples, batch 8: 3 steps per epoch, 3 epochs; checkpoints every 2 steps and each epoch.
# Kill after step 1 (nothing saved yet), 3 (last step of epoch 1, before its evaluation),
# 5 (mid epoch 2, just after a step checkpoint at 4 -> resumes mid-epoch), 7.
@pytest.mark.parametrize("kill_after", [1, 3, 5, 7])
def test_bert_resume_after_kill_equals_uninterrupted(tiny_bert_dir, tmp_path, kill_after):
    data = write_sst2(tmp_path / "data", sizes=(("train", 24), ("dev", 8), ("test", 8)))
    _killed_then_resumed(
        f"hf:{tiny_bert_dir}",
        "sst2",
        data,
        tmp_path,
        kill_after,
        epochs=3,
        checkpoint_every=2,
        dropout=0.3,
        patience=10,
    )


def test_bucketed_batches_resume_mid_epoch(tiny_bert_dir, tmp_path):
    """28 examples in pools of 2 batches of 8: 16 | 8 + 4, the short batch anywhere in the
    epoch; killed mid-epoch after a step checkpoint."""
    data = write_sst2(tmp_path / "data", sizes=(("train", 28), ("dev", 8)))
    _killed_then_resumed(
        f"hf:{tiny_bert_dir}",
        "sst2",
        data,
        tmp_path,
        3,
        epochs=2,
        checkpoint_every=2,
        bucket_pool=2,
        patience=10,
    )


def test_elmo_resume_mid_epoch_equals_uninterrupted(tmp_path):
    """ELMo: the warm-up state buffers come back from the checkpoint mid-epoch."""
    elmo = need_shared(FIXTURES / "allennlp_elmo")
    data = write_stsb(tmp_path / "data", sizes=(("train", 16), ("dev", 6)))
    _killed_then_resumed(
        f"elmo:{elmo}",
        "stsb",
        data,
        tmp_path,
        6,
        epochs=2,
        batch_size=4,
        checkpoint_every=1,
        lr=3e-3,
        patience=10,
    )


def test_resume_with_another_config_is_refused(tiny_bert_dir, tmp_path):
    from snowfire.finetune import train

    data = write_sst2(tmp_path / "data", sizes=(("train", 16), ("dev", 8)))
    cfg = finetune_config(f"hf:{tiny_bert_dir}", "sst2", data, tmp_path / "run", epochs=1)
    with pytest.raises(Killed, match="killed after step 1$"):
        train(cfg, on_step=_kill_after(1))
    with pytest.raises(Killed, match="killed after step 2$"):  # no checkpoint yet: afresh
        train(cfg, on_step=_kill_after(2))
    resumable = finetune_config(
        f"hf:{tiny_bert_dir}", "sst2", data, tmp_path / "run", epochs=1, checkpoint_every=1
    )
    with pytest.raises(Killed, match="killed after step 1$"):  # checkpoint_every is volatile
        train(resumable, on_step=_kill_after(1))  # ... the same run, checkpointed
    other = finetune_config(f"hf:{tiny_bert_dir}", "sst2", data, tmp_path / "run", epochs=1, lr=0.5)
    checkpoint = tmp_path / "run" / "checkpoint.pt"
    with pytest.raises(
        ValueError,
        match=re.escape(f"{checkpoint} was written by another config (lr: saved 0.001, new 0.5)"),
    ):
        train(other)
    train(cfg)
    with pytest.raises(
        ValueError, match=r"holds a finished run of another config \(lr: saved 0.001, new 0.5\)"
    ):
        train(other)


def test_a_finished_run_is_returned_not_trained_again(tiny_bert_dir, tmp_path):
    from snowfire.finetune import train

    data = write_sst2(tmp_path / "data", sizes=(("train", 16), ("dev", 8)))
    cfg = finetune_config(f"hf:{tiny_bert_dir}", "sst2", data, tmp_path / "run", epochs=1)
    metrics = train(cfg)
    run = tmp_path / "run"
    assert not (run / "checkpoint.pt").exists()  # dropped once the run finished

    def outputs():  # the run's files (not RUN/.lock, which names its latest holder)
        return {
            p: p.stat().st_mtime_ns for p in run.rglob("*") if p.is_file() and p.name != ".lock"
        }

    before = outputs()

    def no_training(step, model):
        raise AssertionError(f"trained again (step {step})")

    assert train(cfg, on_step=no_training) == metrics
    assert outputs() == before


def test_killed_after_the_final_config_before_metrics_finishes_from_the_checkpoint(
    tiny_bert_dir, tmp_path, monkeypatch
):
    import importlib

    from snowfire.finetune import train

    data = write_sst2(tmp_path / "data", sizes=(("train", 16), ("dev", 8)))
    reference = train(
        finetune_config(f"hf:{tiny_bert_dir}", "sst2", data, tmp_path / "a", epochs=2)
    )
    cfg = finetune_config(f"hf:{tiny_bert_dir}", "sst2", data, tmp_path / "b", epochs=2)
    # a kill between the final config.json (with "seconds") and metrics.json, which is written
    # last: the run is not finished and the last epoch's checkpoint is still there
    module = importlib.import_module("snowfire.finetune.trainer")
    real = module.write_json

    def kill_at_metrics(path, obj):
        if path.name == "metrics.json":
            raise Killed("killed before metrics.json")
        real(path, obj)

    monkeypatch.setattr(module, "write_json", kill_at_metrics)
    with pytest.raises(Killed, match="killed before metrics.json"):
        train(cfg)
    monkeypatch.undo()
    assert "seconds" in json.loads((tmp_path / "b" / "config.json").read_text())
    assert not (tmp_path / "b" / "metrics.json").exists()
    assert (tmp_path / "b" / "checkpoint.pt").exists()
    assert train(cfg, on_step=_kill_after(1)) == reference  # evaluates again, trains no step
    _same(_outputs(tmp_path / "a"), _outputs(tmp_path / "b"))
    assert "seconds" in json.loads((tmp_path / "b" / "config.json").read_text())


def test_a_resumed_run_counts_the_time_before_the_kill(tiny_bert_dir, tmp_path):
    from snowfire.finetune import train

    data = write_sst2(tmp_path / "data", sizes=(("train", 24), ("dev", 8)))  # 3 steps of 8
    cfg = finetune_config(
        f"hf:{tiny_bert_dir}", "sst2", data, tmp_path / "run", epochs=1, checkpoint_every=1
    )
    now = [100.0]  # the clock the run reads; a step "takes" what on_step adds

    def steps_of(seconds: float, kill_at: int | None = None):
        def on_step(step, model):  # called after the step's checkpoint
            if step >= 1:
                now[0] += seconds
            if step == kill_at:
                raise Killed(f"killed after step {step}")

        return on_step

    with pytest.raises(
        Killed, match="killed after step 2$"
    ):  # steps 1 and 2 take 10 s each; step 2's checkpoint is at 10 s
        train(cfg, on_step=steps_of(10.0, kill_at=2), clock=lambda: now[0])
    now[0] = 500.0  # another process: its clock has its own origin
    train(cfg, on_step=steps_of(7.0), clock=lambda: now[0])  # step 3 takes 7 s
    # 10 s checkpointed before the kill + 7 s in this process; the 10 s after the last
    # checkpoint were lost with the process
    assert json.loads((tmp_path / "run" / "config.json").read_text())["seconds"] == 17.0
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert [r["seconds"] for r in log] == [17.0]
