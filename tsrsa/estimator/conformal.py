"""Split-conformal prediction intervals, calibrated per horizon step.

A forecaster fitted with ``conformal_windows=k`` (the idea of neuralforecast's
``PredictionIntervals(n_windows=k)``: conformal intervals from the absolute errors of windows the
model did not train on) is calibrated at ``fit``, at the cost of one extra fit:

1. a copy of the model (same parameters, ``conformal_windows=None``) is fitted on every series
   without its last ``k * h`` steps;
2. it forecasts the ``k`` non-overlapping windows of ``h`` steps it did not train on, after the
   cutoffs ``n_i - 1 - (k - w) * h`` (w = 0..k-1; as ``cross_validate(n_windows=k)`` without refit),
   in the batched passes of ``forecast_cutoffs``;
3. the absolute errors ``|y - yhat|`` at every step 1..h of every (window, series), each divided by
   its series' scale ``s_i``, are the calibration residuals: ``conformal_.residuals``, (k * S, h),
   one row per window, oldest first;
4. the model is fitted on all the data, exactly as without calibration.

``predict(level=[80, 95])`` adds, for each level α (a percentage) and step j, the columns
``yhat_lo_{α}`` = ``yhat - q_j * s_i`` and ``yhat_hi_{α}`` = ``yhat + q_j * s_i``, where q_j is the
⌈(n + 1)·α/100⌉-th smallest of the n residuals of step j: the finite-sample conformal quantile, an
interval that holds the value with probability at least α% when the new scaled errors are
exchangeable with the calibration ones. A level needs n >= ⌈α / (100 - α)⌉ residuals (4 for 80,
19 for 95, 99 for 99); fewer is refused, naming how many windows it takes. Column names write a
whole level as an integer (``yhat_lo_80``) and any other as Python's shortest repr of the float
(``yhat_lo_97.5``); levels come out in increasing order, each as its lo then hi column.

The scale. One quantile table serves every series once each series' errors are divided by its own
size: for a network with a scaler, the model's own statistics ``memory_.scale`` (standard
deviation, interquartile range or range of the training part, as ``scaler`` says); otherwise
(``SeasonalNaiveForecaster``, ``scaler=None`` or "identity") the interquartile range of the series
at fit (1 for a series without spread). The residuals are divided by the scales of the final fit,
the very scales that multiply the intervals. A series new at ``predict(df=...)`` or in
``update(new_ids="add")`` takes its scale from its own history by the same rule.

``update(df)`` refreshes the calibration with out-of-sample errors of the model as it is (no
refit): for each series known to the model, the forecast of the ``h`` steps after its old end (what
``predict()`` said before the update), and then after every further ``h`` new steps, is scored on
the values that arrived, for as many whole windows of ``h`` steps as the update brings (an update
of fewer than ``h`` steps of a series adds none of it). Those residuals, divided by the series'
stored scale, join the newest end of the table and the oldest ones drop out: the table keeps its
size, so what predict can give never changes, and it follows the recent errors. For a model that
reads ``future_covariates`` every series the model knows must bring the windows scored (their
covariates are read from the update); the update scores only the windows that all of them cover.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd

from tsrsa.data.intervals import check_levels, interval_columns, level_name
from tsrsa.data.limits import check_request_size
from tsrsa.data.scalers import series_statistics
from tsrsa.data.validation import check_finite_forecast, check_min_length
from tsrsa.estimator.params import quantile_column
from tsrsa.estimator.window_state import covariate_encoder

#: the arrays of a saved model that hold its calibration (absent: a model fitted without one)
RESIDUALS_ARRAY = "conformal.residuals"
SCALE_ARRAY = "conformal.scale"
#: how a model gets intervals
CALIBRATE_HINT = ("fit with conformal_windows=k (the last k horizons of every series held out to calibrate the "
                  "intervals, one extra fit), e.g. conformal_windows=10")


# ---------------------------------------------------------------------- levels
def conformal_rank(n: int, level: float) -> int:
    """⌈(n + 1)·level/100⌉: the rank, among n residuals, of the conformal quantile (exact arithmetic)."""
    return math.ceil((n + 1) * Fraction(repr(float(level))) / 100)


def residuals_needed(level: float) -> int:
    """The fewest residuals n for which the conformal quantile of ``level`` exists: ⌈level / (100 - level)⌉."""
    fraction = Fraction(repr(float(level)))
    return max(1, math.ceil(fraction / (100 - fraction)))


def windows_needed(level: float, per_window) -> int:
    """The fewest calibration windows that give :func:`residuals_needed` residuals a step for ``level``, each
    window giving ``per_window`` of them (an int, or a Fraction where some series gave none)."""
    return math.ceil(residuals_needed(level) / (per_window or 1))


def check_enough(levels: tuple[float, ...], n: int, n_series: int) -> None:
    """ValueError when ``n`` residuals per step are too few for the highest of ``levels``."""
    if not levels:
        return
    top = max(levels)
    need = residuals_needed(top)
    if n < need:
        per_series = windows_needed(top, n_series)
        raise ValueError(f"level={level_name(top)} needs at least {need} calibration windows (the "
                         f"ceil((n + 1) * {level_name(top)} / 100)-th smallest of n residuals must exist); this "
                         f"calibration holds {n} for {n_series} series: refit with conformal_windows={per_series} "
                         f"or more, or ask for a lower level")


#: bytes per forecast value of each interval column: the bounds, the frame's flat copy and its block
INTERVAL_VALUE_BYTES = 24


def check_interval_size(levels: tuple[float, ...], n_series: int, h: int) -> None:
    """ValueError, before any interval is built, when the two columns of every level of ``levels`` for
    ``n_series`` series of ``h`` steps (``n_series`` windows in cross-validation) would pass the limit of
    one request (:mod:`tsrsa.data.limits`)."""
    values = (2 * len(levels) + 3) * n_series * h  # the bounds, yhat, the id and the time
    check_request_size(f"level= with {len(levels)} levels", values * INTERVAL_VALUE_BYTES,
                       f"{2 * len(levels)} interval columns of {n_series * h:,} rows",
                       "ask for fewer levels (each adds two columns)")


def head_interval_pairs(model, levels: tuple[float, ...]) -> dict[float, tuple[str, str]]:
    """For a model fitted without a calibration: ``{level: (lower, upper)}``, the quantile columns of its
    head (``yhat_q10``, ``yhat_q90``) that bound each level's central interval (80: the quantiles 0.1 and
    0.9), for ``predict(level=...)`` to copy as ``yhat_lo_80``/``yhat_hi_80``. A ValueError naming the
    quantiles to ask for, or the calibration, when the head outputs no such pair (a point loss: none)."""
    available = model.head_quantile_levels()
    if not available:
        require_calibration(model, "predict")  # raises: nothing to read the interval from
    pairs = {}
    for level in levels:
        low = (100.0 - level) / 200.0
        ends = [next((q for q in available if abs(q - target) < 1e-9), None) for target in (low, 1.0 - low)]
        if None in ends:
            raise ValueError(
                f"predict(level={level_name(level)}) reads the quantiles {low:g} and {1 - low:g} of the head, and "
                f"this {type(model).__name__} outputs {[float(q) for q in available]}: fit with quantiles= "
                f"including {low:g} and {1 - low:g}, or with conformal_windows=k for conformal intervals")
        pairs[level] = (quantile_column(ends[0]), quantile_column(ends[1]))
    return pairs


#: the key of a pandas forecast frame's ``attrs`` that says where its interval columns come from
INTERVAL_SOURCE = "interval_source"
#: the sources: the conformal calibration, the quantiles of a network's head, the model's own (the engine's
#: analytic intervals of ETS, ARIMA and Theta)
CONFORMAL, HEAD_QUANTILES, MODEL = "conformal", "quantiles", "model"


def interval_source(model, levels: tuple[float, ...], h: int) -> str | None:
    """Where ``predict(level=...)`` reads the intervals of ``levels`` over ``h`` steps for the fitted
    ``model``, decided before any work (a ValueError naming the fix when nothing can give them); None for
    no levels.

    The conformal calibration wins when one was fitted (:data:`CONFORMAL`; it holds residuals for the
    fitted horizon only, so more steps are refused). Without one, a model that computes its own intervals
    (a class with ``model_intervals = True``: ETS, ARIMA and Theta, their analytic intervals) gives them
    (:data:`MODEL`), and a network with a quantile or distribution head gives the central interval between
    two of its quantiles (:data:`HEAD_QUANTILES`, :func:`head_interval_pairs`). The forecast frame carries
    the answer as ``frame.attrs["interval_source"]`` (:data:`INTERVAL_SOURCE`)."""
    if not levels:
        return None
    if model.conformal_ is not None:
        width = model.conformal_.residuals.shape[1]
        if h > width:
            raise ValueError(f"predict(h={h}, level=...) asks for {h} steps, and the conformal calibration of this "
                             f"{type(model).__name__} holds errors of its {width} fitted steps only: ask for at most "
                             f"{width} steps with level=, or refit with h={h}")
        model.conformal_.quantiles(levels, h)
        return CONFORMAL
    if model.model_intervals:
        check_interval_size(levels, model.memory_.n_series, h)
        return MODEL
    head_interval_pairs(model, levels)
    return HEAD_QUANTILES


def require_calibration(model, call: str):
    """The fitted ``model``'s calibration, or a ValueError saying how to get one."""
    if model.conformal_ is None:
        raise ValueError(f"{call}(level=...) needs prediction intervals calibrated at fit, and this "
                         f"{type(model).__name__} has none: {CALIBRATE_HINT}")
    return model.conformal_


