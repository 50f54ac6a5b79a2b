"""The statistical forecasters (ETS, ARIMA, Theta) against statsmodels itself: forecasts, many series,
update without refit, cross-validation without refit, saving, the automatic choice, and bad input.

The shared contract (frames, predict(df=...), save/load, silence, bad frames) is the estimator suite's."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import tsrsa
from tsrsa import ARIMAForecaster, ETSForecaster, ThetaForecaster

M = 4  # the season of the test series
TOL = dict(rtol=0, atol=1e-8)


@pytest.fixture(autouse=True)
def one_blas_thread():
    """statsmodels' own fits here run as the library runs them: BLAS on one thread (much faster)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


def seasonal(n: int = 48, seed: int = 0, level: float = 20.0, slope: float = 0.3) -> np.ndarray:
    """A positive series with a trend and a season of M steps."""
    t = np.arange(n)
    noise = np.random.default_rng(seed).standard_normal(n)
    return level + slope * t + 3 * np.sin(2 * np.pi * t / M) + 0.5 * noise


def frame(*series, ids=None) -> pd.DataFrame:
    """A long frame on integer time of the given series."""
    ids = ids or [f"s{i}" for i in range(len(series))]
    return pd.concat([pd.DataFrame({"unique_id": i, "ds": np.arange(len(y)), "y": y}) for i, y in zip(ids, series)],
                     ignore_index=True)


def yhat(model, **kw) -> np.ndarray:
    return model.predict(**kw)["yhat"].to_numpy()


def ets_model(y, error, trend, damped, seasonal, **kw):
    from statsmodels.tsa.exponential_smoothing.ets import ETSModel

    return ETSModel(y, error=error, trend=trend, damped_trend=damped, seasonal=seasonal,
                    seasonal_periods=M if seasonal else None, **kw)


def sarimax(y, order, seasonal_order, **kw):
    from statsmodels.tsa.statespace.sarimax import SARIMAX

    return SARIMAX(y, order=order, seasonal_order=seasonal_order, concentrate_scale=True, **kw)


# ---------------------------------------------------------------------- equal to statsmodels
FORMS = [("add", "add", True, "add"), ("mul", "add", False, "mul"), ("add", None, False, None)]


@pytest.mark.parametrize("form", FORMS)
def test_ets_of_a_fixed_form_equals_statsmodels(form):
    error, trend, damped, season = form
    y = seasonal()
    model = ETSForecaster(h=9, season_length=M, error=error, trend=trend, damped=damped, seasonal=season).fit(frame(y))
    res = ets_model(y, *form).fit(disp=False)
    np.testing.assert_allclose(yhat(model), res.forecast(9), **TOL)
    params = model.params_
    k = len(res.model.param_names) - (1 + (trend is not None) + (M if season else 0))  # the smoothing ones
    for name, value in zip(res.model.param_names[:k], res.params[:k]):
        assert params.loc[0, name] == pytest.approx(value, abs=1e-12)
    assert params.loc[0, "aic"] == pytest.approx(res.aic)


@pytest.mark.filterwarnings("ignore::statsmodels.tools.sm_exceptions.EstimationWarning")
def test_arima_of_a_fixed_order_equals_statsmodels():
    y = seasonal(60)
    model = ARIMAForecaster(h=7, season_length=M, order=(1, 1, 1), seasonal_order=(0, 1, 1)).fit(frame(y))
    fitted = sarimax(y, (1, 1, 1), (0, 1, 1, M), simple_differencing=True).fit(disp=False)
    own = sarimax(y, (1, 1, 1), (0, 1, 1, M)).filter(fitted.params)  # the levels model, parameters fixed
    np.testing.assert_allclose(yhat(model), own.forecast(7), **TOL)
    assert model.params_.loc[0, "model"] == "ARIMA(1,1,1)(0,1,1)[4]"
    np.testing.assert_allclose(model.params_[["ar.L1", "ma.L1", "ma.S.L4"]].to_numpy()[0], fitted.params, atol=1e-12)
    stationary = ARIMAForecaster(h=5, order=(2, 0, 1), seasonal_order=None).fit(frame(y))
    fitted = sarimax(y, (2, 0, 1), (0, 0, 0, 0), trend="c", simple_differencing=True).fit(disp=False)
    np.testing.assert_allclose(yhat(stationary), sarimax(y, (2, 0, 1), (0, 0, 0, 0), trend="c").filter(
        fitted.params).forecast(5), **TOL)


