"""The one rule for text, applied wherever text comes in: REST bodies (api/), data files and
`--input` files (this package's readers), task spec files and inline specs, job params, and
Python callers of `extractor.extract`.

A text may hold any character UTF-8 can encode, except NUL. Refused, with where:

    U+D800..U+DFFF  an unpaired surrogate: JSON's "\\ud83d" escape alone, or a JavaScript
                    string cut in the middle of an emoji. UTF-8 cannot encode it, so such a
                    text can be neither hashed into a content key nor stored.
    U+0000 (NUL)    no text holds it; C strings end at it, and tokenizers drop it silently, so
                    the features would not say what was sent.

Kept as given: every other character, control characters included (MRPC's and STS-B's U+0012,
CoLA's U+0008 are in the released files; BERT-family tokenizers drop them), a U+FEFF inside a
line (only a byte-order mark at the very start of a file is removed), and white space, which
separates words. Nothing is repaired: a refused text is the caller's to fix, and the error
says where (REST: the field and the character; files: file, line, column).

`value_fault` applies the rule to every string of a parsed JSON or YAML value, keys included,
and refuses what JSON cannot carry as a number: NaN or Infinity (Python's json module reads
them; RFC 8259 has none), a float beyond float64 (1e400 reads as inf), an integer past 64 bits
(no index, layer, seed or count is one). It walks with its own stack (no recursion limit) and
visits a container once (a YAML alias names the same object again).
"""

from __future__ import annotations

import math
import re
from typing import Any

#: The code points the rule refuses (inclusive ranges): NUL, the surrogates.
REFUSED_RANGES = ((0x0000, 0x0000), (0xD800, 0xDFFF))
#: The same as the body of a regex character class, in \\uXXXX escapes.
REFUSED_CLASS = "".join(f"\\u{lo:04x}-\\u{hi:04x}" for lo, hi in REFUSED_RANGES)
#: The rule as a JSON-Schema (ECMA-262) pattern's class body, which the service's schemas say:
#: NUL. A schema's string is a sequence of Unicode scalar values, which holds no surrogate, and
#: generators that read patterns (hypothesis) mishandle a surrogate range in a class; the
#: service refuses a lone surrogate all the same (api/body.py).
SCHEMA_REFUSED_CLASS = "\\u0000"
#: What the rule refuses, as one character class (a C-level search per text).
REFUSED = re.compile(f"[{REFUSED_CLASS}]")
#: White space (what str.split splits words on, Python's str.isspace) as the body of a regex
#: character class, for schemas that say "a word" or "not blank"; no character above U+3000
#: is white space (tests/test_text_rule.py checks every code point).
SPACE_CLASS = "".join(f"\\u{c:04x}" for c in range(0x3001) if chr(c).isspace())
_N, _S = SCHEMA_REFUSED_CLASS, SPACE_CLASS
#: JSON-Schema patterns of the rule: any string; a text with at least one word (a character
#: that is not white space); one word (no white space).
TEXT_PATTERN = f"^[^{_N}]*$"
WORDS_PATTERN = f"^[^{_N}]*[^{_N}{_S}][^{_N}]*$"
WORD_PATTERN = f"^[^{_N}{_S}]+$"
#: The integers a JSON value may hold: int64's range.
INT_MIN, INT_MAX = -(2**63), 2**63 - 1


def char_fault(char: str) -> str:
    """Why the rule refuses `char` (one of REFUSED's characters)."""
    code = f"U+{ord(char):04X}"
    if char == "\x00":
        return f"{code} (NUL), which no text may hold"
    return f"{code}, an unpaired UTF-16 surrogate, which UTF-8 cannot encode"


def text_fault(text: str) -> str | None:
    """None when `text` keeps the rule, else where and why not: "character 4 is U+D83D, an
    unpaired UTF-16 surrogate, which UTF-8 cannot encode" (1-based)."""
    found = REFUSED.search(text)
    if found is None:
        return None
    return f"character {found.start() + 1} is {char_fault(found.group())}"


def _number_fault(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value!r} is not a finite number (NaN, Infinity, or beyond float64 as 1e400 is)"
    if isinstance(value, int) and not INT_MIN <= value <= INT_MAX:
        return (
            f"an integer of {value.bit_length()} bits, outside the 64-bit range [-2**63, 2**63 - 1]"
        )
    return None


def value_fault(value: Any) -> tuple[tuple[str | int, ...], str] | None:
    """The first place in a parsed JSON/YAML `value` that breaks the rule, as (path, why):
    path the keys and list positions leading to it (("texts", 0) for body["texts"][0]); a key
    that breaks it is named by its own path. None when the whole value keeps it.

    Linear in the value's size whatever its depth: each item on the stack holds a link to its
    parent's place, and a path is spelled out only for the fault."""
    # each item's place: (parent place, key), or None at the root
    stack: list[tuple[tuple | None, Any]] = [(None, value)]
    seen: set[int] = set()
    while stack:
        place, item = stack.pop()
        if isinstance(item, str):
            fault = text_fault(item)
            if fault:
                return _path(place), fault
            continue
        fault = _number_fault(item)
        if fault:
            return _path(place), fault
        if isinstance(item, (dict, list, tuple)):
            if id(item) in seen:
                continue
            seen.add(id(item))
        if isinstance(item, dict):
            children = []
            for key, child in item.items():
                if not isinstance(key, str):
                    return _path(place), f"the key {key!r} is not a string"
                fault = text_fault(key)
                if fault:
                    return _path((place, key)), f"its name: {fault}"
                children.append(((place, key), child))
            stack.extend(reversed(children))
        elif isinstance(item, (list, tuple)):
            stack.extend(((place, i), child) for i, child in reversed(list(enumerate(item))))
    return None


def _path(place: tuple | None) -> tuple[str | int, ...]:
    keys = []
    while place is not None:
        place, key = place
        keys.append(key)
    return tuple(reversed(keys))


def integral(value: Any) -> Any:
    """JSON Schema's integer is any number without a fractional part: 2.0 is the integer 2
    (a JSON encoder may write either). An integral float within int64 becomes that int;
    booleans, strings, 2.5 and the rest stay what they are (for a strict check to refuse)."""
    if isinstance(value, float) and value.is_integer() and INT_MIN <= value <= INT_MAX:
        return int(value)
    return value


def dotted(path: tuple[str | int, ...]) -> str:
    """A value's path as the service names fields: texts.0, params.hparams.x (a refused
    character of a key written as its escape, \\ud83d, so the message itself keeps the rule)."""
    return ".".join(escaped(str(p)) for p in path)


def escaped(text: str) -> str:
    """`text` with each character the rule refuses written as its \\uXXXX escape."""
    return REFUSED.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
