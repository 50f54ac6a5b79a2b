"""A bounded key/value cache in ONNX: the step of softmax attention and of RSA's softmax branch with
``cache_size``, its cache held in ``cache_size - 1`` fixed slots (``tsrsa.nn.padded_cache``).

The slotted cache must equal ``bounded_attend``'s growing one under every policy, with and without
ALiBi, in torch and in onnxruntime; a streaming model exported with it must serve ``update`` over 100
steps and ``predict(df=...)`` as the model does (the checks of tests/test_onnx_stream.py): a softmax
transformer whose cache is still filling when exported ("window", 40 slots: the model's cache of 29
tokens padded into them, filling and dropping while it is served) and an RSA model whose small "tova"
cache drops a token at every step.
"""
from __future__ import annotations

import contextlib
import io
import warnings

import numpy as np
import pytest
import torch

pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

import onnxruntime  # noqa: E402

from tsrsa import RSAForecaster, TransformerForecaster  # noqa: E402
from tsrsa.nn.kv_cache import CACHE_POLICIES, BoundedCacheState, bounded_attend  # noqa: E402
from tsrsa.nn.padded_cache import empty_slots, slotted, slotted_attend  # noqa: E402
from tsrsa.nn.softmax import alibi_slopes  # noqa: E402
from test_onnx import torchlib_registry_built_once  # noqa: E402,F401 - one torchlib table for the module
from test_onnx_stream import (  # noqa: E402
    H, L, P, SMALL, TINY, assert_streamed_frames_equal_the_models, assert_update_over_100_steps_equals_the_models,
    panel_frame,
)

pytestmark = pytest.mark.slow  # every test here reads a torch.onnx export (3-14 s of CPU each)

STREAMS = {
    "softmax_window": lambda: TransformerForecaster(h=H, input_size=L, stream=True, patch_len=P,
                                                    attention_options={"cache_size": 40}, **TINY, **SMALL),
    "rsa_tova": lambda: RSAForecaster(h=H, input_size=L, stream=True, patch_len=P, rem={"dilations": 2},
                                      attention_options={"cache_size": 6, "cache_policy": "tova"}, **TINY, **SMALL),
}
SIZES = {"window": 4, "sinks": 5, "h2o": 6, "tova": 3}  # cache sizes: each fills, then drops
SINKS = 2


@pytest.fixture(scope="module", params=list(STREAMS))
def streaming(request, tmp_path_factory):
    """A streaming model of each kind fitted on the first 118 steps, its export's path, and the frame."""
    df = panel_frame()
    model = STREAMS[request.param]().fit(df.groupby("unique_id").head(118))
    return model, model.to_onnx(tmp_path_factory.mktemp("cache") / f"{request.param}.onnx"), df


def test_update_over_100_steps_equals_the_models(streaming):
    assert_update_over_100_steps_equals_the_models(*streaming)


def test_streaming_a_frame_and_new_series_equal_the_models(streaming):
    assert_streamed_frames_equal_the_models(*streaming)


