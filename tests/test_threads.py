"""The thread budget (options/threads.py): the cgroup quota read from fixture trees of
/proc and /sys (v2, v1, a hybrid host, nested limits, no files), the budget from affinity,
quota, share and overrides, its division among a launcher's processes (never more threads
than cores, brute force over a grid), and applying it to torch once per process."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from snowfire.options import SHARE_ENV, THREADS_ENV, ThreadBudget, thread_budget, threads_env
from snowfire.options import threads as threads_module
from snowfire.options.threads import cgroup_quota

V2_MOUNT = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"


def _tree(root: Path, cgroup: str | None, mountinfo: str | None, files: dict[str, str]) -> Path:
    """A fixture root: proc/self/cgroup, proc/self/mountinfo (None: absent) and `files`
    (paths under root -> content)."""
    (root / "proc/self").mkdir(parents=True, exist_ok=True)
    if cgroup is not None:
        (root / "proc/self/cgroup").write_text(cgroup)
    if mountinfo is not None:
        (root / "proc/self/mountinfo").write_text(mountinfo)
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


def test_v2_in_a_container_reads_its_cpu_max(tmp_path):
    root = _tree(tmp_path, "0::/\n", V2_MOUNT, {"sys/fs/cgroup/cpu.max": "150000 100000\n"})
    assert cgroup_quota(root) == pytest.approx(1.5, abs=1e-12)
    (root / "sys/fs/cgroup/cpu.max").write_text("max 100000\n")
    assert cgroup_quota(root) is None


def test_v2_takes_the_tightest_of_the_cgroup_and_its_ancestors(tmp_path):
    """A host-side view (cgroupns=host): the limit may sit on a parent slice."""
    leaf = "sys/fs/cgroup/system.slice/docker-abc.scope"
    files = {
        f"{leaf}/cpu.max": "max 100000",
        "sys/fs/cgroup/system.slice/cpu.max": "300000 100000",
    }
    root = _tree(tmp_path, "0::/system.slice/docker-abc.scope\n", V2_MOUNT, files)
    assert cgroup_quota(root) == pytest.approx(3.0, abs=1e-12)
    (root / leaf / "cpu.max").write_text("50000 100000")  # the leaf tighter than its parent
    assert cgroup_quota(root) == pytest.approx(0.5, abs=1e-12)


def test_v1_docker_reads_cfs_quota_over_period_under_the_mount_root(tmp_path):
    mountinfo = (
        "40 31 0:37 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro,nosuid - cgroup cgroup "
        "rw,cpu,cpuacct\n"
        "41 31 0:38 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n"
    )
    folder = "sys/fs/cgroup/cpu,cpuacct"
    files = {f"{folder}/cpu.cfs_quota_us": "250000\n", f"{folder}/cpu.cfs_period_us": "100000\n"}
    root = _tree(tmp_path, "5:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n", mountinfo, files)
    assert cgroup_quota(root) == pytest.approx(2.5, abs=1e-12)
    (root / folder / "cpu.cfs_quota_us").write_text("-1\n")
    assert cgroup_quota(root) is None


def test_a_hybrid_host_reads_both_hierarchies(tmp_path):
    """This machine's layout: v1 controllers, and a v2 hierarchy without the cpu controller."""
    mountinfo = (
        "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
        "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
        "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
        "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
    )
    cgroup = "3:cpuset:/\n2:cpuacct:/\n1:cpu:/\n0::/\n"
    files = {
        "sys/fs/cgroup/cpu/cpu.cfs_quota_us": "-1",
        "sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000",
        "sys/fs/cgroup/unified/cgroup.controllers": "",
    }
    root = _tree(tmp_path, cgroup, mountinfo, files)
    assert cgroup_quota(root) is None
    (root / "sys/fs/cgroup/cpu/cpu.cfs_quota_us").write_text("300000")
    assert cgroup_quota(root) == pytest.approx(3.0, abs=1e-12)


def test_without_mountinfo_the_usual_mount_points_are_read(tmp_path):
    root = _tree(tmp_path, None, None, {"sys/fs/cgroup/cpu.max": "200000 100000"})
    assert cgroup_quota(root) == pytest.approx(2.0, abs=1e-12)
    assert cgroup_quota(tmp_path / "nothing-here") is None