@pytest.mark.parametrize("deseasonalize", [True, False])
def test_theta_is_statsmodels_forecast_form_with_m3_estimates(deseasonalize):
    """The forecast is statsmodels' ThetaModelResults.forecast given the M3 method's estimates: its
    decomposition (seasonal_decompose), its slope, and alpha fitted to the theta line (which statsmodels
    fits to the adjusted series instead; tests/test_statistical_search.py checks the theta lines)."""
    from statsmodels.tsa.forecasting.theta import ThetaModel
    from statsmodels.tsa.seasonal import seasonal_decompose

    y = seasonal(40)
    model = ThetaForecaster(h=6, season_length=M, deseasonalize=deseasonalize).fit(frame(y))
    params = model.params_.loc[0]
    index = seasonal_decompose(y, model="mul", period=M).seasonal if deseasonalize else np.ones(len(y))
    x = y / index
    res = ThetaModel(x, deseasonalize=False).fit()
    assert params["b0"] == pytest.approx(res.params["b0"], rel=1e-10)
    alpha = params["alpha"]
    level = x[0]
    for value in x:
        level = alpha * value + (1 - alpha) * level
    k = np.arange(6) + 1 / alpha - (1 - alpha) ** len(y) / alpha
    expected = (0.5 * params["b0"] * k + level) * index[:M][(len(y) + np.arange(6)) % M]
    np.testing.assert_allclose(yhat(model), expected, **TOL)


def test_many_series_equal_one_fit_per_series():
    ys = [seasonal(48, seed=s, level=10.0 * (s + 1)) for s in range(3)]
    make = lambda: ETSForecaster(h=5, season_length=M, initialization="heuristic")  # noqa: E731 - the auto choice
    together = make().fit(frame(*ys))
    alone = [make().fit(frame(y, ids=[f"s{i}"])) for i, y in enumerate(ys)]
    np.testing.assert_array_equal(yhat(together), np.concatenate([yhat(a) for a in alone]))
    pd.testing.assert_frame_equal(together.params_, pd.concat([a.params_ for a in alone], ignore_index=True))


# ---------------------------------------------------------------------- update, cross-validation: no refit
def test_update_equals_statsmodels_append_with_the_parameters_fixed():
    y = seasonal(66)
    head, tail = y[:50], y[50:]
    arima = ARIMAForecaster(h=6, season_length=M, order=(1, 1, 1), seasonal_order=(0, 1, 1)).fit(frame(head))
    arima.update(frame(tail[:3]).assign(ds=np.arange(50, 53))).update(frame(tail[3:]).assign(ds=np.arange(53, 66)))
    fitted = sarimax(head, (1, 1, 1), (0, 1, 1, M), simple_differencing=True).fit(disp=False)
    appended = sarimax(head, (1, 1, 1), (0, 1, 1, M)).filter(fitted.params).append(tail)  # refit=False
    np.testing.assert_allclose(yhat(arima), appended.forecast(6), **TOL)
    assert arima.memory_.fits[0].nobs == 66 and arima.memory_.last[0] == 65

    ets = ETSForecaster(h=6, season_length=M, error="mul", trend="add", damped=True, seasonal="mul").fit(frame(head))
    ets.update(frame(tail).assign(ds=np.arange(50, 66)))
    res = ets_model(head, "mul", "add", True, "mul").fit(disp=False)
    known = dict(initialization_method="known", initial_level=res.initial_level, initial_trend=res.initial_trend,
                 initial_seasonal=res.initial_seasonal)
    again = ets_model(y, "mul", "add", True, "mul", **known).smooth(res.params[:4])  # the whole series, fixed
    np.testing.assert_allclose(yhat(ets), again.forecast(6), **TOL)


