"""The statistical candidates at their references' strength: ETS's search of every admissible form by
AICc (R's ``ets``, statsforecast's ``AutoETS``), its restrictions and its positive-only rule; the M3
Theta method (seasonality test, classical decomposition, theta lines) against direct float64
implementations of its formulas; and fits in parallel processes equal to fits in turn."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from tsrsa import ARIMAForecaster, ETSForecaster, ThetaForecaster
from tsrsa.statistical.ets_model import EtsForm, candidate_forms, fit_best, fit_lowest_aic
from tsrsa.statistical.theta_model import (
    autocorrelations, classical_indices, fit_theta, forecast, levels, seasonality_test, ses_errors,
)


@pytest.fixture(autouse=True)
def one_blas_thread():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


def frame(*series) -> pd.DataFrame:
    return pd.concat([pd.DataFrame({"unique_id": f"s{i}", "ds": np.arange(len(y)), "y": y})
                      for i, y in enumerate(series)], ignore_index=True)


def multiplicative_season(n: int = 72, seed: int = 3) -> np.ndarray:
    """A season whose swing grows with the level: the multiplicative season's series."""
    t = np.arange(n)
    noise = np.exp(0.02 * np.random.default_rng(seed).standard_normal(n))
    return (100 + 3 * t) * (1 + 0.35 * np.sin(2 * np.pi * t / 12)) * noise


def damped_trend(n: int = 72, seed: int = 3) -> np.ndarray:
    """A trend that fades: each step's slope 0.85 times the last one's."""
    t = np.arange(n)
    return 100 + np.cumsum(8 * 0.85 ** t) + 0.5 * np.random.default_rng(seed).standard_normal(n)


# ---------------------------------------------------------------------- ETS: the search
def test_the_default_search_is_the_admissible_forms_of_r_ets():
    names = sorted(f.name for f in candidate_forms("auto", "auto", "auto", "auto", 12))
    expected = sorted(f"ETS({e},{t},{s})" for e in "AM" for t in ("N", "A", "Ad") for s in ("N", "A[12]", "M[12]")
                      if not (e == "A" and s == "M[12]"))  # no additive error with a multiplicative season
    assert names == expected and len(names) == 15
    assert len(candidate_forms("auto", "auto", "auto", "auto", 1)) == 6  # no season where m = 1


def test_a_growing_season_keeps_the_multiplicative_form_by_aicc():
    y = multiplicative_season()
    model = ETSForecaster(h=12, season_length=12).fit(frame(y))
    assert model.params_.loc[0, "model"] == "ETS(M,A,M[12])"
    old = ETSForecaster(h=12, season_length=12, error="add", criterion="aic").fit(frame(y))
    assert old.params_.loc[0, "model"] == "ETS(A,A,A[12])"  # the default before: additive forms only


def test_the_kept_form_is_the_lowest_statsmodels_aicc():
    from statsmodels.tsa.exponential_smoothing.ets import ETSModel

    y = multiplicative_season(48, seed=5)
    forms = candidate_forms("auto", "auto", "auto", "auto", 4)
    fit = fit_best(y, forms, "aicc")
    values = {}
    with warnings.catch_warnings(action="ignore"):
        for f in forms:
            res = ETSModel(y, error=f.error, trend=f.trend, damped_trend=f.damped, seasonal=f.seasonal,
                           seasonal_periods=f.m if f.seasonal else None).fit(disp=False)
            values[f.name] = res.aicc
    assert EtsForm.from_json(fit.form).name == min(values, key=values.get)
    by_aic = fit_lowest_aic(y, forms)
    assert by_aic.aic == pytest.approx(min(
        ETSModel(y, error=f["error"], trend=f["trend"], damped_trend=f["damped"], seasonal=f["seasonal"],
                 seasonal_periods=f["m"] if f["seasonal"] else None).fit(disp=False).aic
        for f in [by_aic.form]), rel=1e-12)


def test_a_fading_trend_keeps_the_damped_form():
    model = ETSForecaster(h=6, season_length=1).fit(frame(damped_trend()))
    assert model.params_.loc[0, "model"] == "ETS(A,Ad,N)"
    undamped = ETSForecaster(h=6, season_length=1, damped=False).fit(frame(damped_trend()))
    assert undamped.params_.loc[0, "model"] == "ETS(A,A,N)"


