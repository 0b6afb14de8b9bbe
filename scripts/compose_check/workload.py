"""The jobs the check sends through the REST API, and the same commands run outside containers.

Each job is a kind and its params; `command` spells the same config as `snowfire` flags (every
field `--field-name VALUE`, as cli/flags.py derives them) with the paths a job takes from its
data directory (data, store, out) given explicitly. Both sides run on the same data: the demo
sample (tasks/demo), cut so the whole check fits a few minutes on 2 cores (CUT).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from snowfire.jobs import stop_process

from .steps import StepFailed, run, tail

#: Lines kept of each demo file (a header counts): 500 SST-2 sentences, 90 STS-B pairs.
CUT = {
    ("sst2", "train.tsv"): 401,
    ("sst2", "dev.tsv"): 101,
    ("stsb", "sts-train.csv"): 60,
    ("stsb", "sts-dev.csv"): 30,
}
#: Config fields that name where things are (a job's are under /data): not compared.
PATHS = ("data", "store", "out")
#: Keys of results that say how long something took or where and with what Python it ran.
INCIDENTAL = (
    "seconds",
    "cpu_seconds",
    "scoring_seconds",
    "hours",
    "cost",
    "made_by",
    "config",
    "versions",
    "threads",
    *PATHS,
)
#: Run by `python -c` in a service's container: the thread budget its processes take there
#: (the container's environment, affinity and cgroup quota), as JSON.
THREADS = (
    "import json; from snowfire.options import thread_budget; "
    "print(json.dumps(thread_budget().to_json()))"
)


@dataclass(frozen=True)
class Job:
    name: str
    kind: str
    service: str  # the compose service whose worker runs it
    params: dict[str, Any]


JOBS = {
    job.name: job
    for job in (
        Job("extract", "extract", "extractor", {"encoder": "minilm", "task": "sst2"}),
        Job(
            "train",
            "train",
            "trainer",
            {"encoder": "minilm", "task": "sst2", "head": "linear", "epochs": 2},
        ),
        Job(
            "finetune",
            "finetune",
            "finetuner",
            {
                "encoder": "minilm",
                "task": "sst2",
                "epochs": 1,
                "max_train_examples": 48,
                "max_length": 48,
                "batch_size": 16,
            },
        ),
        Job(
            "compare",
            "compare",
            "comparer",
            {"encoder": "minilm", "tasks": ["stsb"], "heads": ["linear"], "seeds": 1},
        ),
    )
}


#: What the check asks POST /v1/predict (the train and finetune jobs' runs) and, outside
#: containers, `snowfire predict` of the same runs: one text per line.
PREDICT_TEXTS = (
    "a gripping , funny and moving film",
    "the plot is dull and the acting is worse",
    "an honest picture",
)


def printed_labels(path: Path) -> list[str]:
    """The predicted column of a `snowfire predict` file."""
    return [line.split("\t")[2] for line in path.read_text().splitlines()[1:]]


def predict_differences(answer: dict, printed: dict[str, list[str]]) -> list[str]:
    """Where POST /v1/predict's labels differ from `snowfire predict`'s, per run name."""
    got = {run["run"]: [p["label"] for p in run["predictions"]] for run in answer["runs"]}
    return [
        f"run {name}: service {got.get(name)}, snowfire predict {want}"
        for name, want in printed.items()
        if got.get(name) != want
    ]


def predictions(api, jobs: dict[str, dict], ref: Reference, snowfire: str) -> str:
    """POST /v1/predict with the train and finetune jobs' runs, and `snowfire predict` of the
    same runs outside containers (the reference's): the same labels, or StepFailed."""
    step = "predictions over REST"
    names = {jobs[name]["id"]: name for name in ("train", "finetune")}
    status, answer = api.request(
        "POST", "/v1/predict", {"runs": list(names), "texts": list(PREDICT_TEXTS)}
    )
    if status != 200:
        raise StepFailed(step, f"POST /v1/predict: {status} {answer}", "api")
    texts = ref.root / "predict.txt"
    texts.write_text("".join(f"{t}\n" for t in PREDICT_TEXTS))
    printed = {}
    for job_id, name in names.items():
        out = ref.root / f"predict-{name}.tsv"
        args = ["predict", "--run", str(ref.out(name)), "--input", str(texts), "--out", str(out)]
        run([snowfire, *args], step=f"{step}: snowfire predict outside")
        printed[job_id] = printed_labels(out)
    diffs = predict_differences(answer, printed)
    if diffs:
        raise StepFailed(step, "; ".join(diffs), "api")
    return f"predict: {json.dumps(printed)} = snowfire predict outside"


def write_cut(demo: Path, dest: Path) -> Path:
    """The demo sample's first CUT lines of each file, laid out as a data directory."""
    for (task, name), lines in CUT.items():
        (dest / task).mkdir(parents=True, exist_ok=True)
        with open(demo / task / name, encoding="utf-8") as src:
            kept = [line for _, line in zip(range(lines), src, strict=False)]
        if len(kept) < lines:
            raise ValueError(f"{demo / task / name}: expected at least {lines} lines")
        (dest / task / name).write_text("".join(kept), encoding="utf-8")
    return dest


def path_fields(kind: str) -> list[str]:
    """Which of data, store, out the kind's config has (a job fills them from its HOME)."""
    import dataclasses

    from snowfire.jobs import JOB_KINDS

    names = {f.name for f in dataclasses.fields(JOB_KINDS[kind].config())}
    return [name for name in PATHS if name in names]


def command(job: Job, *, data: Path, store: Path, out: Path) -> list[str]:
    """`snowfire KIND --flag value ...` for the job's params and explicit paths."""
    paths = {"data": str(data), "store": str(store), "out": str(out)}
    params = {**job.params, **{name: paths[name] for name in path_fields(job.kind)}}
    args = [job.kind]
    for name, value in params.items():
        flag = "--" + name.replace("_", "-")
        if name == "progress":
            args += [] if value else ["--quiet"]
        elif isinstance(value, bool):
            args.append(flag if value else f"--no-{name.replace('_', '-')}")
        elif isinstance(value, list):
            for item in value:
                args += [flag, str(item)]
        elif isinstance(value, dict):
            args += [flag, json.dumps(value)]
        else:
            args += [flag, str(value)]
    return args


def share_env(scale: dict[str, int]) -> dict[str, str]:
    """The share every container of a stack of `scale` takes (each of them runs torch), for the
    stack and for the runs outside it: the same threads on both sides, so the same numbers."""
    from snowfire.options import SHARE_ENV

    return {SHARE_ENV: str(sum(scale.values()))}


def threads_report(stack, scale: dict[str, int]) -> str:
    """The threads each service chose, in one line; StepFailed naming a service whose budget
    was fixed by hand or counts fewer processes than the stack runs (it would oversubscribe)."""
    parts = []
    for service in scale:
        step = f"the threads {service} chose"
        budget = json.loads(stack.exec(service, "python", "-c", THREADS, step=step))
        if budget["override"] is not None or budget["share"] < sum(scale.values()):
            raise StepFailed(
                step,
                f"expected a share of {sum(scale.values())} containers, got {budget['why']}",
                service,
            )
        parts.append(f"{service} {budget['why']}")
    return "torch threads: " + "; ".join(parts)


class Reference:
    """The jobs' commands run outside containers (with `snowfire`, in order, in a thread):
    extract -> train -> finetune -> compare, into `root`; `env` added to theirs."""

    def __init__(
        self, snowfire: str, data: Path, root: Path, env: dict[str, str] | None = None
    ) -> None:
        self.snowfire, self.data, self.root = snowfire, data, root
        self.extra_env = env or {}
        self.store = root / "store"
        self.error: StepFailed | None = None
        self.thread = threading.Thread(target=self._run_all, daemon=True)
        self.proc: subprocess.Popen | None = None
        self.stopped = threading.Event()
        self.lock = threading.Lock()  # a command is started, or the stop seen, not both

    def out(self, name: str) -> Path:
        return self.root / "runs" / name

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.thread.start()

    def _run_all(self) -> None:
        env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", **self.extra_env}  # as inside
        for job in JOBS.values():
            # niced: the steps in containers, which the check waits on, go first
            args = command(job, data=self.data, store=self.store, out=self.out(job.name))
            cmd = ["nice", "-n", "10", self.snowfire, *args]
            log = self.root / f"{job.name}.log"
            with open(log, "wb") as f, self.lock:
                if self.stopped.is_set():
                    return
                self.proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env)
            code = self.proc.wait()
            if self.stopped.is_set():
                return
            if code != 0:
                text = tail(log.read_text(errors="replace"))
                self.error = StepFailed(
                    f"{job.name} outside containers",
                    f"`{' '.join(cmd)}` exited with {code}:\n{text}",
                )
                return

    def join(self) -> None:
        self.thread.join()
        if self.error is not None:
            raise self.error

    def stop(self) -> None:
        """End the command running now, if any, and run no more (the check is over)."""
        with self.lock:
            self.stopped.set()
            proc = self.proc
        if proc is not None:
            stop_process(proc, grace=20)
        if self.thread.is_alive():
            self.thread.join(timeout=30)


