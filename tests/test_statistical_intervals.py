"""The statistical models' own prediction intervals and horizons, against statsmodels itself (ETS, ARIMA) and
against R's ``thetaf``'s formula written out in float64 (Theta).

ETS, ARIMA and Theta fitted without ``conformal_windows`` answer ``predict(level=...)`` with the engine's intervals
(ETS ``get_prediction(...).pred_int``, ARIMA ``get_forecast(h).conf_int``, Theta SES's variance about the drifted
forecast), marked
``attrs["interval_source"] == "model"``; a calibration fitted with ``conformal_windows`` wins. They survive
save/load, ``update`` and ``predict(df=...)``, and cross-validation gives them per cutoff. Every statistical
model forecasts any ``h``, within the size of one request."""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

import tsrsa
from tsrsa import ARIMAForecaster, ETSForecaster, SeasonalNaiveForecaster, ThetaForecaster

M, H = 4, 5  # the season of the test series, the fitted horizon
TOL = dict(rtol=0, atol=1e-8)


@pytest.fixture(autouse=True)
def one_blas_thread():
    """statsmodels' fits here run as the library runs them: BLAS on one thread."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


def seasonal(n: int = 48, seed: int = 0, level: float = 20.0, slope: float = 0.3) -> np.ndarray:
    """A positive series with a trend and a season of M steps."""
    t = np.arange(n)
    return level + slope * t + 3 * np.sin(2 * np.pi * t / M) + 0.7 * np.random.default_rng(seed).standard_normal(n)


def frame(*series) -> pd.DataFrame:
    """A long frame on integer time of the given series, ids s0, s1, ..."""
    return pd.concat([pd.DataFrame({"unique_id": f"s{i}", "ds": np.arange(len(y)), "y": y})
                      for i, y in enumerate(series)], ignore_index=True)


def bounds(fc: pd.DataFrame, level: int) -> np.ndarray:
    """(2, rows) the lower and upper column of a level."""
    return fc[[f"yhat_lo_{level}", f"yhat_hi_{level}"]].to_numpy().T


def ets_engine(y, error, seasonal_kind):
    """statsmodels' own ETS fit of the form an ETSForecaster is restricted to below."""
    from statsmodels.tsa.exponential_smoothing.ets import ETSModel

    return ETSModel(pd.Series(y), error=error, trend="add", damped_trend=False, seasonal=seasonal_kind,
                    seasonal_periods=M).fit(disp=False)


@pytest.mark.parametrize("error,season", [("add", "add"), ("mul", "mul")], ids=["exact", "simulated"])
def test_ets_intervals_are_the_engines(error, season):
    y = seasonal(48)
    f = ETSForecaster(h=H, season_length=M, error=error, trend="add", damped=False, seasonal=season).fit(frame(y))
    fc = f.predict(h=2 * H, level=[80, 95])  # beyond the fitted h too
    assert fc.attrs["interval_source"] == "model"
    res = ets_engine(y, error, season)
    smoothing = [name for name in res.param_names if name in f.params_.columns]
    np.testing.assert_allclose(res.params[:len(smoothing)], f.params_.iloc[0][smoothing].to_numpy(dtype=float),
                               rtol=0, atol=1e-6)  # the very model statsmodels fits
    for level in (80, 95):
        # the simulated forms draw their errors from the seed the library documents
        pred = res.get_prediction(start=len(y), end=len(y) + 2 * H - 1, rng=np.random.default_rng(0))
        np.testing.assert_allclose(bounds(fc, level), np.asarray(pred.pred_int(alpha=1 - level / 100)).T,
                                   rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fc["yhat"], res.forecast(2 * H), rtol=1e-6)
    lo80, hi80, lo95, hi95 = (fc[c].to_numpy() for c in ("yhat_lo_80", "yhat_hi_80", "yhat_lo_95", "yhat_hi_95"))
    assert (lo95 < lo80).all() and (lo80 < fc["yhat"]).all() and (fc["yhat"] < hi80).all() and (hi80 < hi95).all()


def arima_engine(f, y):
    """statsmodels' SARIMAX of ``f``'s first series, filtered over ``y`` with its fitted parameters."""
    from statsmodels.tsa.statespace.sarimax import SARIMAX

    row = f.params_.iloc[0]
    params = row.drop(["unique_id", "model", "aic"]).dropna().to_numpy(dtype=float)
    return SARIMAX(y, order=(1, 1, 1), seasonal_order=(0, 1, 1, M), concentrate_scale=True).filter(params)