def test_a_refused_update_changes_nothing():
    y = seasonal(48)
    model = ETSForecaster(h=4, season_length=M, error="mul", trend=None, seasonal="mul").fit(frame(y))
    before, memory = yhat(model), model.memory_
    bad = frame(np.array([21.0, -1.0, 22.0])).assign(ds=np.arange(48, 51))
    with pytest.raises(ValueError, match=r"series 's0' has the value -1 at 49.*multiplicative"):
        model.update(bad)
    with pytest.raises(ValueError, match="leaves a gap"):
        model.update(frame(np.array([21.0])).assign(ds=[60]))
    assert model.memory_ is memory
    np.testing.assert_array_equal(yhat(model), before)


def test_cross_validate_equals_statsmodels_at_each_cutoff_without_refit():
    y = seasonal(60)
    h, cutoffs = 4, [51, 53, 55]  # n_windows=3, step_size=2: the last cutoff is 60 - h - 1
    arima = ARIMAForecaster(h=h, season_length=M, order=(1, 0, 0), seasonal_order=(0, 1, 1))
    cv = arima.cross_validate(frame(y), n_windows=3, step_size=2)
    assert not hasattr(arima, "memory_")  # the estimator is left as it was
    assert cv["cutoff"].unique().tolist() == cutoffs
    fitted = sarimax(y[:52], (1, 0, 0), (0, 1, 1, M), simple_differencing=True).fit(disp=False)
    for c in cutoffs:
        own = sarimax(y[:c + 1], (1, 0, 0), (0, 1, 1, M)).filter(fitted.params).forecast(h)
        np.testing.assert_allclose(cv.loc[cv["cutoff"] == c, "yhat"], own, **TOL)
        np.testing.assert_array_equal(cv.loc[cv["cutoff"] == c, "y"], y[c + 1:c + 1 + h])

    ets = ETSForecaster(h=h, season_length=M, trend="add", damped=False, seasonal="add")
    cv = ets.cross_validate(frame(y), n_windows=3, step_size=2)
    res = ets_model(y[:52], "add", "add", False, "add").fit(disp=False)
    for c in cutoffs:  # the fitted model run from its own initial states over y[:c + 1], then forecast
        own = ets_model(y[:c + 1], "add", "add", False, "add", initialization_method="known",
                        initial_level=res.initial_level, initial_trend=res.initial_trend,
                        initial_seasonal=res.initial_seasonal).smooth(res.params[:3]).forecast(h)
        np.testing.assert_allclose(cv.loc[cv["cutoff"] == c, "yhat"], own, **TOL)


def test_predict_on_a_later_stretch_applies_the_fitted_parameters_as_statsmodels_apply():
    y = seasonal(60)
    model = ARIMAForecaster(h=5, order=(1, 0, 1), seasonal_order=None).fit(frame(y[:50]))
    fitted = sarimax(y[:50], (1, 0, 1), (0, 0, 0, 0), trend="c", simple_differencing=True).fit(disp=False)
    applied = sarimax(y[:50], (1, 0, 1), (0, 0, 0, 0), trend="c").filter(fitted.params).apply(y[30:])  # refit=False
    later = frame(y[30:]).assign(ds=np.arange(30, 60))
    np.testing.assert_allclose(yhat(model, df=later), applied.forecast(5), **TOL)


def test_conformal_intervals_and_their_update():
    y = seasonal(60)
    model = ThetaForecaster(h=3, season_length=M, conformal_windows=5).fit(frame(y[:54]))
    fc = model.predict(level=[80])
    assert (fc["yhat_lo_80"] < fc["yhat"]).all() and (fc["yhat"] < fc["yhat_hi_80"]).all()
    before = model.conformal_.residuals.copy()
    model.update(frame(y[54:]).assign(ds=np.arange(54, 60)))  # two windows of h scored without refit
    assert not np.array_equal(model.conformal_.residuals, before) and len(model.conformal_.residuals) == 5


