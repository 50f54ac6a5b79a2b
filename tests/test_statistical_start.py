"""The statistical start: a fitted model's forecast as a linear map, added to a network started at zero."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import torch
from statsmodels.tsa.ar_model import AutoReg

import tsrsa
from tsrsa.init.heads import MAX_RADIUS
from tsrsa.nn.start import LinearStart, attach_start, zero_outputs
from tsrsa.start.fit import ar_start, ets_map, ets_matrices, window_start
from tsrsa.statistical.ets_model import EtsForm, candidate_forms, fit_lowest_aic, forecast_states, smoothed

NEURAL = [tsrsa.RSAForecaster, tsrsa.TransformerForecaster, tsrsa.LSTMForecaster, tsrsa.DLinearForecaster]
SMALL = {tsrsa.RSAForecaster: dict(d_model=16, d_ff=32), tsrsa.TransformerForecaster: dict(d_model=16, d_ff=32),
         tsrsa.LSTMForecaster: dict(hidden_size=8), tsrsa.DLinearForecaster: {}}


def ar2(n: int = 400, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y = np.zeros(n)
    for t in range(2, n):
        y[t] = 0.5 + 1.5 * y[t - 1] - 0.9 * y[t - 2] + rng.standard_normal()
    return y


def seasonal(n: int = 240, seed: int = 1) -> np.ndarray:
    t = np.arange(n)
    return 20 + 5 * np.sin(2 * np.pi * t / 12) + np.random.default_rng(seed).standard_normal(n)


def drifting(n: int = 300, seed: int = 2) -> np.ndarray:
    return 50 + np.cumsum(0.4 + np.random.default_rng(seed).standard_normal(n))


def autoreg_forecast(y: np.ndarray, order: int, d: int, h: int) -> np.ndarray:
    """statsmodels' own forecast of the AR(order) with a constant on the d-th differences."""
    z = np.diff(y) if d else y
    ahead = AutoReg(z, lags=order, trend="c").fit().forecast(h)
    return y[-1] + np.cumsum(ahead) if d else ahead


# ---------------------------------------------------------------------- the maps, in float64
@pytest.mark.parametrize("y, order, d", [(ar2(), 2, 0), (seasonal(), 13, 0), (drifting(), 0, 1), (drifting(), 2, 1)],
                         ids=["ar2", "seasonal", "drift", "ari21"])
def test_ar_map_is_statsmodels_autoreg_forecast(y, order, d):
    start = ar_start([y], 36, 12, 12, order=order, d=d)
    assert start.record["order"] == order and start.record["d"] == d
    np.testing.assert_allclose(start(y[None, :])[0], autoreg_forecast(y, order, d, 12), rtol=0, atol=1e-8)


def test_ar_pooled_fit_is_one_regression_over_every_series():
    a, b = ar2(300, 3), ar2(250, 4)
    start = ar_start([a, b], 24, 6, 1, order=2, d=0)
    rows = [(y[t], 1.0, y[t - 1], y[t - 2]) for y in (a, b) for t in range(2, len(y))]
    target, design = np.array([r[0] for r in rows]), np.array([r[1:] for r in rows])
    coef = np.linalg.lstsq(design, target, rcond=None)[0]
    np.testing.assert_allclose([start.record["constant"], *start.record["coefficients"]], coef, atol=1e-7)


def test_ar_order_chosen_by_aic_finds_an_ar2():
    start = ar_start([ar2(2000)], 24, 6, 1)
    assert start.record["order"] == 2 and start.record["d"] == 0
    start = ar_start([drifting(600)], 24, 6, 1)
    assert start.record["d"] == 1


@pytest.mark.parametrize("trend, damped, season", [(None, False, None), ("add", True, "add"), ("add", False, "add")])
def test_ets_map_is_statsmodels_recursion_from_the_window_start(trend, damped, season):
    y = seasonal(120) + 0.05 * np.arange(120)
    with warnings.catch_warnings(action="ignore"):
        fit = fit_lowest_aic(y, candidate_forms("add", trend, damped, season, 12 if season else 1))
    form = EtsForm.from_json(fit.form)
    L = 48
    window = y[-L:]
    states = smoothed(fit, window, window_start(form, fit.params, L) @ window)  # statsmodels' ETSModel.smooth
    np.testing.assert_allclose(ets_map(form, fit.params, L, 24) @ window, forecast_states(fit, states[-1:], 24)[0],
                               rtol=0, atol=1e-10)


