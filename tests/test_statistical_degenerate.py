"""Degenerate series and the statistical forecasters: a constant forecasts the constant (ETS, ARIMA,
Theta, the seasonal naive), a series that repeats its season exactly repeats it, and values that
statsmodels' likelihood cannot compute are refused with the fix.

Checked against statsmodels where statsmodels is right (ETS of a constant, SARIMAX of a fixed form,
Theta of a series that is not constant), and against the constant where it is not: its Theta finds a
slope in a constant series (``add_trend`` leaves the intercept out of the regression when the data it
is given is itself constant), and its ARIMA order search cannot start on one (KPSS has no variance to
test).
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import tsrsa
from tsrsa import ARIMAForecaster, ETSForecaster, SeasonalNaiveForecaster, ThetaForecaster

H = 6
CONSTANTS = [42.0, 0.0, -7.5, 1e15 + 0.5, 1e300]


@pytest.fixture(autouse=True)
def one_blas_thread():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


def daily(y) -> pd.Series:
    return pd.Series(np.asarray(y, dtype=np.float64), index=pd.date_range("2024-01-01", periods=len(y), freq="D"))


def steps(y) -> pd.Series:
    return pd.Series(np.asarray(y, dtype=np.float64), index=pd.RangeIndex(len(y)))


def yhat(model) -> np.ndarray:
    return model.predict()["yhat"].to_numpy()


def assert_constant(forecast: np.ndarray, c: float, what) -> None:
    """Each step the constant, within the float error of the recursions that run over new values."""
    np.testing.assert_allclose(forecast, np.full(H, c), rtol=1e-12, atol=0, err_msg=str(what))


def test_a_constant_series_forecasts_the_constant_and_keeps_doing_so(tmp_path):
    """Daily data (a weekly season is looked for) and integer time with a season of 4; the fits save,
    load and take new constant values in without moving."""
    for c in CONSTANTS:
        for y, season in ((daily(np.full(48, c)), None), (steps(np.full(48, c)), 4), (steps(np.full(10, c)), 1)):
            for cls in (ETSForecaster, ARIMAForecaster, ThetaForecaster, SeasonalNaiveForecaster):
                model = cls(h=H, season_length=season).fit(y)
                assert_constant(yhat(model), c, (cls.__name__, c, season))
                model.save(tmp_path / "m", overwrite=(tmp_path / "m").exists())
                loaded = tsrsa.load(tmp_path / "m")
                assert np.array_equal(yhat(loaded), yhat(model))
                after = y.index[-1] + (pd.Timedelta(days=1) if season is None else 1)
                more = pd.Series([c, c], index=[after, after + (pd.Timedelta(days=1) if season is None else 1)])
                assert_constant(yhat(loaded.update(more)), c, (cls.__name__, c, season))


def test_ets_of_a_constant_is_statsmodels_fit_of_it():
    """statsmodels stops at its start values on a constant and forecasts it: the same parameters and
    forecasts, and for zeros too, where statsmodels' AIC is -inf (refused before: no form could be fitted)."""
    from statsmodels.tsa.exponential_smoothing.ets import ETSModel

    for c in (42.0, 0.0):
        y = np.full(30, c)
        model = ETSForecaster(h=H, season_length=1).fit(steps(y))
        res = ETSModel(y, error="add").fit(disp=False)
        np.testing.assert_allclose(yhat(model), res.forecast(H), rtol=1e-12, atol=0)
        assert model.params_.loc[0, "model"] == "ETS(A,N,N)"
        assert model.params_.loc[0, "smoothing_level"] == res.params[0]
        assert np.isnan(model.params_.loc[0, "aic"])


def test_arima_of_a_constant_is_the_constant_model_of_statsmodels():
    from statsmodels.tsa.statespace.sarimax import SARIMAX

    y = np.full(40, 42.0)
    for order in ("auto", (1, 1, 0), (2, 0, 1)):
        model = ARIMAForecaster(h=H, season_length=4, order=order).fit(steps(y))
        assert model.params_.loc[0, "model"] == "ARIMA(0,0,0) with constant"
        res = SARIMAX(y, order=(0, 0, 0), trend="c", concentrate_scale=True).fit(disp=False)
        np.testing.assert_allclose(model.params_.loc[0, "intercept"], res.params[0], rtol=1e-12)
        np.testing.assert_allclose(yhat(model), res.forecast(H), rtol=1e-12)


