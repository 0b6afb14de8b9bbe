"""Acceptance: `snowfire extract --encoder minilm --task sst2 --split dev` stores 872 x 7 x 384,
and the service returns it equal (to float16 precision) to a plain transformers forward pass."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from snowfire.api import Settings
from snowfire.cache import RemoteStore, Store
from snowfire.cli.main import main as snowfire
from tests.helpers import DATA, need_shared
from tests.helpers.service import Server

pytestmark = pytest.mark.slow


def test_sst2_dev_through_the_service_equals_plain_transformers(tmp_path):
    from transformers import AutoModel, AutoTokenizer

    from snowfire.extractor import minilm_dir
    from snowfire.tasks import read_split

    data = need_shared(DATA / "sst2")
    store = tmp_path / "store"
    assert (
        snowfire(
            [
                "extract",
                "--encoder",
                "minilm",
                "--task",
                "sst2",
                "--split",
                "dev",
                "--data",
                str(data.parent),
                "--store",
                str(store),
                "--quiet",
            ]
        )
        == 0
    )
    (info,) = Store(store).list_featuresets()
    assert (info.num_examples, info.num_layers, info.dim, info.dtype) == (872, 7, 384, "float16")

    examples = read_split("sst2", data.parent, "dev")
    pick = sorted(np.random.default_rng(0).choice(872, size=48, replace=False).tolist())
    with Server(Settings(store=store)) as server:
        got = RemoteStore(server.url).read(info.id, indices=pick)
    tok = AutoTokenizer.from_pretrained(minilm_dir())
    model = AutoModel.from_pretrained(minilm_dir()).eval()
    for j, i in enumerate(pick):
        enc = tok(list(examples[i].words_a), is_split_into_words=True, return_tensors="pt")
        with torch.no_grad():
            states = model(**enc, output_hidden_states=True).hidden_states
        want = torch.stack(states, dim=2)[0].numpy()  # (S, 7, 384)
        have = got.example(j).astype(np.float32)
        assert have.shape == want.shape
        # float16 keeps 11 significant bits: |error| <= |x| * 2**-11 (+ float32 batch noise)
        np.testing.assert_allclose(have, want, rtol=2**-10, atol=1e-3)
