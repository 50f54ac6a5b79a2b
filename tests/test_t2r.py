"""T2R: the kind's formula in float64, its floor, RSA's T2R branch, and the swap-then-finetune conversion."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

import tsrsa
from tsrsa.convert import to_recurrent
from tsrsa.nn.linear_attention import LinearState, causal_linear_attention, linear_attention_loop
from tsrsa.nn.rsa import RSAAttention
from tsrsa.nn.softmax import SoftmaxAttention, alibi_slopes
from tsrsa.nn.t2r import FLOOR, T2RAttention, t2r_bidirectional, t2r_chunked, t2r_loop

from test_rsa import rem_reference
from test_streaming import parallel_forecast

B, H, T, d, k = 2, 3, 9, 4, 5


def plain_t2r(q, k_, v, W, b, *, causal: bool, floor: float, slopes=None):
    """The formula written out per head and token: φ(x) = relu(W x + b), q scaled by d^(-1/2),
    y_t = Σ_s φ(q_t)·φ(k_s) v_s / max(Σ_s φ(q_t)·φ(k_s), c) over s <= t (causal) or all s; with
    ALiBi's ``slopes`` m_h each weight times exp(-m_h |t - s|)."""
    out = torch.zeros_like(v)
    for bi in range(q.size(0)):
        for h in range(q.size(1)):
            phi = lambda x: torch.clamp(W[h] @ x + b[h], min=0.0)  # noqa: E731
            for t in range(q.size(2)):
                fq = phi(q[bi, h, t] / math.sqrt(q.size(-1)))
                num, den = torch.zeros_like(v[bi, h, 0]), torch.zeros((), dtype=v.dtype)
                for s in range(t + 1 if causal else q.size(2)):
                    weight = fq @ phi(k_[bi, h, s])
                    if slopes is not None:
                        weight = weight * math.exp(-float(slopes[h]) * abs(t - s))
                    num, den = num + weight * v[bi, h, s], den + weight
                out[bi, h, t] = num / torch.clamp(den, min=floor)
    return out


def t2r_parallel(q, k, v, feature_map, *, causal, **options):
    """The layer's parallel form: the causal chunked op or the bidirectional one, their output."""
    return (t2r_chunked if causal else t2r_bidirectional)(q, k, v, feature_map, **options)[0]


def qkv(seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(B, H, T, d, generator=g, dtype=torch.float64) for _ in range(3)]


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("floor", [FLOOR, 2.0])
def test_the_parallel_forms_follow_the_formula_elementwise_in_float64(causal, floor):
    layer = T2RAttention(H * d, H, causal=causal, feature_size=k, floor=floor, chunk_size=4).double()
    q, k_, v = qkv()
    got = t2r_parallel(q, k_, v, layer.feature_map, causal=causal, chunk_size=4, floor=floor)
    want = plain_t2r(q, k_, v, layer.feature_map.weight, layer.feature_map.bias, causal=causal, floor=floor)
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)
    if floor == 2.0:  # a floor this high binds for some queries and not for others: the test sees it act
        low = t2r_parallel(q, k_, v, layer.feature_map, causal=causal, floor=FLOOR)
        same = torch.isclose(got, low).all(dim=-1)
        assert same.any() and not same.all()


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("chunk_size", [1, 4, 64])
def test_alibi_weights_each_key_by_its_distance_elementwise_in_float64(causal, chunk_size):
    layer = T2RAttention(H * d, H, causal=causal, feature_size=k, alibi=True, chunk_size=chunk_size).double()
    torch.testing.assert_close(layer.slopes, torch.tensor(alibi_slopes(H), dtype=torch.float64))
    q, k_, v = qkv(1)
    got = t2r_parallel(q, k_, v, layer.feature_map, causal=causal, chunk_size=chunk_size, slopes=layer.slopes)
    W, b = layer.feature_map.weight, layer.feature_map.bias
    want = plain_t2r(q, k_, v, W, b, causal=causal, floor=FLOOR, slopes=layer.slopes)
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)
    assert not torch.allclose(got, plain_t2r(q, k_, v, W, b, causal=causal, floor=FLOOR))  # the decay acts
    with torch.no_grad():  # the layer end to end is the formula on its projections
        layer.qkv.weight.normal_(0.0, 0.5)
        x = torch.randn(B, T, H * d, dtype=torch.float64)
        expected = layer.output(plain_t2r(*layer.project(x), W, b, causal=causal, floor=FLOOR, slopes=layer.slopes))
        torch.testing.assert_close(layer(x), expected, rtol=1e-10, atol=1e-12)


