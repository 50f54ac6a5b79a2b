"""Statistical anchors fitted once, then filtered forward: forecasts from every origin, no refit.

A model is fitted by maximum likelihood on the training steps; one Kalman filter pass over the
whole series with its parameters fixed then gives, at each origin t, the forecast of the h steps
from t from the state predicted at t (:func:`origin_forecasts`: no refit, no look ahead).

- ARIMA (:func:`fit_arima`): d and D as auto.arima picks them (KPSS; STL seasonal strength above
  0.64), then the lowest AIC over (p, q) in {0,1,2}^2 x (P, Q) in {(0,0), (1,0), (0,1)}; a season
  above :data:`SHORT_SEASON` enters instead as K in :data:`FOURIER_K` Fourier pairs (K by the AIC
  of a least-squares harmonic fit) with ARMA errors;
- ETS (:func:`fit_ets`): additive-error state-space exponential smoothing, the form of lowest AIC
  among no / additive / damped trend x without / with the season (initial states concentrated
  out; above a season of 24, heuristic starts).

statsmodels is imported inside the functions that need it.
"""
from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass

import numpy as np

#: seasons up to this are seasonal ARIMA terms and ETS seasonal states estimated by concentrating
#: the initial states out; longer ones are Fourier regressors (ARIMA) and heuristic starts (ETS)
SHORT_SEASON = 24
FOURIER_K = (2, 4, 6)


@dataclass(frozen=True)
class ArimaSpec:
    """One SARIMAX form: orders, trend, and optional Fourier regressors."""

    order: tuple[int, int, int]
    seasonal_order: tuple[int, int, int, int] = (0, 0, 0, 0)
    trend: str = "n"
    fourier: tuple[int, int] | None = None  # (period, K): K sine/cosine pairs as regressors

    def exog(self, n: int) -> np.ndarray | None:
        """(n, 2K) the Fourier regressors of the first n steps, or None without them."""
        if not self.fourier:
            return None
        period, K = self.fourier
        t = np.arange(n)[:, None] * np.arange(1, K + 1)[None, :] * (2 * np.pi / period)  # (n, K)
        return np.concatenate([np.sin(t), np.cos(t)], axis=1)  # (n, 2K)

    def model(self, y: np.ndarray, *, simple_differencing: bool = False):
        """statsmodels' SARIMAX of this form on ``y`` (the scale concentrated out)."""
        from statsmodels.tsa.statespace.sarimax import SARIMAX

        return SARIMAX(y, exog=self.exog(len(y)), order=self.order, seasonal_order=self.seasonal_order,
                       trend=self.trend, simple_differencing=simple_differencing, concentrate_scale=True)

    def fit(self, y: np.ndarray):
        """Maximum likelihood on ``y`` (on the differenced series: the same parameters, a faster fit)."""
        with warnings.catch_warnings(action="ignore"):
            return self.model(y, simple_differencing=True).fit(disp=False, cov_type="none")

    def forecasts(self, params, y_all: np.ndarray, origins, h: int) -> np.ndarray:
        """(len(origins), h) forecasts from ``origins`` of the model with ``params`` fixed,
        filtered over ``y_all``."""
        with warnings.catch_warnings(action="ignore"):
            return origin_forecasts(self.model(y_all).filter(np.asarray(params)), origins, h)

    def describe(self) -> dict:
        return dataclasses.asdict(self)


def origin_forecasts(results, origins, h: int) -> np.ndarray:
    """Forecasts from many origins of a linear Gaussian state-space model filtered once.

    Parameters
    ----------
    results : statsmodels MLEResults
        The model filtered over the whole series (design and transition matrices constant in
        time; intercepts may vary: regressors).
    origins : array (n,) of int
        First target position of each forecast.
    h : int

    Returns
    -------
    numpy.ndarray
        (n, h): from origin t, E[y_{t..t+h-1} | y_{<t}], from the predicted state at t.
    """
    fr = results.filter_results
    origins = np.asarray(origins)
    for name in ("design", "transition"):
        matrix = getattr(fr, name)
        if not np.allclose(matrix, matrix[..., :1]):
            raise ValueError(f"origin_forecasts needs a constant {name} matrix")
    if origins.max() + h > fr.nobs:
        raise ValueError("the last origin's targets run past the filtered series")
    Z, T = fr.design[0, :, 0], fr.transition[:, :, 0]  # (k,), (k, k)
    d = np.broadcast_to(fr.obs_intercept[0], (fr.nobs,))  # (nobs,) regressors' part, or a constant
    c = np.broadcast_to(fr.state_intercept, (len(Z), fr.nobs))  # (k, nobs)
    a = fr.predicted_state[:, origins]  # (k, n) state at each origin given y_<t
    out = np.empty((len(origins), h))
    for j in range(h):
        out[:, j] = Z @ a + d[origins + j]
        a = T @ a + c[:, origins + j]
    return out


def named_params(res) -> dict:
    """``{parameter name: value}`` of a statsmodels fit, rounded to 6 decimals."""
    return {str(k): round(float(v), 6) for k, v in zip(res.model.param_names, np.asarray(res.params))}