def ets_path(form: EtsForm, params: np.ndarray, state: np.ndarray, n: int, noise: float, seed: int = 0):
    """(values, final state) of n steps of the form's recursion from ``state`` with Gaussian errors."""
    F, g, w = ets_matrices(form, params)
    errors = noise * np.random.default_rng(seed).standard_normal(n)
    y = np.empty(n)
    for t in range(n):
        y[t] = w @ state + errors[t]
        state = F @ state + g * errors[t]
    return y, state


DAMPED_SEASONAL = EtsForm("add", "add", True, "add", 12)
DAMPED_PARAMS = np.array([0.3, 0.1, 0.2, 0.9])  # alpha, beta, gamma, phi


def test_window_start_recovers_the_state_of_a_noiseless_path():
    state = np.r_[5.0, 0.4, np.random.default_rng(1).standard_normal(12)]
    window, last = ets_path(DAMPED_SEASONAL, DAMPED_PARAMS, state, 48, noise=0.0)
    k = np.arange(1, 13)
    expected = last[0] + np.cumsum(0.9 ** k) * last[1] + last[2 + (k - 1) % 12]
    np.testing.assert_allclose(ets_map(DAMPED_SEASONAL, DAMPED_PARAMS, 48, 12) @ window, expected, rtol=0, atol=1e-9)


def test_window_start_has_the_least_squared_one_step_errors():
    window, _ = ets_path(DAMPED_SEASONAL, DAMPED_PARAMS, np.r_[5.0, 0.4, np.zeros(12)], 60, noise=1.0, seed=2)
    F, g, w = ets_matrices(DAMPED_SEASONAL, DAMPED_PARAMS)

    def squared_errors(state):
        total = 0.0
        for x in window:
            error = x - w @ state
            total += error ** 2
            state = F @ state + g * error
        return total

    best = window_start(DAMPED_SEASONAL, DAMPED_PARAMS, 60) @ window
    moves = np.random.default_rng(3).standard_normal((20, 14)) * 0.05
    assert all(squared_errors(best + move) >= squared_errors(best) - 1e-9 for move in moves)
    shift = np.r_[1.0, 0.0, -np.ones(12)]  # a level shift the seasons take back: no error moves
    np.testing.assert_allclose(squared_errors(best + shift), squared_errors(best), rtol=1e-10)


def test_ets_map_forecasts_a_constant_exactly():
    y = seasonal(120)
    with warnings.catch_warnings(action="ignore"):
        fit = fit_lowest_aic(y, candidate_forms("add", "add", True, "add", 12))
    weights = ets_map(EtsForm.from_json(fit.form), fit.params, 48, 12)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-10)  # a level shift moves it one for one


# ---------------------------------------------------------------------- the network
def test_started_network_outputs_the_start_before_training():
    torch.manual_seed(0)
    config = tsrsa.nn.BackboneConfig(input_size=24, h=6, patch_len=4, d_model=16, n_heads=2, n_layers=1, d_ff=16,
                                     n_outputs=3)
    network = tsrsa.nn.build_transformer(config).eval()
    start = attach_start(network, 24, 6)
    weight = torch.randn(6, 24)
    with torch.no_grad():
        start.weight.copy_(weight)
        start.bias.fill_(0.5)
    x = torch.randn(5, 24) * 3 + 7
    assert not torch.allclose(network(x), (x @ weight.t() + 0.5)[..., None].expand(-1, -1, 3), atol=1e-3)
    zero_outputs(network)
    expected = (x @ weight.t() + 0.5)[..., None].expand(-1, -1, 3)  # every quantile at the point forecast
    torch.testing.assert_close(network(x), expected, atol=1e-4, rtol=0)
    assert "start" in network.parameter_groups()


def test_linear_start_is_frozen_unless_trainable():
    assert not any(p.requires_grad for p in LinearStart(4, 2, minus_mean=False).parameters())
    assert all(p.requires_grad for p in LinearStart(4, 2, minus_mean=False, trainable=True).parameters())


# ---------------------------------------------------------------------- the forecasters
def frame(y: np.ndarray, freq: str) -> pd.Series:
    return pd.Series(y, index=pd.date_range("2020-01-01", periods=len(y), freq=freq))


@pytest.mark.parametrize("cls", NEURAL, ids=lambda c: c.__name__)
@pytest.mark.parametrize("y, freq", [(ar2(), "D"), (seasonal(), "MS"), (drifting(), "D")],
                         ids=["ar2", "seasonal", "drift"])
