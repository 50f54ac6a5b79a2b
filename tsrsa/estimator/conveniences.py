"""In-sample fitted values and the known-future frame: what users of statsmodels, sktime, darts and
neuralforecast reach for after ``fit``.

:class:`Conveniences` is a mixin of every forecaster (:class:`~tsrsa.estimator.base.BaseForecaster`):

- ``fitted(df=None, step=1)``: in-sample fitted values and residuals, a long frame (id, time, target,
  ``yhat``, ``residual``, then any ``yhat_q..`` columns). The fitted value at time t is the forecast
  ``step`` steps ahead made from the observations up to t - step (one-step-ahead by default, the
  statsmodels convention; a direct multi-horizon network forecasts ``step`` = 1..h from each window,
  so ``step=k`` gives its k-step-ahead ones). They are computed in the batched passes of the fitted
  state's ``forecast_at`` (the machinery of ``cross_validate`` and ``forecast_cutoffs``): every
  cutoff of every series at once, in chunks of bounded memory, never one window at a time. The first
  ``L + step - 1`` steps of each series have no fitted value and no row, L the model's look-back
  (``input_size`` for the networks, the season for ``SeasonalNaiveForecaster``): the first cutoff
  needs a whole input window.
- ``make_future_frame(h=None, df=None)``: the frame ``predict(future_df=...)`` reads, ids x the next
  ``h`` timestamps with an empty (NaN) column per declared known-future covariate, for the user to
  fill (calendar and holiday features are derived from the timestamps by the model and are not in it).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from tsrsa.data.limits import check_request_size
from tsrsa.data.native import as_kind, frame_kind
from tsrsa.data.validation import check_min_length
from tsrsa.estimator.params import check_int

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


class Conveniences:
    """``fitted`` and ``make_future_frame`` (module docstring); mixed into every forecaster."""

    def fitted(self, df=None, *, step: int = 1) -> pd.DataFrame:
        """In-sample fitted values and residuals, one row per (series, time) that has one.

        Parameters
        ----------
        df : DataFrame or Series, optional
            The series to compute them for (long, wide or Series, as ``predict(df=...)``: known ids keep
            their fitted scaling, new ones get their own). Default: the data this model was fitted on
            (kept by ``fit``; a model read by ``tsrsa.load`` holds none, so pass it).
        step : int, default 1
            Steps ahead, 1..h: the fitted value at t is the forecast of step ``step`` made at t - step
            (1: one-step-ahead, as statsmodels' ``fittedvalues``).

        Returns
        -------
        DataFrame
            id, time, target (the user's column names), ``yhat``, ``residual`` (target - yhat), then
            the ``yhat_q..`` columns of a quantile or distribution model. The first ``L + step - 1``
            steps of each series (L the model's look-back: ``input_size``, or the season of the
            seasonal naive model) have no row: the first forecast needs a whole input window. With
            ``val_size`` the last ``val_size`` rows of each series of the training data were held out
            for validation, not trained on.

        Examples
        --------
        >>> import pandas as pd
        >>> from tsrsa import SeasonalNaiveForecaster
        >>> y = pd.Series([1.0, 2.0, 3.0, 1.5, 2.5, 3.5], index=pd.RangeIndex(6))
        >>> SeasonalNaiveForecaster(h=2, season_length=3).fit(y).fitted()
          unique_id  ds    y  yhat  residual
        0         y   3  1.5   1.0       0.5
        1         y   4  2.5   2.0       0.5
        2         y   5  3.5   3.0       0.5
        """
        self.check_is_fitted()
        check_int("step", step)
        if step > self.h:
            raise ValueError(f"step={step} is above the horizon this model forecasts (h={self.h}); use a step "
                             f"from 1 to {self.h}")
        if df is None:
            panel = getattr(self, "train_panel_", None)
            if panel is None:
                raise ValueError(f"this {type(self).__name__} holds no training data (a model read by "
                                 f"tsrsa.load keeps none): pass the series, fitted(df=...)")
        else:
            panel = self.to_panel(df, fitted=True)
        look_back = int(self.memory_.tails.shape[1])
        check_min_length(panel, look_back, "the model's look-back")
        memory = self.memory_.for_frame(self, panel)  # known ids keep their fitted statistics
        cutoffs, valid = fitted_positions(panel.lengths, look_back, int(step))  # (S, W) each
        S, W = cutoffs.shape
        per_call = max(1, FITTED_CHUNK // max(S * look_back, 1))  # cutoff columns per batched call
        blocks: dict[str, list[np.ndarray]] = {}
        for a in range(0, W, per_call):
            columns = memory.forecast_at(self, panel, cutoffs[:, a:a + per_call], int(step))  # {c: (w * S, step)}
            for name, values in columns.items():
                w = values.shape[0] // S
                blocks.setdefault(name, []).append(values[:, step - 1].reshape(w, S).T)  # (S, w)
        order = np.flatnonzero(valid.ravel())  # rows: series-major, then time
        series = order // max(W, 1)
        targets = panel.offsets[series] + cutoffs.ravel()[order] + step  # (n,) positions in values
        y = panel.values[targets]
        stamps, _ = panel.stamps_at(targets)
        out = {self.id_col: panel.ids.take(series), self.time_col: stamps, self.target_col: y}
        columns = {name: np.concatenate(parts, axis=1).ravel()[order] for name, parts in blocks.items()}
        out["yhat"] = columns.pop("yhat")
        out["residual"] = y - out["yhat"]
        out.update(columns)
        return as_kind(pd.DataFrame(out), self.frame_kind_ if df is None else frame_kind(df))

    def make_future_frame(self, h: int | None = None, *, df=None) -> pd.DataFrame:
        """The frame of known-future covariates ``predict`` reads, to be filled in: ids x next timestamps.

        Parameters
        ----------
        h : int, optional
            Steps to forecast (default: the trained horizon). A transformer with
            ``known_future="tokens"`` reads the whole trained horizon whatever ``h``, so its frame has
            ``h`` = the trained horizon rows per series.
        df : DataFrame or Series, optional
            Make it for the series of ``df`` (the frame you will pass as ``predict(df=...)``) instead of
            the model's own.

        Returns
        -------
        DataFrame
            One row per (series, future timestamp), in the user's id and time column names, and one
            column per declared ``future_covariates`` filled with NaN: set their values and pass the
            frame as ``predict(h, future_df=...)``. Calendar features (``calendar=``) and the holiday
            flag (``holidays=``) are derived from the timestamps by the model and need no column. A
            model without known-future covariates gives the ids and timestamps alone (it reads no
            ``future_df``). A frame that would pass the memory limit of one request (8 GiB, or
            ``TSRSA_MAX_REQUEST_BYTES``: :mod:`tsrsa.data.limits`) is refused before it is built.

        Examples
        --------
        >>> import pandas as pd
        >>> from tsrsa import SeasonalNaiveForecaster
        >>> y = pd.Series([1.0, 2.0, 3.0, 1.5, 2.5, 3.5], index=pd.RangeIndex(6))
        >>> SeasonalNaiveForecaster(h=2, season_length=3).fit(y).make_future_frame()
          unique_id  ds
        0         y   6
        1         y   7
        """
        self.check_is_fitted()
        h = self._check_predict_h(h)
        if df is None:
            ids, last = self.memory_.ids, self.memory_.last
        else:
            panel = self.to_panel(df, fitted=True)
            ids, last = panel.ids, panel.last
        steps = self.future_steps(h)
        future = self.declared_covariates().future
        calendar = self.freq_.is_datetime and self.freq_.fixed_delta(getattr(last, "tz", None)) is None
        rows = len(ids) * steps
        per_row = FUTURE_ROW_BYTES * (2 + len(future)) + (CALENDAR_STAMP_BYTES if calendar else 0)
        check_request_size(f"make_future_frame(h={h})", rows * per_row,
                           f"{rows:,} rows ({len(ids)} series x {steps} steps)",
                           "make it for fewer series at a time (df=), or for fewer steps (h=)")
        frame = pd.DataFrame({self.id_col: ids.repeat(steps), self.time_col: self.freq_.future(last, steps)})
        for name in future:
            frame[name] = np.nan
        return as_kind(frame, self.frame_kind_ if df is None else frame_kind(df))