# ---------------------------------------------------------------------- saving
@pytest.mark.parametrize("make", [
    lambda: ETSForecaster(h=5, season_length=M, initialization="heuristic", error="auto"),
    lambda: ARIMAForecaster(h=5, season_length=M, order=(1, 0, 1), seasonal_order=(1, 0, 0)),
    lambda: ThetaForecaster(h=5, season_length=M),
], ids=["ETS", "ARIMA", "Theta"])
def test_save_load_round_trip(make, tmp_path):
    ys = [seasonal(40, seed=s, level=10.0 * (s + 1)) for s in range(2)]
    model = make().fit(frame(*ys))
    model.save(tmp_path / "m")
    loaded = tsrsa.load(tmp_path / "m")
    np.testing.assert_array_equal(yhat(loaded), yhat(model))
    pd.testing.assert_frame_equal(loaded.params_, model.params_)
    new = frame(*[y[:3] + 1 for y in ys]).assign(ds=lambda d: d["ds"] + 40)
    np.testing.assert_array_equal(yhat(loaded.update(new)), yhat(model.update(new)))
    state = json.loads((tmp_path / "m" / "state.json").read_text())
    assert [fit["form"]["kind"] for fit in state["statistical"]] == [model.kind] * 2


def test_a_saved_model_of_another_kind_is_refused(tmp_path):
    ThetaForecaster(h=3).fit(frame(seasonal(30))).save(tmp_path / "m")
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    assert config["class"] == "ThetaForecaster" and "deseasonalize" in config["params"]
    with pytest.raises(ValueError, match="config.json"):  # an edited class name breaks the checksum
        (tmp_path / "m" / "config.json").write_text(json.dumps({**config, "class": "ETSForecaster"}))
        tsrsa.load(tmp_path / "m")


# ---------------------------------------------------------------------- the automatic choice
def test_auto_ets_picks_the_form_of_lowest_aic():
    y = seasonal(48, slope=0.8)
    model = ETSForecaster(h=4, season_length=M, initialization="heuristic").fit(frame(y))
    aic = {}
    for trend, damped in ((None, False), ("add", False), ("add", True)):
        for season in (None, "add"):
            res = ets_model(y, "add", trend, damped, season, initialization_method="heuristic").fit(disp=False)
            aic[(trend, damped, season)] = res.aic
    best = min(aic, key=aic.get)
    assert best[0] == "add" and best[2] == "add"  # the series has a trend and a season
    assert model.params_.loc[0, "aic"] == pytest.approx(aic[best])
    assert model.params_.loc[0, "model"] == ("ETS(A,Ad,A[4])" if best[1] else "ETS(A,A,A[4])")


