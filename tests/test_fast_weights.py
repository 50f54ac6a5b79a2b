"""The kinds ``linear`` and ``fast_weight``: their formulas against plain loops in float64, the feature
maps (DPFP's all-zero case, sum normalisation), β, what the delta rule does that the sum rule cannot,
and the forecasters that reach them by name."""
from __future__ import annotations

import math
import sys

import numpy as np
import pytest
import torch

from tsrsa import TransformerForecaster
from tsrsa.integrations import tslib
from tsrsa.nn import FastWeightAttention, LinearAttention, build_attention
from tsrsa.nn.fast_weight import FastWeightState, delta_rule_chunked, delta_rule_loop
from tsrsa.nn.feature_maps import dpfp, elu_plus_one, sum_normalise
from tsrsa.nn.linear_attention import EPS, causal_linear_attention, linear_attention_loop
from tsrsa.nn.multihead import merge_heads

from conftest import make_panel
from test_streaming import parallel_forecast

D, H = 8, 2  # head size 4
F64 = torch.float64


def layer(kind, *, causal=True, seed=0, **options):
    torch.manual_seed(seed)
    net = build_attention(kind, D, H, causal=causal, **options).double().eval()
    with torch.no_grad():  # larger projections than the N(0, 0.02) start, so that features differ
        net.qkv.weight.normal_(0.0, 0.5)
        net.qkv.bias.normal_(0.0, 0.2)
        net.proj.bias.normal_(0.0, 0.2)
    return net


def heads(net, x):
    """q, k, v of every head: (B, H, T, d) each (constants for the reference loops)."""
    with torch.no_grad():
        return net.project(x)


# ---------------------------------------------------------------------- feature maps
def test_elu_plus_one_and_dpfp_elementwise():
    x = torch.randn(3, 5, dtype=F64)
    for value, out in zip(x.flatten().tolist(), elu_plus_one(x).flatten().tolist()):
        assert out == pytest.approx(value + 1 if value > 0 else math.exp(value), abs=1e-12)
    d = x.size(-1)
    for nu in (1, 2, 3):
        phi = dpfp(x, nu)
        assert phi.shape == (3, 2 * d * nu)
        for row in range(3):
            r = [max(v, 0.0) for v in x[row].tolist()] + [max(-v, 0.0) for v in x[row].tolist()]
            expected = [r[i] * r[(i - j) % (2 * d)] for j in range(1, nu + 1) for i in range(2 * d)]
            assert phi[row].tolist() == pytest.approx(expected, abs=1e-12)


def test_dpfp_features_vanish_at_zero_and_sum_normalisation_keeps_them_finite():
    zero = torch.zeros(2, 6, dtype=F64)
    phi = dpfp(zero, 2)
    assert torch.equal(phi, torch.zeros(2, 24, dtype=F64))
    normalised = sum_normalise(phi, EPS)
    assert torch.isfinite(normalised).all() and torch.equal(normalised, phi)  # zero stays zero, no NaN
    phi = dpfp(torch.randn(4, 6, dtype=F64), 2)
    sums = sum_normalise(phi, EPS).sum(-1)
    torch.testing.assert_close(sums, phi.sum(-1) / (phi.sum(-1) + EPS), rtol=0, atol=1e-14)
    assert (sums > 0.99).all()


def test_a_zero_key_writes_nothing_and_the_layer_stays_finite():
    net = layer("fast_weight", feature_map="dpfp", nu=1)
    with torch.no_grad():
        net.qkv.weight[D: 2 * D].zero_()  # every key is 0, so every DPFP key feature is 0
        net.qkv.bias[D: 2 * D].zero_()
    x = torch.randn(2, 7, D, dtype=F64)
    y = net(x)
    assert torch.isfinite(y).all()
    torch.testing.assert_close(y, net.proj.bias.expand_as(y), rtol=0, atol=1e-12)  # memory stays empty
    state = net.stream(x, net.init_state(2, dtype=F64))[1]
    assert isinstance(state, FastWeightState) and state.k_sum is None  # the delta rule keeps W alone
    assert torch.equal(state.fast_weight, torch.zeros_like(state.fast_weight))


