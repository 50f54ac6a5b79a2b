"""RSA: REM formulas elementwise, the three forms of P @ V, gate limits, the RNN theorem,
RSAForecaster's explain() and initialisation."""
from __future__ import annotations

import math

import pytest
import torch

from tsrsa import RSAForecaster, TransformerForecaster
from tsrsa.nn import RSAAttention, linear_rnn_to_rem, plan_heads, rem_matrix
from tsrsa.nn.rem import (
    kind_codes, rem_apply_dense, rem_apply_fft, rem_apply_scan, rem_kernels, rem_matrices,
)

from conftest import make_panel


# ---------------------------------------------------------------------- REM formulas
def _formula(kind, i, j, lam, gamma, theta, d, mask, max_lag):
    lag = i - j if mask == "causal" else abs(i - j)
    if lag < 1 or lag % d or (max_lag is not None and lag > max_lag):
        return 0.0
    m = lag // d
    if kind == "regular":
        return lam**m
    return gamma**m * (math.cos(theta * m) if kind == "cyclic_cos" else math.sin(theta * m))


def rem_reference(layer, v):
    """P_h V_h of every REM head of an RSA layer, P written out entry by entry from the formula
    (float64, the causal mask): v (B, H, T, hs) -> (B, H_rem, T, hs)."""
    radius, angle = (t.detach().tolist() for t in layer.rem_parameters())
    T = v.size(2)
    out = torch.zeros_like(v[:, :layer.n_rem])
    for h, (kind, d) in enumerate(zip(layer.plan.kinds, layer.plan.dilations)):
        P = torch.tensor([[_formula(kind, i, j, radius[h], radius[h], angle[h], d, "causal", layer.max_lag)
                           for j in range(T)] for i in range(T)], dtype=v.dtype)
        out[:, h] = P @ v[:, h]
    return out


@pytest.mark.parametrize("kind", ["regular", "cyclic_cos", "cyclic_sin"])
@pytest.mark.parametrize("dilation", [1, 2, 3])
@pytest.mark.parametrize("mask", ["causal", "bidirectional"])
@pytest.mark.parametrize("max_lag", [None, 5])
def test_rem_matrix_elementwise(kind, dilation, mask, max_lag):
    lam, gamma, theta, T = -0.8, 0.9, 0.7, 9
    P = rem_matrix(kind, T, lam=lam, gamma=gamma, theta=theta, dilation=dilation, mask=mask, max_lag=max_lag)
    assert P.shape == (T, T)
    for i in range(T):
        for j in range(T):
            expected = _formula(kind, i, j, lam, gamma, theta, dilation, mask, max_lag)
            assert P[i, j].item() == pytest.approx(expected, abs=1e-6), (i, j)
    assert torch.all(P.diagonal() == 0)
    if mask == "causal":
        assert torch.all(P.triu() == 0)


def test_rem_matrix_errors():
    with pytest.raises(ValueError, match="needs lam="):
        rem_matrix("regular", 4)
    with pytest.raises(ValueError, match="needs gamma= and theta="):
        rem_matrix("cyclic_cos", 4, gamma=0.5)
    with pytest.raises(ValueError, match="unknown REM kind"):
        rem_matrix("seasonal", 4, lam=0.5)
    with pytest.raises(ValueError, match="mask="):
        rem_matrix("regular", 4, lam=0.5, mask="future")


# ---------------------------------------------------------------------- the three forms
@pytest.fixture
def heads():
    kinds = ["regular", "cyclic_cos", "cyclic_sin", "regular", "cyclic_cos", "cyclic_sin"]
    return (kind_codes(kinds), torch.tensor([0.9, 0.8, 0.8, -0.7, 0.95, 0.95], dtype=torch.float64),
            torch.tensor([0.0, 0.5, 0.5, 0.0, 2.5, 2.5], dtype=torch.float64),
            torch.tensor([1, 1, 1, 3, 2, 2]))


