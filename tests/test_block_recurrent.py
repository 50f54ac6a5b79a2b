"""The block-recurrent layer: its gates against their formulas, what a block's tokens can read,
the carried state, and the forecaster that uses it."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import tsrsa
from tsrsa.data.windows import consecutive_training_windows
from tsrsa.nn.block_recurrent import BlockRecurrentAttention, StateGate

D, H, W = 16, 4, 3


def test_the_fixed_gate_follows_its_formula_elementwise():
    gate = StateGate(5, D, "fixed").double()
    assert gate.bias.abs().max() < 0.6 and gate.bias.std() > 0  # started N(0, 0.1²)
    g = torch.Generator().manual_seed(0)
    h, c, y = torch.randn(2, 3, 5, generator=g, dtype=torch.float64), *torch.randn(2, 2, 3, D, generator=g,
                                                                                    dtype=torch.float64)
    s = 1 / (1 + torch.exp(-gate.bias.detach()))
    torch.testing.assert_close(gate(h, c, y), c * s + y * (1 - s), rtol=1e-12, atol=1e-12)


def test_the_lstm_gate_follows_its_formula_elementwise():
    gate = StateGate(5, D, "lstm").double()
    for linear in (gate.forget, gate.input):  # small kernels: variance 0.1 / fan-in, cut at 2 std
        assert linear.weight.abs().max() <= 2 * (0.1 / 5) ** 0.5 + 1e-12
    g = torch.Generator().manual_seed(1)
    h = torch.randn(2, 3, 5, generator=g, dtype=torch.float64)
    c, y = torch.randn(2, 2, 3, D, generator=g, dtype=torch.float64)
    sig = lambda z: 1 / (1 + torch.exp(-z))  # noqa: E731
    Wf, bf, Wi, bi = (t.detach() for t in (gate.forget.weight, gate.forget.bias, gate.input.weight, gate.input.bias))
    f, i = sig(h @ Wf.T + bf + 1), sig(h @ Wi.T + bi - 1)
    torch.testing.assert_close(gate(h, c, y), c * f + y * i, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="gate"):
        StateGate(5, D, "gru")


def layer(**options):
    torch.manual_seed(0)
    return BlockRecurrentAttention(D, H, causal=True, block_size=W, n_states=2, **options).double().eval()


def block_jacobian(module, x, source: slice, target: slice) -> torch.Tensor:
    """|d out[target] / d x[source]| summed: whether the target tokens read the source tokens."""
    x = x.clone().requires_grad_()
    module(x)[:, target].sum().backward()
    return x.grad[:, source].abs().sum()


def test_tokens_read_the_previous_block_directly_and_older_ones_only_through_the_state():
    x = torch.randn(1, 3 * W, D, dtype=torch.float64)
    open_state = layer()
    assert block_jacobian(open_state, x, slice(0, W), slice(2 * W, 3 * W)) > 0  # block 0 via the state
    frozen = layer()
    with torch.no_grad():  # σ(b) = 1 in both gates: the carried state never changes
        frozen.attn_gate.bias.fill_(100.0)
        frozen.mlp_gate.bias.fill_(100.0)
    assert block_jacobian(frozen, x, slice(0, W), slice(2 * W, 3 * W)) == 0  # beyond the previous block
    assert block_jacobian(frozen, x, slice(W, 2 * W), slice(2 * W, 3 * W)) > 0  # the previous block


def test_the_state_streamed_in_pieces_equals_the_state_of_one_long_forward():
    module = layer(gate="lstm")
    x = torch.randn(2, 4 * W + 2, D, dtype=torch.float64)
    whole, state = module._run(x, module.init_state(2, dtype=torch.float64))
    pieces, streamed = [], module.init_state(2, dtype=torch.float64)
    for a, b in ((0, 1), (1, 5), (5, 6), (6, 13), (13, 4 * W + 2)):
        y, streamed = module.stream(x[:, a:b], streamed)
        pieces.append(y)
    torch.testing.assert_close(torch.cat(pieces, dim=1), whole, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(module(x), whole, rtol=1e-10, atol=1e-12)  # the parallel form, blocks at once
    for key in state:
        torch.testing.assert_close(streamed[key], state[key], rtol=1e-10, atol=1e-12)
    assert state["cur_k"].size(2) == 2 and state["prev_k"].size(2) == W  # 2 tokens into the fifth block
    assert module.state_size(4 * W + 2) == module.state_size(40 * W + 2)  # fixed, whatever the history


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="causal only"):
        BlockRecurrentAttention(D, H, causal=False)
    with pytest.raises(ValueError, match="block_size"):
        BlockRecurrentAttention(D, H, block_size=0)
    with pytest.raises(ValueError, match="n_states"):
        BlockRecurrentAttention(D, H, n_states=True)


def test_the_transformer_forecaster_takes_the_kind():
    y = pd.Series(np.sin(np.arange(200) / 4), index=pd.date_range("2024-01-01", periods=200, freq="h"))
    options = {"block_size": 4, "n_states": 4, "gate": "lstm"}
    model = tsrsa.TransformerForecaster(h=6, input_size=48, d_model=16, n_layers=1, d_ff=16, max_epochs=2,
                                        attention="block_recurrent", attention_options=options, random_state=0)
    forecast = model.fit(y).predict()
    assert len(forecast) == 6 and forecast["yhat"].notna().all()
    assert model.network_.config.causal  # a causal-only kind makes the fixed-window model causal


def test_consecutive_windows_make_lanes_that_continue_each_other():
    offsets = np.array([0, 300, 460])  # two series of 300 and 160 steps
    windows = consecutive_training_windows(np.zeros(460), offsets, np.array([300, 160]), 16, 5, 4, n_lanes=3)
    assert len(windows) == (300 - 5) // 16 + (160 - 5) // 16 == 27
    for rng in (None, np.random.default_rng(0), np.random.default_rng(1)):
        groups = windows.plan(rng)
        starts = np.concatenate([g.T.ravel() for g in groups])
        assert len(starts) == len(set(starts)) == 27  # every window once per pass
        for group in groups:
            assert group.shape[1] <= 3 and np.all(np.diff(group, axis=0) == 16)  # each lane: window after window
            series = (group >= 300).astype(int)
            assert np.all(series == series[:1])  # a lane stays in its series
            lo, end = offsets[series], offsets[series + 1]
            assert np.all(group >= lo) and np.all(group + 16 + 5 <= end)  # inputs and targets inside it
    assert max(g.shape[0] for g in windows.plan(None)) == windows.lane_length == 9  # 27 windows over 3 lanes


def test_streaming_trains_with_the_state_carried_across_windows():
    y = pd.Series(np.sin(np.arange(260) / 4) + 0.05 * np.random.default_rng(0).standard_normal(260),
                  index=pd.date_range("2024-01-01", periods=260, freq="h"))
    options = {"block_size": 4, "n_states": 2}
    common = dict(h=6, input_size=24, patch_len=4, d_model=16, n_heads=2, n_layers=1, d_ff=16, max_epochs=3,
                  attention="block_recurrent", attention_options=options, val_size=24, random_state=0)
    model = tsrsa.TransformerForecaster(stream=True, **common)
    resets = []
    original = model._train

    def watched(network, *args, **kwargs):
        forward = network.forward

        def recording(inputs):
            resets.append(bool(inputs.reset) if network.training else None)
            return forward(inputs)

        network.forward = recording
        try:
            return original(network, *args, **kwargs)
        finally:
            del network.forward

    model._train = watched
    model.fit(y.iloc[:240])
    del model._train
    training = [r for r in resets if r is not None]
    assert training.count(True) == 3 and len(training) > 3  # one lane, reset once per pass, carried after
    assert model.network_._carried == {}  # nothing carried stays with the fitted network
    model.update(y.iloc[240:246])
    np.testing.assert_allclose(model.predict()["yhat"], model.predict(df=y.iloc[:246])["yhat"], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="does not read covariates yet"):
        tsrsa.TransformerForecaster(stream=True, past_covariates=["x"], **common).fit(
            y.rename("y").rename_axis("ds").reset_index().assign(unique_id="a", x=1.0))


def test_a_fixed_window_model_updates_by_restarting_from_the_learned_state():
    y = pd.Series(np.sin(np.arange(220) / 4), index=pd.date_range("2024-01-01", periods=220, freq="h"))
    model = tsrsa.TransformerForecaster(h=6, input_size=48, d_model=16, n_layers=1, d_ff=16, max_epochs=1,
                                        attention="block_recurrent", random_state=0).fit(y.iloc[:200])
    updated = model.update(y.iloc[200:]).predict()
    pd.testing.assert_frame_equal(updated, model.predict(df=y))  # the latest window, from the initial state