def test_the_cache_is_exported_in_fixed_slots(streaming):
    fitted, path, _ = streaming
    size = fitted.network_.blocks[0].attn.cache.size
    held = fitted.memory_.groups[0].state.blocks[0]
    held = getattr(held, "branch", held)  # RSA: its softmax branch's cache
    with np.load(f"{path}.npz") as arrays:
        k, pos, seen = (arrays[f"state.blocks.0.{name}"] for name in ("k", "pos", "seen"))
        init = arrays["init.blocks.0.k"]
    assert k.shape == (3, 4, size - 1, 2) and init.shape == (1, 4, size - 1, 2)  # 3 series, 4 heads, head size 2
    assert pos.dtype == seen.dtype == np.int64 and (seen == 118 // P).all()
    rows = fitted.memory_.groups[0].rows  # every series: all streamed 118 steps
    n = held.pos.size(-1)  # the model's cache: 29 tokens in 39 slots (window), or full (tova)
    assert len(rows) == 3 and n == min(118 // P, size - 1)
    np.testing.assert_array_equal(pos[rows, :, :n], held.pos.numpy())
    np.testing.assert_allclose(k[rows, :, :n], held.k.numpy())
    assert not k[:, :, n:].any()  # the empty slots


@pytest.mark.parametrize("alibi", [False, True])
@pytest.mark.parametrize("policy", CACHE_POLICIES)
def test_slots_equal_the_growing_cache(policy, alibi):
    """``slotted_attend`` against ``bounded_attend`` over blocks of 1 to 3 tokens: outputs, and the filled
    slots against the growing cache (positions exactly)."""
    g = torch.Generator().manual_seed(0)
    B, Hd, hs, size = 3, 4, 5, SIZES[policy]
    slopes = torch.tensor(alibi_slopes(Hd)) if alibi else None
    grown, slots = None, empty_slots(B, Hd, hs, size)
    for n in [1, 2, 1, 3, 1, 1, 2] * 3:
        q, k, v = (2 * torch.randn(B, Hd, n, hs, generator=g) for _ in range(3))
        y, grown = bounded_attend(q, k, v, size=size, policy=policy, sinks=SINKS, slopes=slopes, state=grown)
        y_slots, slots = slotted_attend(q, k, v, size=size, policy=policy, sinks=SINKS, slopes=slopes, state=slots)
        torch.testing.assert_close(y_slots, y, atol=1e-6, rtol=1e-5)
        m = grown.pos.size(-1)
        expected = slotted(grown, size)
        assert torch.equal(slots.pos[..., :m], expected.pos[..., :m]) and torch.equal(slots.seen, grown.seen)
        torch.testing.assert_close(slots.k[:, :, :m], expected.k[:, :, :m])
        torch.testing.assert_close(slots.score[..., :m], expected.score[..., :m])
    assert grown.pos.size(-1) == size - 1 and int(grown.seen[0]) > size  # the cache filled, then dropped
    if policy == "h2o":
        assert not torch.equal(grown.pos[:, 0], grown.pos[:, 1])  # the heads keep different tokens


#: the policies exported alone here: the models above export "window" (softmax) and "tova" (RSA)
GRAPH_POLICIES = ("sinks", "h2o")


class OtherPolicies(torch.nn.Module):
    """One token through a slotted cache of each of ``GRAPH_POLICIES`` (ALiBi on): (y, k, v, pos, score, seen)
    of each."""

    def forward(self, q, k, v, *state):
        out = []
        for i, policy in enumerate(GRAPH_POLICIES):
            before = BoundedCacheState(*state[5 * i:5 * i + 5])
            y, after = slotted_attend(q, k, v, size=SIZES[policy], policy=policy, sinks=SINKS,
                                      slopes=torch.tensor(alibi_slopes(q.size(1))), state=before)
            out += [y, after.k, after.v, after.pos, after.score, after.seen]
        return tuple(out)


def test_onnxruntime_runs_the_other_policies_as_torch_does(tmp_path):
    """One graph of the sinks and h2o policies' steps, run 20 tokens from empty slots by onnxruntime, against
    ``bounded_attend`` in torch: the outputs and the kept positions."""
    B, Hd, hs = 2, 4, 3
    states = [empty_slots(B, Hd, hs, SIZES[p]) for p in GRAPH_POLICIES]
    flat = [t for s in states for t in (s.k, s.v, s.pos, s.score, s.seen)]
    example = tuple(torch.zeros(B, Hd, 1, hs) for _ in range(3))  # distinct tensors: three inputs
    with torch.no_grad(), warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(OtherPolicies(), (*example, *flat), str(tmp_path / "policies.onnx"), dynamo=True,
                          opset_version=18, external_data=False, verbose=False)
    session = onnxruntime.InferenceSession(str(tmp_path / "policies.onnx"), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    g = torch.Generator().manual_seed(1)
    slopes = torch.tensor(alibi_slopes(Hd))
    grown = [None] * len(GRAPH_POLICIES)
    feeds = [t.numpy() for t in flat]
    for _ in range(20):
        q, k, v = (2 * torch.randn(B, Hd, 1, hs, generator=g) for _ in range(3))
        out = session.run(None, dict(zip(names, [q.numpy(), k.numpy(), v.numpy(), *feeds])))
        feeds = []
        for i, policy in enumerate(GRAPH_POLICIES):
            y, grown[i] = bounded_attend(q, k, v, size=SIZES[policy], policy=policy, sinks=SINKS, slopes=slopes,
                                         state=grown[i])
            y_onnx, *after = out[6 * i:6 * i + 6]
            np.testing.assert_allclose(y_onnx, y.numpy(), atol=1e-6, rtol=1e-5)
            m = grown[i].pos.size(-1)
            np.testing.assert_array_equal(after[2][..., :m], grown[i].pos.numpy())
            feeds += after[:5]
    assert all(int(s.seen[0]) == 20 for s in grown)
