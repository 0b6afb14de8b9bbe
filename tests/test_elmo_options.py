"""ELMo options, weight layout and one LSTM step by hand; no fixtures needed (tiny configs)."""

import json

import h5py
import numpy as np
import pytest
import torch

from snowfire.extractor.elmo import ElmoBiLM, batch_to_ids, expected_shapes, parse_options
from snowfire.extractor.elmo.lstm import LstmCellWithProjection

# The released original model's options file (elmo_2x4096_512_2048cnn_2xhighway), verbatim.
ORIGINAL = json.loads(
    '{"lstm": {"use_skip_connections": true, "projection_dim": 512, "cell_clip": 3, '
    '"proj_clip": 3, "dim": 4096, "n_layers": 2}, "char_cnn": {"activation": "relu", '
    '"filters": [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]], '
    '"n_highway": 2, "embedding": {"dim": 16}, "n_characters": 262, '
    '"max_characters_per_token": 50}}'
)
TINY = {
    "lstm": {
        "use_skip_connections": True,
        "projection_dim": 6,
        "cell_clip": 3,
        "proj_clip": 3,
        "dim": 10,
        "n_layers": 2,
    },
    "char_cnn": {
        "activation": "tanh",
        "filters": [[1, 2], [2, 3], [7, 4]],
        "n_highway": 1,
        "embedding": {"dim": 3},
        "n_characters": 262,
        "max_characters_per_token": 50,
    },
}


def test_released_model_layout():
    opt = parse_options(ORIGINAL)
    assert opt.n_filters == 2048 and opt.projection_dim == 512 and opt.cell_dim == 4096
    shapes = expected_shapes(opt)
    assert shapes["char_embed"] == (261, 16)
    assert shapes["CNN/W_cnn_6"] == (1, 7, 16, 1024)
    assert shapes["CNN_high_1/W_carry"] == (2048, 2048)
    assert shapes["CNN_proj/W_proj"] == (2048, 512)
    assert shapes["RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell/W_0"] == (1024, 16384)
    assert shapes["RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_P_0"] == (4096, 512)
    assert len(shapes) == 1 + 2 * 7 + 2 * 4 + 2 + 2 * 2 * 3
    assert parse_options(opt.to_json()) == opt


def test_random_weights_round_trip(tmp_path):
    """A random file in the HDF5 layout loads, and the biLM runs with the expected shapes."""
    opt = parse_options(TINY)
    rng = np.random.default_rng(0)
    path = tmp_path / "w.hdf5"
    with h5py.File(path, "w") as f:
        for key, shape in expected_shapes(opt).items():
            f[key] = rng.normal(size=shape).astype(np.float32)
        f["softmax/W"] = np.zeros((5, 6), dtype=np.float32)  # unused keys are ignored
    opts_path = tmp_path / "o.json"
    opts_path.write_text(json.dumps(TINY))
    model = ElmoBiLM.from_files(opts_path, path)
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(
            model.token_embedder.char_embedding.weight[1:].detach(), f["char_embed"]
        )
    with torch.inference_mode():
        layers, mask, state = model(batch_to_ids([["a", "b"], ["c"]]))
    assert layers.shape == (3, 2, 4, 12) and mask.tolist() == [[True] * 4, [True] * 3 + [False]]
    assert state.h.shape == (2, 2, 2, 6) and state.c.shape == (2, 2, 2, 10)
    assert layers[:, 1, 3].eq(0).all()


def test_one_lstm_step_by_hand():
    """TF LSTMCell: [i, j, f, o] = [x, h] W_0 + B; forget bias +1; clip c, project, clip h."""
    opt = parse_options(TINY)
    p, c = opt.projection_dim, opt.cell_dim
    rng = np.random.default_rng(1)
    w0 = rng.normal(size=(2 * p, 4 * c)).astype(np.float32)
    b = rng.normal(size=4 * c).astype(np.float32)
    wp = rng.normal(size=(c, p)).astype(np.float32)
    x, h0 = rng.normal(size=(1, p)), rng.normal(size=(1, p))
    c0 = rng.normal(size=(1, c))
    z = np.concatenate([x, h0], axis=1) @ w0 + b
    i, j, f, o = np.split(z, 4, axis=1)

    def sig(v):
        return 1 / (1 + np.exp(-v))

    c1 = np.clip(sig(f + 1.0) * c0 + sig(i) * np.tanh(j), -3, 3)
    h1 = np.clip((sig(o) * np.tanh(c1)) @ wp, -3, 3)

    cell = LstmCellWithProjection(opt)
    cell.load_tf(w0, b, wp)

    def t(a):
        return torch.tensor(a, dtype=torch.float32)

    with torch.no_grad():
        out, h, c_new = cell(t(x)[:, None], torch.tensor([1]), t(h0), t(c0), reverse=False)
    np.testing.assert_allclose(out[0, 0].numpy(), h1[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(h.numpy(), h1, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(c_new.numpy(), c1, rtol=1e-5, atol=1e-5)


def test_options_value_checks():
    bad = json.loads(json.dumps(TINY))
    bad["char_cnn"]["activation"] = "gelu"
    with pytest.raises(ValueError, match=r"activation: expected one of \('relu', 'tanh'\)"):
        parse_options(bad, "opts.json")
    bad = json.loads(json.dumps(TINY))
    bad["char_cnn"]["filters"] = [[1, 2], [3]]
    with pytest.raises(ValueError, match=r"'char_cnn.filters' must be a list of \[width, n\]"):
        parse_options(bad)
