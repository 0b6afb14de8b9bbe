"""How a runnable's config names its task: the fields every such config shares, with one help
text each and one check.

    @dataclass(frozen=True)
    class TrainConfig(TaskFields): ...        # task | task_spec, data; cfg.spec
    @dataclass(frozen=True)
    class CompareConfig(TaskListFields): ...  # tasks (its own field), task_spec, data; cfg.specs

`task` is a registered task whose files are under `data`; `task_spec` is the user's own task, a
spec file (.yaml, .yml, .json) or, in a job's params, the spec object itself, whose relative
paths are `data`'s. A config names exactly one of the two (a list config: any number of each).
The mixins' fields are keyword-only (a config's own required fields follow them): they come
first in `dataclasses.fields`, the flags and RUN/config.json, whose keys stay the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from snowfire.options import option

from .registry import TASK_NAMES, TASKS, get_task
from .spec import TaskSpec
from .spec_file import resolve_task

#: The help of every `data` field: where a registered task's files are, and what a spec
#: object's relative paths are relative to.
DATA_HELP = (
    "task data directory: a registered task's files (one folder per task); a job's spec "
    "object: the base of its relative paths"
)
#: The help of a one-task config's `task_spec`, and of a multi-task config's.
SPEC_HELP = (
    "your own task: a spec file (.yaml, .yml, .json; README 'Your own task'); a job may give "
    "the spec object"
)
SPECS_HELP = (
    "your own tasks: a spec file each (repeatable; README 'Your own task'); a job may give the "
    "spec objects"
)


def config_task(
    owner: str, task: str | None, task_spec: str | dict | None, data: str | None
) -> TaskSpec:
    """The task a command's config names: `task` (a registered task, its files under `data`)
    or `task_spec` (a spec file, or a spec object whose relative paths are `data`'s), exactly
    one of them; errors name the config's field ("TrainConfig.task_spec: ...")."""
    if (task is None) == (task_spec is None):
        raise ValueError(
            f"{owner}: give either 'task' (a registered task: {', '.join(TASKS)}) or "
            f"'task_spec' (your own task: a spec file or object), not "
            f"{'both' if task is not None else 'neither'}"
        )
    if task is not None:
        try:
            spec = get_task(task)
        except (ValueError, TypeError) as err:
            raise ValueError(f"{owner}.task: {err}") from err
        if data is None:
            raise ValueError(f"{owner}.data: task {task!r} needs its data directory")
        return spec
    assert task_spec is not None  # exactly one of the two, checked above
    try:
        return resolve_task(task_spec, base=data)
    except (ValueError, TypeError, OSError) as err:
        raise ValueError(f"{owner}.task_spec: {err}") from err


def resolve_tasks(
    owner: str, names: list[str], task_specs: list[str | dict] | None, data: str | None
) -> dict[str, TaskSpec]:
    """Every task of a multi-task config by name, in order: the registered `names` (files
    under `data`), then the user's `task_specs` (spec files or objects, relative paths
    `data`'s). At least one task; distinct names (each names its runs' folders); errors name
    the config's field ("CompareConfig.task_spec: ...")."""
    specs: dict[str, TaskSpec] = {}
    for name in names:
        try:
            specs[name] = get_task(name)
        except (ValueError, TypeError) as err:
            raise ValueError(f"{owner}.tasks: {err}") from err
    if not names and not task_specs:
        raise ValueError(f"{owner}.tasks: expected at least one task (or task_spec)")
    if names and data is None:
        raise ValueError(f"{owner}.data: the tasks {', '.join(names)} need their data directory")
    for ref in task_specs or []:
        try:
            spec = resolve_task(ref, base=data)
        except (ValueError, TypeError, OSError) as err:
            raise ValueError(f"{owner}.task_spec: {err}") from err
        if spec.name in specs:
            raise ValueError(
                f"{owner}.task_spec: expected tasks of distinct names (each names its runs' "
                f"folders), got {[*specs, spec.name]}"
            )
        specs[spec.name] = spec
    return specs


@dataclass(frozen=True)
class TaskFields:
    """The task of a one-task config (extract, train, finetune): `task` or `task_spec`, and
    `data`. `spec` is the resolved `TaskSpec`; `resolve_spec()`, from the config's
    `__post_init__`, resolves it when the config is built."""

    task: str | None = option(
        None, "a registered task (or --task-spec)", choices=TASK_NAMES, kw_only=True
    )
    task_spec: str | dict | None = option(None, SPEC_HELP, kw_only=True)
    data: str | None = option(None, DATA_HELP, kw_only=True)

    @property
    def names_task(self) -> bool:
        """Whether the config names a task (`task` or `task_spec`)."""
        return self.task is not None or self.task_spec is not None

    @cached_property
    def spec(self) -> TaskSpec:
        """The task (`tasks.TaskSpec`): `task` or `task_spec`, resolved and checked; a
        ValueError naming the fields when the config names neither or both."""
        return config_task(type(self).__name__, self.task, self.task_spec, self.data)

    def resolve_spec(self, *, required: bool = True) -> None:
        """Resolve the task now, so that a bad one is refused when the config is built, the
        error naming the field ("TrainConfig.task_spec: ..."); `required`: the config must name
        one (ExtractConfig may read a text file instead)."""
        if required or self.names_task:
            self.spec  # noqa: B018 (resolved now: its errors name the field)


@dataclass(frozen=True)
class TaskListFields:
    """The user's tasks and the data directory of a multi-task config (compare, the analyses),
    beside its own `tasks` field (registered names: each config has its own default and
    spelling). `specs` resolves them all (`resolve_tasks`)."""

    task_spec: list[str | dict] | None = option(None, SPECS_HELP, kw_only=True)
    data: str | None = option(None, DATA_HELP, kw_only=True)

    @cached_property
    def specs(self) -> dict[str, TaskSpec]:
        """Every task by name (`tasks.TaskSpec`): the registered ones of the config's `tasks`,
        then the user's, in the order given."""
        tasks: Any = getattr(self, "tasks", None) or []
        return resolve_tasks(type(self).__name__, list(tasks), self.task_spec, self.data)

    @property
    def names(self) -> list[str]:
        """The names of the tasks, in order."""
        return list(self.specs)