def test_arima_intervals_are_the_engines_and_follow_update():
    y = seasonal(60, seed=1)
    f = ARIMAForecaster(h=H, season_length=M, order=(1, 1, 1), seasonal_order=(0, 1, 1)).fit(frame(y[:52]))
    fc = f.predict(h=3 * H, level=[80, 95])
    ref = arima_engine(f, y[:52]).get_forecast(3 * H)
    for level in (80, 95):
        np.testing.assert_allclose(bounds(fc, level), np.asarray(ref.conf_int(alpha=1 - level / 100)).T, **TOL)
    np.testing.assert_allclose(fc["yhat"], ref.predicted_mean, **TOL)
    # update: the filter continues, and the scale is re-estimated over the longer series (append, no refit)
    f.update(frame(y[52:]).assign(ds=np.arange(52, 60)))
    after = f.predict(level=[80])
    ref = arima_engine(f, y).get_forecast(H)
    np.testing.assert_allclose(bounds(after, 80), np.asarray(ref.conf_int(alpha=0.2)).T, **TOL)


def test_ets_intervals_follow_update_and_frames():
    from statsmodels.tsa.exponential_smoothing.ets import ETSModel

    y = seasonal(56, seed=2)
    f = ETSForecaster(h=H, season_length=M, error="add", trend="add", damped=False, seasonal="add").fit(frame(y[:48]))
    fitted = f.predict(level=[90])
    assert f.predict(df=frame(y[:48]), level=[90]).equals(fitted)  # the fitted series run again: the same
    f.update(frame(y[48:]).assign(ds=np.arange(48, 56)))
    res = ets_engine(y[:48], "add", "add")
    known = ETSModel(pd.Series(y), error="add", trend="add", seasonal="add", seasonal_periods=M,
                     initialization_method="known", initial_level=res.initial_level, initial_trend=res.initial_trend,
                     initial_seasonal=res.initial_seasonal).smooth(res.params[:3])
    ref = known.get_prediction(start=len(y), end=len(y) + H - 1).pred_int(alpha=0.1)
    np.testing.assert_allclose(bounds(f.predict(level=[90]), 90), np.asarray(ref).T, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make", [
    lambda **kw: ETSForecaster(h=H, season_length=M, error="add", trend="add", damped=False, seasonal="add", **kw),
    lambda **kw: ARIMAForecaster(h=H, season_length=M, order=(1, 1, 0), seasonal_order=None, **kw),
    lambda **kw: ThetaForecaster(h=H, season_length=M, **kw),
], ids=["ETS", "ARIMA", "Theta"])
def test_conformal_wins_and_intervals_survive_saving(make, tmp_path):
    df = frame(seasonal(60), seasonal(60, seed=3, level=40.0))
    own = make().fit(df)
    calibrated = make(conformal_windows=4).fit(df)
    mine, theirs = own.predict(level=[80]), calibrated.predict(level=[80])
    assert mine.attrs["interval_source"] == "model" and theirs.attrs["interval_source"] == "conformal"
    np.testing.assert_allclose(mine["yhat"], theirs["yhat"], **TOL)  # the same model, other intervals
    expected = calibrated.conformal_.intervals(theirs["yhat"].to_numpy().reshape(2, H), calibrated.conformal_.scale,
                                               (80.0,))
    np.testing.assert_allclose(theirs["yhat_lo_80"], expected["yhat_lo_80"].ravel(), **TOL)
    assert not np.allclose(mine["yhat_lo_80"], theirs["yhat_lo_80"])
    with pytest.raises(ValueError, match=f"holds errors of its {H} fitted steps only"):
        calibrated.predict(h=H + 1, level=[80])
    assert len(calibrated.predict(h=H + 1)) == 2 * (H + 1)  # the point forecast goes as far as asked
    own.save(tmp_path / "m")
    loaded = tsrsa.load(tmp_path / "m")
    again = loaded.predict(h=2 * H, level=[80, 95])
    pd.testing.assert_frame_equal(again, own.predict(h=2 * H, level=[80, 95]))
    assert again.attrs["interval_source"] == "model"
    loaded.update(frame(seasonal(3, seed=9), seasonal(3, seed=8)).assign(ds=np.tile(np.arange(60, 63), 2)))
    own.update(frame(seasonal(3, seed=9), seasonal(3, seed=8)).assign(ds=np.tile(np.arange(60, 63), 2)))
    pd.testing.assert_frame_equal(loaded.predict(level=[80]), own.predict(level=[80]))


