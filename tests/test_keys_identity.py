"""The content key covers everything that changes the stored bytes, and nothing that does not:
one test per field through the real encoder identity, a moved `hf:DIR` keeping its key, and a
store of the older format refused on read and on write."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from snowfire.cache import IncompatibleStoreError, Store, encoder_id
from snowfire.extractor import ExtractConfig, TextInput, extract
from snowfire.extractor.hf import HFEncoder

TEXTS = [TextInput(("the", "man", "plays")), TextInput(("a", "dog"), ("the", "park"))]


def _pool(model_dir: Path, dtype: str = "float16", **kw) -> str:
    enc = HFEncoder(model_dir, name=str(model_dir), spec=f"hf:{model_dir}", **kw)
    return encoder_id(enc.identity, dtype)


@pytest.fixture
def copy_of(tiny_bert_dir, tmp_path):
    def make(name: str) -> Path:
        return Path(shutil.copytree(tiny_bert_dir, tmp_path / name))

    return make


def test_a_moved_or_renamed_model_folder_keeps_its_key(tiny_bert_dir, copy_of, tmp_path):
    moved = copy_of("elsewhere")
    assert _pool(moved) == _pool(tiny_bert_dir)
    store = Store(tmp_path / "store")
    for model in (tiny_bert_dir, moved):
        enc = HFEncoder(model, name=str(model), spec=f"hf:{model}")
        cfg = ExtractConfig(encoder=f"hf:{model}", store=str(store.path), progress=False)
        extract(enc, TEXTS, store, task=None, split=None, config=cfg, name=model.name)
    sets = store.list_featuresets()
    assert len(sets) == 2 and sets[0].encoder_id == sets[1].encoder_id
    assert len(list(store.path.glob("pools/*/segments/[!.]*"))) == 1  # nothing computed twice


def test_pair_encoding_and_dtype_change_the_key(tiny_bert_dir):
    joint = _pool(tiny_bert_dir)
    assert _pool(tiny_bert_dir, pair_encoding="separate") != joint
    assert _pool(tiny_bert_dir, dtype="float32") != joint


def test_the_precision_policy_changes_the_key(tiny_bert_dir):
    from transformers import AutoConfig

    from snowfire.extractor.hf import hf_identity

    config = AutoConfig.from_pretrained(tiny_bert_dir)
    ids = {
        precision: encoder_id(
            hf_identity(
                tiny_bert_dir,
                config,
                name="n",
                spec="s",
                pair_encoding="joint",
                max_length=64,
                precision=precision,
            ),
            "float16",
        )
        for precision in ("float32", "float16-autocast")
    }
    assert ids["float32"] != ids["float16-autocast"]
    # on this CPU the encoder runs in float32, and says so
    assert HFEncoder(tiny_bert_dir, name="n", spec="s").identity["precision"] == "float32"
    assert encoder_id(HFEncoder(tiny_bert_dir, name="n", spec="s").identity, "float16") == _pool(
        tiny_bert_dir
    )


def test_the_extractor_version_changes_the_key(tiny_bert_dir, monkeypatch):
    from snowfire import extractor

    before = _pool(tiny_bert_dir)
    monkeypatch.setattr(extractor.hf, "EXTRACTOR_VERSION", 2)
    assert _pool(tiny_bert_dir) != before


def test_weights_tokenizer_and_config_each_change_the_key(tiny_bert_dir, copy_of):
    import torch
    from transformers import BertModel

    base = _pool(tiny_bert_dir)
    weights = copy_of("weights")
    model = BertModel.from_pretrained(weights)
    with torch.no_grad():
        model.embeddings.word_embeddings.weight[7, 0] += 0.5
    model.save_pretrained(weights)
    assert _pool(weights) != base

    tokenizer = copy_of("tokenizer")
    cfg_path = tokenizer / "tokenizer_config.json"
    raw = json.loads(cfg_path.read_text())
    raw["do_lower_case"] = not raw.get("do_lower_case", True)  # other pieces for "The"
    cfg_path.write_text(json.dumps(raw))
    assert _pool(tokenizer) != base

    config = copy_of("config")
    raw = json.loads((config / "config.json").read_text())
    raw["layer_norm_eps"] = 1e-5  # changes every activation, not a weight file
    (config / "config.json").write_text(json.dumps(raw))
    assert _pool(config) != base


FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures"


def test_the_elmo_state_policy_changes_the_key():
    from snowfire.extractor.elmo import ElmoEncoder

    model = FIXTURES / "allennlp_elmo"
    if not model.is_dir():
        pytest.skip(f"ELMo fixtures not found in {FIXTURES}")
    fixed = ElmoEncoder.from_spec(str(model), state="fixed")
    stateful = ElmoEncoder.from_spec(str(model), state="stateful")
    assert encoder_id(fixed.identity, "float32") != encoder_id(stateful.identity, "float32")
    moved_label = dict(fixed.identity, spec="elmo:/another/path", name="x")
    assert encoder_id(moved_label, "float32") == encoder_id(fixed.identity, "float32")


def test_a_store_of_the_older_format_is_refused_on_read_and_on_write(tiny_bert_dir, tmp_path):
    store = Store(tmp_path / "old")
    enc = HFEncoder(tiny_bert_dir, name="tiny", spec="tiny")
    cfg = ExtractConfig(encoder=f"hf:{tiny_bert_dir}", store=str(store.path), progress=False)
    extract(enc, TEXTS, store, task=None, split=None, config=cfg)
    root = store.path / "zarr.json"
    meta = json.loads(root.read_text())
    meta["attributes"]["version"] = 1  # as a store written before the keys changed
    root.write_text(json.dumps(meta))
    before = {p: p.read_bytes() for p in store.path.rglob("*") if p.is_file()}
    message = r"written as snowfire store format 1, this snowfire reads and writes format 2"
    with pytest.raises(IncompatibleStoreError, match=message):
        Store(store.path).list_featuresets()
    with pytest.raises(IncompatibleStoreError, match="Run `snowfire migrate --store "):
        extract(enc, TEXTS, Store(store.path), task=None, split=None, config=cfg, name="more")
    assert {p: p.read_bytes() for p in store.path.rglob("*") if p.is_file()} == before
    meta["attributes"]["version"] = 0  # a format no migration starts from
    root.write_text(json.dumps(meta))
    with pytest.raises(IncompatibleStoreError, match="Extract again into a new store"):
        Store(store.path).list_featuresets()