@pytest.mark.parametrize("mask", ["causal", "bidirectional"])
@pytest.mark.parametrize("max_lag", [None, 6])
def test_fft_form_equals_dense(heads, mask, max_lag):
    code, radius, theta, dilation = heads
    v = torch.randn(2, 6, 37, 3, dtype=torch.float64)
    dense = rem_apply_dense(rem_matrices(code, radius, theta, dilation, 37, mask=mask, max_lag=max_lag), v)
    fft = rem_apply_fft(rem_kernels(code, radius, theta, dilation, 37, max_lag=max_lag), v, mask=mask)
    torch.testing.assert_close(fft, dense, atol=1e-10, rtol=1e-10)


def test_recurrent_form_equals_dense(heads):
    code, radius, theta, dilation = heads
    v = torch.randn(2, 6, 25, 3, dtype=torch.float64)
    dense = rem_apply_dense(rem_matrices(code, radius, theta, dilation, 25), v)
    torch.testing.assert_close(rem_apply_scan(code, radius, theta, dilation, v), dense, atol=1e-10, rtol=1e-10)


def test_attention_module_paths_agree():
    torch.manual_seed(0)
    attn = RSAAttention(16, 4, n_regular=1, n_cyclic=1, n_dilated_regular=1, dilations=3).double().eval()
    x = torch.randn(2, 30, 16, dtype=torch.float64)
    attn.method = "dense"
    dense = attn(x)
    attn.method = "fft"
    torch.testing.assert_close(attn(x), dense)


# ---------------------------------------------------------------------- the RSA head
def test_parameterisation_and_paper_initialisation():
    attn = RSAAttention(24, 6, n_regular=3, n_cyclic=1, n_dilated_regular=1, dilations=4)
    assert attn.plan.kinds == ("regular",) * 3 + ("cyclic_cos", "cyclic_sin", "regular")
    assert attn.plan.dilations == (1, 1, 1, 1, 1, 4)
    eta = attn.eta.detach()
    assert torch.all((eta.abs() >= 1) & (eta.abs() <= 2)) and (eta > 0).any() and (eta < 0).any()
    assert torch.all((attn.nu >= 1) & (attn.nu <= 2))
    assert torch.allclose(attn.theta, torch.tensor(math.pi / 4)) and attn.mu.item() == 0.0
    radius, angle = attn.rem_parameters()
    torch.testing.assert_close(radius[:3], torch.tanh(eta[:3]))
    torch.testing.assert_close(radius[5], torch.tanh(eta[3]))
    torch.testing.assert_close(radius[3:5], torch.sigmoid(attn.nu).expand(2))
    attn.set_rem_parameters(lam=[0.5, -0.5, 0.25, 0.9], gamma=[0.7], theta=[1.0], mu=2.0)
    radius, angle = attn.rem_parameters()
    torch.testing.assert_close(radius, torch.tensor([0.5, -0.5, 0.25, 0.7, 0.7, 0.9]))
    torch.testing.assert_close(angle, torch.tensor([0.0, 0.0, 0.0, 1.0, 1.0, 0.0]))
    assert attn.gate().item() == pytest.approx(1 / (1 + math.exp(-2.0)))
    P = attn.rem_matrices(8)
    torch.testing.assert_close(P[3], rem_matrix("cyclic_cos", 8, gamma=0.7, theta=1.0))
    torch.testing.assert_close(P[5], rem_matrix("regular", 8, lam=0.9, dilation=4))


def test_unshared_cyclic_and_per_head_gates():
    attn = RSAAttention(16, 4, n_regular=0, n_cyclic=2, share_cyclic=False, gate="head")
    assert attn.plan.param == (0, 1, 2, 3) and attn.nu.shape == (4,) and attn.mu.shape == (4,)


def test_plan_errors():
    with pytest.raises(ValueError, match="need 5 heads"):
        plan_heads(4, n_regular=1, n_cyclic=2)
    with pytest.raises(ValueError, match="one per dilated"):
        plan_heads(4, n_regular=0, n_cyclic=0, n_dilated_regular=2, dilations=[2])
    with pytest.raises(ValueError, match=">= 1"):
        plan_heads(4, n_dilated_regular=1, dilations=0)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("n_dilated_regular", [0, 1])  # one plain softmax head, or REM on every head