def theta_reference(y: np.ndarray, params: pd.Series, m: int, h: int, percent: float) -> np.ndarray:
    """(2, h) R's ``thetaf`` intervals of the fitted Theta model ``params`` (a row of ``params_``) after ``y``, by
    loops: the adjusted series, SES with the drift (theta = 2) from its first value, the mean squared one-step
    error sigma², then forecast ± z·sigma·sqrt(1 + alpha²(k - 1)), re-seasonalised."""
    from scipy.stats import norm

    b0, alpha = params["b0"], params["alpha"]
    index = np.array([params.get(f"seasonal.{j}", np.nan) for j in range(m)])
    seasonal = np.isfinite(index).all()
    mul = seasonal and y.min() > 0
    n = len(y)
    x = [(y[t] / index[t % m] if mul else y[t] - index[t % m]) if seasonal else y[t] for t in range(n)]
    level, errors = x[0], []
    for t in range(1, n):
        errors.append(x[t] - (level + 0.5 * b0 * (1 / alpha - (1 - alpha) ** t / alpha)))
        level = alpha * x[t] + (1 - alpha) * level
    sigma = np.sqrt(np.mean(np.square(errors)))
    z = norm.ppf(0.5 + percent / 200)
    out = np.zeros((2, h))
    for k in range(1, h + 1):
        point = level + 0.5 * b0 * (k - 1 + 1 / alpha - (1 - alpha) ** n / alpha)
        half = z * sigma * np.sqrt(1 + alpha ** 2 * (k - 1))
        for side, value in enumerate((point - half, point + half)):
            j = (n + k - 1) % m
            out[side, k - 1] = (value * index[j] if mul else value + index[j]) if seasonal else value
    return out


LEVEL = 90


@pytest.mark.parametrize("kind", ["multiplicative", "additive", "none"])
def test_theta_intervals_are_thetafs_and_follow_update(kind, tmp_path):
    y = seasonal(64, seed=6, level=-5.0 if kind == "additive" else 20.0)  # a value <= 0: additive adjustment
    f = ThetaForecaster(h=H, season_length=M, deseasonalize=kind != "none").fit(frame(y[:56]))
    params = f.params_.iloc[0]
    assert ("seasonal.0" in f.params_) == (kind != "none")
    fc = f.predict(level=[LEVEL])
    assert fc.attrs["interval_source"] == "model"
    np.testing.assert_allclose(bounds(fc, LEVEL), theta_reference(y[:56], params, M, H, LEVEL), rtol=1e-10, atol=1e-10)
    later = f.predict(df=frame(y[20:56]).assign(ds=np.arange(20, 56)), level=[LEVEL])  # SES anew from step 20, and
    np.testing.assert_allclose(bounds(later, LEVEL), theta_reference(y[20:56], params, M, H, LEVEL),  # sigma² too
                               rtol=1e-10, atol=1e-10)
    f.update(frame(y[56:]).assign(ds=np.arange(56, 64)))  # the new errors join sigma², the parameters stay
    np.testing.assert_allclose(bounds(f.predict(level=[LEVEL]), LEVEL), theta_reference(y, params, M, H, LEVEL),
                               rtol=1e-10, atol=1e-10)
    f.save(tmp_path / "theta")
    pd.testing.assert_frame_equal(tsrsa.load(tmp_path / "theta").predict(level=[LEVEL]), f.predict(level=[LEVEL]))


def test_a_multiplicative_ets_forecast_below_zero_has_its_intervals():
    t = np.arange(36)
    y = 100 - 2.5 * t + np.random.default_rng(0).normal(0, 1.5, 36)  # falls through zero after the data
    f = ETSForecaster(h=12, error="mul", trend="add", damped=False, seasonal=None).fit(frame(y))
    fc = f.predict(h=24, level=[80, 95])  # statsmodels refuses a multiplicative model on values <= 0
    assert (fc["yhat"] < 0).any() and np.isfinite(fc.filter(like="yhat_").to_numpy()).all()
    assert (fc["yhat_lo_95"] < fc["yhat_lo_80"]).all() and (fc["yhat_lo_80"] < fc["yhat_hi_80"]).all()
    assert (fc["yhat_hi_80"] < fc["yhat_hi_95"]).all()


