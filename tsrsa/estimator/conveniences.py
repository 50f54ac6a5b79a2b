"""In-sample fitted values and the known-future frame: what users of statsmodels, sktime, darts and
neuralforecast reach for after ``fit``.

Every forecaster (:class:`~tsrsa.estimator.base.BaseForecaster`) has both methods, which check their
arguments and call the functions here:

- ``fitted(df=None, step=1)`` (:func:`fitted_values`): in-sample fitted values and residuals, a long frame
  (id, time, target, ``yhat``, ``residual``, then any ``yhat_q..`` columns). The fitted value at time t is the forecast
  ``step`` steps ahead made from the observations up to t - step (one-step-ahead by default, the
  statsmodels convention; a direct multi-horizon network forecasts ``step`` = 1..h from each window,
  so ``step=k`` gives its k-step-ahead ones). They are computed in the batched passes of the fitted
  state's ``forecast_at`` (the machinery of ``cross_validate`` and ``forecast_cutoffs``): every
  cutoff of every series at once, in chunks of bounded memory, never one window at a time. The first
  ``L + step - 1`` steps of each series have no fitted value and no row, L the model's look-back
  (``input_size`` for the networks, the season for ``SeasonalNaiveForecaster``): the first cutoff
  needs a whole input window.
- ``make_future_frame(h=None, df=None)`` (:func:`future_frame`): the frame ``predict(future_df=...)`` reads,
  ids x the next ``h`` timestamps with an empty (NaN) column per declared known-future covariate, for the user to
  fill (calendar and holiday features are derived from the timestamps by the model and are not in it).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from tsrsa.data.limits import check_request_size
from tsrsa.data.validation import check_min_length

#: input values gathered per batched call of ``forecast_at`` in ``fitted`` (bounds its memory)
FITTED_CHUNK = 1 << 22
#: bytes per row and column of ``make_future_frame``'s frame (the column and the frame's copy of it)
FUTURE_ROW_BYTES = 16
#: bytes per timestamp of a calendar frequency (months, business days), built one object at a time
CALENDAR_STAMP_BYTES = 128


def fitted_positions(lengths: np.ndarray, look_back: int, step: int) -> tuple[np.ndarray, np.ndarray]:
    """(S, W) cutoff positions of every series (padded with its last valid one) and the (S, W) mask of
    those that are real: cutoffs ``look_back - 1 .. n_i - 1 - step``, W the most any series has."""
    counts = np.maximum(lengths - look_back - step + 1, 0)  # (S,) fitted values per series
    W = int(counts.max(initial=0))
    offsets = np.arange(W)[None, :]  # (1, W)
    valid = offsets < counts[:, None]  # (S, W)
    cutoffs = look_back - 1 + np.minimum(offsets, np.maximum(counts[:, None] - 1, 0))  # (S, W)
    return cutoffs, valid


def fitted_values(model, panel, step: int) -> pd.DataFrame:
    """The fitted values ``step`` steps ahead of the fitted ``model`` over the series of ``panel`` and their
    residuals (see :meth:`~tsrsa.estimator.base.BaseForecaster.fitted`), a pandas frame."""
    look_back = int(model.memory_.tails.shape[1])
    check_min_length(panel, look_back, "the model's look-back")
    memory = model.memory_.for_frame(model, panel)  # known ids keep their fitted statistics
    cutoffs, valid = fitted_positions(panel.lengths, look_back, step)  # (S, W) each
    S, W = cutoffs.shape
    per_call = max(1, FITTED_CHUNK // max(S * look_back, 1))  # cutoff columns per batched call
    blocks: dict[str, list[np.ndarray]] = {}
    for a in range(0, W, per_call):
        columns = memory.forecast_at(model, panel, cutoffs[:, a:a + per_call], step)  # {c: (w * S, step)}
        for name, values in columns.items():
            w = values.shape[0] // S
            blocks.setdefault(name, []).append(values[:, step - 1].reshape(w, S).T)  # (S, w)
    order = np.flatnonzero(valid.ravel())  # rows: series-major, then time
    series = order // max(W, 1)
    targets = panel.offsets[series] + cutoffs.ravel()[order] + step  # (n,) positions in values
    y = panel.values[targets]
    stamps, _ = panel.stamps_at(targets)
    out = {model.id_col: panel.ids.take(series), model.time_col: stamps, model.target_col: y}
    columns = {name: np.concatenate(parts, axis=1).ravel()[order] for name, parts in blocks.items()}
    out["yhat"] = columns.pop("yhat")
    out["residual"] = y - out["yhat"]
    out.update(columns)
    return pd.DataFrame(out)


def future_frame(model, ids: pd.Index, last, h: int) -> pd.DataFrame:
    """The known-future frame of the fitted ``model`` for series ``ids`` whose last timestamps are ``last``, ``h``
    steps ahead (see :meth:`~tsrsa.estimator.base.BaseForecaster.make_future_frame`), a pandas frame."""
    steps = model.future_steps(h)
    future = model.declared_covariates().future
    calendar = model.freq_.is_datetime and model.freq_.fixed_delta(getattr(last, "tz", None)) is None
    rows = len(ids) * steps
    per_row = FUTURE_ROW_BYTES * (2 + len(future)) + (CALENDAR_STAMP_BYTES if calendar else 0)
    check_request_size(f"make_future_frame(h={h})", rows * per_row,
                       f"{rows:,} rows ({len(ids)} series x {steps} steps)",
                       "make it for fewer series at a time (df=), or for fewer steps (h=)")
    frame = pd.DataFrame({model.id_col: ids.repeat(steps), model.time_col: model.freq_.future(last, steps)})
    for name in future:
        frame[name] = np.nan
    return frame