@pytest.mark.parametrize("kw, allowed", [
    ({"error": "add"}, lambda name: name.startswith("ETS(A,") and "M[" not in name),
    ({"seasonal": None}, lambda name: name.endswith(",N)")),
    ({"trend": None}, lambda name: ",N," in name),
    ({"error": "mul", "seasonal": "mul"}, lambda name: name.startswith("ETS(M,") and "M[12]" in name),
])
def test_each_argument_restricts_the_search(kw, allowed):
    model = ETSForecaster(h=6, season_length=12, **kw).fit(frame(multiplicative_season(), damped_trend()))
    assert all(allowed(name) for name in model.params_["model"]), model.params_["model"].tolist()


def test_multiplicative_forms_only_for_a_positive_series():
    y = multiplicative_season() - 150  # values below 0
    model = ETSForecaster(h=6, season_length=12).fit(frame(y))
    assert model.params_.loc[0, "model"].startswith("ETS(A,") and "M[" not in model.params_.loc[0, "model"]
    with pytest.raises(ValueError, match=r"needs every value > 0"):
        ETSForecaster(h=6, season_length=12, error="mul").fit(frame(y))


def test_criterion_is_checked():
    with pytest.raises(ValueError, match="criterion"):
        ETSForecaster(h=3, criterion="bic").fit(frame(damped_trend()))


# ---------------------------------------------------------------------- parallel fits
@pytest.mark.parametrize("make", [
    lambda jobs: ETSForecaster(h=6, season_length=4, n_jobs=jobs),
    lambda jobs: ThetaForecaster(h=6, season_length=4, n_jobs=jobs),
    lambda jobs: ARIMAForecaster(h=6, season_length=4, n_jobs=jobs),
], ids=["ETS", "Theta", "ARIMA"])
@pytest.mark.processes  # joblib starts worker processes
def test_two_processes_fit_what_one_fits(make):
    series = [multiplicative_season(40, seed=s)[:40] for s in range(3)] + [damped_trend(40, seed=s) for s in range(3)]
    one, two = make(1).fit(frame(*series)), make(2).fit(frame(*series))
    pd.testing.assert_frame_equal(one.predict(), two.predict(), check_exact=True)
    pd.testing.assert_frame_equal(one.params_, two.params_, check_exact=True)


def test_n_jobs_is_checked():
    with pytest.raises(ValueError, match="n_jobs=0"):
        ThetaForecaster(h=3, n_jobs=0).fit(frame(damped_trend()))
    with pytest.raises(TypeError, match="n_jobs"):
        ThetaForecaster(h=3, n_jobs="2").fit(frame(damped_trend()))


# ---------------------------------------------------------------------- Theta: the M3 method
def direct_autocorrelations(y, lags):
    """r_k = sum_t (y_t - mean)(y_(t+k) - mean) / sum_t (y_t - mean)^2, by explicit loops."""
    n, mean = len(y), sum(y) / len(y)
    denominator = sum((v - mean) ** 2 for v in y)
    return [sum((y[t] - mean) * (y[t + k] - mean) for t in range(n - k)) / denominator for k in range(1, lags + 1)]


def direct_indices(y, m):
    """The classical multiplicative decomposition's indices, by explicit loops."""
    n, half = len(y), m // 2
    ratios = [[] for _ in range(m)]
    for t in range(half, n - half):
        if m % 2 == 0:
            trend = (0.5 * y[t - half] + sum(y[t - half + 1:t + half]) + 0.5 * y[t + half]) / m
        else:
            trend = sum(y[t - half:t + half + 1]) / m
        ratios[t % m].append(y[t] / trend)
    means = [sum(r) / len(r) for r in ratios]
    return [v / (sum(means) / m) for v in means]


def ar1(n, phi, seed):
    rng = np.random.default_rng(seed)
    y = np.zeros(n)
    for t in range(1, n):
        y[t] = phi * y[t - 1] + rng.standard_normal()
    return 50 + y