def test_a_model_without_its_errors_refuses():
    df = frame(seasonal(48))
    f = ETSForecaster(h=H, season_length=M, error="add", trend=None, seasonal=None).fit(df)
    before = f.predict(level=[80])
    old = dataclasses.replace(f.memory_.fits[0], sse=float("nan"), scored=0)  # as a model saved before them
    f.memory_ = dataclasses.replace(f.memory_, fits=(old,))
    with pytest.raises(ValueError, match="saved without its one-step errors.*refit, or pass its history"):
        f.predict(level=[80])
    pd.testing.assert_frame_equal(f.predict(df=df, level=[80]), before)  # the history measures them again
    theta = ThetaForecaster(h=H, season_length=M).fit(df)
    before = theta.predict(level=[80])
    old = dataclasses.replace(theta.memory_.fits[0], sse=float("nan"), scored=0)  # as a Theta model before 0.20.1
    theta.memory_ = dataclasses.replace(theta.memory_, fits=(old,))
    with pytest.raises(ValueError, match="saved without its one-step errors"):
        theta.predict(level=[80])
    pd.testing.assert_frame_equal(theta.predict(df=df, level=[80]), before)


@pytest.mark.parametrize("make", [
    lambda: ETSForecaster(h=H, season_length=M, error="add", trend="add", damped=True, seasonal="add"),
    lambda: ARIMAForecaster(h=H, season_length=M, order=(1, 1, 0), seasonal_order=(0, 1, 1)),
    lambda: ThetaForecaster(h=H, season_length=M),
], ids=["ETS", "ARIMA", "Theta"])
def test_cross_validation_gives_the_intervals_of_the_model_at_each_cutoff(make):
    y = seasonal(64, seed=4)
    cv = make().cross_validate(frame(y), n_windows=2, level=[80])
    assert cv.attrs["interval_source"] == "model"
    first = cv[cv["cutoff"] == cv["cutoff"].min()]
    at_cutoff = make().fit(frame(y[:64 - 2 * H])).predict(level=[80])  # the model cross_validate fits
    np.testing.assert_allclose(bounds(first, 80), bounds(at_cutoff, 80), rtol=1e-9, atol=1e-9)
    later = cv[cv["cutoff"] == cv["cutoff"].max()]
    moved = make().fit(frame(y[:64 - 2 * H])).update(frame(y[64 - 2 * H:64 - H]).assign(ds=np.arange(54, 59)))
    np.testing.assert_allclose(later["yhat"], moved.predict()["yhat"], rtol=1e-9, atol=1e-9)
    # the later window keeps the fitted error variance (parameters fixed, nothing after a cutoff read)
    assert np.all(later["yhat_hi_80"].to_numpy() > later["yhat_lo_80"].to_numpy())


def test_statistical_models_forecast_any_horizon():
    y = seasonal(48, seed=5)
    ets = ETSForecaster(h=H, season_length=M, error="add", trend="add", damped=False, seasonal="add").fit(frame(y))
    np.testing.assert_allclose(ets.predict(h=4 * H)["yhat"], ets_engine(y, "add", "add").forecast(4 * H),
                               rtol=1e-6)
    arima = ARIMAForecaster(h=H, season_length=M, order=(1, 1, 1), seasonal_order=(0, 1, 1)).fit(frame(y))
    np.testing.assert_allclose(arima.predict(h=4 * H)["yhat"], arima_engine(arima, y).forecast(4 * H), **TOL)
    theta = ThetaForecaster(h=H, season_length=M).fit(frame(y))
    long = theta.predict(h=4 * H)
    np.testing.assert_allclose(long["yhat"].to_numpy()[:H], theta.predict()["yhat"], **TOL)
    naive = SeasonalNaiveForecaster(h=2, season_length=M).fit(frame(y))
    np.testing.assert_array_equal(naive.predict(h=3 * M + 1)["yhat"], y[-M:][np.arange(3 * M + 1) % M])
    assert list(naive.predict(h=9)["ds"]) == list(range(48, 57))


def test_a_horizon_past_the_request_limit_is_refused(monkeypatch):
    naive = SeasonalNaiveForecaster(h=2, season_length=M).fit(frame(seasonal(20)))
    monkeypatch.setenv("TSRSA_MAX_REQUEST_BYTES", "1MB")
    with pytest.raises(ValueError, match="predict\\(h=100000\\).*ask for fewer steps"):
        naive.predict(h=100_000)
    with pytest.raises(TypeError, match="h must be an int"):
        naive.predict(h=2.5)
    assert len(naive.predict(h=1000)) == 1000
