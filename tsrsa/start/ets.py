"""The ETS start: exponential smoothing with additive errors, fitted in numpy on a series' tail, as a linear map.

The forms are ``ETSForecaster``'s additive ones (:func:`~tsrsa.statistical.ets_model.candidate_forms` with
additive errors: no, additive or damped trend; an additive season when the window holds one), the model
statsmodels' ``ETSModel`` fits, with its likelihood and bounds, fitted in numpy on each series' tail
(:func:`~tsrsa.start.maps.tails`):

- **the likelihood**: with additive errors the one-step errors over the tail y (T steps) are affine in
  the initial state s, ``e = (I - K) y - B s`` (B's row t ``w' D^t``, K the impulse responses
  ``w' D^j g``, D = F - g w'), so the initial state of least squared errors is a linear regression, and
  the smoothing parameters are fitted on the profile ``min_s |e|^2`` (variable projection): the same
  maximum of the same concentrated Gaussian likelihood statsmodels climbs with the initial states among
  its parameters (its last seasonal state fixed at 0, a level shift the seasons take back being no
  change), found by :func:`~tsrsa.start.batched_least_squares.least_squares` over every form at
  once, each from the best point of a grid (:data:`START_GRID`) and, for a form with a trend, from the
  best with another smoothing level and trend smoothing too (the likelihood of a trend has more than one
  basin); within statsmodels' bounds (0 < alpha < 1, 0 < beta < alpha, 0 < gamma < 1 - alpha,
  0.8 < phi < 0.98);
- **the form**: the lowest AICc (R's ``ets`` criterion), the parameters counted as statsmodels counts
  them (the smoothing parameters, the initial states and the scale): on a short series it keeps the
  corner fits a global search finds (a trend smoothed as fast as the level) from winning on a point of
  likelihood;
- **the season**: seasonal forms for a season of at most :data:`~tsrsa.statistical.ets_model.SHORT_SEASON`
  steps (the regression on the 2 + m initial states, per trial, and the map's window, per series, grow
  with the cube of the season; a longer season is left to the autoregression, whose lags reach it).

The map from the fitted parameters (:func:`ets_map`) reads the window alone: its state before the window is
the state of least squared one-step errors over the window (:func:`window_start`).
"""
from __future__ import annotations

import json

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from tsrsa.start.batched_least_squares import least_squares
from tsrsa.start.maps import (
    StartMap, innovations_map, innovations_start, keep, kept, spread, tail_length, tails,
)
from tsrsa.start.power_series import polynomial_product, sparse_filter
from tsrsa.statistical.ets_model import SHORT_SEASON, EtsForm, candidate_forms, forecast
from tsrsa.statistical.series_fit import SeriesFit

#: an ETS start fits at most this many series (evenly spread over the panel), each its own parameters, and
#: averages their maps
ETS_SERIES = 16
#: statsmodels' bounds of the smoothing parameters (beta / alpha and gamma / (1 - alpha) within the first)
BOUNDS = (1e-4, 1.0 - 1e-4)
DAMPING = (0.8, 0.98)
#: the values each form's parameters are tried at (alpha, beta / alpha, gamma / (1 - alpha), phi, each where
#: the form has it); its fit starts from the best combination
START_GRID = ((0.001, 0.05, 0.2, 0.5, 0.8, 0.99), (0.01, 0.5, 0.95), (0.01, 0.5, 0.95), (0.9,))
#: a parameter moved onto its bound (:func:`_to_bounds`): the logistic map is then within 1e-13 of it
BOUND_U = 30.0
#: at most this many problems (series x forms x starting points) are screened in one call
SCREEN_ROWS = 512
#: Levenberg-Marquardt steps over every form, and the relative fall of the squared errors under which a form
#: stops; then :data:`MORE_ITERATIONS` for the forms within :data:`CLOSE_AICC` of their series' best (those
#: that could still be chosen): on 24 M3 monthly series the 144 fits' AIC is within 0.05 of 15 steps' for all
FIT_ITERATIONS = 10
FIT_TOLERANCE = 1e-4
MORE_ITERATIONS = 20
CLOSE_AICC = 4.0
#: a form is searched only where its grid point's AICc is within this of its series' best grid point's: on 49
#: M3 and M4 Hourly series the search lowered a form's AICc by 1.5 (median) to 43 and the form kept was at
#: most 6.2 behind on the grid
SCREEN_MARGIN = 20.0