# ---------------------------------------------------------------------- linear attention
def test_linear_attention_equals_its_formula_elementwise():
    x = torch.randn(2, 6, D, dtype=F64)
    for causal in (True, False):
        net = layer("linear", causal=causal, chunk_size=4)
        q, k, v = heads(net, x)
        expected = torch.zeros_like(v)
        for b in range(2):
            for h in range(H):
                fq, fk = elu_plus_one(q[b, h]), elu_plus_one(k[b, h])
                for t in range(6):
                    reach = t + 1 if causal else 6
                    weights = [float(fq[t] @ fk[s]) for s in range(reach)]
                    expected[b, h, t] = sum(w * v[b, h, s] for s, w in enumerate(weights)) / (sum(weights) + EPS)
        torch.testing.assert_close(net(x), net.proj(merge_heads(expected)), rtol=0, atol=1e-10)


def test_the_chunked_form_carries_a_state_exactly():
    phi_q, phi_k = (elu_plus_one(torch.randn(2, 3, 11, 4, dtype=F64)) for _ in range(2))
    v = torch.randn(2, 3, 11, 5, dtype=F64)
    whole, end = causal_linear_attention(phi_q, phi_k, v, chunk_size=64)
    first, middle = causal_linear_attention(phi_q[:, :, :4], phi_k[:, :, :4], v[:, :, :4], chunk_size=3)
    rest, after = causal_linear_attention(phi_q[:, :, 4:], phi_k[:, :, 4:], v[:, :, 4:], state=middle, chunk_size=2)
    torch.testing.assert_close(torch.cat([first, rest], dim=2), whole, rtol=0, atol=1e-12)
    torch.testing.assert_close(after.kv, end.kv, rtol=0, atol=1e-12)
    torch.testing.assert_close(after.k_sum, phi_k.sum(2), rtol=0, atol=1e-12)
    # the recurrent form (the token loop) takes the chunked form's state, and the other way round
    looped, looped_end = linear_attention_loop(phi_q[:, :, 4:], phi_k[:, :, 4:], v[:, :, 4:], state=middle)
    torch.testing.assert_close(looped, rest, rtol=0, atol=1e-12)
    torch.testing.assert_close(looped_end.kv, end.kv, rtol=0, atol=1e-12)
    first, middle = linear_attention_loop(phi_q[:, :, :6], phi_k[:, :, :6], v[:, :, :6])
    rest, after = causal_linear_attention(phi_q[:, :, 6:], phi_k[:, :, 6:], v[:, :, 6:], state=middle, chunk_size=4)
    torch.testing.assert_close(torch.cat([first, rest], dim=2), whole, rtol=0, atol=1e-12)
    torch.testing.assert_close(after.kv, end.kv, rtol=0, atol=1e-12)


# ---------------------------------------------------------------------- fast weights
@pytest.mark.parametrize("feature_map,nu", [("elu", 1), ("dpfp", 1), ("dpfp", 3)])
@pytest.mark.parametrize("update", ["sum", "delta"])
def test_fast_weight_equals_its_formula_elementwise(update, feature_map, nu):
    net = layer("fast_weight", update=update, feature_map=feature_map, nu=nu, chunk_size=3, beta_init=0.7)
    x = torch.randn(2, 8, D, dtype=F64)
    q, k, v = heads(net, x)
    phi = (lambda t: elu_plus_one(t)) if feature_map == "elu" else (lambda t: dpfp(t, nu))
    expected = torch.zeros_like(v)
    for b in range(2):
        for h in range(H):
            m = phi(k[b, h, 0]).numel()
            W = torch.zeros(4, m, dtype=F64)  # d_v × d_φ
            z = torch.zeros(m, dtype=F64)
            for t in range(8):
                fk, fq = phi(k[b, h, t]), phi(q[b, h, t])
                fk, fq = fk / (fk.sum() + EPS), fq / (fq.sum() + EPS)
                if update == "sum":
                    W = W + torch.outer(v[b, h, t], fk)
                    z = z + fk
                    expected[b, h, t] = W @ fq / (z @ fq + EPS)
                else:
                    beta = torch.sigmoid(net.beta.weight[h] @ x[b, t] + net.beta.bias[h])
                    W = W + beta * torch.outer(v[b, h, t] - W @ fk, fk)
                    expected[b, h, t] = W @ fq
    torch.testing.assert_close(net(x), net.proj(merge_heads(expected)), rtol=0, atol=1e-10)
    assert net.state_size(8) == H * (m * 4 + (m if update == "sum" else 0))


