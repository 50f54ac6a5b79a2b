"""The ARIMA start: a seasonal ARIMA's forecast as a linear map of the scaled window.

Each of at most :data:`ARIMA_SERIES` series (evenly spread over the panel) gets the ARIMA of
:class:`~tsrsa.forecasters.ARIMAForecaster` with automatic orders (:func:`~tsrsa.forecasters.arima_model.fit_arima`:
d and D as auto.arima picks them, then (p, q) and (P, Q) by AIC; a season above 24 steps is left
out, its Fourier terms being a function of the time, not of the window). Multiplied out, with the
differences, the model is an ARMA of the levels,

    phi*(B) (y_t - mu) = theta*(B) e_t,    phi*(B) = phi(B) Phi(B^m) (1 - B)^d (1 - B^m)^D,

(mu: the mean, with a constant when d + D = 0), written in innovations form with the one-step
forecast as the first state, ``F[i, 0] = phi*_(i+1)``, ``F[i, i+1] = 1``, ``g_i = phi*_(i+1) + theta*_(i+1)``,
so that its forecast from a window is linear in the window once the state before the window is
(:func:`~tsrsa.forecasters.start_maps.innovations_start`, as the ETS start does). The maps of the
series are averaged; ``truncation`` in the record is the mean absolute difference, on the fitted
series' last windows, between the map's forecast and statsmodels' forecast from the whole training
part (the Kalman filter from the first step), in the scaled units.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from tsrsa.forecasters import arima_model
from tsrsa.forecasters.arima_model import SHORT_SEASON, ArimaSpec
from tsrsa.forecasters.start_maps import StartMap, innovations_map, kept_fit, spread

#: an ARIMA start fits at most this many series (ARIMA is fitted one series at a time)
ARIMA_SERIES = 16
#: the fewest training steps of a series the ARIMA start fits
MIN_STEPS = 16


def arima_polynomials(spec: ArimaSpec, params: dict) -> tuple[np.ndarray, np.ndarray, float]:
    """(phi*, theta*, mu) of a fitted form (module docstring): phi* and theta* as the coefficients of
    ``y_t = mu + sum_i phi*_i (y_(t-i) - mu) + e_t + sum_j theta*_j e_(t-j)``, i = 1.. (``phi*[0]`` is the
    lag 1); ``params`` by statsmodels' names."""
    (p, d, q), (P, D, Q, m) = spec.order, spec.seasonal_order

    def lags(prefix: str, order: int, step: int, sign: float) -> np.ndarray:
        poly = np.zeros(order * step + 1)
        poly[0] = 1.0
        for i in range(1, order + 1):
            poly[i * step] = sign * params[f"{prefix}.L{i * step}"]
        return poly

    ar = np.convolve(lags("ar", p, 1, -1.0), lags("ar.S", P, m or 1, -1.0))
    ma = np.convolve(lags("ma", q, 1, 1.0), lags("ma.S", Q, m or 1, 1.0))
    mean = params.get("intercept", 0.0) / ar.sum() if spec.trend == "c" else 0.0
    for _ in range(d):
        ar = np.convolve(ar, [1.0, -1.0])
    for _ in range(D):
        ar = np.convolve(ar, np.r_[1.0, np.zeros(m - 1), -1.0])
    return -ar[1:], ma[1:], float(mean)


def arima_matrices(phi: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(F, g, w) of the innovations form of ``phi*`` and ``theta*`` (module docstring)."""
    k = max(len(phi), len(theta) + 1, 1)
    F, g, w = np.zeros((k, k)), np.zeros(k), np.zeros(k)
    F[np.arange(k - 1), np.arange(1, k)] = 1.0
    F[:len(phi), 0] = phi
    g[:len(phi)] += phi
    g[:len(theta)] += theta
    w[0] = 1.0
    return F, g, w


def arima_window_map(phi: np.ndarray, theta: np.ndarray, mean: float, window: int,
                     h: int) -> tuple[np.ndarray, np.ndarray]:
    """(W (h, window), b (h,)): the forecast of the ARMA of the levels from a window, ``W (x - mu) + mu``."""
    F, g, w = arima_matrices(phi, theta)
    H = np.empty((h, len(g)))
    row = w.copy()
    for k in range(h):  # w' F^k
        H[k], row = row, row @ F
    weight = innovations_map(F, g, w, H, window)
    return weight, mean * (1.0 - weight.sum(axis=1))


def kept_arima_fit(y: np.ndarray, season: int | None):
    """The automatic ARIMA of ``y`` (:func:`~tsrsa.forecasters.arima_model.fit_arima_series`, its state
    after ``y``), taken from the kept fits when the same values were fitted with the same season."""
    return kept_fit("arima", y, season, lambda values: arima_model.fit_arima_series(values, season))


def arima_start(series: list[np.ndarray], window: int, h: int, season: int) -> StartMap:
    """The ARIMA start (module docstring) fitted on the scaled training parts ``series``; a series shorter
    than two seasons and two steps is fitted without its season, one shorter than :data:`MIN_STEPS` or
    constant is left out, as is one no form of the grid fits."""
    m = season if 1 < season <= SHORT_SEASON else None
    varied = [i for i in range(len(series)) if np.ptp(series[i]) > 0 and len(series[i]) >= MIN_STEPS]
    weights, biases, errors, names, polynomials = [], [], [], [], {}
    for i in np.asarray(varied, dtype=int)[spread(len(varied), ARIMA_SERIES)] if varied else []:
        y = series[i]
        try:
            fit = kept_arima_fit(y, m if m and len(y) >= 2 * m + 2 else None)
        except (ValueError, RuntimeError, np.linalg.LinAlgError):  # no form of the grid fits this series
            continue
        spec = ArimaSpec.from_json(fit.form)
        phi, theta, mean = arima_polynomials(spec, dict(zip(fit.form["param_names"], fit.params)))
        weight, bias = arima_window_map(phi, theta, mean, window, h)
        weights.append(weight)
        biases.append(bias)
        names.append(spec.name)
        polynomials.setdefault(spec.name, []).append(phi)
        if len(y) >= window:
            errors.append(float(np.mean(np.abs(arima_model.forecast(fit, h) - weight @ y[-window:] - bias))))
    if not weights:
        raise ValueError(f'start="arima" fits an ARIMA per series, and no series could be fitted (each is constant, '
                         f'shorter than {MIN_STEPS} steps over its training part, or fits no form of the grid); use '
                         f'start="ar" or start=None')
    common = Counter(names).most_common(1)[0][0]  # the roots the REM heads read: the commonest form's
    record = {"model": "arima", "forms": sorted(set(names)), "series": len(weights),
              "truncation": round(float(np.mean(errors)), 6) if errors else None,
              "coefficients": [round(float(a), 8) for a in np.median(polynomials[common], axis=0)]}
    return StartMap(np.mean(weights, axis=0), np.mean(biases, axis=0), record)
