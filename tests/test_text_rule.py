"""The one rule for text (tasks/text_rule.py): what it refuses and where it says it is, the
JSON-value walk, and the schema patterns that say the same thing as the Python check."""

from __future__ import annotations

import json
import math
import re

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from snowfire.tasks import (
    INT_MAX,
    INT_MIN,
    TEXT_PATTERN,
    WORD_PATTERN,
    WORDS_PATTERN,
    dotted,
    escaped,
    integral,
    text_fault,
    value_fault,
)
from snowfire.tasks.text_rule import SPACE_CLASS
from tests.helpers.fuzz import examples


@pytest.mark.parametrize(
    ("text", "fault"),
    [
        ("ok \ud83d", "character 4 is U+D83D, an unpaired UTF-16 surrogate, which UTF-8 cannot"),
        ("\udfff", "character 1 is U+DFFF, an unpaired UTF-16 surrogate"),
        ("ab\x00c\x00", "character 3 is U+0000 (NUL), which no text may hold"),
    ],
)
def test_a_refused_character_is_named_with_its_position(text, fault):
    assert text_fault(text).startswith(fault)


@pytest.mark.parametrize(
    "text",
    ["", "plain", "Treasury\x12s", "put \x08a", "\ufeffhi", "a\u2028b", "🙂\U0010ffff", "\ud7ff"],
)
def test_every_other_character_is_kept(text):
    """Controls in the released data (MRPC's U+0012, CoLA's U+0008), a BOM inside a text, the
    line separator, astral characters, the code point just below the surrogates."""
    assert text_fault(text) is None


@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
@settings(max_examples=examples(200))
def test_the_rule_is_exactly_what_utf8_cannot_encode_plus_nul(text):
    try:
        text.encode("utf-8")
        encodable = True
    except UnicodeEncodeError:
        encodable = False
    assert (text_fault(text) is None) == (encodable and "\x00" not in text)


@pytest.mark.parametrize(
    ("value", "path", "why"),
    [
        ({"texts": ["a", "b\ud83d"]}, ("texts", 1), "character 2 is U+D83D"),
        ({"a": {"b\x00": 1}}, ("a", "b\x00"), "its name: character 2 is U+0000"),
        ([1.5, float("nan")], (1,), "nan is not a finite number"),
        ({"x": [float("-inf")]}, ("x", 0), "-inf is not a finite number"),
        ({"seed": 2**63}, ("seed",), "an integer of 64 bits, outside the 64-bit range"),
        ({"seed": -(2**63) - 1}, ("seed",), "an integer of 64 bits, outside"),
        ({1: "a"}, (), "the key 1 is not a string"),
    ],
)
def test_a_value_that_breaks_the_rule_is_named_by_its_path(value, path, why):
    found, message = value_fault(value)
    assert found == path and message.startswith(why)


def test_the_largest_and_smallest_64_bit_integers_and_finite_floats_pass():
    assert value_fault([INT_MAX, INT_MIN, 1.7976931348623157e308, -0.0, True, None]) is None


def test_a_yaml_alias_is_walked_once():
    """A billion-laughs spec: 9**5 strings by expansion, a few containers by identity."""
    levels = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for name, prev in zip("bcde", "abcd", strict=True):
        levels.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    value = yaml.safe_load("\n".join(levels) + "\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e]")
    assert value_fault(value) is None  # returns at once: a walk of 9**6 strings would not


def test_deep_nesting_is_walked_without_recursion_in_linear_time():
    deep = ["\x00"]
    for _ in range(10**5):  # 100 times Python's recursion limit
        deep = [deep]
    path, _ = value_fault(deep)
    assert path == (0,) * 10**5 + (0,)


def test_a_path_and_its_message_keep_the_rule_themselves():
    assert dotted(("params", "hparams", "a\ud83db", 3)) == "params.hparams.a\\ud83db.3"
    assert escaped("x\x00y") == "x\\u0000y"
    json.dumps(dotted(("a\udc00",))).encode("utf-8")  # an answer can carry it


def test_integral_floats_are_json_schema_integers():
    assert [integral(v) for v in (2.0, -0.0, 2.5, True, "3", 2**70 * 1.0)] == [
        2,
        0,
        2.5,
        True,
        "3",
        2**70 * 1.0,
    ]
    assert type(integral(2.0)) is int and not isinstance(integral(float(2**70)), int)


def test_the_space_class_is_pythons_white_space():
    """The schemas' "word" and "text with a word" patterns use it; str.split splits on it."""
    spaces = {chr(c) for c in range(0x110000) if chr(c).isspace()}
    assert max(map(ord, spaces)) <= 0x3000
    assert {c for c in map(chr, range(0x3001)) if re.fullmatch(f"[{SPACE_CLASS}]", c)} == spaces


@given(st.text(alphabet=st.characters(codec="utf-8")))
@example("a\x00b")
@example(" \u3000\x1c")
@example("word")
@settings(max_examples=examples(200))
def test_the_schema_patterns_say_what_the_checks_do(text):
    """TEXT_PATTERN: the rule (surrogates aside, which a schema's strings cannot hold);
    WORDS_PATTERN: and a word after str.split; WORD_PATTERN: and exactly one word."""
    keeps = "\x00" not in text
    assert bool(re.fullmatch(TEXT_PATTERN.strip("^$"), text)) == keeps
    assert bool(re.fullmatch(WORDS_PATTERN.strip("^$"), text)) == (keeps and bool(text.split()))
    assert bool(re.fullmatch(WORD_PATTERN.strip("^$"), text)) == (keeps and text.split() == [text])


def test_a_float_past_float64_is_caught_as_json_reads_it():
    assert json.loads("1e400") == math.inf
    assert value_fault(json.loads('{"w": [1e400]}'))[0] == ("w", 0)
