"""tsrsa.nn: the attention registry, softmax attention, patches, RevIN, networks and losses."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tsrsa.nn import (
    Attention, BackboneConfig, ForecastingTransformer, LSTMConfig, LSTMNetwork, PatchEmbedding, RevIN,
    SoftmaxAttention, attention_kinds, build_attention, make_loss, register_attention, softmax_attention,
)
from tsrsa.nn import registry
from tsrsa.nn.softmax import softmax_parallel


# ---------------------------------------------------------------------- registry
@pytest.fixture
def dummy_kind():
    """An attention kind defined outside the backbone: mean of the past tokens."""

    @register_attention("test-mean")
    class MeanAttention(Attention):
        calls = 0

        def __init__(self, d_model, n_heads, *, dropout=0.0, causal=False, scale=1.0):
            super().__init__()
            self.scale = scale
            self.proj = torch.nn.Linear(d_model, d_model)

        def forward(self, x):  # (B, T, D) -> (B, T, D)
            type(self).calls += 1
            T = x.size(1)
            weights = torch.ones(T, T).tril() / torch.arange(1, T + 1)[:, None]
            return self.scale * self.proj(weights @ x)

    yield MeanAttention
    registry._KINDS.pop("test-mean")


def test_new_attention_kind_slots_into_the_backbone(dummy_kind):
    assert "test-mean" in attention_kinds()
    config = BackboneConfig(input_size=16, h=3, patch_len=4, d_model=8, n_heads=2, n_layers=2, d_ff=8,
                            attention="test-mean", attention_options={"scale": 0.5})
    net = ForecastingTransformer(config)
    assert all(isinstance(b.attn, dummy_kind) and b.attn.scale == 0.5 for b in net.blocks)
    out = net(torch.randn(5, 16))
    assert out.shape == (5, 3, 1)
    assert dummy_kind.calls == 2  # one call per block


def test_registry_errors(dummy_kind):
    with pytest.raises(ValueError, match="unknown attention kind 'nope'"):
        build_attention("nope", 8, 2)
    with pytest.raises(ValueError, match="already registered"):
        register_attention("test-mean")(type("Other", (Attention,), {}))
    with pytest.raises(TypeError, match="subclass of tsrsa.nn.Attention"):
        register_attention("plain")(torch.nn.Linear)
    with pytest.raises(NotImplementedError, match="no recurrent form"):
        build_attention("test-mean", 8, 2).init_state(1)
    with pytest.raises(TypeError, match=r"has no option\(s\) \['scael'\]; its options are \['scale'\]"):
        build_attention("test-mean", 8, 2, scael=0.5)
    with pytest.raises(ValueError, match="streams only when built with causal=True"):
        build_attention("softmax", 8, 2).stream(torch.zeros(1, 1, 8), build_attention("softmax", 8, 2).init_state(1))


# ---------------------------------------------------------------------- softmax attention
def test_alibi_slopes_and_bias_follow_the_paper_elementwise():
    from tsrsa.nn.softmax import alibi_slopes

    assert alibi_slopes(8) == [2.0 ** -(i + 1) for i in range(8)]  # 2^(-8/8 * k)
    assert alibi_slopes(4) == [0.25, 0.0625, 0.015625, 0.00390625]
    assert alibi_slopes(6) == alibi_slopes(4) + alibi_slopes(8)[0::2][:2]
    torch.manual_seed(0)
    for causal in (False, True):
        attn = spread(SoftmaxAttention(8, 2, causal=causal, alibi=True).double().eval())
        x = torch.randn(2, 6, 8, dtype=torch.float64)
        q, k, v = attn.project(x)
        slopes = torch.tensor(alibi_slopes(2), dtype=torch.float64)
        i, j = torch.arange(6)[:, None], torch.arange(6)[None, :]
        logits = q @ k.mT / 2.0 - slopes.view(1, 2, 1, 1) * (i - j).abs()  # (B, H, T, T)
        if causal:
            logits = logits.masked_fill(j > i, float("-inf"))
        expected = attn.output(torch.softmax(logits, dim=-1) @ v)
        torch.testing.assert_close(attn(x), expected, rtol=0, atol=1e-12)



def spread(attn):
    """q/k/v weights N(0, 0.5²) instead of the N(0, 0.02²) start: on unit inputs the logits are a few
    units, so attention is far from uniform and a wrong scale or mask moves the output by order one."""
    with torch.no_grad():
        attn.qkv.weight.normal_(0.0, 0.5)
    return attn


@pytest.mark.parametrize("causal", [False, True])
def test_fused_and_explicit_softmax_follow_the_formula_elementwise(causal):
    torch.manual_seed(0)
    attn = spread(SoftmaxAttention(16, 4, causal=causal).double().eval())
    x = torch.randn(3, 7, 16, dtype=torch.float64)
    q, k, v = attn.project(x)  # (B, H, T, 4)
    mask = torch.full((7, 7), -torch.inf, dtype=torch.float64).triu(1) if causal else 0.0
    weights = torch.softmax(q @ k.mT / 2.0 + mask, -1)  # head size 4: scale 1/2
    assert weights[..., -1, :].amax(-1).mean() > 0.5  # the last query: far from uniform (1/7 each)
    expected = attn.output(weights @ v)
    torch.testing.assert_close(attn(x), expected, rtol=0, atol=1e-12)  # the fused kernel
    attn.fused = False
    torch.testing.assert_close(attn(x), expected, rtol=0, atol=1e-12)  # the explicit four lines
    q, k, v = torch.randn(3, 2, 5, 4, dtype=torch.float64).unbind(0)
    mask = torch.full((5, 5), -torch.inf, dtype=torch.float64).triu(1) if causal else 0.0
    y, cache = softmax_attention(q, k, v, causal=causal)
    torch.testing.assert_close(y, torch.softmax(q @ k.mT / 2.0 + mask, -1) @ v)
    assert torch.equal(cache.k, k) and torch.equal(cache.v, v)  # the cache: every key and value
    if causal:  # the last two queries over the cache of the first three: rows 3 and 4 of the whole
        first, cache = softmax_attention(q[:, :3], k[:, :3], v[:, :3], causal=True)
        rest, _ = softmax_attention(q[:, 3:], k[:, 3:], v[:, 3:], causal=True, state=cache)
        torch.testing.assert_close(torch.cat([first, rest], dim=1), y, rtol=0, atol=1e-12)
        fused, _ = softmax_parallel(q[:, 3:], k[:, 3:], v[:, 3:], causal=True, state=cache)
        torch.testing.assert_close(fused, rest, rtol=0, atol=1e-12)


def test_causal_attention_ignores_the_future():
    torch.manual_seed(0)
    attn = SoftmaxAttention(8, 2, causal=True).eval()
    x = torch.randn(2, 6, 8)
    y = x.clone()
    y[:, 4:] += 10.0
    torch.testing.assert_close(attn(x)[:, :4], attn(y)[:, :4])
    assert not torch.allclose(attn(x)[:, 4:], attn(y)[:, 4:])
    full = SoftmaxAttention(8, 2, causal=False).eval()
    assert not torch.allclose(full(x)[:, :4], full(y)[:, :4])


# ---------------------------------------------------------------------- patches, RevIN, networks
def test_patch_embedding_pads_at_the_front():
    embed = PatchEmbedding(input_size=10, patch_len=4, d_model=3, dropout=0.0)
    assert embed.n_tokens == 3 and embed.pad == 2
    with torch.no_grad():
        embed.value.weight.copy_(torch.eye(3, 4))
        embed.value.bias.zero_()
    x = torch.arange(1.0, 11.0)[None]
    tokens = embed(x)  # first token holds [1, 1, 1, 2] (two copies of the first value in front)
    torch.testing.assert_close(tokens[0, 0], torch.tensor([1.0, 1.0, 1.0]))
    torch.testing.assert_close(tokens[0, 2], torch.tensor([7.0, 8.0, 9.0]))
    x2 = x.clone()
    x2[0, -1] += 5  # the last observation belongs to the last token only
    changed = (embed(x2) - tokens).abs().sum(-1)[0]
    assert changed[:2].sum() == 0 and changed[2] == 0  # weight rows ignore the 4th step here
    with torch.no_grad():
        embed.value.weight.fill_(1.0)
    changed = (embed(x2) - embed(x)).abs().sum(-1)[0]
    assert changed[:2].sum() == 0 and changed[2] > 0


def test_revin_round_trip():
    revin = RevIN()
    with torch.no_grad():
        revin.weight.fill_(1.7)
        revin.bias.fill_(-0.3)
    x = torch.randn(4, 20) * 5 + 3
    z, stats = revin.normalise(x)
    back = revin.denormalise(z[:, :, None], stats)[..., 0]
    torch.testing.assert_close(back, x, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("make", [
    lambda: ForecastingTransformer(BackboneConfig(input_size=24, h=6, patch_len=5, d_model=8, n_heads=2,
                                                  n_layers=1, d_ff=8, n_outputs=3)),
    lambda: LSTMNetwork(LSTMConfig(input_size=24, h=6, patch_len=5, hidden_size=8, n_layers=2, n_outputs=3)),
], ids=["transformer", "lstm"])
def test_networks_shapes_and_revin_equivariance(make):
    torch.manual_seed(0)
    net = make().eval()
    x = torch.randn(7, 24)
    y = net(x)
    assert y.shape == (7, 6, 3)
    # with RevIN a forecast moves with the window: f(a x + b) = a f(x) + b for a > 0
    torch.testing.assert_close(net(2.5 * x + 4.0), 2.5 * y + 4.0, atol=1e-3, rtol=1e-3)


def test_transformer_initialisation_is_explicit():
    net = ForecastingTransformer(BackboneConfig(d_model=32, n_heads=4))
    linear = net.blocks[0].mlp.fc
    assert abs(linear.weight.std().item() - 0.02) < 0.005 and linear.bias.abs().sum() == 0


# ---------------------------------------------------------------------- losses
def test_losses_elementwise():
    pred = torch.randn(4, 5, 3)
    target = torch.randn(4, 5)
    q = torch.tensor([0.1, 0.5, 0.9])
    manual = torch.stack([
        torch.where(target >= pred[..., j], q[j] * (target - pred[..., j]), (1 - q[j]) * (pred[..., j] - target))
        for j in range(3)
    ], -1).mean()
    torch.testing.assert_close(make_loss("quantile", [0.1, 0.5, 0.9])(pred, target), manual)
    torch.testing.assert_close(make_loss("mse")(pred[..., :1], target), F.mse_loss(pred[..., 0], target))
    torch.testing.assert_close(make_loss("mae")(pred[..., :1], target), (pred[..., 0] - target).abs().mean())
    torch.testing.assert_close(make_loss("huber")(pred[..., :1], target), F.huber_loss(pred[..., 0], target))
    with pytest.raises(ValueError, match="loss='mape'"):
        make_loss("mape")


def test_the_fixed_window_head_reads_only_the_latest_readout_tokens():
    from tsrsa.nn.backbone import FlattenHead

    head = FlattenHead(n_tokens=6, d_model=4, h=3, n_outputs=2, dropout=0.0, reads=2)
    assert head.linear.in_features == 2 * 4
    z = torch.randn(5, 6, 4)
    earlier = z.clone()
    earlier[:, :4] += 1.0  # the four tokens the head does not read
    torch.testing.assert_close(head(earlier), head(z))
    later = z.clone()
    later[:, 4] += 1.0
    assert not torch.allclose(head(later), head(z))
    assert FlattenHead(6, 4, 3, 2, 0.0).linear.in_features == 6 * 4  # None: every token
    with pytest.raises(ValueError, match="between 1 and the sequence's 6 tokens"):
        FlattenHead(6, 4, 3, 2, 0.0, reads=7)


def test_a_fixed_window_forecaster_takes_readout_tokens_and_keeps_them_when_saved(tmp_path):
    import tsrsa
    from tsrsa import RSAForecaster, TransformerForecaster

    from conftest import make_panel

    df = make_panel(length=60)
    model = RSAForecaster(h=4, input_size=16, patch_len=4, d_model=8, n_heads=4, n_layers=1, d_ff=8,
                          readout_tokens=1, max_epochs=1, random_state=0).fit(df)
    assert model.network_.head.linear.in_features == 8  # one token of d_model 8, not 4 tokens
    model.save(tmp_path / "m")
    np.testing.assert_allclose(tsrsa.load(tmp_path / "m").predict()["yhat"], model.predict()["yhat"], rtol=1e-6)
    too_far = TransformerForecaster(h=4, input_size=16, patch_len=4, readout_tokens=5)
    with pytest.raises(ValueError, match="reads at most the window's 4 tokens"):
        too_far.fit(df)
    assert not hasattr(too_far, "network_")


def test_readout_tokens_auto_reads_one_horizon_of_tokens_only_when_the_windows_are_few(monkeypatch):
    from sklearn.exceptions import NotFittedError

    import tsrsa.estimator.plan as plan
    from tsrsa import RSAForecaster, TransformerForecaster

    from conftest import make_panel

    df = make_panel(n_series=2, length=60)  # 2 x (60 - 24 - 6 + 1) = 62 training windows
    small = dict(h=6, input_size=24, patch_len=4, d_model=8, n_heads=4, n_layers=1, d_ff=8, max_epochs=1,
                 start=None, random_state=0)  # the head's reach only: no statistical start to fit
    for cls in (TransformerForecaster, RSAForecaster):
        model = cls(**small)
        assert model.get_params()["readout_tokens"] == "auto"
        with pytest.raises(NotFittedError):
            model.readout_tokens_
        model.fit(df)
        assert model.readout_tokens_ == 2  # ceil(h 6 / patch_len 4) of the window's 6 tokens
        assert model.network_.head.linear.in_features == 2 * 8
        assert model.get_params()["readout_tokens"] == "auto"  # the parameter is not rewritten
    assert TransformerForecaster(**{**small, "h": 24, "input_size": 24}).fit(make_panel(length=80)) \
        .readout_tokens_ == 6  # a horizon of every token: the full head
    assert TransformerForecaster(**small, readout_tokens=None).fit(df).readout_tokens_ == 6
    assert TransformerForecaster(**small, readout_tokens=3).fit(df).readout_tokens_ == 3
    monkeypatch.setattr(plan, "SHORT_WINDOWS", 62)  # 62 windows are no longer few
    assert TransformerForecaster(**small).fit(df).readout_tokens_ == 6
    monkeypatch.setattr(plan, "SHORT_WINDOWS", 63)
    assert TransformerForecaster(**small).fit(df).readout_tokens_ == 2
    assert TransformerForecaster(**small, stream=True).fit(df).readout_tokens_ == 6  # streaming: every token
    with pytest.raises(ValueError, match='use "auto", None'):
        TransformerForecaster(**small, readout_tokens="all").fit(df)
    for bad in (2.5, True):
        with pytest.raises(TypeError, match='readout_tokens must be "auto", None or an int'):
            TransformerForecaster(**small, readout_tokens=bad).fit(df)
    with pytest.raises(ValueError, match="readout_tokens=0 must be >= 1"):
        TransformerForecaster(**small, readout_tokens=0).fit(df)
    assert TransformerForecaster(**small, readout_tokens=np.int64(3)).fit(df).readout_tokens_ == 3


def test_every_network_declares_its_parameter_groups_and_a_group_it_lacks_is_named():
    from tsrsa.nn import DLinearConfig, DLinearNetwork, build_transformer
    from tsrsa.training import TrainingConfig
    from tsrsa.training.loop import parameter_groups

    small = dict(input_size=16, h=4, patch_len=4, d_model=16, n_heads=4, n_layers=2, d_ff=8)
    rsa = build_transformer(BackboneConfig(attention="rsa", **small))
    streaming = build_transformer(BackboneConfig(attention="rsa", causal=True, stream=True, **small))
    for net in (rsa, streaming):  # the REM values and gates of every layer: eta, nu, theta, mu
        groups = net.parameter_groups()
        assert list(groups) == ["recurrence"] and len(groups["recurrence"]) == 2 * 4
        assert all(p is block.attn.eta or p is block.attn.mu or p is block.attn.nu or p is block.attn.theta
                   for p, block in zip(groups["recurrence"], [b for b in net.blocks for _ in range(4)]))
    plain = [build_transformer(BackboneConfig(**small)), LSTMNetwork(LSTMConfig(input_size=16, h=4)),
             DLinearNetwork(DLinearConfig(input_size=16, h=4, kernel_size=5))]
    for net in plain:
        assert net.parameter_groups() == {}
        with pytest.raises(ValueError, match=r"does not offer .*offers \[\]"):
            parameter_groups(net, TrainingConfig(group_options={"recurrence": {"lr": 0.1}}))
