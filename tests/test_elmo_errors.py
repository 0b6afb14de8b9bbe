"""Bad ELMo inputs fail at the boundary with messages naming what is wrong."""

import json
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest

from snowfire.extractor.base import TextInput
from snowfire.extractor.elmo import ElmoBiLM, ElmoEncoder, ElmoFileError, read_options, read_weights

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures"
MODEL = FIXTURES / "allennlp_elmo"

pytestmark = pytest.mark.skipif(not MODEL.is_dir(), reason=f"ELMo fixtures not found in {FIXTURES}")

LSTM_KEY = "RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell/W_0"


@pytest.fixture()
def weights(tmp_path) -> Path:
    path = tmp_path / "lm_weights.hdf5"
    shutil.copy(MODEL / "lm_weights.hdf5", path)
    path.chmod(0o644)  # the fixtures are read-only
    return path


def write_options(tmp_path, edit) -> Path:
    raw = json.loads((MODEL / "options.json").read_text())
    edit(raw)
    path = tmp_path / "options.json"
    path.write_text(json.dumps(raw))
    return path


def test_missing_weight_key(weights):
    with h5py.File(weights, "a") as f:
        del f[LSTM_KEY]
    with pytest.raises(ElmoFileError, match=rf"missing weight '{LSTM_KEY}' \(expected shape"):
        ElmoBiLM.from_files(MODEL / "options.json", weights)


def test_wrong_weight_shape(weights):
    with h5py.File(weights, "a") as f:
        del f["CNN_proj/W_proj"]
        f["CNN_proj/W_proj"] = np.zeros((124, 17), dtype=np.float32)
    with pytest.raises(ValueError) as info:
        read_weights(weights, read_options(MODEL / "options.json"))
    assert str(info.value) == (
        f"{weights}: weight 'CNN_proj/W_proj' has shape (124, 17), expected (124, 16)"
    )


def test_options_that_disagree_with_the_weights(tmp_path):
    opts = write_options(tmp_path, lambda r: r["lstm"].update(dim=32))
    with pytest.raises(ElmoFileError, match=r"'RNN_0/.*/Cell0/LSTMCell/W_0' has shape \(32, 256\)"):
        ElmoBiLM.from_files(opts, MODEL / "lm_weights.hdf5")


def test_unknown_options_field(tmp_path):
    path = write_options(tmp_path, lambda r: r["lstm"].update(peepholes=True))
    with pytest.raises(ElmoFileError, match=r"options.json: unknown field 'lstm.peepholes'"):
        read_options(path)
    path = write_options(tmp_path, lambda r: r.update(vocab="x"))
    with pytest.raises(ElmoFileError, match=r"unknown field 'vocab'"):
        read_options(path)


def test_missing_options_field(tmp_path):
    path = write_options(tmp_path, lambda r: r["char_cnn"]["embedding"].pop("dim"))
    with pytest.raises(
        ElmoFileError, match=r"options.json: missing field 'char_cnn.embedding.dim'"
    ):
        read_options(path)
    path = write_options(tmp_path, lambda r: r.pop("lstm"))
    with pytest.raises(ElmoFileError, match=r"missing field 'lstm'"):
        read_options(path)


def test_bad_options_values(tmp_path):
    path = write_options(tmp_path, lambda r: r["lstm"].update(n_layers="2"))
    with pytest.raises(ElmoFileError, match=r"field 'lstm.n_layers' must be an int, got '2'"):
        read_options(path)
    path = write_options(tmp_path, lambda r: r["char_cnn"].update(n_characters=261))
    with pytest.raises(ElmoFileError, match=r"n_characters: expected 262 .* got 261"):
        read_options(path)


def test_bilm_tf_training_fields_are_accepted(tmp_path):
    path = write_options(tmp_path, lambda r: r.update(bidirectional=True, dropout=0.1))
    assert read_options(path) == read_options(MODEL / "options.json")


def test_empty_sentence_names_the_example():
    encoder = ElmoEncoder.from_spec(str(MODEL))
    with pytest.raises(ValueError, match=r"^example 5: text a is empty"):
        encoder.prepare(5, TextInput(()))
    with pytest.raises(ValueError, match=r"^example 2: text b is empty"):
        encoder.prepare(2, TextInput(("a",), ()))


def test_bad_specs(tmp_path):
    with pytest.raises(ValueError, match="expected 'OPTIONS.json,WEIGHTS.hdf5' or an existing"):
        ElmoEncoder.from_spec(str(tmp_path / "nowhere"))
    shutil.copy(MODEL / "options.json", tmp_path / "options.json")
    with pytest.raises(ValueError, match=r"found \['options.json'\] and \[\]"):
        ElmoEncoder.from_spec(str(tmp_path))
    with pytest.raises(ValueError, match="state must be one of"):
        ElmoEncoder.from_spec(str(MODEL), state="warm")
