"""Statistical anchors fitted once, then filtered forward: forecasts from every origin, no refit.

A model is fitted by maximum likelihood on the training steps; one Kalman filter pass over the
whole series with its parameters fixed then gives, at each origin t, the forecast of the h steps
from t from the state predicted at t (:func:`origin_forecasts`: no refit, no look ahead).

- ARIMA (:func:`fit_arima`): the library's :class:`~tsrsa.forecasters.ARIMAForecaster` with both
  orders "auto" (:mod:`tsrsa.statistical.arima_search` and ``arima_model``, whose names this module
  re-exports): d and D
  as auto.arima picks them (KPSS; the seasonal strength of R's ``mstl`` decomposition above 0.64; since
  0.19.2 with auto.arima's own lag and smoother), then auto.arima's stepwise
  search by AICc (since 0.19; before, the lowest AIC over (p, q) in {0,1,2}^2 x (P, Q) in {(0,0),
  (1,0), (0,1)}, which the recorded short-series rows used); a season above :data:`SHORT_SEASON`
  enters instead as K in :data:`FOURIER_K` Fourier pairs (K by the AIC of a least-squares harmonic
  fit) with ARMA errors;
- ETS (:func:`fit_ets`): additive-error state-space exponential smoothing (statsmodels'
  ``statespace.ExponentialSmoothing``), the form of lowest AIC among no / additive / damped trend x
  without / with the season (initial states concentrated out; above a season of 24, heuristic
  starts). The library's :class:`~tsrsa.forecasters.ETSForecaster` compares the same six forms by
  default, with statsmodels' ``ETSModel`` (initial states estimated by maximum likelihood, and
  multiplicative forms on request); this anchor keeps the engine its recorded results came from.

statsmodels is imported inside the functions that need it.
"""
from __future__ import annotations

import warnings

import numpy as np

from tsrsa.statistical.arima_model import (  # noqa: F401 - the anchor's ARIMA, re-exported
    FOURIER_K, SHORT_SEASON, ArimaSpec, named_params, origin_forecasts,
)
from tsrsa.statistical.arima_search import arima_grid, differencing, fit_arima, fourier_pairs  # noqa: F401


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
