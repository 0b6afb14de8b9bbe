"""Where a sentence's LSTM state comes from: the two policies of `ElmoEncoder`.

* stateful (the reference, bilm-tf and AllenNLP): each batch row's final (h, c) becomes the
  initial state of the same row in the next batch (`CarriedState`). The output for a sentence
  then depends on which sentences ran before it in that row.
* fixed: every sentence starts from one recorded state, the state after reading
  `WARMUP_SENTENCES` (a constant) from zero, broadcast to every row (`warmup_state`). The output
  for a sentence depends on nothing else, so it can be cached and batched freely, while the
  LSTM still starts from a state like the ones it saw in training rather than from zeros.
"""

from __future__ import annotations

import hashlib
import json

import torch

from .bilm import ElmoBiLM
from .chars import batch_to_ids
from .lstm import LstmState

# Ordinary English, tokenised the way the tasks' data is; changing it changes `warmup_sha256`.
WARMUP_SENTENCES: tuple[str, ...] = (
    "The committee met on Tuesday to discuss the budget for next year .",
    "She said the results were better than expected , but more work is needed .",
    "In the morning , the children walked to school along the river .",
    "It was a long film , and most of the people in the audience enjoyed it .",
)


def warmup_sha256() -> str:
    """sha256 of the canonical JSON of the warm-up sentences (recorded in the identity)."""
    text = json.dumps(list(WARMUP_SENTENCES), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@torch.inference_mode()
def warmup_state(bilm: ElmoBiLM, device: torch.device | str = "cpu") -> LstmState:
    """The state (one row) after reading the warm-up sentences one by one from zero state.

    Returns h (2, n, 1, P), c (2, n, 1, C); the stateful reference carries the same state
    from one sentence to the next in a batch of one.
    """
    state = bilm.zero_state(1, device)
    for sentence in WARMUP_SENTENCES:
        ids = batch_to_ids([sentence.split()]).to(device)  # (1, T+2, C)
        _, _, state = bilm(ids, state)
    return state


def broadcast_state(state: LstmState, batch_size: int) -> LstmState:
    """A one-row state repeated for `batch_size` rows (a view, no copy)."""
    h = state.h.expand(-1, -1, batch_size, -1)  # (2, n, B, P)
    c = state.c.expand(-1, -1, batch_size, -1)  # (2, n, B, C)
    return LstmState(h, c)


class CarriedState:
    """The reference's per-row state carried across batches (docs/elmo.md, "State policies").

    It starts at zero. A batch of B rows uses rows 0..B-1; a batch larger than any before gets
    zero state for its new rows; rows beyond a smaller batch keep theirs untouched. Rows that
    are all padding keep their state (the biLM returns it unchanged).
    """

    def __init__(self, bilm: ElmoBiLM, device: torch.device | str = "cpu") -> None:
        self._bilm = bilm
        self._device = device
        self._state: LstmState | None = None

    def reset(self) -> None:
        """Back to zero state, like AllenNLP's `reset_states()`."""
        self._state = None

    def take(self, batch_size: int) -> LstmState:
        """Initial state for a batch of `batch_size` rows."""
        old = self._state
        if old is None:
            self._state = self._bilm.zero_state(batch_size, self._device)
        elif batch_size > old.batch_size:
            extra = self._bilm.zero_state(batch_size - old.batch_size, self._device)
            h = torch.cat([old.h, extra.h], dim=2)  # (2, n, B, P)
            c = torch.cat([old.c, extra.c], dim=2)  # (2, n, B, C)
            self._state = LstmState(h, c)
        assert self._state is not None  # old, grown or new
        return self._state.rows(slice(0, batch_size))

    def put(self, new: LstmState) -> None:
        """Store the state after a batch into its first rows."""
        assert self._state is not None and new.batch_size <= self._state.batch_size
        b = new.batch_size
        h = torch.cat([new.h, self._state.h[:, :, b:]], dim=2)  # (2, n, B_max, P)
        c = torch.cat([new.c, self._state.c[:, :, b:]], dim=2)  # (2, n, B_max, C)
        self._state = LstmState(h, c)
