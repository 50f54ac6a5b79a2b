"""Choosing an ARIMA's orders for one series, as R's ``auto.arima`` does, and fitting it.

- d and D as auto.arima picks them (:func:`differencing`: KPSS with R's short lag; the seasonal strength of
  R's ``mstl`` decomposition above 0.64), d at most 1.
- The orders (:func:`fit_arima`): auto.arima's stepwise search (:func:`stepwise`, Hyndman & Khandakar
  2008) of (p, q, P, Q) and a constant by AICc, P and Q at most 1; a season above
  :data:`~tsrsa.statistical.arima_model.SHORT_SEASON` enters instead as K in
  :data:`~tsrsa.statistical.arima_model.FOURIER_K` Fourier pairs (K by the AIC of a least-squares harmonic
  fit) with ARMA errors. The constant is a mean when d + D = 0 and a drift when d + D = 1 (auto.arima's
  ``allowmean`` and ``allowdrift``), so that a trending series differenced once keeps its trend without an
  AR root near 1 (the search leaves those out, :data:`MIN_ROOT`). Orders given by the user replace the
  searched ones, the rest searched over a grid (:func:`arima_specs`, :func:`lowest_aic`).
- :func:`fit_arima_series`: the chosen form fitted, with its filter state
  (:mod:`tsrsa.statistical.arima_model`); a series without noise gets :func:`exact_fit`.

statsmodels is imported inside the functions that need it.
"""
from __future__ import annotations

import warnings

import numpy as np

from tsrsa.statistical.arima_model import FOURIER_K, SHORT_SEASON, ArimaSpec, named_params, replay
from tsrsa.statistical.series_fit import SeriesFit

#: the seasonal smoother of the decomposition whose seasonal strength decides D: R's ``mstl`` (which auto.arima
#: reads) runs ``stl`` with ``s.window = 11`` and ``s.degree = 0``; statsmodels' ``STL`` defaults (7, degree 1)
#: follow the season more closely and read one into noise (D = 1 on 37 % of 200 M3 monthly series against 17 %;
#: the ARIMA's mean MASE on their later block 1.057 against 1.009)
STL_SEASONAL_WINDOW, STL_SEASONAL_DEGREE = 11, 0


def seasonal_differences(y: np.ndarray, m: int | None) -> int:
    """D = 1 when the seasonal strength of period m, ``1 - var(R) / var(S + R)`` of the STL decomposition that
    auto.arima reads (R's ``mstl``: seasonal window :data:`STL_SEASONAL_WINDOW`, seasonal degree
    :data:`STL_SEASONAL_DEGREE`), exceeds 0.64 (auto.arima's rule); 0 without m or with at most two seasons
    of values (auto.arima's ``length(x) <= 2 * m``)."""
    if not m or len(y) <= 2 * m:
        return 0
    from statsmodels.tsa.seasonal import STL

    with warnings.catch_warnings(action="ignore"):
        fit = STL(y, period=m, seasonal=STL_SEASONAL_WINDOW, seasonal_deg=STL_SEASONAL_DEGREE).fit()
    spread = np.var(fit.resid + fit.seasonal)
    if spread <= 0:  # nothing but the trend: no season to difference away (0 / 0 would read as strength 1)
        return 0
    return int(1 - np.var(fit.resid) / spread > 0.64)


def kpss_lags(n: int) -> int:
    """The Newey-West truncation lag of auto.arima's KPSS test of ``n`` values: ``trunc(3 sqrt(n) / 13)``
    (R's ``ndiffs``, its "short" lag)."""
    return int(3 * np.sqrt(n) / 13)


def differences(z: np.ndarray) -> int:
    """d = 1 when KPSS (:func:`kpss_lags`) rejects level stationarity (5 %) of ``z``, else 0 (a constant ``z`` is
    stationary: KPSS has no variance to test it with). auto.arima goes on to d = 2 when the differences fail
    the test too; here d stays at most 1 (on M3's later blocks the second difference raised the monthly
    ARIMA's mean MASE by 7 %)."""
    from statsmodels.tsa.stattools import kpss

    if np.ptp(z) == 0:
        return 0
    with warnings.catch_warnings(action="ignore"):
        return int(kpss(z, regression="c", nlags=kpss_lags(len(z)))[1] < 0.05)


def differencing(y: np.ndarray, m: int | None) -> tuple[int, int]:
    """(d, D) as auto.arima chooses them: D by :func:`seasonal_differences`, then d by
    :func:`differences` of the (seasonally differenced) series."""
    D = seasonal_differences(y, m)
    return differences(y[m:] - y[:-m] if D else y), D