def test_untrained_forecast_equals_statsmodels(cls, y, freq):
    model = cls(h=12, input_size=36, start="ar", max_epochs=1, learning_rate=1e-12, weight_decay=0.0,
                random_state=0, **SMALL[cls]).fit(frame(y, freq))
    fitted = model.start_
    expected = autoreg_forecast(y, fitted["order"], fitted["d"], 12)
    scale = np.std(y)
    np.testing.assert_allclose(model.predict()["yhat"].to_numpy() / scale, expected / scale, rtol=0, atol=1e-4)
    if freq == "MS":
        assert fitted["order"] >= 12  # the seasonal lag is within reach and chosen
    if fitted["d"] == 1:
        assert fitted["constant"] > 0  # the drift


def test_start_stays_as_fitted_at_rate_zero_and_moves_at_its_own_rate():
    y = frame(ar2(300), "D")
    kept = tsrsa.DLinearForecaster(h=6, input_size=24, start="ar", max_epochs=3, random_state=0).fit(y)
    moved = tsrsa.DLinearForecaster(h=6, input_size=24, start={"kind": "ar", "learning_rate": 1e-2}, max_epochs=3,
                                    random_state=0).fit(y)
    untrained = tsrsa.DLinearForecaster(h=6, input_size=24, start="ar", max_epochs=1, learning_rate=1e-12,
                                        random_state=0).fit(y)
    torch.testing.assert_close(kept.network_.start.weight, untrained.network_.start.weight, atol=0, rtol=0)
    assert (moved.network_.start.weight - untrained.network_.start.weight).abs().max() > 1e-4


def test_ets_start_on_a_panel_saves_and_loads(tmp_path):
    rng = np.random.default_rng(0)
    frames = [pd.DataFrame({"unique_id": f"s{k}", "ds": pd.date_range("2015-01-01", periods=96, freq="MS"),
                            "y": seasonal(96, k) * (k + 1) + rng.standard_normal(96)}) for k in range(3)]
    df = pd.concat(frames, ignore_index=True)
    model = tsrsa.RSAForecaster(h=6, input_size=24, start="ets", loss="quantile", max_epochs=2, d_model=16, d_ff=32,
                                random_state=0).fit(df)
    assert model.start_["model"] == "ets" and model.start_["series"] == 3 and model.start_["truncation"] >= 0
    model.save(tmp_path / "model")
    loaded = tsrsa.load(tmp_path / "model")
    pd.testing.assert_frame_equal(loaded.predict(), model.predict())
    assert loaded.start_ == model.start_
    tuned = model.fine_tune(df, max_epochs=1)
    assert tuned.start_ == model.start_ and tuned.network_.start is not None


@pytest.mark.parametrize("options, message", [
    (dict(start="arma"), "start"),
    (dict(start="ar", stream=True), "streaming"),
    (dict(start="ar", loss="normal"), "distribution"),
    (dict(start={"kind": "ar", "learning_rate": -1.0}), "learning_rate"),
])
def test_start_refusals_name_the_fix(options, message):
    with pytest.raises(ValueError, match=message):
        tsrsa.RSAForecaster(h=6, input_size=24, **options).fit(frame(ar2(200), "D"))


def test_the_default_start_is_auto_and_none_fits_no_start():
    y = frame(ar2(200), "D")
    default = tsrsa.DLinearForecaster(h=6, input_size=24, max_epochs=1, random_state=0).fit(y)
    assert default.start == "auto" and default.start_["model"] in ("ar", "ets")
    assert default.network_.start is not None
    plain = tsrsa.DLinearForecaster(h=6, input_size=24, max_epochs=1, random_state=0, start=None).fit(y)
    assert plain.start_ is None and plain.network_.start is None


@pytest.mark.parametrize("options", [dict(stream=True), dict(loss="normal")])
def test_auto_fits_no_start_where_none_applies(options):
    model = tsrsa.TransformerForecaster(h=6, input_size=24, max_epochs=1, d_model=16, d_ff=32, random_state=0,
                                        **options).fit(frame(ar2(200), "D"))
    assert model.start == "auto" and model.start_ is None and getattr(model.network_, "start", None) is None
    with pytest.raises(ValueError, match="has none"):
        tsrsa.RSAForecaster(h=6, input_size=24, rem={"init": "start"}, **options).fit(frame(ar2(200), "D"))


