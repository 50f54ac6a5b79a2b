"""The statistical start of a neural forecaster: a fitted model's forecast as a linear map of the window.

``start="ar"``, ``"ets"``, ``"arima"`` or ``"auto"`` fits a statistical model on the training parts of the
series, in the units the network reads (each series scaled by its training part's statistics), and writes its
point forecast from a window of the latest ``L`` values as ``S(x) = W x + b`` (W: h x L). The network
(:mod:`tsrsa.nn.start`) adds its own output, started at zero, so that before the first optimiser
step the forecast is the statistical model's.

Every fit reads only the tail of each series (:func:`~tsrsa.start.maps.tail_length`; ``tail``
in the record): the AR start its latest 8,192 steps and the window, the ETS and ARIMA starts their latest
``max(1,024, 24 seasons)`` steps and the window; and none imports statsmodels. The map reads a window, so a
longer history moves its coefficients little and its cost much.

- **"ar"**: an autoregression with a constant, on the levels or, when KPSS rejects level stationarity
  in most series (:func:`~tsrsa.start.differencing.differences`), on the first differences (a drift
  then being the constant), fitted by ordinary least squares on the lagged values of every series
  pooled; the order by AIC over 0..p_max on a common sample, then refitted on all the rows of that
  order, as statsmodels' ``ar_select_order`` and ``AutoReg`` do (an explosive fit, with a root outside
  the unit circle, gives way to the order of next lowest AIC). The h-step forecast of such a model is
  an affine function of its last p (+ 1) values, so the map is exact: for one series (no longer than
  its tail) it is ``AutoReg``'s forecast.
- **"ets"**: exponential smoothing with additive errors (the forms of ``ETSForecaster`` with additive
  errors: no, additive or damped trend; an additive season of the frequency's period, up to 24 steps,
  when the window holds one), fitted by maximum likelihood in numpy on each of at most
  :data:`ETS_SERIES` series (evenly spread over the panel), each fit's map averaged
  (:mod:`tsrsa.start.ets`). With additive errors the state after the window is linear in
  the window and the state before it; the state before it is estimated from the window itself as the
  one of least squared one-step errors over the window (:func:`window_start`, linear in the window),
  so the map is linear. Its error against the fit's forecast from its whole tail is
  ``w' F^(k-1) D^L (s - s_hat)``, the initial-state error discounted over the window (D = F - g w');
  ``truncation`` in the record is its mean absolute size on the fitted series' last windows, in the
  scaled units.

- **"arima"**: a seasonal ARIMA with automatic orders per series, fitted by conditional least squares,
  as an ARMA of the levels in innovations form, its state before the window estimated as ETS's is
  (:mod:`tsrsa.start.arima`).
- **"auto"**: the candidates, each fitted as above on the training parts; kept: the one whose forecasts
  of the validation windows (those whose targets lie in the held-out steps, on at most
  :data:`AUTO_SERIES` series) have the lowest mean squared error (without held-out steps, of each
  training part's last window). The candidates are "ar" and "ets", and "arima" too on a short series
  (the forecaster passes :data:`SHORT_AUTO_MODELS` for one series at the automatic budget on fewer than
  2,000 training windows, where its other rules for short series apply). The record
  says which and why (``chosen_by``, and ``ar_mse``, ``ets_mse``, ``arima_mse`` of those fitted).

A panel gets one map for every series (pooled coefficients), so a global model, a new series and a
window given to ``predict(df=...)`` all read it the same way. The streaming configuration has no
window and takes no start.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from tsrsa.init.ar import companion_roots, default_max_lag
from tsrsa.init.heads import Estimates
from tsrsa.start.arima import arima_start
from tsrsa.start.differencing import differences
from tsrsa.start.ets import (  # noqa: F401 (the ETS start's parts, by their former address)
    ETS_SERIES, ets_map, ets_matrices, ets_start, fit_ets, kept_ets_fit, window_start,
)
from tsrsa.start.maps import (  # noqa: F401 (forget_kept_fits: the kept fits are emptied here too)
    StartMap, affine_map, forget_kept_fits, spread, tail_length, tails,
)

#: the models a start can be fitted from; "auto" fits several and keeps the one of lowest validation error
START_MODELS = ("ar", "ets", "arima", "auto")
#: what "auto" chooses among by default; a short series adds "arima" (:data:`SHORT_AUTO_MODELS`)
AUTO_MODELS = ("ar", "ets")
#: what "auto" chooses among for one series at the automatic budget on fewer than
#: :data:`~tsrsa.estimator.ensembles.AUTO_WINDOWS` training windows, where an ARIMA search costs little against
#: the networks (docs/statistical_start.md)
SHORT_AUTO_MODELS = ("ar", "ets", "arima")
#: "auto" scores its candidates on the windows of at most this many series (evenly spread over the panel)
AUTO_SERIES = 256
#: series checked for a unit root when an AR start chooses its differencing
KPSS_SERIES = 64


# ---------------------------------------------------------------------- AR
def ar_forecasts(windows: np.ndarray, coefficients: np.ndarray, constant: float, d: int, h: int) -> np.ndarray:
    """(n, h) forecasts of an AR(p) with a constant on the d-th differences (d in {0, 1}) from
    windows (n, L): the recursion run forward with the forecasts in place of the future values."""
    p = len(coefficients)
    z = np.diff(windows, axis=1) if d else windows
    history = z[:, z.shape[1] - p:] if p else z[:, :0]
    out = np.empty((len(windows), h))
    for k in range(h):
        step = constant + history[:, ::-1] @ coefficients if p else np.full(len(windows), constant)
        out[:, k] = step
        history = np.concatenate([history[:, 1:], step[:, None]], axis=1) if p else history
    return windows[:, -1:] + np.cumsum(out, axis=1) if d else out


def lag_rows(series: list[np.ndarray], p: int, first: int) -> tuple[np.ndarray, np.ndarray]:
    """Pooled regression rows: targets z_t and lags [z_(t-1), ..., z_(t-p)] for t >= first of each series."""
    targets, lags = [], []
    for z in series:
        if len(z) <= first:
            continue
        t = np.arange(first, len(z))
        targets.append(z[t])
        lags.append(z[t[:, None] - np.arange(1, p + 1)[None, :]] if p else np.empty((len(t), 0)))
    return np.concatenate(targets), np.vstack(lags)


def aic_by_order(target: np.ndarray, lags: np.ndarray) -> np.ndarray:
    """AIC of the least-squares AR fits of orders 0..p on the same rows (a constant and the first p lag
    columns), from one cross-product matrix: statsmodels ``OLS(...).fit().aic`` of each, without p
    regressions over every row."""
    X = np.column_stack([np.ones(len(target)), lags])
    gram, cross, n = X.T @ X, X.T @ target, len(target)
    scores = []
    for p in range(X.shape[1]):
        k = p + 1
        try:
            coef = np.linalg.solve(gram[:k, :k], cross[:k])
        except np.linalg.LinAlgError:  # collinear lags (a constant or periodic series)
            coef = np.linalg.lstsq(gram[:k, :k], cross[:k], rcond=None)[0]
        rss = max(float(target @ target - coef @ cross[:k]), 1e-300)
        scores.append(n * (np.log(2 * np.pi * rss / n) + 1) + 2 * k)
    return np.asarray(scores)


def fit_ar(series: list[np.ndarray], window: int, season: int, order: int | None = None,
           d: int | None = None) -> tuple[np.ndarray, float, int, float]:
    """(coefficients, constant, d, aic) of the pooled AR fit (module docstring) on ``series`` as given
    (:func:`ar_start` passes their tails); ``order`` and ``d`` fix what is otherwise chosen."""
    if d is None:
        varied = [y for y in series if len(y) >= 12 and np.ptp(y) > 0]  # KPSS has no answer for a constant
        votes = [differences(varied[i]) for i in spread(len(varied), KPSS_SERIES)] if varied else []
        d = int(2 * sum(votes) > len(votes)) if votes else 0
    z = [np.diff(y) if d else y for y in series]
    shortest = min(len(v) for v in z)
    ceiling = max(default_max_lag(shortest), season + 1 if 1 < season < shortest // 2 else 0)
    p_max = max(0, min(window - d, ceiling, shortest - 2))
    if order is not None and order > window - d:
        raise ValueError(f"an AR start of order {order} on {'differences' if d else 'levels'} needs a window "
                         f"of at least {order + d} steps; input_size is {window}")
    if order is not None:
        candidates = [order]
    else:
        common = lag_rows(z, p_max, p_max)
        candidates = np.argsort(aic_by_order(*common), kind="stable").tolist()
        X = np.column_stack([np.ones(len(common[0])), common[1]])
        gram, cross = X.T @ X, X.T @ common[0]
    for p in candidates:  # by AIC; an explosive fit (a root outside the unit circle) gives way to the next
        if order is None and p:  # the fit on all its rows from the common rows' products and its p_max - p more
            head = [v[:p_max] for v in z if len(v) > p]
            extra_target, extra_lags = lag_rows(head, p, p) if p < p_max and head else (np.empty(0), np.empty((0, p)))
            extra = np.column_stack([np.ones(len(extra_target)), extra_lags])
            try:
                screened = np.linalg.solve(gram[:p + 1, :p + 1] + extra.T @ extra,
                                           cross[:p + 1] + extra.T @ extra_target)[1:]
            except np.linalg.LinAlgError:
                screened = None
            if screened is not None and np.abs(companion_roots(screened)).max() > 1.0 + 1e-6:
                continue  # explosive: not refitted by least squares
        target, lags = lag_rows(z, p, p)
        design = np.column_stack([np.ones(len(target)), lags])
        params = np.linalg.lstsq(design, target, rcond=None)[0]
        coefficients = np.asarray(params[1:], dtype=np.float64)
        if order is not None or p == 0 or np.abs(companion_roots(coefficients)).max() <= 1.0 + 1e-9:
            rss, n = float(np.sum((target - design @ params) ** 2)), len(target)
            with np.errstate(divide="ignore"):  # a perfect fit (a constant series): log(0) in its likelihood
                aic = n * (np.log(2 * np.pi * rss / n) + 1) + 2 * (p + 1)  # statsmodels' OLS aic
            return coefficients, float(params[0]), d, float(aic)
    raise AssertionError("order 0 is always stable")


def ar_start(series: list[np.ndarray], window: int, h: int, season: int, order=None, d=None) -> StartMap:
    """The AR start (module docstring) fitted on the tails of the scaled training parts ``series``."""
    tail = tail_length(window, season, "ar")
    coefficients, constant, d, aic = fit_ar(tails(series, window, season, "ar"), window, season, order, d)
    weight, bias = affine_map(lambda w: ar_forecasts(w, coefficients, constant, d, h), window)
    record = {"model": "ar", "order": len(coefficients), "d": d, "constant": round(constant, 8),
              "coefficients": [round(float(a), 8) for a in coefficients],
              "aic": round(aic, 4) if np.isfinite(aic) else None, "series": len(series), "tail": tail}
    return StartMap(weight, bias, record)


def start_estimates(record: dict, estimates: Estimates) -> Estimates:
    """The REM heads' estimates (:class:`tsrsa.init.heads.Estimates`, per time step) from a fitted start's
    ``record``: an AR start's characteristic roots (a first difference adds a unit root, which the heads
    clip), an ARIMA start's (of its AR polynomial times its differences: unit roots, and a seasonal
    difference's roots of unity on the season's cycles), or an ETS start's level discount 1 - alpha as a
    real root and its season, decaying by 1 - gamma from one season to the next; the pooled
    autocorrelation of ``estimates`` is kept."""
    if record["model"] in ("ar", "arima"):
        roots = companion_roots(record["coefficients"])  # an ARIMA's: its differences' unit roots among them
        if record.get("d"):
            roots = np.concatenate([[1.0 + 0j], roots])
        return replace(estimates, roots=roots[np.argsort(-np.abs(roots), kind="stable")],
                       notes=[*estimates.notes, "roots from the AR start"])
    roots = np.array([1.0 - record["smoothing_level"]], dtype=np.complex128)
    periods, decay = ([record["season"]], [1.0 - record["smoothing_seasonal"]]) if record.get("season") else ([], [])
    return replace(estimates, roots=roots, periods=periods, period_acf=decay,
                   notes=[*estimates.notes, "roots and season from the ETS start"])


def fit_start(model: str, series: list[np.ndarray], window: int, h: int, season: int,
              held_out: list[np.ndarray] | None = None, candidates: tuple[str, ...] = AUTO_MODELS) -> StartMap:
    """The start ``model`` ("ar", "ets", "arima" or "auto") fitted on the scaled training parts ``series``;
    "auto" chooses among ``candidates`` on ``held_out``, each series' steps after its training part
    (:func:`auto_start`)."""
    if model == "auto":
        return auto_start(series, window, h, season, held_out, candidates)
    return FITTERS[model](series, window, h, season)


def scoring_windows(series: list[np.ndarray], held_out: list[np.ndarray] | None, window: int,
                    h: int) -> tuple[np.ndarray, np.ndarray, str]:
    """(inputs (n, window), targets (n, h), what they are) of the windows "auto" scores on: every window
    whose h targets lie in a series' held-out steps (its validation windows), on at most
    :data:`AUTO_SERIES` series; without held-out steps, the last window of each training part (in-sample)."""
    spans = []
    with_held_out = held_out is not None and any(len(v) >= h for v in held_out)
    for i in spread(len(series), AUTO_SERIES):
        y = np.concatenate([series[i], held_out[i]]) if with_held_out else series[i]
        first = max(len(series[i]) if with_held_out else len(y) - h, window)  # the first window's first target
        if len(y) - first >= h:
            spans.append(sliding_window_view(y[first - window:], window + h))  # (n, window + h)
    if not spans:
        return np.empty((0, window)), np.empty((0, h)), "none"
    spans = np.concatenate(spans)
    return spans[:, :window], spans[:, window:], "validation" if with_held_out else "training"


def auto_start(series: list[np.ndarray], window: int, h: int, season: int,
               held_out: list[np.ndarray] | None, candidates: tuple[str, ...] = AUTO_MODELS) -> StartMap:
    """The ``candidates`` fitted on the training parts; kept: the one whose forecasts of the validation
    windows (:func:`scoring_windows`) have the lowest mean squared error, before the network sees them.
    The AR start when no other model has a fit (every series constant) or no window can be scored."""
    fitted = {"ar": ar_start(series, window, h, season)}
    for name in candidates:
        if name not in fitted:
            try:
                fitted[name] = FITTERS[name](series, window, h, season)
            except (ValueError, RuntimeError):  # every series constant, or no form of the grid fits
                continue
    ar = fitted["ar"]
    if len(fitted) == 1:
        return replace(ar, record={**ar.record, "chosen_by": "no other model has a fit on these series"})
    inputs, targets, where = scoring_windows(series, held_out, window, h)
    if not len(inputs):
        return replace(ar, record={**ar.record, "chosen_by": "no window to score"})
    errors = {name: float(np.mean((start(inputs) - targets) ** 2)) for name, start in fitted.items()}
    chosen = fitted[min(errors, key=errors.get)]  # the first listed of equal errors
    scores = {f"{name}_mse": round(value, 8) for name, value in errors.items()}
    return replace(chosen, record={**chosen.record, "chosen_by": f"mean squared error on {len(inputs)} {where} "
                                                                 f"windows", **scores})


FITTERS = {"ar": ar_start, "ets": ets_start, "arima": arima_start}