@pytest.mark.parametrize("chunk_size", [1, 2, 5, 16])
def test_the_delta_rule_in_chunks_equals_the_token_loop_from_any_state(chunk_size):
    torch.manual_seed(1)
    phi_q, phi_k = (sum_normalise(dpfp(torch.randn(2, 3, 13, 4, dtype=F64), 2)) for _ in range(2))
    v, beta = torch.randn(2, 3, 13, 4, dtype=F64), torch.rand(2, 3, 13, dtype=F64)
    start = FastWeightState(torch.randn(2, 3, 16, 4, dtype=F64))
    loop, end = delta_rule_loop(phi_q, phi_k, v, beta, state=start)
    chunked, end_chunked = delta_rule_chunked(phi_q, phi_k, v, beta, state=start, chunk_size=chunk_size)
    torch.testing.assert_close(chunked, loop, rtol=0, atol=1e-10)
    torch.testing.assert_close(end_chunked.fast_weight, end.fast_weight, rtol=0, atol=1e-10)
    # each form continues from the state the other returns
    first, middle = delta_rule_chunked(phi_q[:, :, :5], phi_k[:, :, :5], v[:, :, :5], beta[:, :, :5], state=start,
                                       chunk_size=chunk_size)
    rest, after = delta_rule_loop(phi_q[:, :, 5:], phi_k[:, :, 5:], v[:, :, 5:], beta[:, :, 5:], state=middle)
    torch.testing.assert_close(torch.cat([first, rest], dim=2), loop, rtol=0, atol=1e-10)
    torch.testing.assert_close(after.fast_weight, end.fast_weight, rtol=0, atol=1e-10)


def test_the_delta_rule_replaces_a_value_where_the_sum_rule_mixes_them():
    key = torch.tensor([0.0, 1.0, 0.0, 0.0], dtype=F64)  # a normalised one-hot key, also the query
    phi = key.expand(1, 1, 2, 4)
    v = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=F64).view(1, 1, 2, 2)  # the key's first, then new value
    delta, _ = delta_rule_loop(phi, phi, v, torch.ones(1, 1, 2, dtype=F64))
    torch.testing.assert_close(delta[0, 0, 1], torch.tensor([0.0, 1.0], dtype=F64))  # the latest value
    summed, _ = causal_linear_attention(phi, phi, v)
    torch.testing.assert_close(summed[0, 0, 1], torch.tensor([0.5, 0.5], dtype=F64), rtol=0, atol=1e-6)
    half, _ = delta_rule_loop(phi, phi, v, torch.full((1, 1, 2), 0.5, dtype=F64))
    torch.testing.assert_close(half[0, 0, 1], torch.tensor([0.25, 0.5], dtype=F64))  # β = 1/2 moves half-way


def test_beta_starts_at_beta_init_and_is_one_scalar_per_head():
    net = FastWeightAttention(16, 4, beta_init=0.2)
    assert net.beta.out_features == 4
    torch.testing.assert_close(torch.sigmoid(net.beta.bias), torch.full((4,), 0.2))
    assert net.beta.weight.std() < 0.05
    assert FastWeightAttention(16, 4, update="sum").beta is None  # the sum rule has no β to train
    low, high = (build_attention("fast_weight", D, H, causal=True, beta_init=b).double() for b in (0.05, 0.95))
    high.load_state_dict({**low.state_dict(), "beta.bias": high.beta.bias.detach()})
    x = torch.randn(1, 9, D, dtype=F64)
    assert not torch.allclose(low(x), high(x))  # β changes what is stored


@pytest.mark.parametrize("options,message", [
    ({"update": "hebb"}, "update='hebb'"), ({"feature_map": "favor"}, "feature_map='favor'"),
    ({"nu": 0}, "nu=0"), ({"nu": 8}, "at most"), ({"beta_init": 1.0}, "beta_init"),
    ({"chunk_size": 0}, "chunk_size"), ({"backend": "cuda"}, "backend"),
])
def test_bad_options_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        FastWeightAttention(8, 2, **options)


def test_fast_weights_are_causal_only_and_linear_checks_its_options():
    with pytest.raises(ValueError, match="causal only"):
        FastWeightAttention(8, 2, causal=False)
    with pytest.raises(ValueError, match="causal only"):
        build_attention("fast_weight", 8, 2, causal=False)
    with pytest.raises(ValueError, match="chunk_size"):
        LinearAttention(8, 2, chunk_size=1.5)
    assert LinearAttention(8, 2, causal=True).state_size(10**6) == 2 * 4 * 5  # fixed: H · d · (d + 1)


