"""Fast-weight attention in ONNX: the step of ``attention="fast_weight"`` with the delta rule (advanced token
by token in the graph, without the chunked form's triangular solve) and with the sum rule.

The token-by-token step must equal the layer's own ``stream`` (the chunked WY form) in torch, and a
streaming model of each rule must serve ``update`` over 100 steps and ``predict(df=...)`` as the model
does (the checks of tests/test_onnx_stream.py).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

from tsrsa import TransformerForecaster  # noqa: E402
from tsrsa.nn.fast_weight import FastWeightAttention  # noqa: E402
from tsrsa.serving.onnx_layers import DeltaRuleLayer, exportable_layer  # noqa: E402
from test_onnx import torchlib_registry_built_once  # noqa: E402,F401 - one torchlib table for the module
from test_onnx_stream import (  # noqa: E402
    H, L, P, SMALL, TINY, assert_streamed_frames_equal_the_models, assert_update_over_100_steps_equals_the_models,
    panel_frame,
)

pytestmark = pytest.mark.slow  # every test here reads a torch.onnx export (3-14 s of CPU each)

STREAMS = {
    "delta": lambda: TransformerForecaster(h=H, input_size=L, attention="fast_weight", stream=True, patch_len=P,
                                           loss="quantile", quantiles=[0.1, 0.9], **TINY, **SMALL),
    "sum": lambda: TransformerForecaster(h=H, input_size=L, attention="fast_weight", stream=True, patch_len=P,
                                         attention_options={"update": "sum", "feature_map": "elu"}, **TINY, **SMALL),
}


@pytest.fixture(scope="module", params=list(STREAMS))
def streaming(request, tmp_path_factory):
    """A streaming model of each rule fitted on the first 118 steps, its export's path, and the frame."""
    df = panel_frame()
    model = STREAMS[request.param]().fit(df.groupby("unique_id").head(118))
    return model, model.to_onnx(tmp_path_factory.mktemp("fast") / f"{request.param}.onnx"), df


def test_update_over_100_steps_equals_the_models(streaming):
    assert_update_over_100_steps_equals_the_models(*streaming)


def test_streaming_a_frame_and_new_series_equal_the_models(streaming):
    assert_streamed_frames_equal_the_models(*streaming)


def test_the_graph_carries_the_fast_weights(streaming):
    fitted, path, _ = streaming
    layer = fitted.network_.blocks[0].attn
    with np.load(f"{path}.npz") as arrays:
        names = {name for name in arrays.files if name.startswith("state.blocks.0.")}
        weights = arrays["state.blocks.0.fast_weight"]
    expected = {"state.blocks.0.fast_weight"} | ({"state.blocks.0.k_sum"} if layer.update == "sum" else set())
    assert names == expected
    assert weights.shape == (3, 4, layer.n_features, 2) and np.abs(weights).max() > 0  # (S, H, d_φ, d)


@pytest.mark.parametrize("feature_map", ["dpfp", "elu"])
def test_the_token_by_token_delta_rule_equals_the_chunked_stream(feature_map):
    """``DeltaRuleLayer.stream`` (the exported step) against the layer's ``stream`` (the chunked WY form, its
    triangular solve) over blocks of 1 to 5 tokens, whatever the chunk size."""
    torch.manual_seed(0)
    layer = FastWeightAttention(8, 2, causal=True, feature_map=feature_map, nu=2 if feature_map == "dpfp" else 1,
                                chunk_size=2).eval()
    twin = exportable_layer(layer)
    assert isinstance(twin, DeltaRuleLayer)
    state = twin_state = layer.init_state(3)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for n in [1, 3, 1, 5, 2, 1, 4] * 2:
            x = 5 * torch.randn(3, n, 8, generator=g)
            y, state = layer.stream(x, state)
            y_twin, twin_state = twin.stream(x, twin_state)
            torch.testing.assert_close(y_twin, y, atol=1e-6, rtol=1e-4)
            torch.testing.assert_close(twin_state.fast_weight, state.fast_weight, atol=1e-5, rtol=1e-4)
    assert state.fast_weight.abs().max() > 0.05  # the weights carried something