# ---------------------------------------------------------------------- REM heads from the same fit
def test_rem_heads_start_from_the_ets_fit():
    y = frame(seasonal(300), "MS")
    model = tsrsa.RSAForecaster(h=12, input_size=48, start="ets", rem={"init": "start"}, max_epochs=1, d_model=16,
                                d_ff=32, random_state=0).fit(y)
    fitted, report = model.start_, model.init_report_.set_index("head")
    assert fitted["season"] == 12
    lam = min(1 - fitted["smoothing_level"], MAX_RADIUS)  # per step, clipped as every data start is
    np.testing.assert_allclose(report.loc[0, "lambda_init"], lam ** 4, rtol=1e-6)
    np.testing.assert_allclose(report.loc[1, "theta_init"], 2 * np.pi * 4 / 12, rtol=1e-6)  # the season, per token
    assert report.loc[3, "dilation"] == 12


def test_rem_heads_start_from_the_ar_roots():
    from tsrsa.start.fit import start_estimates
    from tsrsa.init.heads import Estimates

    record = {"model": "ar", "coefficients": [1.5, -0.9], "d": 1}
    roots = start_estimates(record, Estimates()).roots
    np.testing.assert_allclose(sorted(np.abs(roots)), [np.sqrt(0.9), np.sqrt(0.9), 1.0])
    model = tsrsa.RSAForecaster(h=6, input_size=48, start="ar", rem={"init": "start"}, max_epochs=1, d_model=16,
                                d_ff=32,
                                random_state=0).fit(frame(ar2(2000), "D"))
    cyclic = model.init_report_.set_index("head").loc[1]
    root = np.roots([1.0, -1.5, 0.9])[0]  # the process's own cycle: modulus 0.949, period 9.5 steps
    np.testing.assert_allclose(cyclic["theta_init"], abs(np.angle(root)) * 4, rtol=0.05)


def test_rem_init_start_needs_a_start():
    with pytest.raises(ValueError, match='has none'):
        tsrsa.RSAForecaster(h=6, input_size=24, rem={"init": "start"}, start=None).fit(frame(ar2(200), "D"))


def test_order_selection_is_statsmodels_ar_select_order():
    from statsmodels.tsa.ar_model import ar_select_order

    from tsrsa.start.fit import aic_by_order, lag_rows

    for y in (ar2(600, 5), seasonal(300, 6), np.diff(drifting(400, 7))):
        chosen = ar_select_order(y, maxlag=20, ic="aic", trend="c").ar_lags
        mine = int(np.argmin(aic_by_order(*lag_rows([y], 20, 20))))
        assert mine == (max(chosen) if chosen else 0)
        rows = lag_rows([y], 20, 20)
        expected = [sm.OLS(rows[0], np.column_stack([np.ones(len(rows[0])), rows[1][:, :p]])).fit().aic
                    for p in range(21)]
        np.testing.assert_allclose(aic_by_order(*rows), expected, rtol=1e-9)


def test_validation_keeps_the_start_when_no_epoch_beats_it():
    from tsrsa.start.fit import ar_forecasts

    y = ar2(400)
    started = tsrsa.DLinearForecaster(h=6, input_size=24, start="ar", val_size=60, learning_rate=5.0, max_epochs=3,
                                      random_state=0).fit(frame(y, "D"))
    assert started.best_epoch_ == 0 and len(started.fit_history_) == 3  # every epoch scored, none kept
    fitted = started.start_
    loc, scale = started.memory_.loc[0], started.memory_.scale[0]
    z = (y[-24:] - loc) / scale  # the last window in the units the start was fitted in
    expected = ar_forecasts(z[None], np.array(fitted["coefficients"]), fitted["constant"], fitted["d"], 6)[0]
    np.testing.assert_allclose(started.predict()["yhat"].to_numpy(), expected * scale + loc, rtol=0,
                               atol=1e-4 * scale)
    plain = tsrsa.DLinearForecaster(h=6, input_size=24, val_size=60, learning_rate=5.0, max_epochs=3, start=None,
                                    random_state=0).fit(frame(y, "D"))
    assert plain.best_epoch_ >= 1  # without a start an epoch is always kept


def test_ets_start_leaves_constant_series_out_and_refuses_when_all_are():
    from tsrsa.start.fit import ets_start

    varied = seasonal(120)
    start = ets_start([np.full(120, 3.0), varied], 36, 6, 12)
    assert start.record["series"] == 1
    with pytest.raises(ValueError, match="every series is constant"):
        ets_start([np.full(120, 3.0)], 36, 6, 12)


