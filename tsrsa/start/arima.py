"""The ARIMA start: a seasonal ARIMA's forecast as a linear map of the scaled window.

Each of at most :data:`ARIMA_SERIES` series (evenly spread over the panel) gets a seasonal ARIMA with
automatic orders, searched as :class:`~tsrsa.forecasters.ARIMAForecaster` searches them (d and D as
auto.arima picks them, then (p, q) in {0,1,2}^2 and (P, Q) in {(0,0), (1,0), (0,1)} by AICc; a season
above 24 steps is left out, its Fourier terms being a function of the time, not of the window), on the
series' tail (:func:`~tsrsa.start.maps.tails`) and without statsmodels:

- d and D from :mod:`tsrsa.start.differencing` (KPSS; the seasonal strength of an STL-like
  decomposition above 0.64);
- every form of the grid fitted at once by conditional least squares (the CSS of R's ``arima``): the
  one-step errors of the differenced series w from step t0 on, ``e = theta*(B)^-1 (phi(B) Phi(B^m) w - c)``,
  the errors before t0 taken as 0, t0 the grid's longest autoregressive lag, so that every form is
  scored on the same steps; the constant c (when d + D = 0) concentrated out by least squares; the
  coefficients kept stationary and invertible (the autoregressive and moving-average polynomials
  from partial autocorrelations in (-1, 1), as statsmodels' ``SARIMAX`` enforces them); found by
  :func:`~tsrsa.start.batched_least_squares.least_squares`; the form of lowest AICc kept
  (auto.arima's criterion; ``n log(SSE / n) + 2 k + 2 k (k + 1) / (n - k - 1)``, k its coefficients,
  constant and scale).

Multiplied out, with the differences, the model is an ARMA of the levels,

    phi*(B) (y_t - mu) = theta*(B) e_t,    phi*(B) = phi(B) Phi(B^m) (1 - B)^d (1 - B^m)^D,

(mu: the mean, with a constant when d + D = 0), written in innovations form with the one-step
forecast as the first state, ``F[i, 0] = phi*_(i+1)``, ``F[i, i+1] = 1``, ``g_i = phi*_(i+1) + theta*_(i+1)``,
so that its forecast from a window is linear in the window once the state before the window is
(:func:`~tsrsa.start.maps.innovations_start`, as the ETS start does). The maps of the
series are averaged; ``truncation`` in the record is the mean absolute difference, on the fitted
series' last windows, between the map's forecast and the fit's own forecast from its tail (the errors
of the fit carried), in the scaled units.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from tsrsa.start.batched_least_squares import least_squares
from tsrsa.start.differencing import differencing
from tsrsa.start.maps import StartMap, innovations_map, kept_fit, spread, tail_length, tails
from tsrsa.start.power_series import sparse_filter
from tsrsa.statistical.arima_model import SHORT_SEASON, ArimaSpec
from tsrsa.statistical.arima_search import arima_grid
from tsrsa.statistical.series_fit import SeriesFit

#: an ARIMA start fits at most this many series (ARIMA is fitted one series at a time)
ARIMA_SERIES = 16
#: the fewest training steps of a series the ARIMA start fits
MIN_STEPS = 16
#: a form is fitted only where the steps it is scored on are at least this many times its coefficients
STEPS_PER_COEFFICIENT = 3
#: Levenberg-Marquardt steps, and the relative fall of the squared errors under which a form stops
FIT_ITERATIONS = 12
FIT_TOLERANCE = 1e-3
#: the moving-average polynomials' partial autocorrelations stay within this of 0: conditional least squares,
#: without the likelihood's determinant, otherwise drifts to unit moving-average roots that cancel autoregressive
#: ones (an ARIMA(2,0,2) with theta(B) = (1 - B)^2 on a seasonal difference)
MA_REACH = 0.95
#: where each form's coefficients sit in the points the search moves: ar.L1-2, ma.L1-2, ar.S, ma.S
LAYOUT = {"ar": slice(0, 2), "ma": slice(2, 4), "sar": slice(4, 5), "sma": slice(5, 6)}


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


def stationary(u: np.ndarray, reach: float = 1.0) -> np.ndarray:
    """(M, p): the coefficients a of a stationary ``1 - a_1 z - ... - a_p z^p`` from unconstrained u (M, p):
    partial autocorrelations ``reach * tanh(u)`` through the Durbin-Levinson recursion (a zero u adds no
    lag); a reach below 1 keeps the roots that far inside the unit circle."""
    r = reach * np.tanh(u)
    a = np.zeros_like(r)
    for k in range(r.shape[1]):
        previous = a[:, :k].copy()
        a[:, :k] = previous - r[:, k:k + 1] * previous[:, ::-1]
        a[:, k] = r[:, k]
    return a


def _orders(spec: ArimaSpec) -> tuple[int, int, int, int]:
    (p, _, q), (P, _, Q, _) = spec.order, spec.seasonal_order
    return p, q, P, Q


def css_polynomials(u: np.ndarray, active: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray, dict]:
    """(ar (M, 3 + m), ma (M, 3 + m), coefficients by statsmodels' name): ``phi(z) Phi(z^m)`` and
    ``theta(z) Theta(z^m)`` by ascending power from points u (M, 6) laid out as :data:`LAYOUT` (unused
    coordinates, ``active`` False, read as 0)."""
    u = np.where(active, u, 0.0)
    ar, ma = stationary(u[:, LAYOUT["ar"]]), -stationary(u[:, LAYOUT["ma"]], MA_REACH)
    sar, sma = np.tanh(u[:, 4]), MA_REACH * np.tanh(u[:, 5])
    M, width = len(u), 3 + m
    short_ar, short_ma = np.column_stack([np.ones(M), -ar]), np.column_stack([np.ones(M), ma])
    ar_poly, ma_poly = np.zeros((M, width)), np.zeros((M, width))
    ar_poly[:, :3], ma_poly[:, :3] = short_ar, short_ma
    if m:
        ar_poly[:, m:m + 3] -= sar[:, None] * short_ar
        ma_poly[:, m:m + 3] += sma[:, None] * short_ma
    names = {"ar.L1": ar[:, 0], "ar.L2": ar[:, 1], "ma.L1": ma[:, 0], "ma.L2": ma[:, 1],
             f"ar.S.L{m}": sar, f"ma.S.L{m}": sma}
    return ar_poly, ma_poly, names


def css_residuals(w: np.ndarray, u: np.ndarray, active: np.ndarray, constant: np.ndarray, m: int,
                  first: int) -> tuple[np.ndarray, np.ndarray]:
    """(residuals (M, n), constants (M,)): the conditional errors of the differenced series ``w`` from step
    ``first`` on (module docstring) of M forms, each with its least-squares constant where ``constant``."""
    ar_poly, ma_poly, _ = css_polynomials(u, active, m)
    lags = np.lib.stride_tricks.sliding_window_view(w, first + 1)[:, ::-1]  # (n, first + 1): w_t, w_(t-1), ...
    width = min(first + 1, ar_poly.shape[1])
    driven = ar_poly[:, :width] @ lags[:, :width].T  # (M, n): phi(B) Phi(B^m) w
    n = driven.shape[1]
    inputs = np.zeros((len(u), 2, n))
    inputs[:, 0] = 1.0  # a constant
    inputs[:, 1] = driven
    with np.errstate(over="ignore", invalid="ignore"):
        ones, errors = sparse_filter(ma_poly, inputs).transpose(1, 0, 2)  # over theta(z) Theta(z^m)
        c = np.where(constant, np.einsum("mn,mn->m", errors, ones) / np.maximum(np.einsum("mn,mn->m", ones, ones),
                                                                                  1e-300), 0.0)
        residuals = errors - c[:, None] * ones
    residuals[~np.isfinite(residuals).all(axis=1)] = np.inf
    return residuals, c


def fit_arima_css(y: np.ndarray, m: int | None, grid: list[ArimaSpec] | None = None) -> SeriesFit:
    """The ARIMA of lowest AICc over ``grid`` (by default :func:`~tsrsa.statistical.arima_search.arima_grid`
    with d and D chosen from ``y``; given, its forms' own differences, which they share) fitted to ``y``
    by conditional least squares (module docstring): its form (with ``param_names``), its coefficients,
    its errors over ``y`` (``state``, zero before the steps scored) and its AIC.

    Raises
    ------
    ValueError
        When ``y`` is too short for any form of the grid after its differences.
    """
    y = np.asarray(y, dtype=np.float64)
    if grid is None:
        d, D = differencing(y, m)
        grid = arima_grid(m, d, D)
    d, D, m = grid[0].order[1], grid[0].seasonal_order[1], grid[0].seasonal_order[3] or m
    if any((s.order[1], s.seasonal_order[1]) != (d, D) for s in grid):
        raise ValueError("the forms of an ARIMA grid share their differences")
    w = np.diff(y[m:] - y[:-m] if D else y, n=d)
    season = m or 0
    count = [sum(_orders(spec)) + (spec.trend == "c") for spec in grid]
    first = max(spec.order[0] + spec.seasonal_order[0] * season for spec in grid)
    if len(w) - first < STEPS_PER_COEFFICIENT * (max(count) + 1):  # short: no seasonal autoregression
        grid = [spec for spec in grid if spec.seasonal_order[0] == 0]
        count = [sum(_orders(spec)) + (spec.trend == "c") for spec in grid]
        first = max(spec.order[0] for spec in grid)
    kept = [i for i in range(len(grid)) if len(w) - first >= STEPS_PER_COEFFICIENT * (count[i] + 1)]
    if not kept:
        raise ValueError(f"a series of {len(y)} steps is too short for an ARIMA after its differences")
    grid, count = [grid[i] for i in kept], np.array([count[i] for i in kept])
    active = np.zeros((len(grid), 6), dtype=bool)
    for i, spec in enumerate(grid):
        p, q, P, Q = _orders(spec)
        active[i, :p], active[i, 2:2 + q], active[i, 4], active[i, 5] = True, True, P > 0, Q > 0
    constant = np.array([spec.trend == "c" for spec in grid])

    def residuals(u, which):
        return css_residuals(w, u, active[which], constant[which], season, first)[0]

    u, sse = least_squares(residuals, np.zeros((len(grid), 6)), active, iterations=FIT_ITERATIONS,
                           tolerance=FIT_TOLERANCE)
    n = len(w) - first
    with np.errstate(divide="ignore", invalid="ignore"):
        aic = n * np.log(sse / n) + 2 * (count + 1)  # the coefficients and the scale
        aicc = aic + 2 * (count + 1) * (count + 2) / np.where(n - count - 2 > 0, n - count - 2, 0)
    aic[~np.isfinite(aic)] = np.inf
    aicc[~np.isfinite(aic) | ~np.isfinite(aicc)] = np.inf
    if not np.isfinite(aicc).any():
        raise ValueError("no ARIMA of the grid could be fitted")
    i = int(np.argmin(aicc))
    spec = grid[i]
    errors, c = css_residuals(w, u[i:i + 1], active[i:i + 1], constant[i:i + 1], season, first)
    _, _, named = css_polynomials(u[i:i + 1], active[i:i + 1], season)
    p, q, P, Q = _orders(spec)
    params = {**({"intercept": float(c[0])} if spec.trend == "c" else {}),
              **{f"ar.L{j}": float(named[f"ar.L{j}"][0]) for j in range(1, p + 1)},
              **{f"ma.L{j}": float(named[f"ma.L{j}"][0]) for j in range(1, q + 1)},
              **({f"ar.S.L{season}": float(named[f"ar.S.L{season}"][0])} if P else {}),
              **({f"ma.S.L{season}": float(named[f"ma.S.L{season}"][0])} if Q else {})}
    carried = np.zeros(len(y))
    carried[len(y) - errors.shape[1]:] = errors[0]  # the errors of the steps scored, in the levels' time
    form = {**spec.to_json(), "param_names": list(params)}
    return SeriesFit(form, np.array(list(params.values())), np.empty(0), carried, len(y), float(aic[i]))


def css_forecast(fit: SeriesFit, y: np.ndarray, h: int) -> np.ndarray:
    """(h,) the fitted ARIMA's own forecast after ``y``: the ARMA of the levels run on, the errors of
    the fit carried (``fit.state``) and the future ones 0."""
    spec = ArimaSpec.from_json(fit.form)
    phi, theta, mean = arima_polynomials(spec, dict(zip(fit.form["param_names"], fit.params)))
    values, errors = list(np.asarray(y, dtype=np.float64) - mean), list(fit.state)
    for _ in range(h):
        ahead = sum(phi[i] * values[-1 - i] for i in range(len(phi)))
        ahead += sum(theta[j] * errors[-1 - j] for j in range(len(theta)))
        values.append(ahead)
        errors.append(0.0)
    return np.asarray(values[len(y):]) + mean


def kept_arima_fit(y: np.ndarray, season: int | None) -> SeriesFit:
    """The automatic ARIMA of ``y`` (:func:`fit_arima_css`), taken from the kept fits when the same values
    were fitted with the same season."""
    return kept_fit("arima-start", y, season, lambda values: fit_arima_css(values, season))


def arima_start(series: list[np.ndarray], window: int, h: int, season: int) -> StartMap:
    """The ARIMA start (module docstring) fitted on the tails of the scaled training parts ``series``; a
    series shorter than two seasons and two steps is fitted without its season, one shorter than
    :data:`MIN_STEPS` or constant is left out, as is one too short for the grid after its differences."""
    tail = tail_length(window, season, "arima")
    series = tails(series, window, season, "arima")
    m = season if 1 < season <= SHORT_SEASON else None
    varied = [i for i in range(len(series)) if np.ptp(series[i]) > 0 and len(series[i]) >= MIN_STEPS]
    weights, biases, errors, names, polynomials = [], [], [], [], {}
    for i in np.asarray(varied, dtype=int)[spread(len(varied), ARIMA_SERIES)] if varied else []:
        y = series[i]
        try:
            fit = kept_arima_fit(y, m if m and len(y) >= 2 * m + 2 else None)
        except (ValueError, np.linalg.LinAlgError):  # too short, or no form of the grid fits this series
            continue
        spec = ArimaSpec.from_json(fit.form)
        phi, theta, mean = arima_polynomials(spec, dict(zip(fit.form["param_names"], fit.params)))
        weight, bias = arima_window_map(phi, theta, mean, window, h)
        weights.append(weight)
        biases.append(bias)
        names.append(spec.name)
        polynomials.setdefault(spec.name, []).append(phi)
        if len(y) >= window:
            errors.append(float(np.mean(np.abs(css_forecast(fit, y, h) - weight @ y[-window:] - bias))))
    if not weights:
        raise ValueError(f'start="arima" fits an ARIMA per series, and no series could be fitted (each is constant, '
                         f'shorter than {MIN_STEPS} steps over its training part, or fits no form of the grid); use '
                         f'start="ar" or start=None')
    common = Counter(names).most_common(1)[0][0]  # the roots the REM heads read: the commonest form's
    record = {"model": "arima", "forms": sorted(set(names)), "series": len(weights),
              "truncation": round(float(np.mean(errors)), 6) if errors else None,
              "coefficients": [round(float(a), 8) for a in np.median(polynomials[common], axis=0)], "tail": tail}
    return StartMap(np.mean(weights, axis=0), np.mean(biases, axis=0), record)