def test_theta_of_a_constant_has_no_slope_where_statsmodels_finds_one():
    from statsmodels.tsa.forecasting.theta import ThetaModel

    for c in (42.0, -7.5):
        y = np.full(40, c)
        model = ThetaForecaster(h=H, season_length=1).fit(steps(y))
        assert model.params_.loc[0, "b0"] == 0.0
        assert_constant(yhat(model), c, c)
        statsmodels_slope = ThetaModel(y, deseasonalize=False).fit().params["b0"]
        assert abs(statsmodels_slope) > 0.5  # its least-squares step without an intercept
    y = 10 + np.sin(np.arange(40.0))  # a series that is not constant: statsmodels' least-squares slope
    model = ThetaForecaster(h=H, season_length=1).fit(steps(y))
    res = ThetaModel(y, deseasonalize=False).fit()
    assert model.params_.loc[0, "b0"] == pytest.approx(res.params["b0"], rel=1e-10)


def test_a_series_that_repeats_its_season_exactly_repeats_it():
    """ARIMA refused these before (no form of the grid could be fitted); statsmodels' seasonal random walk
    forecasts them, and so do the seasonal naive, ETS and Theta (whose slope is 0: the adjusted series is
    constant)."""
    from statsmodels.tsa.statespace.sarimax import SARIMAX

    for season, pattern in ((2, [1.0, 3.0]), (2, [-1.0, 3.0]), (4, [1.0, 2.0, 5.0, 3.0])):
        y = np.tile(pattern, 48 // len(pattern))
        expected = np.tile(pattern, H)[:H]
        for cls in (ARIMAForecaster, ETSForecaster, ThetaForecaster, SeasonalNaiveForecaster):
            model = cls(h=H, season_length=season).fit(steps(y))
            np.testing.assert_allclose(yhat(model), expected, rtol=0, atol=1e-9, err_msg=f"{cls.__name__} {pattern}")
        arima = ARIMAForecaster(h=H, season_length=season).fit(steps(y))
        assert arima.params_.loc[0, "model"] == f"ARIMA(0,0,0)(0,1,0)[{season}]"
        res = SARIMAX(y, order=(0, 0, 0), seasonal_order=(0, 1, 0, season), concentrate_scale=True).filter([])
        np.testing.assert_allclose(yhat(arima), res.forecast(H), rtol=0, atol=1e-9)


def test_values_beyond_the_likelihoods_reach_are_refused_with_the_fix():
    """Values near 1e300 that vary (their squares overflow) or that vary by 1e-300 (they underflow):
    named, with the power of ten to rescale by; no forecaster state is left behind."""
    cases = {"divide the series by a power of ten, e.g. 1e+300": np.tile([1e300, -1e300], 24),
             "multiply the series by a power of ten, e.g. 1e+300": 1e-300 * np.tile([1.0, 2.0], 24)}
    for fix, y in cases.items():
        for cls in (ETSForecaster, ARIMAForecaster):
            model = cls(h=H, season_length=1, **({"error": "add"} if cls is ETSForecaster else {}))
            with pytest.raises(ValueError, match=rf"series 'y': {cls.__name__} could not fit it .*; its values "
                                                 rf"(reach|vary by) .*{re.escape(fix)}"):
                model.fit(steps(y))
            assert not hasattr(model, "memory_")


def test_tiny_positive_values_fit_a_multiplicative_error():
    """A multiplicative error is relative: ETS at its defaults (which search it for a positive series) fits
    values near 1e-300 that the additive forms cannot resolve."""
    y = 1e-300 * np.tile([1.0, 2.0], 24)
    model = ETSForecaster(h=H, season_length=1).fit(steps(y))
    assert model.params_.loc[0, "model"].startswith("ETS(M,")
    assert ((yhat(model) > 1e-300) & (yhat(model) < 2e-300)).all()
