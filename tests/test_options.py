"""One source for every option: the config dataclasses check themselves, and the CLI flags and
the job params are derived from them (defaults, choices, bounds, help)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import typing

import pytest

from snowfire.cli.main import build_parser, main
from snowfire.extractor import ExtractConfig, run_extract
from snowfire.finetune import FinetuneConfig
from snowfire.heads import TrainConfig
from snowfire.options import check, lazy_exports, option, unwrap_optional

TRAIN = dict(store="s", encoder="minilm", task="sst2", head="linear", data="d", out="o")


@dataclasses.dataclass(frozen=True)
class Toy:
    n: int = option(1, "a count", ge=1)
    rate: float = option(0.5, "a rate", gt=0, lt=1)
    mode: str = option("a", "a mode", choices=("a", "b"))
    picks: list[str] | None = option(None, "picks", choices=("x", "y"))
    maybe: int | None = option(None, "maybe a count", ge=0)
    rates: list[float] | None = option(None, "rates", gt=0)

    def __post_init__(self) -> None:
        check(self)


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        ({"n": 0}, ValueError, r"Toy.n: expected >= 1, got 0"),
        ({"n": True}, TypeError, r"Toy.n: expected int, got True \(bool\)"),
        ({"rate": 1}, ValueError, r"Toy.rate: expected < 1, got 1"),
        ({"rate": 0.0}, ValueError, r"Toy.rate: expected > 0, got 0.0"),
        ({"mode": "c"}, ValueError, r"Toy.mode: expected one of a, b, got 'c'"),
        ({"picks": ["x", "z"]}, ValueError, r"Toy.picks: expected one of x, y, got \['x', 'z'\]"),
        ({"picks": "x"}, TypeError, r"Toy.picks: expected list"),
        ({"maybe": -1}, ValueError, r"Toy.maybe: expected >= 0, got -1"),
        ({"rates": [0.5, 0.0]}, ValueError, r"Toy.rates: expected > 0, got 0.0 in \[0.5, 0.0\]"),
        ({"rates": [1, "2"]}, TypeError, r"Toy.rates: expected list\[float\]"),
        ({"mode": None}, TypeError, r"Toy.mode: expected a value, got None"),
    ],
)
def test_check_refuses_type_choice_and_bound_with_the_field(change, error, message):
    with pytest.raises(error, match=message):
        Toy(**change)


def test_check_accepts_values_inside():
    assert Toy(n=3, rate=0.25, mode="b", picks=["y", "x"], maybe=0, rates=[1, 0.5]).rate == 0.25
    assert Toy(n=2, maybe=None).maybe is None


def test_an_int_is_a_float_but_a_bool_is_not_an_int():
    @dataclasses.dataclass(frozen=True)
    class Rate:
        r: float = option(1.0, "a rate", ge=0)

        def __post_init__(self) -> None:
            check(self)

    assert Rate(2).r == 2
    with pytest.raises(TypeError, match="Rate.r: expected float"):
        Rate("2")


def test_an_option_needs_help_and_known_bounds():
    with pytest.raises(TypeError, match="help"):
        option(1)
    with pytest.raises(TypeError, match="unknown bounds"):
        option(1, "x", min=0)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"epochs": 0}, "TrainConfig.epochs: expected >= 1, got 0"),
        ({"lr": 0.0}, "TrainConfig.lr: expected > 0, got 0.0"),
        ({"task": "imdb"}, "TrainConfig.task: expected one of conll2003, sst2, .*, got 'imdb'"),
        ({"encoder": "bert"}, "TrainConfig.encoder: unknown encoder spec 'bert'"),
        ({"head": "esim"}, "TrainConfig.head: head 'esim' reads pair texts"),
        ({"hparams": {"hiden": 3}}, r"TrainConfig.hparams: unknown hyper-parameter\(s\)"),
        ({"layer": 2}, "TrainConfig.layer: only the probe head reads one layer"),
        ({"pair_encoding": "both"}, "TrainConfig.pair_encoding: expected one of joint, separate"),
    ],
)
def test_train_config_refuses_bad_values_when_built(change, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**(TRAIN | change))
    assert TrainConfig(**(TRAIN | {"head": "probe", "layer": 2})).layer == 2


def test_extract_config_checks():
    base = dict(encoder="minilm", store="s")
    with pytest.raises(ValueError, match="give either 'task'"):
        run_extract(ExtractConfig(**base))  # encodes texts handed over; the command needs some
    with pytest.raises(ValueError, match="give either 'task'"):
        ExtractConfig(**base).check_inputs()
    with pytest.raises(TypeError, match="run_extract: expected an ExtractConfig, got dict"):
        run_extract({**base, "input": "t.txt"})
    with pytest.raises(ValueError, match="give either 'task'"):
        ExtractConfig(**base, task="sst2", data="d", input="t.txt")
    with pytest.raises(ValueError, match="ExtractConfig.data: task 'sst2' needs"):
        ExtractConfig(**base, task="sst2")
    with pytest.raises(ValueError, match="ExtractConfig.token_budget: expected >= 1, got 0"):
        ExtractConfig(**base, input="t.txt", token_budget=0)
    with pytest.raises(ValueError, match="ExtractConfig.split: expected one of train, dev, test"):
        ExtractConfig(**base, task="sst2", data="d", split=["val"])
    with pytest.raises(
        ValueError,
        match="ExtractConfig.dtype: expected one of float16, float32, int8, got 'bfloat16'",
    ):
        ExtractConfig(**base, dtype="bfloat16")
    with pytest.raises(
        ValueError, match="ExtractConfig.elmo_state: expected one of fixed, stateful, got 'carried'"
    ):
        ExtractConfig(**base, elmo_state="carried")


def _cli_default(command: str, dest: str):
    sub = build_parser()._subparsers._group_actions[0].choices[command]
    return {a.dest: a for a in sub._actions}[dest]


def test_one_default_for_each_option_everywhere():
    from snowfire.api.settings import Settings
    from snowfire.jobs.params import params_model

    budget = ExtractConfig.__dataclass_fields__["token_budget"].default
    assert budget == ExtractConfig(encoder="minilm", store="s").token_budget == 8192
    assert Settings.model_fields["embed_token_budget"].default == budget  # the embed service's
    assert params_model("extract").model_fields["token_budget"].default == budget
    assert f"(default: {budget})" in _cli_default("extract", "token_budget").help
    assert params_model("train").model_fields["epochs"].default == TrainConfig(**TRAIN).epochs
    from snowfire.jobs.kinds import LIMIT_PARAMS

    fields = {f.name for f in dataclasses.fields(FinetuneConfig)}
    assert set(params_model("finetune").model_fields) == fields | set(LIMIT_PARAMS)
    assert set(params_model("train").model_fields) == {
        f.name for f in dataclasses.fields(TrainConfig)
    } | set(LIMIT_PARAMS)  # every kind's job params: its command's fields and the job's limits


def test_the_cli_refuses_a_bad_value_with_the_field_not_a_traceback(capsys):
    argv = "train --store s --encoder minilm --task sst2 --head linear --data d --out o --epochs 0"
    assert main(argv.split()) == 2
    assert (
        "snowfire train: error: TrainConfig.epochs: expected >= 1, got 0" in capsys.readouterr().err
    )
    with pytest.raises(SystemExit) as refused:  # a choice argparse already knows
        main("extract --encoder minilm --store s --input t --dtype bfloat16".split())
    assert refused.value.code == 2
    assert "invalid choice: 'bfloat16'" in capsys.readouterr().err


@pytest.mark.subprocess  # a fresh interpreter
def test_the_cli_parser_loads_no_heavy_package_and_train_stays_a_function():
    code = (
        "import sys; from snowfire.cli.main import build_parser; build_parser()\n"
        "build_parser().parse_args(['worker', '--kind', 'train'])  # a worker starts light\n"
        "heavy = [m for m in ('torch', 'zarr', 'pydantic', 'fastapi') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "build_parser().parse_args(['serve', '--port', '1'])  # flags from the settings\n"
        "assert 'pydantic' in sys.modules\n"
        "import snowfire.heads.trainer, snowfire.finetune.trainer\n"
        "from snowfire.heads import train as h; from snowfire.finetune import train as f\n"
        "assert callable(h) and callable(f) and h.__module__ == 'snowfire.heads.trainer', (h, f)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_path_is_taken_for_a_str_field(tmp_path):
    opts = ExtractConfig(encoder="minilm", store=tmp_path / "s", input=tmp_path / "t.txt")
    assert opts.store == str(tmp_path / "s") and isinstance(opts.input, str)


@pytest.mark.parametrize(
    ("hint", "base", "optional"),
    [
        (int | None, int, True),
        (typing.Optional[int], int, True),  # noqa: UP045 (the old spelling reads the same)
        (str | dict | None, str | dict, True),  # a task_spec: the path or the object, never str
        (typing.Union[str, dict, None], str | dict, True),  # noqa: UP007
        (list[str | dict] | None, list[str | dict], True),
        (str | dict, str | dict, False),
        (list[str], list[str], False),
        (bool, bool, False),
    ],
)
def test_one_reading_of_an_optional_hint(hint, base, optional):
    """options.check, the CLI flags and the job params all read a hint with unwrap_optional."""
    assert unwrap_optional(hint) == (base, optional)


def test_a_lazy_package_loads_each_name_on_first_use(tmp_path, monkeypatch):
    pkg = tmp_path / "lazypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "from snowfire.options import lazy_exports\n"
        "_WHERE = {'Thing': '.heavy:Thing', 'renamed': '.heavy:Thing', 'heavy': '.heavy',\n"
        "          'dumps': 'json:dumps'}\n"
        "__getattr__ = lazy_exports(__name__, _WHERE)\n"
    )
    (pkg / "heavy.py").write_text("LOADS = [1]\nclass Thing:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazypkg", raising=False)
    import lazypkg

    try:
        assert "lazypkg.heavy" not in sys.modules and "Thing" not in vars(lazypkg)
        thing = lazypkg.Thing
        heavy = sys.modules["lazypkg.heavy"]
        assert thing is heavy.Thing is lazypkg.renamed and lazypkg.heavy is heavy
        assert vars(lazypkg)["Thing"] is thing  # bound: later uses are plain attribute reads
        import json

        assert lazypkg.dumps is json.dumps  # an absolute module too
        with pytest.raises(AttributeError, match="module 'lazypkg' has no attribute 'nope'"):
            lazypkg.nope  # noqa: B018
    finally:
        for name in ("lazypkg", "lazypkg.heavy"):
            sys.modules.pop(name, None)
    with pytest.raises(ValueError, match=r"pkg: expected 'module:attr' or 'module' for \['a'\]"):
        lazy_exports("pkg", {"a": ".mod:", "b": ".mod:b"})
