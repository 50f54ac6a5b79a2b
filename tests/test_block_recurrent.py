"""The block-recurrent layer: its gates against their formulas, the whole layer against a token-by-token
loop of its formulas in float64 (both forms, both gates), what a block's tokens can read, the carried
state, and the forecaster that uses it."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

import tsrsa
from tsrsa.data.windows import consecutive_training_windows
from tsrsa.nn.block_recurrent import BlockRecurrentAttention, StateGate

from test_streaming import parallel_forecast

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


def spread(module, seed=1):
    """Weights far from the N(0, 0.02) start, so that every attention of the layer is far from uniform."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if "_ln." in name:  # the layer norms: near their start of ones and zeros
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.3 * torch.randn(p.shape, generator=g))
            else:
                p.copy_((0.6 if p.dim() > 1 else 0.3) * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return module


def reference_layer(module, x):
    """The layer token by token in float64 from the module docstring's formulas: token t at place r of
    block b attends to the keys of block b − 1 and of its block up to itself (ALiBi's bias by distance)
    and to the state carried into block b; when a block completes, the states attend to each other
    and to its W tokens, and the gate (and the gated MLP) give the next state."""
    P = {name: p.detach() for name, p in module.named_parameters()}
    Bn, T, _ = x.shape
    d = D // H
    slopes = module.slopes.tolist() if module.slopes is not None else [0.0] * H

    def lin(name, z):
        return z @ P[name + ".weight"].T + P[name + ".bias"]

    def norm(name, z):
        mean, var = z.mean(-1, keepdim=True), z.var(-1, unbiased=False, keepdim=True)
        return (z - mean) / torch.sqrt(var + 1e-5) * P[name + ".weight"] + P[name + ".bias"]

    def heads(q, keys, values, distance=None):
        """softmax(q kᵀ / √d − slope · distance) v in every head: q (m, D), keys and values (n, D),
        distance (m, n) -> (m, D)."""
        qh, kh, vh = (z.view(z.size(0), H, d).transpose(0, 1) for z in (q, keys, values))  # (H, ·, d)
        logits = qh @ kh.transpose(1, 2) / math.sqrt(d)  # (H, m, n)
        if distance is not None:
            logits = logits - torch.tensor(slopes, dtype=q.dtype).view(H, 1, 1) * distance
        return (torch.softmax(logits, dim=-1) @ vh).transpose(0, 1).reshape(q.size(0), D)

    def gate(name, hidden, c, y):
        if module.attn_gate.kind == "fixed":
            s = torch.sigmoid(P[name + ".bias"])
            return c * s + y * (1 - s)
        f = torch.sigmoid(lin(name + ".forget", hidden) + 1.0)
        i = torch.sigmoid(lin(name + ".input", hidden) - 1.0)
        return c * f + y * i

    out = torch.zeros_like(x)
    for b in range(Bn):
        c = P["initial_state"].clone()  # (S, D)
        q_x, k_x, v_x = lin("token_qkv", x[b]).split(D, dim=-1)  # (T, D) each
        cross_q = lin("token_cross_q", x[b])
        for t in range(T):
            block, r = divmod(t, W)
            c_hat = norm("state_ln", c) + P["state_ids"]
            q_c, k_c, v_c = lin("state_qkv", c_hat).split(D, dim=-1)  # (S, D) each
            keys = range(max(0, (block - 1) * W), t + 1)  # the previous block and this one up to t
            distance = torch.tensor([[t - s for s in keys]], dtype=x.dtype)
            own = heads(q_x[t:t + 1], k_x[list(keys)], v_x[list(keys)], distance)
            cross = heads(cross_q[t:t + 1], k_c, v_c)
            out[b, t] = lin("token_proj", torch.cat([own, cross], dim=-1))[0]
            if r == W - 1:  # the block is complete: the next state
                tokens = slice(block * W, t + 1)
                hidden = torch.cat([heads(q_c, k_c, v_c), heads(lin("state_cross_q", c_hat), k_x[tokens],
                                                                 v_x[tokens])], dim=-1)  # (S, 2D)
                c = gate("attn_gate", hidden, c, lin("state_proj", hidden))
                if module.state_mlp:
                    inner = F.gelu(lin("mlp_fc", norm("mlp_ln", c)))
                    c = gate("mlp_gate", inner, c, lin("mlp_proj", inner))
    return out


@pytest.mark.parametrize("options", [{"gate": "fixed"}, {"gate": "lstm", "alibi": True},
                                     {"gate": "lstm", "state_mlp": False}])
def test_the_layer_follows_its_formulas_token_by_token_in_both_forms(options):
    module = spread(layer(**options))
    x = torch.randn(2, 4 * W + 2, D, dtype=torch.float64)
    expected = reference_layer(module, x)
    torch.testing.assert_close(module(x), expected, rtol=1e-10, atol=1e-10)  # the parallel form
    pieces, state = [], module.init_state(2, dtype=torch.float64)
    for a, b in ((0, 1), (1, 5), (5, 6), (6, 13), (13, 4 * W + 2)):
        y, state = module.stream(x[:, a:b], state)
        pieces.append(y)
    torch.testing.assert_close(torch.cat(pieces, dim=1), expected, rtol=1e-10, atol=1e-10)  # the recurrent form
    assert state.cur_k.size(2) == 2 and state.prev_k.size(2) == W  # 2 tokens into the fifth block
    assert module.state_size(4 * W + 2) == module.state_size(40 * W + 2)  # fixed, whatever the history


def block_jacobian(module, x, source: slice, target: slice) -> torch.Tensor:
    """|d out[target] / d x[source]| summed: whether the target tokens read the source tokens."""
    x = x.clone().requires_grad_()
    module(x)[:, target].sum().backward()
    return x.grad[:, source].abs().sum()


def test_a_token_reads_the_whole_previous_block_and_its_own_block_up_to_itself():
    """The mask, token by token: with the state frozen, the token at place r of block b reads exactly
    the tokens of block b − 1 and places 0 .. r of block b (W + r + 1 keys), a superset of the
    sliding window of the last W tokens."""
    frozen = layer()
    with torch.no_grad():  # σ(b) = 1 in both gates: the carried state never changes
        frozen.attn_gate.bias.fill_(100.0)
        frozen.mlp_gate.bias.fill_(100.0)
    T = 4 * W + 1
    x = torch.randn(1, T, D, dtype=torch.float64)
    mix = torch.randn(D, dtype=torch.float64)  # one random readout of each output, so nothing cancels
    reads = torch.zeros(T, T, dtype=torch.bool)
    for t in range(T):
        z = x.clone().requires_grad_()
        (frozen(z)[0, t] @ mix).backward()
        reads[t] = z.grad[0].abs().sum(-1) > 0
    s, t = torch.arange(T)[None, :], torch.arange(T)[:, None]
    expected = (s <= t) & (s // W >= t // W - 1)
    assert torch.equal(reads, expected)
    assert reads[W, 0] and not ((t - s < W) & (s <= t))[W, 0]  # distance W: read here, not by a sliding window
    open_state = layer()
    x = torch.randn(1, 3 * W, D, dtype=torch.float64)
    assert block_jacobian(open_state, x, slice(0, W), slice(2 * W, 3 * W)) > 0  # older blocks: via the state


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

        def recording(inputs, **options):
            resets.append(bool(inputs.reset) if network.training else None)
            return forward(inputs, **options)

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
    held = [name for name, value in vars(model.network_).items() if isinstance(value, tsrsa.nn.StreamingState)]
    assert not held and not hasattr(model.network_, "_carried")  # nothing carried stays with the fitted network
    model.update(y.iloc[240:246])  # the state carried on: equal to the parallel form over all 246 steps
    frame = y.iloc[:246].rename("y").rename_axis("ds").reset_index().assign(unique_id=model.memory_.ids[0])
    expected = parallel_forecast(model, frame)
    np.testing.assert_allclose(model.predict()["yhat"], expected[0], rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="does not read covariates yet"):
        tsrsa.TransformerForecaster(stream=True, covariates={"past": ["x"]}, **common).fit(
            y.rename("y").rename_axis("ds").reset_index().assign(unique_id="a", x=1.0))


def test_a_fixed_window_model_updates_by_restarting_from_the_learned_state():
    y = pd.Series(np.sin(np.arange(220) / 4), index=pd.date_range("2024-01-01", periods=220, freq="h"))
    model = tsrsa.TransformerForecaster(h=6, input_size=48, d_model=16, n_layers=1, d_ff=16, max_epochs=1,
                                        attention="block_recurrent", random_state=0).fit(y.iloc[:200])
    updated = model.update(y.iloc[200:]).predict()
    pd.testing.assert_frame_equal(updated, model.predict(df=y))  # the latest window, from the initial state