# ---------------------------------------------------------------------- the model's matrices and maps
def ets_matrices(form: EtsForm, params: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(F, g, w) of an additive-error, additive-season ETS form with parameters ``params`` (statsmodels'
    order: alpha, [beta], [gamma], [phi]): state ``[level, trend, seasonal oldest first]``, one-step
    forecast ``w' x``, next state ``F x + g (y - w' x)``."""
    value = dict(zip(form.param_names, params))
    one = np.array([[value["smoothing_level"], value.get("smoothing_trend", 0.0),
                     value.get("smoothing_seasonal", 0.0), value.get("damping_trend", 1.0 if form.trend else 0.0)]])
    F, g, w = ets_systems(one, np.array([form.seasonal is not None]), form.m if form.seasonal else 0)
    return F[0], g[0], w[0]


def ets_systems(params: np.ndarray, seasonal: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(F (M, k, k), g (M, k), w (M, k)), k = 2 + m: the matrices of M forms from ``params`` (M, 4) =
    (alpha, beta, gamma, phi) (beta 0 and phi 0 without a trend, phi 1 for an undamped one); a form without
    a season (``seasonal`` False) leaves its m seasonal states unread."""
    M, k = len(params), 2 + m
    alpha, beta, gamma, phi = params.T
    F, g, w = np.zeros((M, k, k)), np.zeros((M, k)), np.zeros((M, k))
    F[:, 0, 0], F[:, 0, 1], F[:, 1, 1] = 1.0, phi, phi
    w[:, 0], w[:, 1] = 1.0, phi
    g[:, 0], g[:, 1] = alpha, beta
    if m:
        F[:, 2 + np.arange(m - 1), 3 + np.arange(m - 1)] = 1.0  # the seasons move one place older
        F[:, k - 1, 2] = 1.0  # the oldest, updated, becomes the newest
        w[:, 2], g[:, k - 1] = seasonal, np.where(seasonal, gamma, 0.0)
    return F, g, w


def window_start(form: EtsForm, params: np.ndarray, window: int) -> np.ndarray:
    """(2 + m, window): the state before a window as a linear function of the window
    (:func:`~tsrsa.start.maps.innovations_start` of the form's matrices)."""
    return innovations_start(*ets_matrices(form, params), window)


def ets_map(form: EtsForm, params: np.ndarray, window: int, h: int) -> np.ndarray:
    """(h, window): the ETS form's forecast from a window, started at :func:`window_start`."""
    F, g, w = ets_matrices(form, params)
    k = np.arange(1, h + 1)
    phi = dict(zip(form.param_names, params)).get("damping_trend", 1.0)
    H = np.zeros((h, len(g)))
    H[:, 0] = 1.0
    if form.trend:
        H[:, 1] = np.cumsum(phi ** k) if form.damped else k
    if form.seasonal:
        H[np.arange(h), 2 + (k - 1) % form.m] = 1.0
    return innovations_map(F, g, w, H, window)


# ---------------------------------------------------------------------- the fit
def _generating_polynomials(params: np.ndarray, seasonal: np.ndarray, m: int) -> tuple[np.ndarray, ...]:
    """(M, m + 3) each, coefficients by ascending power: ``det(I - z F)``, ``det(I - z D)`` and the
    numerators of the level's, the trend's and a season's responses (:func:`profile_residuals`)."""
    M = len(params)
    alpha, beta, gamma, phi = params.T
    s = seasonal.astype(np.float64) if m else np.zeros(M)
    gamma = np.where(seasonal, gamma, 0.0) if m else np.zeros(M)
    out = np.zeros((5, M, m + 3))
    transition, discount, level, trend, season = out
    twice = np.column_stack([np.ones(M), -(1.0 + phi), phi])  # (1 - z)(1 - phi z)
    transition[:, :3] += twice
    transition[:, m:m + 3] -= s[:, None] * twice  # times 1 - z^m
    discount += transition
    discount[:, 1] += alpha + beta * phi
    discount[:, 2] -= alpha * phi
    discount[:, m + 1] -= s * (alpha + beta * phi)
    discount[:, m + 2] += s * alpha * phi
    discount[:, m:m + 3] += gamma[:, None] * twice
    level[:, 0], level[:, 1] = 1.0, -phi  # (1 - phi z)(1 - z^m)
    level[:, m] -= s
    level[:, m + 1] += s * phi
    trend[:, 0] = phi  # phi (1 - z^m)
    trend[:, m] -= s * phi
    season[:, :3] = twice
    return transition, discount, level, trend, season