# ---------------------------------------------------------------------- reached by name
@pytest.mark.parametrize("kind,options", [("linear", {}), ("fast_weight", {"update": "delta"}),
                                          ("fast_weight", {"update": "sum", "feature_map": "elu"})])
def test_forecasters_reach_the_kinds_by_name_and_stream_them(kind, options):
    small = dict(h=4, input_size=8, patch_len=4, d_model=8, n_heads=2, n_layers=1, d_ff=16, max_epochs=2,
                 batch_size=16, random_state=0, attention=kind, attention_options=options)
    full = make_panel(length=60)
    head = full.groupby("unique_id").head(40)
    window = TransformerForecaster(causal=True, **small).fit(head)
    assert np.isfinite(window.predict()["yhat"]).all()
    model = TransformerForecaster(stream=True, **small).fit(head)
    model.update(full.groupby("unique_id").tail(20))
    after = model.predict()  # streamed; the reference is the parallel form over the whole history
    np.testing.assert_allclose(after["yhat"], parallel_forecast(model, full).ravel(), rtol=1e-5, atol=1e-5)
    assert type(model.network_.blocks[0].attn).kind == kind


def test_the_time_series_library_adapter_takes_the_kinds():
    from types import SimpleNamespace

    configs = SimpleNamespace(seq_len=16, label_len=8, pred_len=4, enc_in=2, c_out=2, d_model=8, n_heads=2,
                              e_layers=1, d_ff=16, dropout=0.0)
    for kind in ("linear", "fast_weight"):
        model = tslib.VanillaModel(configs, attention=kind, causal=True)
        assert model(torch.randn(3, 16, 2), None, None, None).shape == (3, 4, 2)


# ---------------------------------------------------------------------- the GPU kernels
FLA_CASES = [("linear", {}), ("fast_weight", {"update": "delta"}),
             ("fast_weight", {"update": "delta", "feature_map": "elu"})]


def _fla_pair(kind, options):
    pytest.importorskip("fla")
    torch.manual_seed(0)
    reference = build_attention(kind, 64, 4, causal=True, **options).cuda()
    fast = build_attention(kind, 64, 4, causal=True, backend="fla", **options).cuda()
    fast.load_state_dict(reference.state_dict())
    return reference, fast


def _counting_kernel_calls(monkeypatch, kind) -> list:
    module = sys.modules[build_attention(kind, 8, 2, causal=True).__module__]
    name = "fla_causal_linear_attention" if kind == "linear" else "fla_delta_rule"
    calls, kernel = [], getattr(module, name)
    monkeypatch.setattr(module, name, lambda *a, **kw: calls.append(1) or kernel(*a, **kw))
    return calls


@pytest.mark.gpu
@pytest.mark.parametrize("kind,options", FLA_CASES)
def test_flash_linear_attention_kernels_agree_with_the_torch_form(kind, options, monkeypatch):
    reference, fast = _fla_pair(kind, options)
    calls = _counting_kernel_calls(monkeypatch, kind)
    x = torch.randn(4, 200, 64, device="cuda")
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        want, got = reference.eval()(x).float(), fast.eval()(x).float()
    assert calls  # the kernel ran
    assert (got - want).norm() <= 0.02 * want.norm()


@pytest.mark.gpu
@pytest.mark.parametrize("kind,options", FLA_CASES)
def test_a_training_step_with_the_fla_backend_follows_the_torch_form(kind, options, monkeypatch):
    """The delta rule trains through its kernel; linear attention trains in the torch form (the
    kernel's backward needs an even value width) and only predicts through its kernel."""
    reference, fast = _fla_pair(kind, options)
    calls = _counting_kernel_calls(monkeypatch, kind)
    x = torch.randn(4, 200, 64, device="cuda")
    grads = []
    for layer in (reference, fast):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            layer(x).float().square().mean().backward()
        grads.append(torch.cat([p.grad.flatten() for p in layer.parameters()]))
    assert bool(calls) == (kind == "fast_weight")
    assert torch.isfinite(grads[1]).all()
    assert (grads[1] - grads[0]).norm() <= 0.1 * grads[0].norm()  # bf16 kernel inputs