def test_an_escaped_mount_point_is_found(tmp_path):
    mountinfo = "30 23 0:26 / /sys/fs/my\\040cgroup rw - cgroup2 cgroup2 rw\n"
    root = _tree(tmp_path, "0::/\n", mountinfo, {"sys/fs/my cgroup/cpu.max": "100000 100000"})
    assert cgroup_quota(root) == pytest.approx(1.0, abs=1e-12)


def test_a_malformed_quota_is_named_and_read_as_no_limit(tmp_path, caplog):
    root = _tree(tmp_path, "0::/\n", V2_MOUNT, {"sys/fs/cgroup/cpu.max": "lots 100000"})
    with caplog.at_level(logging.WARNING, logger="snowfire.options.threads"):
        assert cgroup_quota(root) is None
    assert f"{root}/sys/fs/cgroup/cpu.max: expected a CPU quota and period" in caplog.text
    assert "got 'lots 100000'" in caplog.text


def _quota_root(tmp_path: Path, quota: str | None) -> Path:
    """A container root with cgroup v2 cpu.max `quota` ("max 100000" when None)."""
    return _tree(tmp_path, "0::/\n", V2_MOUNT, {"sys/fs/cgroup/cpu.max": quota or "max 100000"})


def test_the_budget_is_affinity_and_quota_split_by_the_share(tmp_path):
    root = _quota_root(tmp_path, "250000 100000")  # 2.5 CPUs of a host whose mask has 8
    budget = thread_budget(env={}, root=root, affinity=8)
    assert budget == ThreadBudget(threads=2, cores=2, affinity=8, quota=2.5, share=1)
    assert budget.why() == "2 threads: 2 cores available (affinity 8, cgroup quota 2.5 CPUs)"
    nolimit = _quota_root(tmp_path / "free", None)
    for share, want in ((1, 8), (2, 4), (3, 2), (5, 1), (9, 1)):
        got = thread_budget(env={SHARE_ENV: str(share)}, root=nolimit, affinity=8)
        assert (got.threads, got.cores, got.share, got.quota) == (want, 8, share, None)
    assert thread_budget(env={SHARE_ENV: "3"}, root=nolimit, affinity=8).why() == (
        "2 threads: 8 cores available (affinity 8, no cgroup quota), split among 3"
    )
    half = thread_budget(env={}, root=_quota_root(tmp_path / "half", "50000 100000"), affinity=4)
    assert (half.cores, half.threads) == (1, 1)  # half a CPU: one thread, never none


def test_overrides_in_order_flag_env_share_omp(tmp_path):
    root = _quota_root(tmp_path, None)
    env = {THREADS_ENV: "3", "OMP_NUM_THREADS": "5"}
    flag = thread_budget(4, env=env, root=root, affinity=8)
    assert (flag.threads, flag.override) == (4, "--threads=4")
    assert flag.why() == "4 threads: --threads=4 (8 cores available (affinity 8, no cgroup quota))"
    mine = thread_budget(env=env, root=root, affinity=8)
    assert (mine.threads, mine.override) == (3, "SNOWFIRE_THREADS=3")
    outside = thread_budget(env={"OMP_NUM_THREADS": "5"}, root=root, affinity=8)
    assert (outside.threads, outside.override) == (5, "OMP_NUM_THREADS=5")
    nested = thread_budget(env={"OMP_NUM_THREADS": "4,2"}, root=root, affinity=8)
    assert nested.threads == 4
    shared = thread_budget(env={"OMP_NUM_THREADS": "5", SHARE_ENV: "2"}, root=root, affinity=8)
    assert (shared.threads, shared.override) == (4, None)  # the launcher's share decides
    ray = thread_budget(1, source="ray num_cpus", env=env, root=root, affinity=8)
    assert (ray.threads, ray.override) == (1, "ray num_cpus=1")


def test_bad_values_are_refused_with_the_variable(tmp_path, caplog):
    root = _quota_root(tmp_path, None)
    for name, value in ((THREADS_ENV, "0"), (THREADS_ENV, "two"), (SHARE_ENV, "-1")):
        with pytest.raises(ValueError, match=f"{name}: expected a whole number of threads >= 1"):
            thread_budget(env={name: value}, root=root, affinity=2)
    with pytest.raises(ValueError, match=r"--threads: expected a whole number .* got 0"):
        thread_budget(0, env={}, root=root, affinity=2)
    with caplog.at_level(logging.WARNING, logger="snowfire.options.threads"):
        got = thread_budget(env={"OMP_NUM_THREADS": "lots"}, root=root, affinity=2)
    assert (got.threads, got.override) == (2, None)  # the library's variable: ignored, said
    assert "OMP_NUM_THREADS='lots' is not a number of threads" in caplog.text
    with pytest.raises(ValueError, match="divided: expected a number of processes >= 1, got 0"):
        got.divided(0)