def fourier_pairs(y: np.ndarray, m: int) -> int:
    """K in :data:`FOURIER_K` of lowest AIC of the least-squares fit of y on a constant and K pairs
    of period m."""
    import statsmodels.api as sm

    aic = {K: sm.OLS(y, sm.add_constant(ArimaSpec((0, 0, 0), fourier=(m, K)).exog(len(y)))).fit().aic
           for K in FOURIER_K}
    return min(aic, key=aic.get)


def trends(d: int, D: int, drift: bool) -> tuple[str, ...]:
    """The trends a search compares: a constant when d + D = 0; with ``drift`` and d + D = 1, none and a
    drift (SARIMAX's constant of the differenced series); none otherwise."""
    if d + D == 0:
        return ("c",)
    return ("n", "c") if drift and d + D == 1 else ("n",)


def arima_grid(m: int | None, d: int, D: int, K: int = 0) -> list[ArimaSpec]:
    """(p, q) in {0,1,2}^2 with d and D given; a season m <= 24 adds (P, Q) in {(0,0), (1,0), (0,1)},
    a longer one K Fourier pairs of period m as regressors; a constant when d + D = 0 (the statistical
    start's grid, :mod:`tsrsa.start.arima`)."""
    pq = [(p, q) for p in range(3) for q in range(3)]
    if m and m <= SHORT_SEASON:
        return [ArimaSpec((p, d, q), (P, D, Q, m), trend) for trend in trends(d, D, False) for p, q in pq
                for P, Q in ((0, 0), (1, 0), (0, 1))]
    return [ArimaSpec((p, d, q), trend=trend, fourier=(m, K) if m else None) for trend in trends(d, D, False)
            for p, q in pq]


def arima_specs(y: np.ndarray, m: int | None, order, seasonal_order) -> list[ArimaSpec]:
    """The forms to compare when ``order`` ((p, d, q) or "auto") or ``seasonal_order`` ((P, D, Q) or
    "auto") is given: the searched part as in :func:`arima_grid`, the given part as it is."""
    long_season = bool(m and m > SHORT_SEASON)
    if seasonal_order == "auto":
        D = 0 if long_season else seasonal_differences(y, m)
        seasonal = [(P, D, Q, m) for P, Q in ((0, 0), (1, 0), (0, 1))] if m and not long_season else [(0, 0, 0, 0)]
        fourier = (m, fourier_pairs(y, m)) if long_season else None
    else:
        P, D, Q = seasonal_order
        seasonal, fourier = [(P, D, Q, m if (m and P + D + Q) else 0)], None
    if order == "auto":
        d = differences(y[m:] - y[:-m] if D else y)
        orders = [(p, d, q) for p in range(3) for q in range(3)]
    else:
        orders, d = [tuple(order)], order[1]
    return [ArimaSpec(o, s, trend, fourier) for trend in trends(d, D, order == "auto") for o in orders
            for s in seasonal]


#: a fit whose AR or MA polynomial (seasonal factors multiplied in) has a root of modulus below this is near a
#: unit root: R's ``auto.arima`` (forecast's ``myarima``) sets its criterion to infinity, and so does the search here
MIN_ROOT = 1.01


def min_root(res) -> float:
    """The smallest modulus among the roots of a fit's reduced AR and MA polynomials (inf without either)."""
    roots = np.concatenate([np.atleast_1d(res.arroots), np.atleast_1d(res.maroots)])
    return float(np.min(np.abs(roots))) if roots.size else np.inf


def lowest_aic(y: np.ndarray, grid: list[ArimaSpec]):
    """(spec, results) of lowest AIC among ``grid`` fitted to ``y`` (forms that fail are skipped), leaving out
    those near a unit root (:data:`MIN_ROOT`, as ``auto.arima`` does: their constant or their forecasts run
    away) unless every form is."""
    best, any_form = {}, {}  # the lowest AIC among forms away from a unit root, and among all
    for spec in grid:
        try:
            res = spec.fit(y)
        except (np.linalg.LinAlgError, ValueError):
            continue
        if not np.isfinite(res.aic):
            continue
        for kept, admissible in ((any_form, True), (best, min_root(res) >= MIN_ROOT)):
            if admissible and (not kept or res.aic < kept["res"].aic):
                kept.update(res=res, spec=spec)
    chosen = best or any_form
    if not chosen:
        raise RuntimeError("no ARIMA of the grid could be fitted")
    return chosen["spec"], chosen["res"]