# ---------------------------------------------------------------------- start="auto"
def validation_mse(start, y: np.ndarray, fit_length: int, h: int) -> float:
    """Mean squared error of a fitted start's forecasts of every window whose targets follow ``fit_length``."""
    L = start.weight.shape[1]
    origins = range(fit_length, len(y) - h + 1)
    return float(np.mean([(start(y[None, o - L:o])[0] - y[o:o + h]) ** 2 for o in origins]))


@pytest.mark.parametrize("y", [ar2(300), seasonal(240) + 0.05 * np.arange(240)], ids=["ar2", "trend-season"])
def test_auto_keeps_the_start_of_lower_validation_error(y):
    from tsrsa.start.fit import fit_start

    fit_length, h, L = len(y) - 36, 6, 36
    auto = fit_start("auto", [y[:fit_length]], L, h, 12, [y[fit_length:]])
    errors = {m: validation_mse(fit_start(m, [y[:fit_length]], L, h, 12), y, fit_length, h) for m in ("ar", "ets")}
    assert auto.record["ar_mse"] == pytest.approx(errors["ar"], rel=1e-6)
    assert auto.record["ets_mse"] == pytest.approx(errors["ets"], rel=1e-6)
    assert auto.record["model"] == min(errors, key=errors.get)
    np.testing.assert_array_equal(auto.weight, fit_start(auto.record["model"], [y[:fit_length]], L, h, 12).weight)
    assert auto.record["chosen_by"] == "mean squared error on 31 validation windows"


def test_auto_picks_the_autoregression_for_an_ar_cycle():
    from tsrsa.start.fit import fit_start

    y = ar2(600, seed=5)
    assert fit_start("auto", [y[:540]], 48, 12, 1, [y[540:]]).record["model"] == "ar"


def test_auto_in_a_forecaster_scores_the_validation_windows_or_the_training_ends():
    rng = np.random.default_rng(0)
    frames = [pd.DataFrame({"unique_id": f"s{k}", "ds": pd.date_range("2020-01-01", periods=96, freq="MS"),
                            "y": seasonal(96, k) + rng.standard_normal(96)}) for k in range(2)]
    df = pd.concat(frames, ignore_index=True)
    common = dict(h=6, input_size=24, start="auto", max_epochs=1, random_state=0, d_model=16, d_ff=32)
    model = tsrsa.TransformerForecaster(val_size=10, **common).fit(df)
    assert model.start_["chosen_by"] == "mean squared error on 10 validation windows"  # 5 per series
    assert model.start_["model"] in ("ar", "ets") and model.get_params()["start"] == "auto"
    model = tsrsa.TransformerForecaster(val_size=0, **common).fit(df)
    assert model.start_["chosen_by"] == "mean squared error on 2 training windows"  # each training part's last


def test_a_refit_on_the_same_data_takes_the_kept_ets_fits(monkeypatch):
    import tsrsa.start.fit as start
    import tsrsa.start.ets as start_ets

    calls = []
    original = start_ets.fit_ets_batch

    def counted(Y, forms):
        calls.extend(len(y) for y in Y)  # the series fitted, together
        return original(Y, forms)

    monkeypatch.setattr(start_ets, "fit_ets_batch", counted)
    start.forget_kept_fits()
    series = [seasonal(120, seed=s) for s in (3, 4)]
    first = start.ets_start(series, 24, 6, 1)  # no season: three forms, quick fits
    assert calls == [120, 120]  # one fit per series
    again = start.ets_start([y.copy() for y in series], 36, 12, 1)  # equal values: kept, whatever the window
    assert calls == [120, 120] and again.weight.shape == (12, 36)
    np.testing.assert_array_equal(start.ets_start(series, 24, 6, 1).weight, first.weight)
    start.ets_start([series[0], series[1] + 1e-9], 24, 6, 1)  # other values: fitted
    assert calls == [120, 120, 120]
    kept = start.kept_ets_fit(series[0], candidate_forms("add", "auto", "auto", None, 1))
    with pytest.raises(ValueError, match="read-only"):
        kept.params[0] = 0.5  # shared by every fit that reads it
    start.forget_kept_fits()
    start.ets_start(series, 24, 6, 1)
    assert calls == [120, 120, 120, 120, 120]