@pytest.mark.slow  # ~30 statsmodels fits (2-3 s): the slow tier, with the default path's ARIMA cases
def test_auto_arima_keeps_a_form_no_neighbour_of_which_has_a_lower_aicc():
    """The stepwise search ends where no neighbour within its bounds (p, q, P, Q one up or down, alone or in pairs,
    the constant in or out) lowers the AICc; each neighbour refitted here apart with statsmodels."""
    from tsrsa.statistical.arima_model import ArimaSpec
    from tsrsa.statistical.arima_search import MAX_P, MAX_SEASONAL_P, aicc, differencing

    e = np.random.default_rng(3).standard_normal(48)
    y = np.zeros(48)
    for t in range(2, 48):
        y[t] = 0.6 * y[t - 1] - 0.3 * y[t - 2] + e[t] + (2.0 if t % M == 0 else 0.0)
    model = ARIMAForecaster(h=3, season_length=M).fit(frame(y))
    d, D = differencing(y, M)
    record = model.memory_.fits[0].form
    (p, _, q), (P, _, Q, _) = record["order"], record["seasonal_order"]
    chosen = ArimaSpec((p, d, q), (P, D, Q, M), record["trend"])
    assert model.params_.loc[0, "model"] == chosen.name
    best = aicc(chosen.fit(y))
    assert np.isfinite(best)
    steps = [(a, b, c, g) for a in (-1, 0, 1) for b in (-1, 0, 1) for c in (-1, 0, 1) for g in (-1, 0, 1)
             if (a == b == 0) != (c == g == 0)]  # the non-seasonal pair or the seasonal pair moves, not both
    trends = ("n", "c") if d + D <= 1 else (record["trend"],)
    checked = 0
    for a, b, c, g in steps:
        for trend in trends:
            orders = (p + a, q + b, P + c, Q + g)
            if min(orders) < 0 or max(orders[:2]) > MAX_P or max(orders[2:]) > MAX_SEASONAL_P:
                continue
            if (a, b, c, g) == (0, 0, 0, 0) and trend == record["trend"]:
                continue
            spec = ArimaSpec((p + a, d, q + b), (P + c, D, Q + g, M), trend)
            assert aicc(spec.fit(y)) >= best - 1e-6, spec.name
            checked += 1
    assert checked >= 8


def test_a_random_walk_has_nothing_to_estimate_but_its_variance_and_still_fits():
    """ARIMA(0,1,0) and the seasonal random walk have no parameter besides the (concentrated) scale, which
    statsmodels' optimiser refuses; the fit filters them: the likelihood of the differences under their mean
    square, AIC = -2 llf + 2, the forecast the last value (or the last season), intervals as wide as
    sqrt(k) standard deviations."""
    y = np.cumsum(np.random.default_rng(4).normal(0, 2.0, 50)) + 10
    model = ARIMAForecaster(h=3, order=(0, 1, 0), seasonal_order=None).fit(frame(y))
    z = np.diff(y)
    variance = np.mean(z * z)
    llf = -0.5 * len(z) * (np.log(2 * np.pi * variance) + 1)
    assert model.params_.loc[0, "aic"] == pytest.approx(-2 * llf + 2, rel=1e-9)
    out = model.predict(level=[95])
    np.testing.assert_allclose(out["yhat"], y[-1], **TOL)
    half = 1.959963984540054 * np.sqrt(variance * np.arange(1, 4))
    np.testing.assert_allclose(out["yhat_hi_95"] - out["yhat"], half, rtol=1e-6)
    seasonal_walk = ARIMAForecaster(h=6, season_length=M, order=(0, 0, 0), seasonal_order=(0, 1, 0)).fit(frame(y))
    np.testing.assert_allclose(yhat(seasonal_walk), np.tile(y[-M:], 2)[:6], **TOL)


# ---------------------------------------------------------------------- windows, and bad input
def test_forecast_windows_filter_each_window_from_statsmodels_initial_state():
    ys = [seasonal(40, seed=s) for s in range(2)]
    model = ETSForecaster(h=3, season_length=M, trend=None, seasonal="add").fit(frame(*ys))
    windows = np.stack([ys[0][-20:], ys[1][5:25]])
    got = model.forecast_windows(windows, np.zeros(2), np.ones(2), 3, series=np.array([0, 1]))["yhat"]
    for row, window in enumerate(windows):
        params = model.memory_.fits[row].params
        own = ets_model(window, "add", None, False, "add", initialization_method="heuristic").smooth(params)
        np.testing.assert_allclose(got[row], own.forecast(3), **TOL)
    with pytest.raises(ValueError, match="pass series="):
        model.forecast_windows(windows, np.zeros(2), np.ones(2), 3)
    with pytest.raises(ValueError, match="at least 14 values"):
        model.forecast_windows(windows[:, -5:], np.zeros(2), np.ones(2), 3, series=np.array([0, 1]))
    long = ARIMAForecaster(h=3, season_length=30, order=(1, 0, 0)).fit(frame(seasonal(70)))
    assert "Fourier" in long.params_.loc[0, "model"]
    with pytest.raises(ValueError, match="position of each step in its season"):
        long.forecast_windows(seasonal(70)[None, -60:], np.zeros(1), np.ones(1), 3)