#: the stepwise search's bounds: auto.arima's ``max.p``, ``max.q`` (5) and most forms (94); its ``max.P`` and
#: ``max.Q`` are 2, here 1: on 200 M3 series the search with 2 scored a later block 0.7 % worse in mean MASE
#: at 1.2x the time (a seasonal AR of order 2 at lag 12 is a state of 24 or more for the Kalman filter)
MAX_P, MAX_Q, MAX_SEASONAL_P, MAX_SEASONAL_Q, MAX_FORMS = 5, 5, 1, 1, 94


def aicc(res) -> float:
    """statsmodels' ``aicc`` of a fit, inf where it is not finite or where the fit's AR or MA polynomial has a
    root near the unit circle (:data:`MIN_ROOT`)."""
    value = float(res.aicc)
    return value if np.isfinite(value) and min_root(res) >= MIN_ROOT else np.inf


def stepwise(y: np.ndarray, m: int | None, d: int, D: int, K: int = 0):
    """(spec, results, forms fitted) of the stepwise order search of Hyndman & Khandakar (2008), R's
    ``auto.arima(stepwise=TRUE)``: AICc over (p, q, P, Q) and a constant, from the best of four starting
    forms, moving to the first neighbour that lowers it until none does.

    d and D are given. The starting forms are (2,2,1,1), (0,0,0,0), (1,0,1,0) and (0,1,0,1) in (p, q, P, Q),
    with a constant where d + D <= 1 (a mean, or a drift of a series differenced once), and (0,0,0,0) without
    it; the neighbours of the best form, tried in auto.arima's order, are P and Q one up or down, alone then
    both, then p and q the same way, then the constant in or out. p and q stay within :data:`MAX_P` and
    :data:`MAX_Q` and a third of the series' length, P and Q within :data:`MAX_SEASONAL_P`,
    :data:`MAX_SEASONAL_Q` (1, where auto.arima has 2) and a third of its seasons; without a season of at most
    :data:`SHORT_SEASON` steps P = Q = 0 (a longer one enters as K Fourier pairs of period m). A form near a
    unit root (:data:`MIN_ROOT`), or whose fit fails, counts as infinite AICc; at most :data:`MAX_FORMS` forms
    are fitted. When every form fitted is infinite, the lowest finite AICc among them is kept regardless of
    roots."""
    n = len(y)
    seasonal = bool(m and 1 < m <= SHORT_SEASON)
    max_p, max_q = min(MAX_P, n // 3), min(MAX_Q, n // 3)
    max_P = min(MAX_SEASONAL_P, n // (3 * m)) if seasonal else 0
    max_Q = min(MAX_SEASONAL_Q, n // (3 * m)) if seasonal else 0
    constant = d + D <= 1
    fourier = (m, K) if (m and not seasonal and K) else None
    fitted: dict[tuple, tuple[float, object]] = {}  # (p, q, P, Q, trend) -> (AICc, results or None)

    def spec_of(key) -> ArimaSpec:
        p, q, P, Q, trend = key
        return ArimaSpec((p, d, q), (P, D, Q, m) if seasonal else (0, 0, 0, 0), trend, fourier)

    def score(key) -> float:
        if key not in fitted:
            if len(fitted) >= MAX_FORMS:
                return np.inf
            try:
                res = spec_of(key).fit(y)
                fitted[key] = (aicc(res), res)
            except (np.linalg.LinAlgError, ValueError):
                fitted[key] = (np.inf, None)
        return fitted[key][0]

    trend = "c" if constant else "n"
    starts = [(2, 2, 1, 1), (0, 0, 0, 0), (1, 0, 1, 0), (0, 1, 0, 1)]
    keys = [(min(p, max_p), min(q, max_q), min(P, max_P), min(Q, max_Q), trend) for p, q, P, Q in starts]
    if constant:
        keys.append((0, 0, 0, 0, "n"))
    best = min(dict.fromkeys(keys), key=score)  # the first of equal values
    moves = [(0, 0, -1, 0), (0, 0, 0, -1), (0, 0, 1, 0), (0, 0, 0, 1), (0, 0, -1, -1), (0, 0, -1, 1),
             (0, 0, 1, -1), (0, 0, 1, 1), (-1, 0, 0, 0), (0, -1, 0, 0), (1, 0, 0, 0), (0, 1, 0, 0),
             (-1, -1, 0, 0), (-1, 1, 0, 0), (1, -1, 0, 0), (1, 1, 0, 0)]
    improved = True
    while improved and len(fitted) < MAX_FORMS:
        improved = False
        neighbours = [(best[0] + a, best[1] + b, best[2] + c, best[3] + e, best[4]) for a, b, c, e in moves]
        neighbours = [k for k in neighbours if 0 <= k[0] <= max_p and 0 <= k[1] <= max_q
                      and 0 <= k[2] <= max_P and 0 <= k[3] <= max_Q]
        if constant:
            neighbours.append((*best[:4], "n" if best[4] == "c" else "c"))
        for key in neighbours:
            if score(key) < score(best):
                best, improved = key, True
                break
    if not np.isfinite(fitted[best][0]):  # every form near a unit root (or failed): the lowest AICc of the rest
        finite = {k: float(r.aicc) for k, (_, r) in fitted.items() if r is not None and np.isfinite(r.aicc)}
        if not finite:
            raise RuntimeError("no ARIMA of the stepwise search could be fitted")
        best = min(finite, key=finite.get)
    return spec_of(best), fitted[best][1], len(fitted)


def fit_arima(y: np.ndarray, m: int | None) -> tuple[ArimaSpec, np.ndarray, dict]:
    """The ARIMA of :func:`stepwise`'s search (auto.arima's).

    d and D come from :func:`differencing`; a season above :data:`SHORT_SEASON` is carried by
    :func:`fourier_pairs` regressors, not differenced.

    Returns
    -------
    spec : ArimaSpec
    params : numpy.ndarray
        Its maximum-likelihood parameters.
    record : dict
        The form, its AIC, how it was chosen and its named parameters.
    """
    long_season = bool(m and m > SHORT_SEASON)
    d, D = differencing(y, None if long_season else m)
    spec, best, fitted = stepwise(y, m, d, D, fourier_pairs(y, m) if long_season else 0)
    return spec, best.params, {**spec.describe(), "aic": round(float(best.aic), 3),
                               "selection": f"stepwise AICc, {fitted} forms fitted", "params": named_params(best)}


def fit_arima_series(y: np.ndarray, m: int | None, order="auto", seasonal_order="auto") -> SeriesFit:
    """The fitted ARIMA of ``y`` with its filter state: :func:`fit_arima` when both orders are "auto",
    else the lowest AIC over :func:`arima_specs`; a constant series, or one that repeats its season of
    ``m`` steps exactly, gets :func:`exact_fit`."""
    exact = exact_fit(y, m)
    if exact is not None:
        return exact
    if order == "auto" and seasonal_order == "auto":
        spec, params, record = fit_arima(y, m)
        aic = record["aic"]
    else:
        spec, best = lowest_aic(y, arima_specs(y, m, order, seasonal_order))
        params, aic = best.params, float(best.aic)
    names = [str(name) for name in spec.model(y).param_names]
    params = np.asarray(params, dtype=np.float64)
    fit = SeriesFit({**spec.to_json(), "param_names": names}, params, np.empty(0), np.empty(0), 0, float(aic))
    return replay(fit, y)


def exact_fit(y: np.ndarray, m: int | None) -> SeriesFit | None:
    """The model of a series without noise, whatever the orders asked, or None for any other series: a
    constant gets ARIMA(0,0,0) with the constant as its intercept (its forecast is the constant); a series
    whose seasonal differences of ``m`` steps are all zero, ARIMA(0,0,0)(0,1,0)[m] (its forecast repeats
    the last season).

    Such a series has no variance left to estimate: every form's likelihood is unbounded (statsmodels'
    KPSS test cannot even choose d, and the fits come out with NaN or meaningless AICs, or none at all),
    and every order that fits the data exactly forecasts the same. R's ``auto.arima`` gives a constant
    series the same model (its ``is.constant`` case). The AIC is NaN; new observations run through the
    model with its parameters fixed, as for any fit."""
    y = np.asarray(y, dtype=np.float64)
    if len(y) and np.ptp(y) == 0:
        spec, params = ArimaSpec((0, 0, 0), trend="c"), np.array([float(y[0])])
    elif m and m > 1 and len(y) > m and not np.any(y[m:] - y[:-m]):
        spec, params = ArimaSpec((0, 0, 0), (0, 1, 0, int(m))), np.empty(0)
    else:
        return None
    names = [str(name) for name in spec.model(y).param_names]  # the scale is concentrated out
    fit = SeriesFit({**spec.to_json(), "param_names": names}, params, np.empty(0), np.empty(0), 0, np.nan)
    return replay(fit, y)