# ---------------------------------------------------------------------- ARIMA
def differencing(y: np.ndarray, m: int | None) -> tuple[int, int]:
    """(d, D) as auto.arima chooses them: D = 1 when STL's seasonal strength exceeds 0.64, then
    d = 1 when KPSS rejects level stationarity (5 %) of the (seasonally differenced) series."""
    from statsmodels.tsa.seasonal import STL
    from statsmodels.tsa.stattools import kpss

    with warnings.catch_warnings(action="ignore"):
        fit = STL(y, period=m).fit() if m else None
        D = int(bool(m) and 1 - np.var(fit.resid) / max(np.var(fit.resid + fit.seasonal), 1e-300) > 0.64)
        z = y[m:] - y[:-m] if D else y
        d = int(kpss(z, regression="c", nlags="auto")[1] < 0.05)
    return d, D


def fourier_pairs(y: np.ndarray, m: int) -> int:
    """K in :data:`FOURIER_K` of lowest AIC of the least-squares fit of y on a constant and K pairs
    of period m."""
    import statsmodels.api as sm

    aic = {K: sm.OLS(y, sm.add_constant(ArimaSpec((0, 0, 0), fourier=(m, K)).exog(len(y)))).fit().aic
           for K in FOURIER_K}
    return min(aic, key=aic.get)


def arima_grid(m: int | None, d: int, D: int, K: int = 0) -> list[ArimaSpec]:
    """(p, q) in {0,1,2}^2 with d and D given; a season m <= 24 adds (P, Q) in {(0,0), (1,0), (0,1)},
    a longer one K Fourier pairs of period m as regressors. A constant when d + D = 0."""
    trend, pq = ("c" if d + D == 0 else "n"), [(p, q) for p in range(3) for q in range(3)]
    if m and m <= SHORT_SEASON:
        return [ArimaSpec((p, d, q), (P, D, Q, m), trend) for p, q in pq for P, Q in ((0, 0), (1, 0), (0, 1))]
    return [ArimaSpec((p, d, q), trend=trend, fourier=(m, K) if m else None) for p, q in pq]


def fit_arima(y: np.ndarray, m: int | None) -> tuple[ArimaSpec, np.ndarray, dict]:
    """The ARIMA of lowest AIC over :func:`arima_grid`.

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
    best, best_spec = None, None
    grid = arima_grid(m, d, D, fourier_pairs(y, m) if long_season else 0)
    for spec in grid:
        try:
            res = spec.fit(y)
        except (np.linalg.LinAlgError, ValueError):
            continue
        if np.isfinite(res.aic) and (best is None or res.aic < best.aic):
            best, best_spec = res, spec
    if best is None:
        raise RuntimeError("no ARIMA of the grid could be fitted")
    return best_spec, best.params, {**best_spec.describe(), "aic": round(float(best.aic), 3),
                                    "selection": f"lowest AIC of {len(grid)}", "params": named_params(best)}


# ---------------------------------------------------------------------- ETS
def ets_forms(m: int | None) -> list[tuple[bool, bool, int | None]]:
    """(trend, damped, season): none / additive / damped trend, each without and with the season."""
    seasons = [None, m] if m else [None]
    return [(t, dmp, s) for s in seasons for t, dmp in ((False, False), (True, False), (True, True))]


def fit_ets(y: np.ndarray, m: int | None):
    """Additive-error ETS (statsmodels' state-space ExponentialSmoothing) of lowest AIC over
    :func:`ets_forms`.

    Returns
    -------
    res : statsmodels results
        The chosen fit.
    record : dict
        Its form, initialisation, AIC, how it was chosen and its named parameters.
    """
    from statsmodels.tsa.statespace.exponential_smoothing import ExponentialSmoothing

    init = "heuristic" if m and m > SHORT_SEASON else "concentrated"
    best = None
    with warnings.catch_warnings(action="ignore"):
        for trend, damped, season in ets_forms(m):
            res = ExponentialSmoothing(y, trend=trend, damped_trend=damped, seasonal=season,
                                       initialization_method=init).fit(disp=False)
            if np.isfinite(res.aic) and (best is None or res.aic < best.aic):
                best = res
    mod = best.model
    return best, {"trend": mod.trend, "damped_trend": mod.damped_trend, "seasonal": mod.seasonal_periods,
                  "initialization": init, "aic": round(float(best.aic), 3),
                  "selection": f"lowest AIC of {len(ets_forms(m))} forms", "params": named_params(best)}


def ets_forecasts(res, y_all: np.ndarray, origins, h: int) -> np.ndarray:
    """(len(origins), h) forecasts of a fitted ETS run over ``y_all`` from its own initial states
    (known: no look at the test part)."""
    from statsmodels.tsa.statespace.exponential_smoothing import ExponentialSmoothing

    mod = res.model
    init = np.asarray(res.initial_state, dtype=float).ravel()  # level, trend, seasonal states
    kwargs = {"initial_level": init[0], "initial_trend": init[1] if mod.trend else None,
              "initial_seasonal": init[-mod.seasonal_periods:] if mod.seasonal else None}
    with warnings.catch_warnings(action="ignore"):
        full = ExponentialSmoothing(y_all, trend=mod.trend, damped_trend=mod.damped_trend,
                                    seasonal=mod.seasonal_periods, initialization_method="known", **kwargs)
        return origin_forecasts(full.filter(res.params), origins, h)