@pytest.mark.parametrize("m", [4, 12, 5])
def test_seasonality_test_and_decomposition_equal_the_formulas_in_float64(m):
    tested = 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        n = 3 * m + 7 + seed
        t = np.arange(n)
        y = 20 + 0.05 * t + 2 * (seed % 3) * np.sin(2 * np.pi * t / m) + rng.standard_normal(n)
        r = autocorrelations(y, m)
        direct = direct_autocorrelations(list(y), m)
        np.testing.assert_allclose(r, direct, rtol=1e-12, atol=1e-14)
        limit = 1.645 * np.sqrt((1 + 2 * sum(v * v for v in direct[:-1])) / n)
        assert seasonality_test(y, m) == (abs(direct[-1]) > limit)
        tested += abs(direct[-1]) > limit
        np.testing.assert_allclose(classical_indices(y, m, "mul"), direct_indices(list(y), m), rtol=1e-12)
    assert 0 < tested < 12  # both answers of the test were met


def test_the_decomposition_is_statsmodels_seasonal_decompose():
    from statsmodels.tsa.seasonal import seasonal_decompose

    y = multiplicative_season(50)
    for m, method in ((12, "mul"), (4, "add"), (5, "mul")):
        np.testing.assert_allclose(classical_indices(y, m, method),
                                   seasonal_decompose(y, model=method, period=m).seasonal[:m], rtol=1e-12)


def test_m3_test_counts_the_lower_lags_twice_and_finds_fewer_seasons_than_statsmodels():
    from statsmodels.tsa.forecasting.theta import ThetaModel

    differing = []
    for seed in range(40):
        y = ar1(40, 0.8, seed)
        model = ThetaModel(y, period=4)
        model.fit()
        if model._has_seasonality and not seasonality_test(y, 4):
            differing.append(y)
    assert differing  # persistent series that statsmodels' test calls seasonal and M3's does not
    model = ThetaForecaster(h=4, season_length=4).fit(frame(differing[0]))
    assert model.params_.loc[0, "model"] == "Theta(theta=2)"  # not seasonally adjusted


@pytest.mark.parametrize("theta", [2.0, 3.0])
def test_theta_forecast_is_the_combined_theta_lines(theta):
    y = multiplicative_season(60, seed=7)
    m, h, n = 12, 18, 60
    fit = fit_theta(y, m, True, theta)
    assert fit.form["deseasonalize"] and fit.form["method"] == "mul"
    index = np.asarray(direct_indices(list(y), m))
    x = y / index[np.arange(n) % m]
    t = np.arange(n, dtype=np.float64)
    b, a = np.polyfit(t, x, 1)
    line = a + b * t
    z = theta * x - (theta - 1) * line  # the theta line
    alpha = fit.params[1]
    level = z[0]
    for value in z[1:]:
        level = alpha * value + (1 - alpha) * level
    ahead = np.arange(1, h + 1)
    direct = ((1 - 1 / theta) * (a + b * (n - 1 + ahead)) + level / theta) * index[(n - 1 + ahead) % m]
    np.testing.assert_allclose(forecast(fit, h), direct, rtol=1e-10)
    sse = lambda v: np.sum(ses_errors(v, z) ** 2)  # noqa: E731 - alpha: least squares on the theta line
    assert all(sse(alpha) <= sse(v) * (1 + 1e-9) for v in np.linspace(0.001, 0.999, 999))
    np.testing.assert_allclose(levels(alpha, x, x[0])[-1], fit.state[0], rtol=1e-12)


@pytest.mark.processes  # joblib starts worker processes
def test_a_series_that_fails_in_a_process_raises_as_in_turn():
    series = [damped_trend(30), damped_trend(30) - 200]  # the second below 0
    for jobs in (1, 2):
        with pytest.raises(ValueError, match=r"series 's1' has the value .* needs every value > 0"):
            ETSForecaster(h=3, season_length=1, error="mul", trend=None, n_jobs=jobs).fit(frame(*series))


# ---------------------------------------------------------------------- ARIMA: d and D as auto.arima tests them
def seasonal_strength_of(y: np.ndarray, m: int, window: int, degree: int) -> float:
    """1 - var(R) / var(S + R) of statsmodels' STL with the given seasonal smoother."""
    from statsmodels.tsa.seasonal import STL

    with warnings.catch_warnings(action="ignore"):
        fit = STL(y, period=m, seasonal=window, seasonal_deg=degree).fit()
    return 1 - np.var(fit.resid) / np.var(fit.resid + fit.seasonal)