def test_a_launcher_divides_its_budget_and_its_children_read_it(tmp_path):
    root = _quota_root(tmp_path, None)
    parent = thread_budget(env={}, root=root, affinity=8)
    env = threads_env(4, parent)
    assert env == {SHARE_ENV: "4", "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    child = thread_budget(env=env, root=root, affinity=8)
    assert (child.threads, child.share, child.override) == (2, 4, None)
    grandchild = thread_budget(env=threads_env(2, child), root=root, affinity=8)
    assert (grandchild.threads, grandchild.share) == (1, 8)  # nested launchers multiply
    fixed = thread_budget(env={THREADS_ENV: "6"}, root=root, affinity=8)
    assert threads_env(4, fixed)[THREADS_ENV] == "1"  # an override is divided too
    assert threads_env(2, fixed) == {
        SHARE_ENV: "2",
        "OMP_NUM_THREADS": "3",
        "MKL_NUM_THREADS": "3",
        THREADS_ENV: "3",
    }
    child = thread_budget(env=threads_env(2, fixed), root=root, affinity=8)
    assert (child.threads, child.override) == (3, "SNOWFIRE_THREADS=3")


def test_processes_of_one_launcher_never_take_more_threads_than_cores():
    """Every (cores, processes, earlier share): n children take at most max(cores, n) threads
    between them (one each at least), and all the cores when n divides them."""
    for cores in range(1, 17):
        for share in (1, 2, 3):
            parent = ThreadBudget(threads=1, cores=cores, affinity=cores, quota=None, share=share)
            for n in range(1, 9):
                each = parent.divided(n)
                budget_cores = max(1, cores // share)  # what the parent's own share allowed
                assert n * each.threads <= max(budget_cores, n), (cores, share, n)
                if budget_cores % n == 0:
                    assert n * each.threads == budget_cores, (cores, share, n)


@pytest.fixture
def fresh(monkeypatch):
    """This process as if no budget had been applied, its torch threads and the libraries'
    variables restored afterwards (inter-op left alone: torch allows setting it once)."""
    import torch

    threads = torch.get_num_threads()
    monkeypatch.setattr(threads_module, "_applied", {"budget": None, "interop": True})
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", THREADS_ENV, SHARE_ENV):
        monkeypatch.setenv(name, "1")  # recorded, so monkeypatch puts the original back
        monkeypatch.delenv(name)
    yield
    torch.set_num_threads(threads)


def test_use_threads_applies_once_and_an_override_again(fresh, monkeypatch):
    import torch

    from snowfire.options import threads_in_use, threads_record, use_threads

    monkeypatch.setenv(THREADS_ENV, "1")
    torch.set_num_threads(2)
    budget = use_threads()
    assert (budget.threads, budget.override) == (1, "SNOWFIRE_THREADS=1")
    assert torch.get_num_threads() == 1 and threads_in_use() is budget
    assert os.environ["OMP_NUM_THREADS"] == os.environ["MKL_NUM_THREADS"] == "1"
    monkeypatch.setenv(THREADS_ENV, "2")
    assert use_threads() is budget and torch.get_num_threads() == 1  # decided once
    again = use_threads(2, source="ray num_cpus")  # a Ray worker's next task
    assert (again.override, torch.get_num_threads(), threads_in_use()) == (
        "ray num_cpus=2",
        2,
        again,
    )
    record = threads_record()
    assert record["intra_op"] == 2 and record["inter_op"] == torch.get_num_interop_threads()
    assert record["budget"] == again.to_json() and record["budget"]["why"] == again.why()


def test_without_a_budget_the_record_says_torchs_defaults(fresh):
    from snowfire.options import threads_record

    assert threads_record()["budget"] is None


def test_a_runs_cost_records_its_threads(fresh, monkeypatch):
    """❄️ and 🔥 runs write PeakMemory's record as their config.json `cost`."""
    import torch

    from snowfire.options import use_threads
    from snowfire.rundir import PeakMemory

    monkeypatch.setenv(THREADS_ENV, "1")
    budget = use_threads()
    record = PeakMemory(torch.device("cpu")).start().stop().record()
    assert record["threads"]["intra_op"] == 1
    assert record["threads"]["budget"] == budget.to_json()