def test_the_decayed_state_is_the_decayed_recurrence_token_by_token():
    g = torch.Generator().manual_seed(2)
    phi_q, phi_k = (torch.rand(B, H, 11, k, generator=g, dtype=torch.float64) for _ in range(2))
    v = torch.randn(B, H, 11, d, generator=g, dtype=torch.float64)
    kv0, z0 = torch.rand(B, H, k, d, generator=g, dtype=torch.float64), torch.rand(B, H, k, generator=g,
                                                                                     dtype=torch.float64)
    log_decay = -torch.tensor(alibi_slopes(H), dtype=torch.float64)
    start = LinearState(kv0, z0)
    want, want_end = linear_attention_loop(phi_q, phi_k, v, state=start, log_decay=log_decay)
    for chunk_size in (1, 3, 4, 11, 64):  # chunks that divide 11 tokens, and ones that leave a remainder
        got, end = causal_linear_attention(phi_q, phi_k, v, state=start, chunk_size=chunk_size, log_decay=log_decay)
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(end.kv, want_end.kv, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(end.k_sum, want_end.k_sum, rtol=1e-12, atol=1e-12)
    # by hand for one token: S_1 = λ² S_{-1} + λ φ(k_0) v_0ᵀ + φ(k_1) v_1ᵀ
    lam = log_decay.exp().view(1, H, 1, 1)
    s1 = lam ** 2 * kv0 + lam * phi_k[:, :, 0, :, None] * v[:, :, 0, None] + phi_k[:, :, 1, :, None] * v[:, :, 1, None]
    torch.testing.assert_close(causal_linear_attention(phi_q[:, :, :2], phi_k[:, :, :2], v[:, :, :2], state=start,
                                                       log_decay=log_decay)[1].kv, s1)


@pytest.mark.parametrize("alibi", [False, True])
def test_the_token_loop_continues_the_chunked_form_and_the_other_way_round(alibi):
    layer = T2RAttention(H * d, H, causal=True, feature_size=k, alibi=alibi).double()
    q, k_, v = qkv(3)
    options = {"slopes": layer.slopes}
    whole = plain_t2r(q, k_, v, layer.feature_map.weight, layer.feature_map.bias, causal=True, floor=FLOOR,
                      slopes=layer.slopes)
    first, middle = t2r_chunked(q[:, :, :3], k_[:, :, :3], v[:, :, :3], layer.feature_map, chunk_size=2, **options)
    assert isinstance(middle, LinearState)
    rest, end = t2r_loop(q[:, :, 3:], k_[:, :, 3:], v[:, :, 3:], layer.feature_map, state=middle, **options)
    torch.testing.assert_close(torch.cat([first, rest], dim=2), whole, rtol=1e-10, atol=1e-12)
    first, middle = t2r_loop(q[:, :, :4], k_[:, :, :4], v[:, :, :4], layer.feature_map, **options)
    rest, again = t2r_chunked(q[:, :, 4:], k_[:, :, 4:], v[:, :, 4:], layer.feature_map, state=middle, **options)
    torch.testing.assert_close(torch.cat([first, rest], dim=2), whole, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(again.kv, end.kv, rtol=1e-10, atol=1e-12)


def test_a_query_whose_features_vanish_reads_zero_with_finite_gradients():
    layer = T2RAttention(H * d, H, causal=True, feature_size=k).double()
    with torch.no_grad():
        layer.feature_map.bias.fill_(-100.0)  # every feature of every query and key is relu(< 0) = 0
    q, k_, v = (t.requires_grad_() for t in qkv())
    y = t2r_parallel(q, k_, v, layer.feature_map, causal=True)
    assert torch.equal(y, torch.zeros_like(y))
    y.sum().backward()
    assert all(torch.isfinite(t.grad).all() for t in (q, k_, v))


def test_a_softmax_layer_loads_into_t2r_with_only_the_feature_maps_new():
    softmax, t2r = SoftmaxAttention(12, 3, causal=True), T2RAttention(12, 3, causal=True, feature_size=4)
    result = t2r.load_state_dict(softmax.state_dict(), strict=False)
    assert result.unexpected_keys == []
    assert sorted(result.missing_keys) == ["feature_map.bias", "feature_map.weight"]
    assert torch.equal(t2r.qkv.weight, softmax.qkv.weight)


def test_rsa_with_t2r_features_mixes_the_rem_heads_into_t2r_not_softmax():
    torch.manual_seed(0)
    base = RSAAttention(16, 4, causal=True, n_dilated_regular=1).double()
    t2r = RSAAttention(16, 4, causal=True, n_dilated_regular=1, t2r_features=6).double()
    with torch.no_grad():
        base.qkv.weight.normal_(0.0, 0.5)  # far from the N(0, 0.02) start: features that differ by token
    t2r.load_state_dict(base.state_dict(), strict=False)
    t2r.set_rem_parameters(lam=[0.9, -0.7], gamma=0.8, theta=1.3, mu=-0.4)
    assert t2r.n_rem == 4  # every head carries a REM
    x = torch.randn(2, 7, 16, dtype=torch.float64)
    with torch.no_grad():
        q, k_, v = t2r.project(x)
        branch = plain_t2r(q, k_, v, t2r.features.weight, t2r.features.bias, causal=True, floor=FLOOR)
        rem = rem_reference(t2r, v)  # P V, P entry by entry from the REM formula
    for override, g in ((None, 1 / (1 + math.exp(0.4))), (1.0, 1.0), (0.0, 0.0)):  # σ(μ), and the limits
        t2r.gate_override = override
        torch.testing.assert_close(t2r(x), t2r.output((1 - g) * branch + g * rem), rtol=1e-10, atol=1e-12)
    base.gate_override = 0.0  # all on the other branch: T2R against softmax
    assert not torch.allclose(t2r(x), base(x))
    with pytest.raises(ValueError, match="cache_size"):
        RSAAttention(16, 4, causal=True, t2r_features=6, cache_size=8)
    with pytest.raises(ValueError, match="t2r_features"):
        RSAAttention(16, 4, t2r_features=0)


# ---------------------------------------------------------------------- the conversion
def series(n=240, seed=0):
    rng = np.random.default_rng(seed)
    values = np.sin(np.arange(n) / 4) + 0.1 * rng.normal(size=n)
    return pd.DataFrame({"unique_id": "a", "ds": pd.date_range("2024-01-01", periods=n, freq="h"), "y": values})


SMALL = dict(h=6, input_size=24, d_model=8, n_heads=4, n_layers=1, d_ff=8, patch_len=2, max_epochs=2,
             val_size=12, random_state=0)


@pytest.fixture(scope="module")
def originals():
    df = series()
    return df, {cls.__name__: cls(stream=True, **SMALL).fit(df) for cls in (tsrsa.TransformerForecaster,
                                                                            tsrsa.RSAForecaster)}


@pytest.mark.parametrize("name", ["TransformerForecaster", "RSAForecaster"])
def test_conversion_copies_every_weight_but_the_features_and_leaves_the_original_alone(originals, name):
    df, models = originals
    original = models[name]
    weights = {key: value.clone() for key, value in original.network_.state_dict().items()}
    forecast = original.predict()
    params = original.get_params()
    zero = to_recurrent(original, df, feature_size=4, finetune_epochs=1, learning_rate=1e-12)
    for key, value in original.network_.state_dict().items():  # the original is unchanged
        assert torch.equal(value, weights[key])
    pd.testing.assert_frame_equal(original.predict(), forecast)
    assert original.get_params() == params
    converted = zero.network_.state_dict()  # at a rate of 1e-12 the finetuning leaves the weights
    new = [key for key in converted if key not in weights]
    assert new and all(".feature_map." in key or ".features." in key for key in new)
    for key, value in weights.items():
        torch.testing.assert_close(converted[key], value, rtol=0, atol=1e-9)
    assert type(zero) is type(original) and len(zero.fit_history_) == 1
    if name == "RSAForecaster":
        assert zero.attention_options["t2r_features"] == 4
    else:
        assert zero.attention == "t2r" and zero.attention_options == {"feature_size": 4, "alibi": True}
    # the streaming original's ALiBi positions carry over as the T2R state's decay
    slopes = original.network_.blocks[0].attn.slopes
    assert slopes is not None
    torch.testing.assert_close(zero.network_.blocks[0].attn.slopes, slopes)


def test_an_original_without_alibi_converts_without_the_decay():
    df = series()
    original = tsrsa.TransformerForecaster(stream=True, attention_options={"alibi": False}, **SMALL).fit(df)
    assert original.network_.blocks[0].attn.slopes is None
    converted = to_recurrent(original, df, feature_size=4, finetune_epochs=1)
    assert converted.attention_options == {"feature_size": 4, "alibi": False}
    assert converted.network_.blocks[0].attn.slopes is None


@pytest.mark.parametrize("name", ["TransformerForecaster", "RSAForecaster"])
def test_a_converted_streaming_model_streams_as_its_parallel_form_saves_and_loads(originals, name, tmp_path):
    df, models = originals
    converted = to_recurrent(models[name], df, feature_size=4, finetune_epochs=2)
    more = series(260).iloc[240:]
    streamed = converted.update(more).predict()
    parallel = parallel_forecast(converted, series(260))  # the whole frame again, through the parallel form
    np.testing.assert_allclose(streamed["yhat"], parallel[0], rtol=1e-4, atol=1e-5)
    path = tmp_path / "converted"
    converted.save(path)
    loaded = tsrsa.load(path)
    pd.testing.assert_frame_equal(loaded.predict(), streamed)
    state = converted.network_.blocks[0].attn.state_size(10_000)
    assert state == converted.network_.blocks[0].attn.state_size(10)  # fixed size at any history


def test_a_model_outside_the_streaming_configuration_converts_with_a_warning(monkeypatch):
    import tsrsa.estimator.plan as plan

    df = series()
    fixed = tsrsa.TransformerForecaster(**SMALL).fit(df)
    assert fixed.readout_tokens_ == 3  # readout_tokens="auto" on 199 windows: ceil(h 6 / patch_len 2)
    monkeypatch.setattr(plan, "SHORT_WINDOWS", 100)  # "auto" would now read all 12 tokens
    with pytest.warns(UserWarning, match="cannot stream"):
        converted = to_recurrent(fixed, df, feature_size=4, finetune_epochs=1)
    assert converted.readout_tokens_ == 3  # the original's head, whatever "auto" gives on df
    assert converted.predict()["yhat"].notna().all()


def test_bad_input_is_refused_with_a_clear_error_and_nothing_changes(originals):
    df, models = originals
    with pytest.raises(TypeError, match="no attention to convert"):
        to_recurrent(tsrsa.LSTMForecaster(h=6, input_size=24, hidden_size=4, max_epochs=1).fit(df), df)
    with pytest.raises(Exception, match="not fitted"):
        to_recurrent(tsrsa.TransformerForecaster(h=6), df)
    linear = tsrsa.TransformerForecaster(attention="linear", **SMALL).fit(df)
    with pytest.raises(ValueError, match="no softmax attention"):
        to_recurrent(linear, df)
    original = models["TransformerForecaster"]
    params = original.get_params()
    with pytest.raises(ValueError, match="architecture"):
        to_recurrent(original, df, d_model=16)
    with pytest.raises(TypeError, match="does not take"):
        to_recurrent(original, df, hidden_size=3)
    with pytest.raises(ValueError, match="feature_size"):
        to_recurrent(original, df, feature_size=0)
    assert original.get_params() == params
    converted = to_recurrent(models["RSAForecaster"], df, feature_size=4, finetune_epochs=1)
    with pytest.raises(ValueError, match="already converted"):
        to_recurrent(converted, df)


def test_clone_of_a_converted_model_is_the_t2r_architecture_from_scratch(originals):
    from sklearn.base import clone

    df, models = originals
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a streaming original: no warning
        converted = to_recurrent(models["TransformerForecaster"], df, feature_size=4, finetune_epochs=1)
    scratch = clone(converted).fit(df)
    assert not hasattr(scratch, "_warm_start")
    assert not torch.allclose(scratch.network_.blocks[0].attn.qkv.weight, converted.network_.blocks[0].attn.qkv.weight)


def test_rsa_forecaster_checks_t2r_features_before_fitting():
    df = series()
    for bad, error in (({"t2r_features": 0}, "t2r_features"), ({"t2r_features": 4, "cache_size": 8}, "cache_size")):
        model = tsrsa.RSAForecaster(**SMALL, attention_options=bad)
        with pytest.raises(ValueError, match=error):
            model.fit(df)
        assert not hasattr(model, "network_")