def test_five_years_of_monthly_noise_are_never_seasonally_differenced():
    """R's mstl smoother (s.window 11, s.degree 0) finds no season in noise; STL's defaults (7, degree 1) read a
    strength above 0.64 into some of these very series, which auto.arima would not difference."""
    from tsrsa.statistical.arima_search import seasonal_differences

    series = [np.random.default_rng(seed).standard_normal(60) for seed in range(40)]
    assert [seasonal_differences(y, 12) for y in series] == [0] * 40
    assert sum(seasonal_strength_of(y, 12, 7, 1) > 0.64 for y in series) >= 3  # what the defaults would do


def test_a_clear_season_is_differenced_and_two_seasons_never_are():
    from tsrsa.statistical.arima_search import differencing, seasonal_differences

    t = np.arange(60)
    y = 10 + 3 * np.sin(2 * np.pi * t / 12) + np.random.default_rng(0).normal(0, 0.5, 60)
    assert seasonal_differences(y, 12) == 1
    assert seasonal_strength_of(y[:24], 12, 11, 0) > 0.64  # strong enough, but auto.arima needs more than 2 m
    assert seasonal_differences(y[:24], 12) == 0 and differencing(y[:24], 12)[1] == 0
    assert seasonal_differences(y, None) == 0


@pytest.mark.parametrize("seed", [0, 8, 13])
def test_kpss_uses_the_short_lag_of_auto_arima(seed):
    """d is KPSS at 5 % with R's ndiffs lag trunc(3 sqrt(n) / 13): on these AR(1) series (phi 0.8) it rejects
    level stationarity where statsmodels' automatic lag does not."""
    from statsmodels.tsa.stattools import kpss

    from tsrsa.statistical.arima_search import differences

    e = np.random.default_rng(seed).standard_normal(100)
    z = np.zeros(100)
    for t in range(1, 100):
        z[t] = 0.8 * z[t - 1] + e[t]
    with warnings.catch_warnings(action="ignore"):
        short, automatic = kpss(z, "c", nlags=2)[1], kpss(z, "c", nlags="auto")[1]  # trunc(3 * 10 / 13) = 2
    assert short < 0.05 <= automatic
    assert differences(z) == 1
    assert differences(np.cumsum(z)) == 1 and differences(np.full(100, 3.0)) == 0


# ---------------------------------------------------------------------- ARIMA: forms near a unit root
def test_min_root_is_the_smallest_root_modulus_of_the_ar_and_ma_polynomials():
    from statsmodels.tsa.statespace.sarimax import SARIMAX

    from tsrsa.statistical.arima_search import min_root

    rng = np.random.default_rng(1)
    y = rng.standard_normal(120).cumsum() * 0.1 + rng.standard_normal(120)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = SARIMAX(y, order=(2, 0, 1), seasonal_order=(1, 0, 0, 4), trend="c").fit(disp=False)
    p = res.params
    names = list(res.model.param_names)
    ar = np.polymul([1.0, -p[names.index("ar.L1")], -p[names.index("ar.L2")]],
                    [1.0, 0.0, 0.0, 0.0, -p[names.index("ar.S.L4")]])  # (1 - a1 B - a2 B^2)(1 - A1 B^4)
    ma = [1.0, p[names.index("ma.L1")]]
    expected = min(np.abs(np.roots(ar[::-1])).min(), np.abs(np.roots(ma[::-1])).min())
    assert min_root(res) == pytest.approx(expected, rel=1e-9)


def test_the_search_leaves_out_a_form_near_a_unit_root_as_auto_arima_does():
    from tsrsa.statistical.arima_model import ArimaSpec
    from tsrsa.statistical.arima_search import MIN_ROOT, lowest_aic, min_root

    rng = np.random.default_rng(0)
    y = np.arange(80.0) + rng.normal(0, 0.5, 80)  # a trend an AR(1) with a constant fits with phi ~ 1
    near, mean = ArimaSpec((1, 0, 0), trend="c"), ArimaSpec((0, 0, 0), trend="c")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = {spec: spec.fit(y) for spec in (near, mean)}
        assert fits[near].aic < fits[mean].aic and min_root(fits[near]) < MIN_ROOT  # lower AIC, near a unit root
        assert lowest_aic(y, [near, mean])[0] is mean
        assert lowest_aic(y, [near])[0] is near  # every form near one: the lowest AIC still