def profile_residuals(params: np.ndarray, seasonal: np.ndarray, m: int, y: np.ndarray,
                      free: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(residuals (M, T), initial states (M, 2 + m)): the one-step errors over ``y`` ((T,) or one row per
    form, (M, T)) of M forms (params
    (M, 4) as :func:`ets_systems` reads them), each from its initial state of least squared errors, the
    states not ``free`` (M, 2 + m) held at 0 (module docstring).

    No matrix power is formed: with ``A(z) = I - z F``, ``w' (I - z D)^-1 = w' A^-1 det A / det(I - z D)``
    and ``1 - z w' (I - z D)^-1 g = det A / det(I - z D)`` (the determinant lemma), where for these forms
    ``det A = (1 - z)(1 - phi z)(1 - z^m)`` and ``det(I - z D) = det A + alpha z (1 - phi z)(1 - z^m) +
    beta phi z (1 - z^m) + gamma z^m (1 - z)(1 - phi z)`` (``1 - z^m`` is 1 without a season), and
    ``w' A^-1`` reads ``1 / (1 - z)`` for the level, ``phi / ((1 - z)(1 - phi z))`` for the trend and
    ``z^i / (1 - z^m)`` for the i-th seasonal state (oldest first): so the errors from the zero state
    are ``y det A / det(I - z D)``, the level's and trend's responses ``(1 - phi z)(1 - z^m)`` and
    ``phi (1 - z^m)`` over ``det(I - z D)``, and the i-th season's ``(1 - z)(1 - phi z) / det(I - z D)``
    delayed by i steps: sparse polynomials over one sparse polynomial
    (:func:`~tsrsa.start.power_series.sparse_filter`)."""
    M, T, k = len(params), np.shape(y)[-1], 2 + m
    y = np.broadcast_to(y, (M, T))
    transition, discount, level, trend, season = _generating_polynomials(params, seasonal, m)
    with np.errstate(over="ignore", invalid="ignore"):
        inputs = np.zeros((M, 2, T))
        inputs[:, 0, 0] = 1.0
        inputs[:, 1] = polynomial_product(transition, y, T)  # det(I - z F) y
        inverse, errors = sparse_filter(discount, inputs).transpose(1, 0, 2)  # over det(I - z D)
        own = np.stack([polynomial_product(level, inverse, T), polynomial_product(trend, inverse, T)], axis=1)
        own *= free[:, :2, None]  # (M, 2, T): the level's and the trend's responses
        gram = np.zeros((M, k, k))
        gram[:, :2, :2] = own @ own.transpose(0, 2, 1)
        cross = np.zeros((M, k))
        cross[:, :2] = np.einsum("mat,mt->ma", own, errors)
        if m:  # season i's response: q delayed i steps; its products from lagged sums of q (no T x m matrix)
            q = polynomial_product(season, inverse, T)
            delayed = sliding_window_view(np.concatenate([np.zeros((M, m - 1)), q], axis=1), m, axis=1)[:, :, ::-1]
            cross[:, 2:] = np.einsum("mti,mt->mi", delayed, errors)
            gram[:, :2, 2:] = np.einsum("mat,mti->mai", own, delayed)
            gram[:, 2:, :2] = gram[:, :2, 2:].transpose(0, 2, 1)
            lagged = np.zeros((M, m, T + 1))  # lagged[l, n] = sum over u < n of q_u q_(u+l)
            for lag in range(m):
                lagged[:, lag, 1:T + 1 - lag] = np.cumsum(q[:, :T - lag] * q[:, lag:], axis=1)
            i, j = np.meshgrid(np.arange(m), np.arange(m), indexing="ij")
            gram[:, 2:, 2:] = lagged[:, np.abs(i - j), T - np.maximum(i, j)]
            gram *= free[:, :, None] & free[:, None, :]
            cross *= free
    ok = np.isfinite(gram).all(axis=(1, 2)) & np.isfinite(cross).all(axis=1) & np.isfinite(errors).all(axis=1)
    gram[~ok], cross[~ok] = np.eye(k), 0.0
    ridge = 1e-12 * (np.trace(gram, axis1=1, axis2=2) + 1.0)[:, None] + (~free)
    state = np.linalg.solve(gram + ridge[:, :, None] * np.eye(k)[None], cross[..., None])[..., 0]
    with np.errstate(over="ignore", invalid="ignore"):
        residuals = errors - np.einsum("mat,ma->mt", own, state[:, :2])
        if m:
            residuals -= np.einsum("mti,mi->mt", delayed, state[:, 2:])
    residuals[~ok] = np.inf
    return residuals, state


def _sse(residuals: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(np.isfinite(residuals).all(axis=1), np.einsum("mt,mt->m", residuals, residuals), np.inf)


def _to_bounds(residuals, u: np.ndarray, sse: np.ndarray, active: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(u, sse) with each parameter the search left near a bound moved onto it (``u = +-BOUND_U``) where that
    lowers the squared errors: a maximum on a bound (a trend smoothed as fast as the level, a damping of
    0.8) lies where the logistic map of u flattens, which the search approaches slowly."""
    near = active & (np.abs(u) > 3.0)  # within about 5 % of the range from a bound
    problems, coordinates = np.nonzero(near)
    if not len(problems):
        return u, sse
    moved = u[problems].copy()
    moved[np.arange(len(problems)), coordinates] = np.sign(u[problems, coordinates]) * BOUND_U
    values = _sse(residuals(moved, problems))
    for i in np.argsort(values):  # the best move of each problem, where it is better
        j = problems[i]
        if values[i] < sse[j]:
            u[j], sse[j] = moved[i], values[i]
    return u, sse


def _unit(u: np.ndarray) -> np.ndarray:
    """u -> (BOUNDS[0], BOUNDS[1])."""
    return BOUNDS[0] + (BOUNDS[1] - BOUNDS[0]) / (1.0 + np.exp(-np.clip(u, -50, 50)))


def _unit_inverse(x: float) -> float:
    x = (x - BOUNDS[0]) / (BOUNDS[1] - BOUNDS[0])
    return float(np.log(x / (1.0 - x)))


def smoothing_params(u: np.ndarray, trend: np.ndarray, damped: np.ndarray) -> np.ndarray:
    """(M, 4) alpha, beta, gamma, phi from unconstrained u (M, 4) within statsmodels' bounds (module
    docstring); beta and phi 0 without a trend, phi 1 for an undamped trend."""
    alpha = _unit(u[:, 0])
    beta = np.where(trend, alpha * _unit(u[:, 1]), 0.0)
    gamma = (1.0 - alpha) * _unit(u[:, 2])
    phi = DAMPING[0] + (DAMPING[1] - DAMPING[0]) / (1.0 + np.exp(-np.clip(u[:, 3], -50, 50)))
    phi = np.where(damped, phi, np.where(trend, 1.0, 0.0))
    return np.column_stack([alpha, beta, gamma, phi])


def fit_ets(y: np.ndarray, forms: list[EtsForm]) -> SeriesFit:
    """The form of lowest AICc among the additive ``forms`` fitted to ``y`` (module docstring), as the
    :class:`~tsrsa.statistical.series_fit.SeriesFit` an ``ETSForecaster`` keeps: its parameters in
    statsmodels' order, its initial state and its state after ``y``."""
    return fit_ets_batch(np.asarray(y, dtype=np.float64)[None, :], forms)[0]


def fit_ets_batch(Y: np.ndarray, forms: list[EtsForm]) -> list[SeriesFit]:
    """:func:`fit_ets` of each row of ``Y`` (S, T), every series and form searched together."""
    Y = np.asarray(Y, dtype=np.float64)
    if any(f.error != "add" or f.seasonal == "mul" for f in forms):
        raise ValueError("the ETS start fits additive errors and seasons only")
    S, n, F = len(Y), Y.shape[1], len(forms)
    m = max((f.m for f in forms if f.seasonal), default=0)
    trend = np.tile([f.trend is not None for f in forms], S)  # problem j: series j // F, form j % F
    damped = np.tile([f.damped for f in forms], S)
    seasonal = np.tile([f.seasonal is not None for f in forms], S)
    rows = np.repeat(np.arange(S), F)
    free = np.zeros((S * F, 2 + m), dtype=bool)
    free[:, 0], free[:, 1] = True, trend
    free[:, 3:] = seasonal[:, None]  # the oldest seasonal state held at 0, as statsmodels holds it
    active = np.column_stack([np.ones(S * F, bool), trend, seasonal, damped])

    def residuals(u, which):
        params = smoothing_params(u, trend[which], damped[which])
        return profile_residuals(params, seasonal[which], m, Y[rows[which]], free[which])[0]

    tries = np.array(np.meshgrid(*START_GRID, indexing="ij")).reshape(4, -1).T  # (L, 4): every combination
    tries = np.column_stack([[_unit_inverse(v) for v in tries[:, 0]], [_unit_inverse(v) for v in tries[:, 1]],
                             [_unit_inverse(v) for v in tries[:, 2]],
                             np.log((tries[:, 3] - DAMPING[0]) / (DAMPING[1] - tries[:, 3]))])
    points, owners = [], []
    for j in range(S * F):  # each problem's combinations that differ in its form's own parameters
        _, first = np.unique(tries[:, active[j]], axis=0, return_index=True)
        points.append(tries[np.sort(first)])
        owners.append(np.full(len(first), j))
    points, owners = np.concatenate(points), np.concatenate(owners)
    sse = np.concatenate([_sse(residuals(points[k:k + SCREEN_ROWS], owners[k:k + SCREEN_ROWS]))
                          for k in range(0, len(points), SCREEN_ROWS)])
    order = np.lexsort((sse, owners))  # by problem, then by squared errors
    first = order[np.searchsorted(owners[order], np.arange(S * F))]  # each problem's best point
    counted = active.sum(axis=1) + 1 + trend + seasonal * m + 1  # statsmodels' df_model: parameters, states, scale

    def criteria(sse):
        with np.errstate(divide="ignore", invalid="ignore"):
            aic = n * (np.log(2 * np.pi * sse / n) + 1) + 2 * counted
            aicc = aic + 2 * counted * (counted + 1) / np.where(n - counted - 1 > 0, n - counted - 1, 0)
        aic[~np.isfinite(aic)] = np.inf
        aicc[~np.isfinite(aic) | ~np.isfinite(aicc)] = np.inf
        return aic.reshape(S, F), aicc.reshape(S, F)

    screened = criteria(sse[first])[1]
    searched = (screened - screened.min(axis=1, keepdims=True) <= SCREEN_MARGIN).ravel()  # the others cannot win
    other = np.array([np.isclose(points[:, 0], points[i, 0]) for i in first])  # (S F, points): alpha as the best's
    other |= np.array([np.isclose(points[:, 1], points[i, 1]) & trend[j] for j, i in enumerate(first)])
    second = np.where(other[:, order] | (owners[order][None, :] != np.arange(S * F)[:, None]), np.inf,
                      sse[order][None, :]).argmin(axis=1)  # the best with another level (and trend smoothing)
    second = np.where(np.isfinite(sse[order][second]), order[second], -1)
    once = np.flatnonzero(searched)
    twice = np.flatnonzero(searched & trend & (second >= 0))  # a trend's smoothing has a second basin
    runs = np.concatenate([once, twice])
    u, sse = points[first].copy(), sse[first].copy()
    found, errors = least_squares(lambda v, which: residuals(v, runs[which]),
                                  points[np.concatenate([first[once], second[twice]])], active[runs],
                                  iterations=FIT_ITERATIONS, tolerance=FIT_TOLERANCE)
    u[once], sse[once] = found[:len(once)], errors[:len(once)]
    better = errors[len(once):] < sse[twice]
    u[twice[better]], sse[twice[better]] = found[len(once):][better], errors[len(once):][better]
    _, aicc = criteria(sse)
    close = np.flatnonzero((aicc - aicc.min(axis=1, keepdims=True) < CLOSE_AICC).ravel())
    if close.size:  # the forms that could still win: searched on (the others are settled enough)
        v, w = least_squares(lambda x, which: residuals(x, close[which]), u[close], active[close],
                             iterations=MORE_ITERATIONS, tolerance=FIT_TOLERANCE)
        u[close], sse[close] = v, w
    u, sse = _to_bounds(residuals, u, sse, active)
    aic, aicc = criteria(sse)
    if not np.isfinite(aicc).any(axis=1).all():
        raise ValueError("no ETS form could be fitted (a constant series, or fewer steps than any form's parameters)")
    chosen = np.arange(S) * F + aicc.argmin(axis=1)  # each series' problem of lowest AICc
    params4 = smoothing_params(u[chosen], trend[chosen], damped[chosen])
    _, initial = profile_residuals(params4, seasonal[chosen], m, Y, free[chosen])
    Fs, g, w = ets_systems(params4, seasonal[chosen], m)
    state = initial.copy()
    for t in range(n):  # the states after the tails: x <- F x + g (y - w'x)
        error = Y[:, t] - np.einsum("sk,sk->s", w, state)
        state = np.einsum("sij,sj->si", Fs, state) + g * error[:, None]
    fits = []
    for i, j in enumerate(chosen):
        form = forms[j % F]
        width = 2 + (form.m if form.seasonal else 0)
        keep = [0, *([1] if form.trend else []), *([2] if form.seasonal else []), *([3] if form.damped else [])]
        fits.append(SeriesFit(form.to_json(), params4[i, keep], initial[i, :width], state[i, :width], n,
                              float(aic[i, j % F])))
    return fits


def kept_ets_fits(series: list[np.ndarray], forms: list[EtsForm]) -> list[SeriesFit]:
    """:func:`fit_ets` of each series, taken from the kept fits (:func:`~tsrsa.start.maps.kept_fit`)
    when the same values were fitted with the same forms; the others fitted together, by length."""
    detail = json.dumps([f.to_json() for f in forms], sort_keys=True)
    fits = [kept("ets-start", y, detail) for y in series]
    missing: dict[int, list[int]] = {}
    for i, fit in enumerate(fits):
        if fit is None:
            missing.setdefault(len(series[i]), []).append(i)
    for indices in missing.values():
        for i, fit in zip(indices, fit_ets_batch(np.stack([series[i] for i in indices]), forms)):
            fits[i] = keep("ets-start", series[i], detail, fit)
    return fits


def kept_ets_fit(y: np.ndarray, forms: list[EtsForm]) -> SeriesFit:
    """:func:`kept_ets_fits` of one series."""
    return kept_ets_fits([y], forms)[0]


def ets_start(series: list[np.ndarray], window: int, h: int, season: int) -> StartMap:
    """The ETS start (module docstring) fitted on the tails of the scaled training parts ``series``
    (:func:`~tsrsa.start.maps.tails`) of at most :data:`ETS_SERIES` series, their maps averaged;
    constant series are left out."""
    tail = tail_length(window, season, "ets")
    series = tails(series, window, season, "ets")
    seasonal = ("add" if 1 < season <= min(window, SHORT_SEASON) and all(len(y) >= 2 * season + 2 for y in series)
                else None)
    forms = candidate_forms("add", "auto", "auto", seasonal and "auto", season if seasonal else 1)
    forms = [f for f in forms if f.seasonal in (None, "add")]
    maps, errors, names, alphas, gammas = [], [], [], [], []
    varied = [i for i in range(len(series)) if np.ptp(series[i]) > 0]  # ETS has no likelihood on a constant
    if not varied:
        raise ValueError('start="ets" fits exponential smoothing, and every series is constant over its training '
                         'part; use start="ar" or start=None')
    fitted = np.asarray(varied)[spread(len(varied), ETS_SERIES)]
    for i, fit in zip(fitted, kept_ets_fits([series[i] for i in fitted], forms)):
        y = series[i]
        form = EtsForm.from_json(fit.form)
        weights = ets_map(form, fit.params, window, h)
        maps.append(weights)
        names.append(form.name)
        value = dict(zip(form.param_names, fit.params))
        alphas.append(value["smoothing_level"])
        if form.seasonal:
            gammas.append(value["smoothing_seasonal"])
        if len(y) >= window:
            errors.append(float(np.mean(np.abs(forecast(fit, h) - weights @ y[-window:]))))
    weight = np.mean(maps, axis=0)
    record = {"model": "ets", "forms": sorted(set(names)), "series": len(maps),
              "truncation": round(float(np.mean(errors)), 6) if errors else None,
              "smoothing_level": round(float(np.median(alphas)), 6),
              "smoothing_seasonal": round(float(np.median(gammas)), 6) if gammas else None,
              "season": season if gammas else None, "tail": tail}
    return StartMap(weight, np.zeros(h), record)