@pytest.mark.parametrize("make,data,error,message", [
    (lambda: ETSForecaster(h=2, error="mul"), np.r_[0.0, seasonal(30)[1:]], ValueError,
     r"series 's0' has the value 0 at 0: error='mul'.*needs every value > 0"),
    (lambda: ETSForecaster(h=2, seasonal="mul", season_length=M), -seasonal(30), ValueError, "multiplicative"),
    (lambda: ETSForecaster(h=2, seasonal="add"), seasonal(30), ValueError, "needs a season of at least 2 steps"),
    (lambda: ETSForecaster(h=2, season_length=12, seasonal="add"), seasonal(20), ValueError,
     r"has 20 observations but needs at least 24 \(two seasons of season_length=12"),
    (lambda: ETSForecaster(h=2, error="multiplicative"), seasonal(30), ValueError, "error='multiplicative' is not"),
    (lambda: ETSForecaster(h=2, trend=None, damped=True), seasonal(30), ValueError, "damped=True damps a trend"),
    (lambda: ETSForecaster(h=2, damped="yes"), seasonal(30), ValueError, "damped='yes' is not supported"),
    (lambda: ARIMAForecaster(h=2, order=(1, 1)), seasonal(30), ValueError, r"order=\(1, 1\) is not supported"),
    (lambda: ARIMAForecaster(h=2, seasonal_order=(0, 1, 1)), seasonal(30), ValueError, "needs a season of at least"),
    (lambda: ARIMAForecaster(h=2, season_length=M, seasonal_order=(0, 1, 1)), seasonal(11), ValueError,
     r"needs at least 12 \(three seasons"),
    (lambda: ThetaForecaster(h=2, theta=0.5), seasonal(30), ValueError, "theta=0.5 must be >= 1"),
    (lambda: ThetaForecaster(h=2, deseasonalize="yes"), seasonal(30), TypeError, "deseasonalize must be True"),
], ids=["mul-zero", "mul-season-negative", "season-1", "too-short", "error", "damped-no-trend", "damped",
        "order", "seasonal-order-no-season", "arima-short", "theta", "deseasonalize"])
def test_bad_input_is_refused_with_the_fix(make, data, error, message):
    model = make()
    with pytest.raises(error, match=message):
        model.fit(frame(data))
    assert not hasattr(model, "memory_")


def test_a_failed_refit_keeps_the_fitted_model_and_nothing_is_mutated():
    df = frame(seasonal(30))
    copy = df.copy()
    model = ARIMAForecaster(h=3, order=[1, 0, 0], seasonal_order=None).fit(df)
    before = yhat(model)
    with pytest.raises(ValueError, match="needs at least 10"):
        model.fit(frame(seasonal(8)))
    np.testing.assert_array_equal(yhat(model), before)
    pd.testing.assert_frame_equal(df, copy)
    assert model.order == [1, 0, 0]
    with pytest.raises(ValueError, match="kept_history"):
        model.memory_.kept_history(model)


def test_the_command_line_fits_and_predicts_a_statistical_model(tmp_path, capsys):
    from conftest import run_cli

    frame(seasonal(40), seasonal(40, seed=1)).to_csv(tmp_path / "train.csv", index=False)
    status, out, _ = run_cli(capsys, "fit", "--model", "ETS", "--h", 3, "--input", tmp_path / "train.csv",
                             "--output", tmp_path / "m", "-p", "season_length=4", "-p", "initialization=heuristic")
    assert status == 0 and "ETSForecaster fitted on 2 series" in out
    status, out, _ = run_cli(capsys, "predict", "--model-dir", tmp_path / "m")
    assert status == 0 and len(out.strip().splitlines()) == 1 + 2 * 3