def test_a_series_differenced_once_is_searched_with_and_without_a_drift():
    from tsrsa.statistical.arima_search import arima_grid, arima_specs, trends

    assert trends(0, 0, True) == ("c",) and trends(1, 0, True) == ("n", "c") and trends(0, 1, True) == ("n", "c")
    assert trends(1, 1, True) == ("n",) and trends(1, 0, False) == ("n",)  # the statistical start's own grid
    assert {s.trend for s in arima_grid(12, 1, 0)} == {"n"}
    y = np.cumsum(np.random.default_rng(0).normal(1, 1, 60))
    specs = arima_specs(y, 4, "auto", (0, 0, 0))  # the seasonal part given, the rest searched
    assert {s.order[1] for s in specs} == {1} and len(specs) == 18 and {s.trend for s in specs} == {"n", "c"}


def test_a_trending_random_walk_keeps_its_drift_and_forecasts_the_trend():
    """y_t = y_(t-1) + 2 + noise: d = 1 by KPSS, and of the forms with and without a drift the drift wins; its
    forecast rises by about 2 a step where a form without it (ARIMA(p,1,q), no AR root near 1) stays flat."""
    from tsrsa import ARIMAForecaster

    rng = np.random.default_rng(3)
    y = np.cumsum(2.0 + rng.normal(0, 1.0, 120))
    model = ARIMAForecaster(h=10).fit(pd.Series(y, index=pd.RangeIndex(120)))
    record = model.params_.iloc[0]
    assert "with drift" in record["model"]
    steps = np.diff(model.predict()["yhat"].to_numpy())
    np.testing.assert_allclose(steps, 2.0, atol=0.5)


def logged_fits(monkeypatch):
    """The forms ARIMA's search fits, in their order."""
    from tsrsa.statistical.arima_model import ArimaSpec

    fitted, fit = [], ArimaSpec.fit
    monkeypatch.setattr(ArimaSpec, "fit", lambda spec, y: fitted.append(spec) or fit(spec, y))
    return fitted


@pytest.mark.slow  # the search and a refit of every form it fitted (1-2 s): the slow tier
def test_the_stepwise_search_starts_from_auto_arimas_forms_and_moves_between_neighbours(monkeypatch):
    from tsrsa.statistical.arima_search import stepwise

    rng = np.random.default_rng(5)
    t = np.arange(30)
    y = np.cumsum(1.0 + rng.normal(0, 1, 30)) + 4 * np.sin(2 * np.pi * t / 4)
    fitted = logged_fits(monkeypatch)
    spec, res, count = stepwise(y, 4, 1, 0)
    key = [(s.order[0], s.order[2], s.seasonal_order[0], s.seasonal_order[2], s.trend) for s in fitted]
    assert key[:5] == [(2, 2, 1, 1, "c"), (0, 0, 0, 0, "c"), (1, 0, 1, 0, "c"), (0, 1, 0, 1, "c"), (0, 0, 0, 0, "n")]
    assert count == len(fitted) == len(set(key))  # no form fitted twice
    assert all(s.order[1] == 1 and s.seasonal_order[1] == 0 and s.seasonal_order[3] == 4 for s in fitted)
    assert max(max(s.seasonal_order[0], s.seasonal_order[2]) for s in fitted) == 1  # within MAX_SEASONAL_P / _Q
    for later in key[5:]:  # each later form one move from a form fitted before it
        assert any(sum(abs(a - b) for a, b in zip(later[:4], earlier[:4])) + (later[4] != earlier[4]) in (1, 2)
                   and (later[4] == earlier[4] or later[:4] == earlier[:4]) for earlier in key[:key.index(later)])
    monkeypatch.undo()
    from tsrsa.statistical.arima_search import aicc

    scores = [aicc(s.fit(y)) for s in fitted]  # the best at each step only falls: the lowest of all fitted
    assert spec in fitted and aicc(res) == pytest.approx(min(scores), abs=1e-9) and np.isfinite(aicc(res))


