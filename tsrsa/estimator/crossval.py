"""Rolling-origin cross-validation over the last cutoffs of every series.

Window w of series i (w = 0 is the earliest) forecasts the h steps after the cutoff position
c[i, w] = n_i - h - 1 - (n_windows - 1 - w) * step_size. Without refitting, one model trained on
every series up to its earliest cutoff scores all windows at once: the input windows of every
(series, cutoff) are gathered into one array and forecast in bounded batches.

With ``level=`` each fitted model is calibrated as ``fit`` calibrates one with ``conformal_windows=k``
(on the k horizons before its first cutoff) and the windows get its conformal intervals; without it
the fits skip the calibration, whatever the estimator's ``conformal_windows``. ETS, ARIMA and Theta without
``conformal_windows`` give their engine's own intervals instead, from each fitted model's state at
every cutoff and the error variance of its fit (no extra fit).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from tsrsa.data.limits import check_request_size
from tsrsa.data.validation import format_id
from tsrsa.estimator.conformal import CONFORMAL, INTERVAL_SOURCE, MODEL, check_enough, check_levels
from tsrsa.estimator.params import check_int


def _refit_every(refit, n_windows: int) -> int:
    """Windows per fitted model: n_windows without refitting, 1 with refit=True, k with refit=k."""
    if isinstance(refit, (bool, np.bool_)):
        return 1 if refit else n_windows
    check_int("refit", refit, minimum=0)
    return n_windows if refit == 0 else int(refit)


def cutoff_positions(lengths: np.ndarray, h: int, n_windows: int, step: int) -> np.ndarray:
    """(S, n_windows) positions of the last observed value before each forecast window."""
    back = (n_windows - 1 - np.arange(n_windows)) * step  # (W,)
    return lengths[:, None] - h - 1 - back[None, :]


def cross_validate(estimator, df, *, n_windows: int = 3, step_size: int | None = None, refit=False, level=None,
                   **fit_options) -> pd.DataFrame:
    """See :meth:`tsrsa.estimator.base.BaseForecaster.cross_validate`.

    ``fit_options`` are passed to every fit (the tuner's epoch callback).
    """
    estimator.check_params()
    panel = estimator.to_panel(df)
    return cross_validate_panel(estimator, panel, n_windows=n_windows, step_size=step_size, refit=refit,
                                level=level, **fit_options)


def cross_validate_panel(estimator, panel, *, n_windows: int = 3, step_size: int | None = None, refit=False,
                         level=None, fitted: list | None = None, **fit_options) -> pd.DataFrame:
    """Cross-validation on an already validated panel (the tuner validates once for all trials); ``fitted``,
    a list, receives every model fitted (the tuner reads what each trial's fit kept)."""
    check_int("n_windows", n_windows)
    check_int("step_size", step_size, allow_none=True)
    levels = check_levels(level)
    own = bool(levels) and estimator.conformal_windows is None and estimator.model_intervals
    if levels and estimator.conformal_windows is None and not own:
        raise ValueError(f"cross_validate(level=...) calibrates each fitted model on held-out horizons before its "
                         f"first cutoff, and this {type(estimator).__name__} has conformal_windows=None: set "
                         f"conformal_windows=k (k horizons per series, e.g. 10), or leave level out")
    # held-out horizons before the first cutoff (none for a model's own intervals)
    calibration = int(estimator.conformal_windows) if levels and not own else 0
    check_enough(() if own else levels, calibration * panel.n_series, panel.n_series)
    h = int(estimator.h)
    step = int(step_size) if step_size is not None else h
    per_fit = _refit_every(refit, n_windows)
    spec = estimator.frame_spec
    need, why = estimator.required_length(panel)
    required = need + calibration * h + h + (n_windows - 1) * step
    short = np.flatnonzero(panel.lengths < required)
    if short.size:
        i = int(short[0])
        held = f" + conformal_windows * h = {calibration * h}" if calibration else ""
        raise ValueError(
            f"series {format_id(panel.ids[i])} has {int(panel.lengths[i])} observations; "
            f"cross_validate needs at least {required} ({why}{held}, then h={h} + (n_windows - 1) * "
            f"step_size = {(n_windows - 1) * step} more); lower n_windows or step_size"
        )
    check_size(estimator, panel.n_series, n_windows, per_fit, h, need, levels)
    cutoffs = cutoff_positions(panel.lengths, h, n_windows, step)  # (S, W)
    S = panel.n_series
    blocks: dict[str, np.ndarray] = {}
    for first in range(0, n_windows, per_fit):
        windows = list(range(first, min(first + per_fit, n_windows)))
        model = estimator.clone()
        if not levels:
            model.set_params(conformal_windows=None)  # no calibration fit unless intervals are asked for
        model.fit_panel(panel.head(cutoffs[:, first] + 1), **fit_options)
        if fitted is not None:
            fitted.append(model)
        reps = len(windows)
        columns = model.forecast_cutoffs(panel, cutoffs[:, windows], h)  # (W_chunk * S, h), window-major
        if own:  # ETS, ARIMA: the engine's intervals from the state at each cutoff
            columns.update(model.interval_cutoffs(panel, cutoffs[:, windows], h, levels))
        elif levels:
            columns.update(model.conformal_.intervals(columns["yhat"], np.tile(model.conformal_.scale, reps), levels))
        for name, values in columns.items():
            blocks.setdefault(name, np.empty((n_windows, S, h)))[windows] = values.reshape(reps, S, h)
    # rows ordered by series, cutoff, step
    order_cut = cutoffs.ravel()  # (S * W,)
    cut_times = _timestamps_at(panel, np.repeat(np.arange(S), n_windows), order_cut)
    steps = np.arange(1, h + 1)
    targets = (panel.offsets[:-1, None] + cutoffs).ravel()[:, None] + steps[None, :]  # (S * W, h)
    out = {
        spec.id_col: panel.ids.repeat(n_windows * h),
        spec.time_col: panel.freq.shift(np.repeat(cut_times, h), np.tile(steps, S * n_windows)),
        "cutoff": np.repeat(cut_times, h),
        "step": np.tile(steps, S * n_windows),
        spec.target_col: panel.values[targets].ravel(),
    }
    for name, values in blocks.items():
        out[name] = values.transpose(1, 0, 2).reshape(-1)  # (S, W, h) -> rows
    frame = pd.DataFrame(out)
    if levels:
        frame.attrs[INTERVAL_SOURCE] = MODEL if own else CONFORMAL  # as predict(level=...) marks its frame
    return frame


#: bytes per value of each output column: its (W, S, h) block, the frame's flat copy and its own block
CV_VALUE_BYTES = 24


def check_size(estimator, n_series: int, n_windows: int, per_fit: int, h: int, look_back: int, levels) -> None:
    """ValueError, before any fit, when the frame of ``n_windows`` windows of ``h`` steps for ``n_series``
    series (id, time, cutoff, step, target, ``yhat``, the quantile and interval columns), or the input
    windows one fitted model forecasts at once (``per_fit`` x ``n_series`` windows of about ``look_back``
    values and their positions), would pass the limit of one request (:mod:`tsrsa.data.limits`)."""
    quantiles = getattr(estimator, "quantiles", None)
    columns = 6 + 2 * len(levels) + (len(quantiles) if isinstance(quantiles, (list, tuple)) else 2)
    rows = n_series * n_windows * h
    inputs = n_series * per_fit * look_back * 16  # float64 values and their int64 positions
    check_request_size(f"cross_validate(n_windows={n_windows})", rows * columns * CV_VALUE_BYTES + inputs,
                       f"{rows:,} rows ({n_series} series x {n_windows} windows x h={h} steps)",
                       "lower n_windows, or score fewer series at a time")


def _timestamps_at(panel, series: np.ndarray, positions: np.ndarray):
    """Timestamps at ``positions`` (steps after each series' first timestamp)."""
    return panel.freq.shift(pd.Index(panel.first).take(series), positions)