# ---------------------------------------------------------------------- the calibration
@dataclass(frozen=True)
class ConformalCalibration:
    """Absolute held-out errors divided by their series' scale, and the scale of each series."""

    residuals: np.ndarray  # (n, H) float64 >= 0: one row per scored window, oldest first
    scale: np.ndarray  # (S,) float64 > 0, aligned with the model's memory_.ids

    def quantiles(self, levels: tuple[float, ...], h: int) -> np.ndarray:
        """(L, h) the conformal quantile of each level at each of the first ``h`` steps; a ValueError first
        when the intervals of ``levels`` for the model's series would pass the limit of one request."""
        n = len(self.residuals)
        check_enough(levels, n, len(self.scale))
        check_interval_size(levels, len(self.scale), h)
        ordered = np.sort(self.residuals[:, :h], axis=0)  # (n, h)
        return ordered[[conformal_rank(n, level) - 1 for level in levels]]

    def intervals(self, yhat: np.ndarray, scale: np.ndarray, levels: tuple[float, ...]) -> dict[str, np.ndarray]:
        """``{column: (m, h)}`` bounds of every level around ``yhat`` (m, h) of series of scale ``scale`` (m,)."""
        check_interval_size(levels, len(yhat), yhat.shape[1])
        out = {}
        for level, width in zip(levels, self.quantiles(levels, yhat.shape[1])):
            half = scale[:, None] * width[None, :]  # (m, h)
            lower, upper = interval_columns(level)
            out[lower], out[upper] = yhat - half, yhat + half
        return out

    def refreshed(self, new: np.ndarray, scale: np.ndarray) -> "ConformalCalibration":
        """The newest ``len(residuals)`` rows of these residuals followed by ``new``; ``scale`` the series'."""
        n = len(self.residuals)
        return ConformalCalibration(np.concatenate([self.residuals, new])[-n:], scale)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The arrays a saved model holds of it."""
        return {RESIDUALS_ARRAY: self.residuals, SCALE_ARRAY: self.scale}

    @classmethod
    def from_arrays(cls, arrays: dict) -> "ConformalCalibration | None":
        """The calibration ``to_arrays`` wrote, or None for a model saved without one."""
        if RESIDUALS_ARRAY not in arrays:
            return None
        return cls(np.asarray(arrays[RESIDUALS_ARRAY], dtype=np.float64),
                   np.asarray(arrays[SCALE_ARRAY], dtype=np.float64))


# ---------------------------------------------------------------------- scales
def own_scale(model, panel, statistics: np.ndarray) -> np.ndarray:
    """(S,) the scale of ``panel``'s series from their own history: the model's statistics of them
    (``statistics``, aligned) for a network with a scaler, else their interquartile range."""
    if model.reads_scaled and model.scaler not in (None, "identity"):
        return np.array(statistics, dtype=np.float64)
    return series_statistics(panel.values, panel.offsets, panel.lengths, "robust")[1]


def frame_scale(model, panel, memory) -> np.ndarray:
    """(S,) the scale of each series of ``memory``, the state of ``panel``'s series (``predict(df=...)``):
    the stored one for an id the model knows, its own for a new one."""
    known = model.memory_.ids.get_indexer(memory.ids)  # (S,) row in the fitted state, -1 if new
    out = np.empty(memory.n_series)
    seen, fresh = np.flatnonzero(known >= 0), np.flatnonzero(known < 0)
    out[seen] = model.conformal_.scale[known[seen]]
    if fresh.size:
        out[fresh] = own_scale(model, panel.take(fresh), memory.scale[fresh])
    return out


# ---------------------------------------------------------------------- fit
def calibration_length(model, panel, need: int, why: str) -> None:
    """ValueError naming the first series too short for ``conformal_windows`` held-out horizons after
    the ``need`` observations a fit takes (``why``)."""
    k, h = model.conformal_windows, int(model.h)
    if k is not None:
        check_min_length(panel, need + int(k) * h, f"{why}, then conformal_windows={k} held-out horizons of h={h} "
                                                    f"to calibrate the intervals: lower conformal_windows")


def held_out_errors(model, panel, **fit_options) -> np.ndarray:
    """|y - yhat| (k * S, h), window-major, of a copy of ``model`` fitted on ``panel`` without the last
    ``k * h`` steps of each series, on its ``k`` windows of ``h`` steps (the module docstring)."""
    k, h, S = int(model.conformal_windows), int(model.h), panel.n_series
    cutoffs = panel.lengths[:, None] - 1 - h * (k - np.arange(k))[None, :]  # (S, k), cross_validate's at step h
    copy = model.clone().set_params(conformal_windows=None)
    trainer = getattr(copy, "resolved_trainer", None)
    if trainer is not None and trainer.checkpoint_dir is not None:  # the calibration fit keeps its own checkpoint
        copy.set_params(trainer=dataclasses.replace(trainer, checkpoint_dir=Path(trainer.checkpoint_dir) / "calibration"))
    held = copy.fit_panel(panel.head(cutoffs[:, 0] + 1), **fit_options)
    yhat = held.forecast_cutoffs(panel, cutoffs, h)["yhat"]  # (k * S, h) window-major
    check_finite_forecast({"yhat": yhat}, panel.ids.take(np.tile(np.arange(S), k)))
    targets = (panel.offsets[:-1, None] + cutoffs).T.ravel()[:, None] + np.arange(1, h + 1)[None, :]  # (k * S, h)
    return np.abs(panel.values[targets] - yhat)


def calibrated(model, panel, errors: np.ndarray) -> ConformalCalibration:
    """The calibration of ``model`` just fitted on ``panel``, from its ``held_out_errors``."""
    scale = own_scale(model, panel, model.memory_.scale)  # (S,)
    reps = len(errors) // panel.n_series
    return ConformalCalibration(errors / np.tile(scale, reps)[:, None], scale)


# ---------------------------------------------------------------------- update
def updated_calibration(model, before, after, panel, known: np.ndarray) -> ConformalCalibration:
    """The calibration after ``update``: ``before``/``after`` the state before and after it, ``panel``
    the new observations, ``known`` (S_panel,) each of its series' row in ``before`` (-1: a new
    series). Every window of ``h`` new steps of a known series is scored (module docstring)."""
    calibration, h, S = model.conformal_, int(model.h), before.n_series
    seen = np.flatnonzero(known >= 0)
    rows = np.full(S, -1, dtype=np.int64)  # (S,) each series' row in the panel
    rows[known[seen]] = seen
    counts = np.zeros(S, dtype=np.int64)  # (S,) whole new windows of each series
    counts[known[seen]] = panel.lengths[seen] // h
    future_df = None
    encoder = covariate_encoder(model)
    if encoder is not None and encoder.spec.future:  # forecasts read every series' future covariates
        counts[:] = counts.min()
        future_df = future_frame(model, panel, encoder.spec.future) if counts.min() else None
    blocks, state = [], before
    for w in range(int(counts.max(initial=0))):
        scored = np.flatnonzero(counts > w)  # rows of the state
        if w:
            state = state.advance(model, panel.steps(rows[scored], (w - 1) * h, w * h), scored)
        yhat = state.forecast(model, h, future_df)["yhat"][scored]  # (m, h)
        check_finite_forecast({"yhat": yhat}, before.ids[scored])
        actual = panel.values[(panel.offsets[rows[scored]] + w * h)[:, None] + np.arange(h)[None, :]]  # (m, h)
        blocks.append(np.abs(actual - yhat) / calibration.scale[scored, None])
    fresh = np.flatnonzero(known < 0)  # joined at the end of the state, in this order
    scale = calibration.scale
    if fresh.size:
        scale = np.concatenate([scale, own_scale(model, panel.take(fresh), after.scale[S:])])
    new = np.concatenate(blocks) if blocks else np.empty((0, calibration.residuals.shape[1]))
    return calibration.refreshed(new, scale)


def future_frame(model, panel, columns) -> pd.DataFrame:
    """``panel``'s known-future covariates as a long frame (id, time and ``columns``), a ``future_df``."""
    series = np.repeat(np.arange(panel.n_series), panel.lengths)  # (N,)
    position = np.arange(len(panel.values)) - panel.offsets[series]
    frame = panel.covariates[list(columns)].reset_index(drop=True)
    frame.insert(0, model.time_col, panel.freq.shift(pd.Index(panel.first).take(series), position))
    frame.insert(0, model.id_col, panel.ids.take(series))
    return frame
