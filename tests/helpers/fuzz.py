"""What the property tests (hypothesis) share: their budget, and the hazards they plant.

Budget: `make test` loads the profile "snowfire" (tests/conftest.py): every property test runs
`examples(n)` cases, derandomized (the same cases each run, so a failure is a failure, not
bad luck), and the whole property suite stays under a minute. SNOWFIRE_HYPOTHESIS=nightly
loads "nightly": 20 times the cases, drawn afresh each run, for a nightly or manual run:

    SNOWFIRE_HYPOTHESIS=nightly .venv/bin/python -m pytest tests/test_fuzz_*.py

Hazards: the inputs issue 45 lists, which hand-written cases had missed, as strategies: the
characters the text rule refuses, the other odd ones it keeps (controls, U+FEFF, U+2028,
combining marks), line ends, and the JSON values a parser reads but JSON has not.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

PROFILE_ENV = "SNOWFIRE_HYPOTHESIS"
#: The default profile's max_examples: examples(n) is n under it, proportionally more under
#: another (nightly: 20x).
UNIT = 100


def register_profiles() -> str:
    """Register "snowfire" and "nightly" and return the name $SNOWFIRE_HYPOTHESIS picks."""
    import os

    common = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
    settings.register_profile(
        "snowfire", max_examples=UNIT, derandomize=True, database=None, **common
    )
    settings.register_profile("nightly", max_examples=20 * UNIT, **common)
    return os.environ.get(PROFILE_ENV, "snowfire")


def examples(n: int) -> int:
    """A test's case budget: `n` under `make test`, scaled by the loaded profile."""
    return max(1, n * settings.default.max_examples // UNIT)


#: Characters the text rule refuses (tasks/text_rule.py).
REFUSED = st.sampled_from(["\x00", "\ud83d", "\udc00", "\udfff"])
#: Characters it keeps that parsers and tokenizers treat specially.
ODD = st.sampled_from(
    ["\x12", "\x08", "\x7f", "\x85", "\ufeff", "\u2028", "\u200b", "\u0301", "\r", "\t", "é", "🙂"]
)
#: Line ends, mixed within a file.
LINE_ENDS = st.sampled_from(["\n", "\r\n", "\r", "\n\n"])
#: Numbers Python's json reads that JSON has not, and integers past 64 bits.
BAD_NUMBERS = st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "-1e400", str(2**64)])


def texts(allow_refused: bool = True, max_size: int = 12) -> st.SearchStrategy[str]:
    """Short texts of plain words mixed with odd characters (and refused ones when asked)."""
    words = st.sampled_from(["the", "dog", "runs", "a", "b", "x", ",", "Café"])
    parts = [words, words, ODD, st.just(" ")] + ([REFUSED] if allow_refused else [])
    return st.lists(st.one_of(parts), min_size=1, max_size=max_size).map("".join)