def test_the_stepwise_search_keeps_its_bounds(monkeypatch):
    from tsrsa.statistical import arima_search
    from tsrsa.statistical.arima_search import stepwise

    y = np.random.default_rng(2).normal(0, 1, 14)  # p, q <= 14 // 3 = 4; no season; d = D = 0: a mean or none
    fitted = logged_fits(monkeypatch)
    stepwise(y, None, 0, 0)
    assert all(s.order[0] <= 4 and s.order[2] <= 4 and s.seasonal_order == (0, 0, 0, 0) for s in fitted)
    assert fitted[0].order == (2, 0, 2) and {s.trend for s in fitted[:5]} == {"c", "n"}
    fitted.clear()
    monkeypatch.setattr(arima_search, "MAX_FORMS", 3)
    spec, _, count = stepwise(np.cumsum(np.random.default_rng(3).normal(0, 1, 60)), 4, 1, 1)
    assert count == len(fitted) == 3 and spec in fitted  # d + D = 2: no constant, three starting forms only
    assert {s.trend for s in fitted} == {"n"}


def test_a_series_shorter_than_three_seasons_is_fitted_with_what_it_holds_as_auto_arima_does(monkeypatch):
    """auto.arima caps P and Q at n // (3 m) and differences seasonally only above 2 m values: two years of
    monthly data get a non-seasonal form, thirty months at most a seasonal difference; a fixed seasonal order
    still needs three seasons."""
    from tsrsa.statistical import arima_search

    fitted = logged_fits(monkeypatch)
    t = np.arange(36)
    y = 50 + 0.3 * t + 5 * np.sin(2 * np.pi * t / 12) + np.random.default_rng(0).normal(0, 1, 36)
    for n in (24, 30):
        fitted.clear()
        model = ARIMAForecaster(h=12, season_length=12).fit(frame(y[:n]))
        assert all(s.seasonal_order[0] == s.seasonal_order[2] == 0 for s in fitted)  # P = Q = 0 in every form
        D = arima_search.seasonal_differences(y[:n], 12)
        assert {s.seasonal_order[1] for s in fitted} == {D} and (D == 0 if n <= 24 else True)
        assert np.isfinite(model.predict(level=[80]).drop(columns=["unique_id", "ds"]).to_numpy()).all()
    with pytest.raises(ValueError, match=r"needs at least 36 \(three seasons"):
        ARIMAForecaster(h=12, season_length=12, seasonal_order=(0, 1, 1)).fit(frame(y[:30]))
    with pytest.raises(ValueError, match=r"needs at least 10 \(ten observations"):
        ARIMAForecaster(h=12, season_length=12).fit(frame(y[:9]))


def test_a_series_shorter_than_two_seasons_is_searched_without_a_season_and_theta_leaves_it_unadjusted():
    """R's ets leaves the season out of a series too short for its states, R's thetaf does not test one for a
    season: twenty months at the defaults are fitted (they were refused), the ETS form has no season, and
    Theta's forecast is that of deseasonalize=False."""
    t = np.arange(20)
    y = 50 + 0.5 * t + 6 * np.sin(2 * np.pi * t / 12) + np.random.default_rng(4).normal(0, 1, 20)
    ets = ETSForecaster(h=6, season_length=12).fit(frame(y))
    assert ets.params_.loc[0, "model"].endswith(",N)")  # ETS(error, trend, N): no season
    alone = ETSForecaster(h=6, season_length=12, seasonal=None).fit(frame(y))
    pd.testing.assert_frame_equal(ets.predict(), alone.predict())
    theta = ThetaForecaster(h=6, season_length=12).fit(frame(y))
    plain = ThetaForecaster(h=6, season_length=12, deseasonalize=False).fit(frame(y))
    pd.testing.assert_frame_equal(theta.predict(), plain.predict())
    assert np.isfinite(ets.predict(level=[80]).drop(columns=["unique_id", "ds"]).to_numpy()).all()
    with pytest.raises(ValueError, match=r"needs at least 10 \(ten observations"):
        ThetaForecaster(h=6, season_length=12).fit(frame(y[:9]))


def test_a_long_season_shorter_than_two_seasons_is_searched_without_its_fourier_terms():
    """Thirty weeks with season_length=52: too short for the Fourier terms of the year (two seasons), so the
    search runs without a season, as it does for seasonal_order=None (refused before 0.19.5)."""
    t = np.arange(30)
    y = 20 + 0.2 * t + np.random.default_rng(6).normal(0, 1, 30)
    auto = ARIMAForecaster(h=8, season_length=52).fit(frame(y))
    plain = ARIMAForecaster(h=8, season_length=52, seasonal_order=None).fit(frame(y))
    pd.testing.assert_frame_equal(auto.predict(), plain.predict())
    assert "[52]" not in auto.params_.loc[0, "model"]