#: Run by `python - ROOT` in a container, and here by `digest`: {relative path: sha256} of the
#: files under ROOT. A .safetensors file is hashed with its header's keys sorted: the library
#: writes its metadata in no fixed order, so two runs' identical tensors differ in bytes.
DIGEST = """
import hashlib, json, os, sys


def sha256(path):
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".safetensors"):
        n = int.from_bytes(data[:8], "little")
        header = json.dumps(json.loads(data[8:8 + n]), sort_keys=True).encode()
        data = header + data[8 + n:]
    return hashlib.sha256(data).hexdigest()


def digest(root):
    out = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            out[os.path.relpath(path, root)] = sha256(path)
    return out


if __name__ == "__main__":
    print(json.dumps(digest(sys.argv[1]), sort_keys=True))
"""


def digest(root: Path) -> dict[str, str]:
    """What DIGEST prints, computed here."""
    scope: dict[str, Any] = {"__name__": "digest"}
    exec(DIGEST, scope)
    return scope["digest"](str(root))


#: How far two floats may differ and still be the same result: last bits only (a real
#: difference between container and host shows in the 4th digit, not the 15th).
FLOAT_RTOL = 1e-12


def differences(
    got: Any, want: Any, places: dict[str, str] | None = None, where: str = ""
) -> Iterator[str]:
    """Where two JSON values differ, leaving out INCIDENTAL keys: strings and integers exactly,
    floats to FLOAT_RTOL (on one machine, with the same threads on both sides, the compare
    job's floats differed in their last bits: 0.9377016461316685 inside, ...684 outside; the
    cause is not pinned down). `places`
    maps a container path to the path outside that stands for it (a string under one compares
    equal to the same string under the other)."""
    places = places or {}
    if isinstance(got, dict) and isinstance(want, dict):
        for key in sorted(set(got) | set(want)):
            if key in INCIDENTAL:
                continue
            if key not in got or key not in want:
                yield f"{where}/{key}: only in {'container' if key in got else 'outside'}"
            else:
                yield from differences(got[key], want[key], places, f"{where}/{key}")
    elif isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            yield from differences(g, w, places, f"{where}/{i}")
    elif isinstance(got, str) and isinstance(want, str):
        if _placed(got, places) != _placed(want, {v: v for v in places.values()}):
            yield f"{where or '/'}: container {got!r}, outside {want!r}"
    elif isinstance(got, float) and isinstance(want, float):
        if not math.isclose(got, want, rel_tol=FLOAT_RTOL, abs_tol=FLOAT_RTOL):
            yield f"{where or '/'}: container {got!r}, outside {want!r}"
    elif got != want:
        yield f"{where or '/'}: container {got!r}, outside {want!r}"


def _placed(text: str, places: dict[str, str]) -> str:
    """`text` with a leading path of `places` named by its counterpart outside."""
    for inside, outside in sorted(places.items(), key=lambda kv: -len(kv[0])):
        if text == inside or text.startswith(inside + "/"):
            return "<" + outside + ">" + text[len(inside) :]
    return text
