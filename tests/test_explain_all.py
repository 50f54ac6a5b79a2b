"""explain() of every neural forecaster (tsrsa.estimator.explain): the transformer's attention by lag, the LSTM's
input sensitivity, DLinear's map weights, and the statistical start's part of the forecast in frame.attrs
(RSA's own REM table keeps its columns)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from tsrsa import DLinearForecaster, LSTMForecaster, RSAForecaster, TransformerForecaster
from tsrsa.estimator.explain import ATTENTION_COLUMNS, LINEAR_COLUMNS, SENSITIVITY_COLUMNS, START_ATTRS
from tsrsa.nn.start import zero_outputs

H, L = 4, 16


def frame(n_series: int = 3, length: int = 120) -> pd.DataFrame:
    t = np.arange(length)
    return pd.concat([pd.DataFrame({"unique_id": f"s{k}", "ds": t,
                                    "y": 5.0 + k + np.sin(2 * np.pi * t / 8)
                                    + 0.1 * np.random.default_rng(k).standard_normal(length)})
                      for k in range(n_series)], ignore_index=True)


SMALL = dict(h=H, input_size=L, max_epochs=2, random_state=0)
MODELS = {
    "Transformer": lambda **kw: TransformerForecaster(**SMALL, d_model=8, n_heads=2, n_layers=2, d_ff=16, **kw),
    "LSTM": lambda **kw: LSTMForecaster(**SMALL, hidden_size=8, n_layers=1, **kw),
    "DLinear": lambda **kw: DLinearForecaster(**SMALL, **kw),
    "RSA": lambda **kw: RSAForecaster(**SMALL, d_model=8, n_heads=4, n_layers=1, d_ff=16, **kw),
}


@pytest.fixture(scope="module", params=list(MODELS))
def started(request):
    """Each neural forecaster fitted with a statistical start."""
    return MODELS[request.param](start="ar").fit(frame())


def scaled_windows(model) -> np.ndarray:
    """(S, L) the last window of every series, in the units the network reads."""
    memory = model.memory_
    return (memory.tails[:, -L:] - memory.loc[:, None]) / memory.scale[:, None]


def test_the_start_share_is_the_start_against_the_correction(started):
    attrs = started.explain().attrs
    assert set(START_ATTRS) <= set(attrs) and 0.0 <= attrs["start_share"] <= 1.0
    start = started.network_.start
    x = scaled_windows(started)
    by_hand = x[:, -start.window:] @ start.weight.detach().double().numpy().T + start.bias.detach().double().numpy()
    np.testing.assert_allclose(attrs["start_forecast"], np.abs(by_hand).mean(), rtol=1e-5)  # the fitted map's
    with torch.no_grad():
        forecast = started.network_.eval()(torch.tensor(x, dtype=torch.float32)).double().numpy()  # (S, H, Q)
    np.testing.assert_allclose(attrs["network_correction"], np.abs(forecast - by_hand[:, :, None]).mean(), rtol=1e-4)
    assert attrs["start_share"] == pytest.approx(
        attrs["start_forecast"] / (attrs["start_forecast"] + attrs["network_correction"]))


def test_a_network_that_adds_nothing_leaves_the_whole_forecast_to_the_start():
    model = MODELS["Transformer"](start="ar", revin=False).fit(frame())
    zero_outputs(model.network_)  # the head writes zeros: the forecast is the start's alone
    attrs = model.explain().attrs
    assert attrs["start_share"] == pytest.approx(1.0, abs=1e-6) and attrs["network_correction"] < 1e-6


@pytest.mark.parametrize("name", list(MODELS))
def test_without_a_start_the_share_is_none(name):
    attrs = MODELS[name](start=None).fit(frame(n_series=2)).explain().attrs
    assert all(attrs[key] is None for key in START_ATTRS)


def test_attention_by_lag_sums_to_one_and_respects_causality():
    model = MODELS["Transformer"](start=None).fit(frame())
    table = model.explain()
    n_tokens = L // model.patch_len
    assert list(table.columns) == ATTENTION_COLUMNS and len(table) == 2 * 2 * (2 * n_tokens - 1)
    assert (table["weight"] >= 0).all() and (table["lag_steps"] == table["lag"] * model.patch_len).all()
    np.testing.assert_allclose(table.groupby(["layer", "head"])["weight"].sum(), 1.0, atol=1e-9)
    causal = MODELS["Transformer"](start=None, causal=True).fit(frame()).explain()
    np.testing.assert_allclose(causal.groupby(["layer", "head"])["weight"].sum(), 1.0, atol=1e-9)
    assert (causal.loc[causal["lag"] < 0, "weight"] == 0).all()  # no token reads a later one
    assert (causal.loc[causal["lag"] >= 0, "weight"] > 0).any()
    with pytest.raises(ValueError, match="member=1 is not one of 0..0"):
        model.explain(member=1)


def test_attention_of_a_kind_without_weights_is_refused():
    model = MODELS["Transformer"](start=None, attention="linear").fit(frame(n_series=1))
    with pytest.raises(ValueError, match="attention='linear' has none"):
        model.explain()


def test_attention_of_decoder_tokens_is_refused():
    df = frame(n_series=1).assign(promo=lambda d: (d["ds"] % 7 == 0).astype(float))
    model = MODELS["Transformer"](start=None, covariates={"future": ["promo"]}, known_future="tokens").fit(df)
    with pytest.raises(ValueError, match="known_future='readout'"):
        model.explain()


def test_lstm_sensitivity_is_the_gradient_of_the_mean_forecast():
    model = MODELS["LSTM"](start=None).fit(frame())
    table = model.explain()
    assert list(table.columns) == SENSITIVITY_COLUMNS and table["lag"].tolist() == list(range(1, L + 1))
    assert (table["sensitivity"] >= 0).all() and table["share"].sum() == pytest.approx(1.0)
    network = model.network_.eval()
    x = torch.tensor(scaled_windows(model), dtype=torch.float64)
    eps = 1e-4
    for lag in (1, 5, L):  # central differences of the mean forecast, one window at a time
        up, down = x.clone(), x.clone()
        up[:, -lag] += eps
        down[:, -lag] -= eps
        with torch.no_grad():
            slope = (network.double()(up).mean(dim=(1, 2)) - network.double()(down).mean(dim=(1, 2))) / (2 * eps)
        assert table.loc[lag - 1, "sensitivity"] == pytest.approx(float(slope.abs().mean()), rel=1e-3, abs=1e-7)


def test_dlinear_weights_are_its_maps():
    model = MODELS["DLinear"](start=None).fit(frame())
    table = model.explain()
    assert list(table.columns) == LINEAR_COLUMNS and len(table) == 2 * L
    assert table["share"].sum() == pytest.approx(1.0) and (table["abs_weight"] >= table["weight"].abs() - 1e-12).all()
    trend = model.network_.trend_map.weight.detach().double().numpy()
    rows = table[table["component"] == "trend"]
    np.testing.assert_allclose(rows["weight"], trend.mean(axis=0)[::-1], rtol=1e-12)  # lag 1 = the last step
    np.testing.assert_allclose(rows["abs_weight"], np.abs(trend).mean(axis=0)[::-1], rtol=1e-12)


def test_rsa_keeps_its_columns():
    table = MODELS["RSA"](start="ar").fit(frame(n_series=2)).explain()
    assert list(table.columns) == ["layer", "head", "rem_type", "lambda", "gamma", "theta", "period", "dilation",
                                   "gate", "lag_unit", "lambda_init", "gamma_init", "theta_init"]
    assert 0.0 <= table.attrs["start_share"] <= 1.0
