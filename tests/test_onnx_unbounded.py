"""An unbounded key/value cache in ONNX: the default streaming softmax attention and RSA (``cache_size=None``).

The step graph takes each layer's cache (B, H, T, hs) with a dynamic length T and returns it one token
longer; the served model keeps each series' cache as its own array and runs the series of one length
together. A softmax transformer and an RSA model with the default cache must serve ``update`` over 100
steps and ``predict(df=...)`` as the model does (the checks of tests/test_onnx_stream.py), also when the
series' caches have different lengths, and in a process where torch cannot be imported.
"""
from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

import onnxruntime  # noqa: E402

from tests.conftest import serve_without_torch  # noqa: E402
import tsrsa  # noqa: E402
from tsrsa import RSAForecaster, TransformerForecaster  # noqa: E402
from test_onnx import torchlib_registry_built_once  # noqa: E402,F401 - one torchlib table for the module
from test_onnx_stream import (  # noqa: E402
    H, L, P, SMALL, TINY, assert_streamed_frames_equal_the_models, assert_update_over_100_steps_equals_the_models,
    largest_error, panel_frame,
)

pytestmark = pytest.mark.slow  # every test here reads a torch.onnx export (3-14 s of CPU each)

STREAMS = {  # the default streaming configurations: every past key and value kept
    "softmax": lambda: TransformerForecaster(h=H, input_size=L, stream=True, patch_len=P, **TINY, **SMALL),
    "rsa": lambda: RSAForecaster(h=H, input_size=L, stream=True, patch_len=P, rem={"dilations": 2},
                                 loss="quantile", quantiles=[0.1, 0.9], **TINY, **SMALL),
}


@pytest.fixture(scope="module", params=list(STREAMS))
def streaming(request, tmp_path_factory):
    """A streaming model of each kind fitted on the first 118 steps, its export's path, and the frame."""
    df = panel_frame()
    model = STREAMS[request.param]().fit(df.groupby("unique_id").head(118))
    return model, model.to_onnx(tmp_path_factory.mktemp("unbounded") / f"{request.param}.onnx"), df


def test_update_over_100_steps_equals_the_models(streaming):
    assert_update_over_100_steps_equals_the_models(*streaming)


def test_streaming_a_frame_and_new_series_equal_the_models(streaming):
    assert_streamed_frames_equal_the_models(*streaming)


def test_the_cache_is_a_graph_input_of_growing_length(streaming):
    """The graph's cache inputs have a dynamic token axis; the .npz holds each series' whole cache, the model's."""
    fitted, path, _ = streaming
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    shapes = {i.name: i.shape for i in session.get_inputs()}
    assert isinstance(shapes["state.blocks.0.k"][2], str) and shapes["state.blocks.0.k"][3] == 2
    held = fitted.memory_.groups[0].state.blocks[0]
    held = getattr(held, "branch", held)  # RSA: its softmax branch's cache
    rows = fitted.memory_.groups[0].rows
    assert len(rows) == 3 and held.k.shape == (3, 4, 118 // P, 2)  # every token of 118 steps, 4 heads
    with np.load(f"{path}.npz") as arrays:
        k, tokens, init = arrays["state.blocks.0.k"], arrays["tokens"], arrays["init.blocks.0.k"]
    assert (tokens == 118 // P).all() and init.shape == (1, 4, 0, 2)
    assert k.shape == (4, 3 * (118 // P), 2)  # the series one after another along the token axis
    served = tsrsa.load_onnx(path, threads=1)
    for i, row in enumerate(rows):
        np.testing.assert_array_equal(served.state.states["blocks.0.k"][row][0], held.k[i].numpy())


def test_series_whose_caches_differ_in_length_equal_the_models(streaming):
    """Series updated by different numbers of steps hold caches of different lengths; the served model runs each
    length apart and forecasts as the model does, and its caches grow by one token per completed patch."""
    fitted, path, df = streaming
    model, served = copy.deepcopy(fitted), tsrsa.load_onnx(path, threads=1)
    scale = pd.Series(served.memory.scale, index=served.memory.ids)
    later = df.groupby("unique_id").nth(list(range(118, 200)))
    for steps in ({"s0": 9, "s1": 2, "s2": 4}, {"s0": 3, "s1": 14, "s2": 5}, {"s0": 6, "s1": 6, "s2": 6}):
        chunk = pd.concat([later[later["unique_id"] == sid].head(n) for sid, n in steps.items()])
        later = later.drop(chunk.index)
        model.update(chunk)
        served.update(chunk)
        assert largest_error(model.predict(), served.predict(), scale) <= 1e-4
    lengths = served.state.lengths
    assert list(lengths) == [(118 + n) // P for n in (18, 22, 15)] and len(set(lengths)) == 3
    assert sorted(len(g.rows) for g in model.memory_.groups) == [1, 1, 1]  # the model's groups: one per length


@pytest.mark.processes
@pytest.mark.parametrize("streaming", ["rsa"], indirect=True)
def test_an_unbounded_cache_is_served_where_torch_cannot_be_imported(streaming, tmp_path):
    fitted, path, df = streaming
    model = copy.deepcopy(fitted)
    new = df.groupby("unique_id").nth(list(range(118, 131)))  # 13 steps: three tokens and one waiting
    new.to_pickle(tmp_path / "new.pkl")
    run = serve_without_torch(tmp_path, """
        served.update(pd.read_pickle(sys.argv[2])).predict().to_pickle(sys.argv[3])
        """, path, tmp_path / "new.pkl", tmp_path / "out.pkl")
    assert run.returncode == 0, run.stderr
    scale = pd.Series(model.memory_.scale, index=model.memory_.ids)
    assert largest_error(model.update(new).predict(), pd.read_pickle(tmp_path / "out.pkl"), scale) <= 1e-4