def test_the_gate_mixes_softmax_and_the_rem_elementwise(causal, n_dilated_regular):
    torch.manual_seed(0)
    rsa = RSAAttention(16, 4, causal=causal, n_regular=1, n_cyclic=1, n_dilated_regular=n_dilated_regular,
                       dilations=2).double().eval()
    with torch.no_grad():  # far from the N(0, 0.02) start: attention far from uniform
        rsa.qkv.weight.normal_(0.0, 0.5)
    rsa.set_rem_parameters(lam=[-0.8, 0.9][: rsa.plan.n_eta], gamma=0.85, theta=1.1, mu=0.7)
    R = rsa.n_rem
    assert R == 3 + n_dilated_regular
    x = torch.randn(3, 10, 16, dtype=torch.float64)
    with torch.no_grad():
        q, k, v = rsa.project(x)  # (B, H, T, hs)
        mask = torch.full((10, 10), -torch.inf, dtype=torch.float64).triu(1) if causal else 0.0
        soft = torch.softmax(q @ k.mT / 2.0 + mask, -1) @ v  # head size 4: scale 1/2
        rem = rem_reference(rsa, v)
    for override, g in ((0.0, 0.0), (1.0, 1.0), (None, 1 / (1 + math.exp(-0.7)))):  # the limits, and σ(μ)
        rsa.gate_override = override
        y = soft.clone()
        y[:, :R] = (1 - g) * soft[:, :R] + g * rem  # heads without a REM stay softmax heads
        torch.testing.assert_close(rsa(x), rsa.proj(y.transpose(1, 2).reshape(3, 10, 16)), rtol=0, atol=1e-12)


def test_causal_rsa_ignores_the_future():
    torch.manual_seed(0)
    attn = RSAAttention(8, 4, causal=True, n_regular=1, n_cyclic=1, n_dilated_regular=1).eval()
    x = torch.randn(2, 12, 8)
    y = x.clone()
    y[:, 7:] += 5.0
    torch.testing.assert_close(attn(x)[:, :7], attn(y)[:, :7])


# ---------------------------------------------------------------------- the theorem
def _random_rnn(seed=0, n=5, d_in=3):
    """W_h with eigenvalues 0.9, -0.6, 0.5 and 0.8 e^{+-0.7i}, in a random basis."""
    g = torch.Generator().manual_seed(seed)
    block = torch.zeros(n, n, dtype=torch.float64)
    block[0, 0], block[1, 1], block[2, 2] = 0.9, -0.6, 0.5
    c, s = 0.8 * math.cos(0.7), 0.8 * math.sin(0.7)
    block[3:, 3:] = torch.tensor([[c, -s], [s, c]], dtype=torch.float64)
    S = torch.randn(n, n, generator=g, dtype=torch.float64)
    return S @ block @ torch.linalg.inv(S), torch.randn(n, d_in, generator=g, dtype=torch.float64)


