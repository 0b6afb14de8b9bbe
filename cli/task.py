"""`snowfire task check SPEC`: read every split of a task, check every row, print what is there.

SPEC is a spec file (.yaml, .yml, .json; see tasks/spec_file.py) or a registered task's name
(with --data). Exit 0 and the report (tasks.check_task), or exit 1 and the error naming the
field, or the file, line and column of the first bad row. With --encoder (default: the bundled
minilm; --encoder none: words only), the texts' lengths in the encoder's pieces and how many
exceed its window (they are windowed, not cut).
"""

from __future__ import annotations

import argparse
import sys


def add_parser(sub) -> None:
    t = sub.add_parser("task", help="a task described by a spec file: check it before training")
    commands = t.add_subparsers(dest="task_command", required=True)
    c = commands.add_parser(
        "check",
        help="read every split, check every row, print counts, labels, lengths and "
        "duplicates (exit 1 on a malformed spec or row)",
    )
    c.add_argument("spec", help="a spec file (.yaml, .yml, .json) or a registered task's name")
    c.add_argument("--data", default=None, help="data directory (a registered task's files)")
    c.add_argument(
        "--encoder",
        default="minilm",
        help="count pieces and windows of this encoder (none: words only)",
    )
    c.add_argument("--json", action="store_true", help="print the findings as JSON")
    c.set_defaults(func=run)


def _pieces(spec: str):
    """(examples) -> (pieces per example, window): the encoder's tokenizer on each example as
    extraction reads it (a pair joint, with its special tokens)."""
    from snowfire.extractor import load_encoder
    from snowfire.options import use_threads

    use_threads()
    encoder = load_encoder(spec)
    tokenizer = getattr(encoder, "tokenizer", None)
    window: int | None = getattr(encoder, "max_length", None)  # a BERT-family encoder's
    if tokenizer is None or window is None:
        return None  # ELMo reads characters of whole words: no pieces, no window

    def count(examples) -> tuple[list[int], int]:
        counts = [
            len(
                tokenizer(
                    list(e.words_a),
                    None if e.words_b is None else list(e.words_b),
                    is_split_into_words=True,
                    verbose=False,
                )["input_ids"]
            )
            for e in examples
        ]
        return counts, window

    return count


def run(args: argparse.Namespace) -> int:
    import json

    from snowfire.tasks import check_task, resolve_task

    try:
        spec = resolve_task(args.spec)
        pieces = None if args.encoder == "none" else _pieces(args.encoder)
        report = check_task(spec, args.data, pieces=pieces)
    except (ValueError, OSError, ImportError) as err:
        print(f"snowfire task check: error: {err}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"spec": report.spec.to_json()} | report.findings, indent=2))
    else:
        print("\n".join(report.lines()))
    return 0
