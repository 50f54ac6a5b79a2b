"""The ARIMA start: a seasonal ARIMA's forecast as a linear map of the window, and "auto" choosing it."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import tsrsa
from tsrsa.init.heads import Estimates
from tsrsa.start import maps as start_maps
from tsrsa.start.arima import (
    arima_polynomials, arima_start, arima_window_map, css_forecast, fit_arima_css, kept_arima_fit,
)
from tsrsa.start.fit import fit_start, start_estimates
from tsrsa.statistical.arima_model import ArimaSpec

SMALL = dict(d_model=16, d_ff=32, random_state=0)


def simulated(spec: ArimaSpec, params: list[float], n: int, seed: int) -> np.ndarray:
    """A path of ``spec`` with ``params`` (statsmodels' order and scale 1)."""
    model = spec.model(np.zeros(n), concentrate_scale=False)
    rng = np.random.default_rng(seed)
    return np.asarray(model.simulate(np.append(params, 1.0), n, rng=rng), dtype=np.float64)


def ma_heavy(n: int, seed: int = 0) -> np.ndarray:
    """An ARIMA(0,1,1) with theta = -0.7 (exponential smoothing's level, alpha = 0.3): an autoregression needs
    many lags for it."""
    return 10.0 + simulated(ArimaSpec((0, 1, 1)), [-0.7], n, seed)


# ---------------------------------------------------------------------- the map, in float64
@pytest.mark.parametrize("spec, params, window", [
    (ArimaSpec((1, 0, 1), trend="c"), [0.8, 0.6, 0.4], 96),
    (ArimaSpec((0, 1, 1)), [0.4], 96),
    (ArimaSpec((2, 1, 1)), [0.5, -0.3, 0.3], 96),
    (ArimaSpec((1, 0, 0), (0, 1, 1, 12)), [0.5, -0.4], 240),
    (ArimaSpec((0, 1, 1), (1, 1, 0, 4)), [-0.3, 0.5], 120),
], ids=["arma11-constant", "ima11", "arima211", "seasonal12", "seasonal4"])
def test_map_is_statsmodels_forecast(spec, params, window):
    y = 5.0 + simulated(spec, params, 400, seed=3)
    names = [str(n) for n in spec.model(y).param_names]
    phi, theta, mean = arima_polynomials(spec, dict(zip(names, params)))
    if spec.trend == "c":
        assert mean == pytest.approx(params[0] / (1 - params[1]))
    weight, bias = arima_window_map(phi, theta, mean, window, 12)
    with warnings.catch_warnings(action="ignore"):
        expected = spec.model(y).filter(np.asarray(params)).forecast(12)  # the Kalman filter over all 400 steps
    np.testing.assert_allclose(weight @ y[-window:] + bias, expected, rtol=0, atol=1e-6)


def test_map_forecasts_its_own_recursion_exactly_on_a_noiseless_path():
    phi, theta = np.array([1.2, -0.5]), np.array([0.3])
    y = np.zeros(80)
    y[:2] = [1.0, 0.4]
    for t in range(2, 80):
        y[t] = phi @ y[t - 2:t][::-1]
    weight, bias = arima_window_map(phi, theta, 0.0, 40, 6)
    ahead = list(y)
    for _ in range(6):
        ahead.append(phi @ np.asarray(ahead[-2:])[::-1])
    np.testing.assert_allclose(weight @ y[-40:] + bias, ahead[80:], rtol=0, atol=1e-9)


def test_start_is_the_fitted_arima_and_states_its_truncation():
    y = ma_heavy(300)
    start = arima_start([y], 96, 8, 1)
    fit = kept_arima_fit(y, None)
    expected = css_forecast(fit, y, 8)  # the fit's own forecast from its whole tail
    np.testing.assert_allclose(start(y[None, :])[0], expected, rtol=0, atol=max(start.record["truncation"], 1e-9) * 3)
    assert start.record["model"] == "arima" and start.record["forms"] == [ArimaSpec.from_json(fit.form).name]
    assert start.record["truncation"] < 1e-3


@pytest.mark.parametrize("spec, params", [
    (ArimaSpec((2, 1, 1)), [0.5, -0.3, 0.3]),
    (ArimaSpec((1, 0, 1), trend="c"), [0.3, 0.6, 0.4]),
    (ArimaSpec((1, 0, 0), (0, 1, 1, 12)), [0.5, -0.4]),
], ids=["arima211", "arma11-constant", "seasonal12"])
def test_conditional_least_squares_is_near_statsmodels_maximum_likelihood(spec, params):
    y = 5.0 + simulated(spec, params, 600, seed=11)
    mine = fit_arima_css(y, spec.seasonal_order[3] or None, [spec])
    with warnings.catch_warnings(action="ignore"):
        theirs = spec.fit(y)  # statsmodels' SARIMAX, exact likelihood
    names = [str(n) for n in theirs.model.param_names]
    same = [names.index(n) for n in mine.form["param_names"]]
    np.testing.assert_allclose(mine.params, np.asarray(theirs.params)[same], atol=0.06)
    with warnings.catch_warnings(action="ignore"):
        ahead = spec.model(y).filter(np.asarray(theirs.params)).forecast(6)
    np.testing.assert_allclose(css_forecast(mine, y, 6), ahead, rtol=0, atol=0.1)


def test_panel_start_averages_the_series_maps_and_skips_constant_series():
    a, b = ma_heavy(200, 1), ma_heavy(200, 2)
    both = arima_start([a, np.full(200, 2.0), b], 48, 6, 1)
    one, two = (arima_start([y], 48, 6, 1) for y in (a, b))
    assert both.record["series"] == 2
    np.testing.assert_allclose(both.weight, (one.weight + two.weight) / 2)
    with pytest.raises(ValueError, match="no series could be fitted"):
        arima_start([np.full(200, 2.0), ma_heavy(10, 3)], 8, 6, 1)


def test_a_series_shorter_than_two_seasons_is_fitted_without_its_season():
    y = ma_heavy(40, 9)
    start = arima_start([y], 8, 4, 24)
    assert start.record["forms"] == [ArimaSpec.from_json(kept_arima_fit(y, None).form).name]
    assert "[24]" not in start.record["forms"][0]


def test_a_refit_takes_the_kept_arima_fits(monkeypatch):
    from tsrsa.start import arima as start_arima

    calls = []
    original = start_arima.fit_arima_css

    def counted(y, m):
        calls.append(len(y))
        return original(y, m)

    monkeypatch.setattr(start_arima, "fit_arima_css", counted)
    start_maps.forget_kept_fits()
    y = ma_heavy(150, 4)
    first = arima_start([y], 36, 6, 1)
    again = arima_start([y.copy()], 48, 12, 1)  # equal values: kept, whatever the window
    assert calls == [150] and again.weight.shape == (12, 48)
    np.testing.assert_array_equal(arima_start([y], 36, 6, 1).weight, first.weight)
    with pytest.raises(ValueError, match="read-only"):
        kept_arima_fit(y, None).params[0] = 0.5


def test_rem_heads_read_the_arima_roots_with_its_differences():
    phi = -np.convolve([1.0, -0.5], np.r_[1.0, np.zeros(3), -1.0])[1:]  # (1 - 0.5B)(1 - B^4), lags 1..5
    record = {"model": "arima", "coefficients": phi.tolist()}
    roots = start_estimates(record, Estimates()).roots
    np.testing.assert_allclose(np.sort(np.abs(roots)), [0.5, 1, 1, 1, 1], atol=1e-9)
    angles = np.sort(np.abs(np.angle(roots[np.abs(roots) > 0.9])))
    np.testing.assert_allclose(angles, [0, np.pi / 2, np.pi / 2, np.pi], atol=1e-9)  # the season of 4's cycles


# ---------------------------------------------------------------------- "auto" and the forecasters
def test_auto_chooses_among_its_candidates_by_validation_error():
    y = ma_heavy(260, 5)
    three = fit_start("auto", [y[:220]], 36, 6, 1, [y[220:]], ("ar", "ets", "arima"))
    assert {"ar_mse", "ets_mse", "arima_mse"} <= set(three.record)
    errors = {m: three.record[f"{m}_mse"] for m in ("ar", "ets", "arima")}
    assert three.record["model"] == min(errors, key=errors.get)
    two = fit_start("auto", [y[:220]], 36, 6, 1, [y[220:]])
    assert "arima_mse" not in two.record and two.record["ar_mse"] == three.record["ar_mse"]


def test_auto_weighs_the_arima_on_a_short_series_at_the_automatic_budget_only(small_budget):
    short = pd.Series(ma_heavy(240, 6), index=pd.date_range("2020-01-01", periods=240, freq="D"))
    model = tsrsa.DLinearForecaster(h=6, input_size=24, random_state=0).fit(short)  # max_epochs="auto"
    assert "arima_mse" in model.start_ and model.n_train_windows_ < 2000
    counted = tsrsa.DLinearForecaster(h=6, input_size=24, max_epochs=1, random_state=0).fit(short)
    assert "arima_mse" not in counted.start_  # a number of epochs: the two-way choice, as one network
    two = pd.concat([short.rename_axis("ds").reset_index(name="y").assign(unique_id=k) for k in "ab"])
    panel = tsrsa.DLinearForecaster(h=6, input_size=24, random_state=0).fit(two)
    assert "arima_mse" not in panel.start_ and panel.n_train_windows_ < 2000  # screened on one series only
    long = pd.Series(ma_heavy(2100, 7), index=pd.date_range("2020-01-01", periods=2100, freq="D"))
    model = tsrsa.DLinearForecaster(h=1, input_size=8, random_state=0, trainer={"early_stopping_patience": 1}).fit(long)
    assert "arima_mse" not in model.start_ and model.n_train_windows_ >= 2000


def test_untrained_forecaster_with_an_arima_start_forecasts_the_arima():
    y = ma_heavy(300, 8)
    series = pd.Series(y, index=pd.date_range("2020-01-01", periods=300, freq="D"))
    model = tsrsa.TransformerForecaster(h=8, input_size=96, start="arima", val_size=0, max_epochs=1,
                                        learning_rate=1e-12, weight_decay=0.0, ensemble_size=1, **SMALL).fit(series)
    assert model.start_["model"] == "arima"
    loc, scale = model.memory_.loc[0], model.memory_.scale[0]
    expected = arima_start([(y - loc) / scale], 96, 8, 7)(((y - loc) / scale)[None, :])[0] * scale + loc
    np.testing.assert_allclose(model.predict()["yhat"].to_numpy(), expected, rtol=0, atol=1e-4 * scale)


def test_arima_start_refuses_the_streaming_configuration():
    series = pd.Series(ma_heavy(200), index=pd.date_range("2020-01-01", periods=200, freq="D"))
    with pytest.raises(ValueError, match="streaming"):
        tsrsa.RSAForecaster(h=6, input_size=24, start="arima", stream=True).fit(series)