@pytest.mark.parametrize("dilation", [1, 4])
def test_linear_rnn_is_a_sum_of_rem_heads(dilation):
    W_h, W_x = _random_rnn()
    n, d_in = W_x.shape
    conv = linear_rnn_to_rem(W_h, W_x, dilation=dilation)
    assert sorted(conv.kinds) == ["cyclic_cos", "cyclic_sin", "regular", "regular", "regular"]
    attn = conv.build_attention()
    assert attn.gate_override == 1.0 and attn.mu.item() == 0.0  # forced, not a large mu
    B, T = 2, 60
    x = torch.randn(B, T, d_in, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    h = torch.zeros(B, T, n, dtype=torch.float64)
    for t in range(T):  # h_t = W_h h_{t-d} + W_x x_t
        previous = h[:, t - dilation] if t >= dilation else torch.zeros(B, n, dtype=torch.float64)
        h[:, t] = previous @ W_h.T + x[:, t] @ W_x.T
    inputs = torch.zeros(B, T, attn.proj.in_features, dtype=torch.float64)
    inputs[..., :d_in] = x
    with torch.no_grad():
        heads = attn(inputs)[..., :n]  # sum over REM heads of their outputs
    recurrent = torch.zeros_like(h)
    recurrent[:, dilation:] = h[:, :-dilation] @ W_h.T  # W_h h_{t-d}
    for t in range(dilation, T):
        err = (heads[:, t] - recurrent[:, t]).norm() / recurrent[:, t].norm()
        assert err < 1e-5, (t, err)
        err = (heads[:, t] + x[:, t] @ conv.lag0.T - h[:, t]).norm() / h[:, t].norm()
        assert err < 1e-5, (t, err)
    assert heads[:, :dilation].abs().max() < 1e-12  # nothing before the first lag


def test_conversion_errors():
    with pytest.raises(ValueError, match="need W_h"):
        linear_rnn_to_rem(torch.eye(3), torch.ones(2, 1))


# ---------------------------------------------------------------------- RSAForecaster
@pytest.fixture(scope="module")
def fitted_rsa():
    model = RSAForecaster(h=4, input_size=16, patch_len=4, d_model=16, n_heads=4, n_layers=2, d_ff=16,
                          rem={"n_regular": 1, "n_cyclic": 1, "n_dilated_regular": 1, "dilations": 3}, max_epochs=1,
                          random_state=0)
    return model.fit(make_panel(length=60))


def test_explain_units_under_patches(fitted_rsa):
    model = fitted_rsa
    attn = model.network_.blocks[1].attn
    attn.set_rem_parameters(lam=[0.5, 0.9], gamma=[0.8], theta=[2 * math.pi / 3 + 2 * math.pi], mu=0.0)
    table = model.explain()
    assert list(table.columns) == ["layer", "head", "rem_type", "lambda", "gamma", "theta", "period",
                                   "dilation", "gate", "lag_unit", "lambda_init", "gamma_init", "theta_init"]
    assert len(table) == 2 * 4 and (table["lag_unit"] == 4).all()
    layer1 = table[table["layer"] == 1].set_index("head")
    assert layer1["rem_type"].tolist() == ["regular", "cyclic_cos", "cyclic_sin", "regular"]
    assert layer1.loc[0, "lambda"] == pytest.approx(0.5) and math.isnan(layer1.loc[0, "period"])
    # theta folded into (0, pi]: a period of 3 tokens = 12 steps, whatever multiple of 2 pi was added
    assert layer1.loc[1, "period"] == pytest.approx(12.0) and layer1.loc[2, "period"] == pytest.approx(12.0)
    assert layer1.loc[1, "gamma"] == pytest.approx(0.8) and layer1.loc[1, "dilation"] == 4
    assert layer1.loc[3, "dilation"] == 12  # 3 tokens of 4 steps
    assert (layer1["gate"] == 0.5).all()


def test_explain_softmax_heads_and_plot(fitted_rsa):
    model = RSAForecaster(h=4, input_size=16, patch_len=4, d_model=16, n_heads=4, n_layers=1, d_ff=16,
                          rem={"n_regular": 1, "n_cyclic": 0, "n_dilated_regular": 0}, max_epochs=1, random_state=0)
    table = model.fit(make_panel(length=40)).explain()
    assert table["rem_type"].tolist() == ["regular", "softmax", "softmax", "softmax"]
    assert table.loc[1:, "gate"].isna().all() and table.loc[1:, "lambda"].isna().all()
    fig = fitted_rsa.plot_rem()
    assert len([ax for ax in fig.axes if ax.get_title()]) == 2 * 4
    with pytest.raises(ValueError, match="layer=5"):
        fitted_rsa.plot_rem(layer=5)


def test_rem_init_values_are_applied_to_every_layer():
    model = RSAForecaster(h=4, input_size=16, patch_len=4, d_model=16, n_heads=4, n_layers=2,
                          rem={'init': {"lambda": [0.3, -0.4], "gamma": 0.6, "theta": 1.2, "gate": -1.0}})
    model.check_params()
    network = model.build_network(model.network_config())
    model._initialise_network(network, None, None)
    for block in network.blocks:
        radius, angle = block.attn.rem_parameters()
        torch.testing.assert_close(radius, torch.tensor([0.3, 0.6, 0.6, -0.4]))
        torch.testing.assert_close(angle, torch.tensor([0.0, 1.2, 1.2, 0.0]))
        assert block.attn.mu.item() == pytest.approx(-1.0)


@pytest.mark.parametrize("rem_init,error,message", [
    ({"lambda": [0.3]}, ValueError, "needs one value or 2"),
    ({"gamma": 1.5}, ValueError, "must lie in"),
    ({"phase": 1.0}, ValueError, "unknown key"),
    ("random", ValueError, "REM: init='random'"),
    (0.5, TypeError, "REM: init must be"),
])
def test_rem_init_errors(rem_init, error, message):
    with pytest.raises(error, match=message):
        RSAForecaster(h=4, input_size=16, rem={"init": rem_init}).fit(make_panel(length=40))


@pytest.mark.parametrize("rem_learning_rate,step", [(None, 1e-3), (0.1, 0.1)])
def test_rem_learning_rate_steps_the_rem_values_and_gates(rem_learning_rate, step):
    # one optimisation step (every window in one batch): AdamW moves each REM scalar by its rate (no
    # statistical start: its zeroed output head would give the layers no gradient on the first step)
    model = RSAForecaster(h=4, input_size=16, patch_len=4, d_model=16, n_heads=4, n_layers=1, d_ff=16, start=None,
                          rem={"init": "paper", "learning_rate": rem_learning_rate}, learning_rate=1e-3,
                          max_epochs=1, batch_size=4096, lr_schedule=None, random_state=0).fit(make_panel(length=40))
    attn = model.network_.blocks[0].attn
    assert attn.mu.item() == pytest.approx(step, rel=1e-3) or attn.mu.item() == pytest.approx(-step, rel=1e-3)
    torch.testing.assert_close((attn.theta - math.pi / 4).abs(), torch.full_like(attn.theta, step),
                               rtol=1e-3, atol=0)


@pytest.mark.parametrize("n_series,length,max_epochs,gate_init,start", [
    (1, 40, "auto", "auto", -2.0), (1, 2200, "auto", "auto", -2.0), (1, 40, 2, "auto", 0.0),
    (3, 40, "auto", "auto", 0.0), (1, 40, "auto", 1.5, 1.5)])
def test_the_gate_starts_at_minus_two_on_one_series_at_the_automatic_budget(n_series, length, max_epochs, gate_init,
                                                                              start, small_budget):
    # rates too small to move any weight: the gates end where they started
    model = RSAForecaster(h=4, input_size=16, d_model=8, n_heads=4, n_layers=1, d_ff=8, start=None, ensemble_size=1,
                          rem={"gate_init": gate_init}, trainer={"early_stopping_patience": 1}, max_epochs=max_epochs,
                          batch_size=4096,
                          learning_rate=1e-12, random_state=0).fit(make_panel(n_series=n_series, length=length))
    assert model.network_.blocks[0].attn.mu.item() == pytest.approx(start, abs=1e-6)
    with pytest.raises(TypeError, match='gate_init must be "auto" or a number'):
        model.set_params(rem__gate_init="half").fit(make_panel(n_series=1, length=40))
    assert model.network_.blocks[0].attn.mu.item() == pytest.approx(start, abs=1e-6)  # the refused fit kept it


@pytest.mark.parametrize("value,error", [(0.0, ValueError), (-1e-3, ValueError), ("fast", TypeError)])
def test_rem_learning_rate_errors(value, error):
    with pytest.raises(error, match="REM: learning_rate"):
        RSAForecaster(h=4, input_size=16, rem={"learning_rate": value}).fit(make_panel(length=40))


def test_twins_differ_in_attention_alone():
    kw = dict(h=4, input_size=16, patch_len=4, d_model=16, n_heads=4, n_layers=2, d_ff=16)
    rsa, vanilla = RSAForecaster(**kw), TransformerForecaster(**kw)
    net_r = rsa.build_network(rsa.network_config()).eval()
    net_v = vanilla.build_network(vanilla.network_config()).eval()
    extra = set(net_r.state_dict()) - set(net_v.state_dict())
    assert extra and all(k.split(".")[-1] in ("eta", "nu", "theta", "mu") for k in extra)
    assert set(net_v.state_dict()) <= set(net_r.state_dict())
    net_v.load_state_dict({k: v for k, v in net_r.state_dict().items() if k not in extra})
    for block in net_r.blocks:
        block.attn.gate_override = 0.0
    x = torch.randn(5, 16)
    torch.testing.assert_close(net_r(x), net_v(x))
    for block in net_r.blocks:
        block.attn.gate_override = None
    assert not torch.allclose(net_r(x), net_v(x))
    extra_params = sum(p.numel() for p in net_r.parameters()) - sum(p.numel() for p in net_v.parameters())
    assert extra_params == 2 * (2 + 1 + 1 + 1)  # eta (2), nu, theta, mu per layer


def test_rem_stream_follows_the_recurrences_elementwise():
    """Regular, cyclic cos/sin and dilated heads, advanced block by block by rem_stream, equal the
    Python-loop recurrences of rem_apply_scan (float64)."""
    from tsrsa.nn.rem import kind_codes, rem_apply_scan, rem_multipliers, rem_stream

    torch.manual_seed(0)
    kinds = ["regular", "regular", "cyclic_cos", "cyclic_sin", "cyclic_cos", "regular"]
    code = kind_codes(kinds)
    radius = torch.tensor([0.9, -0.7, 0.8, 0.8, 0.95, 0.5], dtype=torch.float64)
    theta = torch.tensor([0.0, 0.0, 0.6, 0.6, 2.1, 0.0], dtype=torch.float64)
    dilation = torch.tensor([1, 2, 1, 1, 3, 4])
    v = torch.randn(2, 6, 17, 3, dtype=torch.float64)
    expected = rem_apply_scan(code, radius, theta, dilation, v)  # (B, H, T, hs)
    rho = rem_multipliers(radius, theta)
    z = torch.zeros(2, 6, 4, 3, dtype=torch.complex128)
    outputs, start = [], 0
    for n in (1, 6, 2, 8):
        o, z = rem_stream(rho, dilation, v[:, :, start: start + n], z)
        outputs.append(torch.where((code == 2).view(1, -1, 1, 1), o.imag, o.real))
        start += n
    torch.testing.assert_close(torch.cat(outputs, dim=2), expected, rtol=0, atol=1e-12)
    assert (z[:, 0, 1:] == 0).all() and (z[:, 1, 2:] == 0).all()  # no state beyond a head's dilation


@pytest.mark.parametrize("method", ["dense", "fft"])
def test_the_rem_forms_continue_each_others_state_as_the_recurrences_say(method):
    """rem_parallel (dense or FFT, from a history) and rem_recurrent (rem_stream) hand their states over:
    any sequence of the two over a long run equals the Python-loop recurrences of rem_apply_scan."""
    from tsrsa.nn.rem import RemHeads, kind_codes, rem_apply_scan, rem_parallel, rem_recurrent

    torch.manual_seed(1)
    code = kind_codes(["regular", "cyclic_cos", "cyclic_sin", "regular", "cyclic_sin"])
    radius = torch.tensor([-0.8, 0.9, 0.9, 0.6, 0.7], dtype=torch.float64)
    theta = torch.tensor([0.0, 0.7, 0.7, 0.0, 2.5], dtype=torch.float64)
    dilation = torch.tensor([1, 1, 1, 3, 2])
    heads = RemHeads(code, radius, theta, dilation)
    v = torch.randn(2, 5, 23, 4, dtype=torch.float64)
    expected = rem_apply_scan(code, radius, theta, dilation, v)  # (B, H, T, hs)
    _, end = rem_recurrent(v, heads)
    for pieces in (["p", "r", "p"], ["r", "p", "p", "r"]):
        cuts = torch.linspace(0, 23, len(pieces) + 1).round().long().tolist()
        state, outputs = None, []
        for form, a, b in zip(pieces, cuts, cuts[1:]):
            if form == "p":
                y, state = rem_parallel(v[:, :, a:b], heads, method=method, state=state)
            else:
                y, state = rem_recurrent(v[:, :, a:b], heads, state=state)
            outputs.append(y)
        torch.testing.assert_close(torch.cat(outputs, dim=2), expected, rtol=0, atol=1e-10)
        torch.testing.assert_close(state, end, rtol=0, atol=1e-10)
    with pytest.raises(ValueError, match="causal REM"):
        rem_parallel(v, heads._replace(mask="bidirectional"))
