"""The estimator contract every forecaster shares: fit/predict frames, update, plot, save.

A forecaster class names its parameters in ``__init__`` (stored as given, nothing else: the
parameter protocol of :mod:`tsrsa.forecasters.estimator`) and implements four hooks:

- ``_check_params()``: validate the constructor arguments (run at the entry of ``fit``);
- ``_min_length(panel)``: how many observations a series needs for fitting, and why;
- ``_fit_panel(panel)``: learn from a validated :class:`~tsrsa.data.Panel`, set ``memory_``;
- ``_forecast_windows(tails, loc, scale, h, covariates=None)``: forecasts ``{column: (n, h) array}``
  from ``n`` input windows (each series' last values, or any windows: cross-validation, benchmarks)
  and, for a model with covariates, their :class:`~tsrsa.data.memory.WindowCovariates`.

Validation of frames, output framing, ``predict(df=...)``, ``update(df)``, plotting and saving
live here. A forecaster whose state is more than each series' last values (the streaming
configuration) also overrides ``_memory_for``, ``_continued_memory``, ``_forecast_memory`` and
``_forecast_cutoffs``.
"""
from __future__ import annotations

import contextlib
import copy
import warnings

import numpy as np
import pandas as pd

from tsrsa.data.covariate_encoding import CovariateEncoder
from tsrsa.data.covariates import CovariateSpec, check_covariate_frame, covariate_spec, future_rows
from tsrsa.data.frames import FrameSpec, forecast_frame
from tsrsa.data.memory import EncodedCovariates, SeriesMemory, WindowCovariates
from tsrsa.data.validation import (
    build_panel, check_continuation, check_fill, check_finite_forecast, check_min_length, check_time_zone, format_id,
)
from tsrsa.data.frequency import Frequency, parse_freq
from tsrsa.forecasters.estimator import Estimator
from tsrsa.forecasters.params import check_choice, check_int, check_str
from tsrsa.forecasters.persistence import decode_index, decode_times, encode_index, encode_times


@contextlib.contextmanager
def quiet(verbose: int):
    """At verbose=0 no warning from any dependency reaches the user."""
    if verbose:
        yield
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


class BaseForecaster(Estimator):
    """Shared behaviour of tsrsa forecasters (see the module docstring)."""

    #: whether a fit is random (neural networks) or deterministic (naive)
    _stochastic = False

    # ------------------------------------------------------------------ hooks
    def _check_params(self) -> None:
        check_int("h", self.h)
        check_fill(self.fill)
        parse_freq(self.freq)
        for name in ("id_col", "time_col", "target_col"):
            check_str(name, getattr(self, name))

    def _min_length(self, panel) -> tuple[int, str]:
        raise NotImplementedError

    def _fit_panel(self, panel, **fit_options) -> None:
        raise NotImplementedError

    def _forecast_windows(self, tails: np.ndarray, loc: np.ndarray, scale: np.ndarray,
                          h: int, covariates: WindowCovariates | None = None) -> dict[str, np.ndarray]:
        """Forecasts from input windows ``tails`` (n, T) whose series have statistics loc/scale (n,)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ covariates
    def _covariate_spec(self) -> CovariateSpec:
        """The declared covariates (none for a forecaster without the covariate parameters)."""
        if not hasattr(self, "past_covariates"):
            return CovariateSpec()
        return covariate_spec(self)

    def _panel(self, df, *, fitted: bool = False):
        """``df`` validated as a Panel with its declared covariate columns checked (and filled by
        ``fill``); ``fitted``: new data for a fitted model (its frequency and time zone are required)."""
        spec = self._covariate_spec()
        panel = build_panel(df, self._spec, freq=self.freq, fill=self.fill,
                            expected_freq=self.freq_ if fitted else None, columns=spec.columns)
        if fitted:
            check_time_zone(panel, self.memory_.last)
        return check_covariate_frame(panel, spec, self.fill) if spec.active else panel

    def _check_scaled(self, panel, loc: np.ndarray, scale: np.ndarray, statistics: str) -> None:
        """A ValueError when a value of ``panel`` scaled by ``loc``/``scale`` (S,) is beyond what the
        model computes with (``tsrsa.data.scalers.check_scaled``); a model that reads raw values
        (this base) checks nothing."""

    def _encoded(self, panel) -> EncodedCovariates | None:
        """``panel``'s covariates encoded as the fitted model reads them (None without covariates)."""
        encoder = getattr(self, "covariates_", None)
        if encoder is None:
            return None
        return EncodedCovariates(*encoder.encode_panel(panel))

    def _horizon_covariates(self, ids: pd.Index, last: pd.Index, h: int, future_df) -> np.ndarray | None:
        """Known-future channels (S, H, F) of the ``h`` steps after ``last`` (zeros after step h), from
        ``future_df`` and the timestamps; None when the model reads none."""
        encoder = getattr(self, "covariates_", None)
        spec = encoder.spec if encoder is not None else CovariateSpec()
        if future_df is not None and not spec.future:
            raise ValueError(f"future_df was given, but this {type(self).__name__} declares no future_covariates: "
                             f"it has nothing to read there; leave future_df out, or refit with "
                             f"future_covariates=[...]")
        if encoder is None or encoder.n_future == 0:
            return None
        if spec.future and future_df is None:
            raise ValueError(f"this model reads the known-future covariates {list(spec.future)}: pass "
                             f"future_df= with their values for the next {h} step(s) of every series")
        if getattr(self, "known_future", "readout") == "tokens":  # decoder tokens read the whole horizon
            h = int(self.h)
        stamps = self.freq_.future(last, h)
        frame = future_rows(future_df, ids, stamps, h, spec, self.id_col, self.time_col) if spec.future else None
        block = encoder.encode_future(frame, stamps, lambda row: f"in future_df for series "
                                      f"{format_id(ids[row // h])} at {stamps[row]}").reshape(len(ids), h, -1)
        out = np.zeros((len(ids), int(self.h), block.shape[2]), dtype=np.float32)
        out[:, :h] = block
        return out

    def _memory_covariates(self, memory: SeriesMemory, h: int, future_df) -> WindowCovariates | None:
        future = self._horizon_covariates(memory.ids, memory.last, h, future_df)
        if memory.covariates is None:
            return None
        return WindowCovariates(memory.covariates, future, memory.static_num, memory.static_cat)

    def _memory_for(self, panel) -> SeriesMemory:
        """Memory of new data for ``predict(df=...)``."""
        return self.memory_.for_new_data(panel, self.memory_.tails.shape[1], None, self._encoded(panel))

    def _forecast_memory(self, memory: SeriesMemory, h: int, future_df=None) -> dict[str, np.ndarray]:
        """Forecasts ``{column: (S, h)}`` after the end of every series of ``memory``."""
        covariates = self._memory_covariates(memory, h, future_df)
        return self._forecast_windows(memory.tails, memory.loc, memory.scale, h, covariates)

    def _forecast_cutoffs(self, panel, cutoffs: np.ndarray, h: int) -> dict[str, np.ndarray]:
        """Forecasts after positions ``cutoffs`` (S, W) of every series of ``panel`` (the series this
        model was fitted on, in its order): ``{column: (W * S, h)}``, window-major (cross-validation)."""
        memory = self.memory_
        T = memory.tails.shape[1]
        ends = (panel.offsets[:-1, None] + cutoffs).T.ravel()  # (W * S,) window-major
        inputs = ends[:, None] - T + 1 + np.arange(T)[None, :]  # (W * S, T)
        tails = panel.values[inputs]
        reps = cutoffs.shape[1]
        covariates = None
        encoded = self._encoded(panel)
        if encoded is not None:  # the frame's own covariates: the look-back's, and the known-future ones after it
            encoder = self.covariates_
            future = None
            if encoder.n_future:
                series = np.tile(np.arange(panel.n_series), reps)  # (W * S,)
                steps = ends[:, None] + 1 + np.arange(int(self.h))[None, :]  # (W * S, H)
                inside = steps < panel.offsets[1:][series][:, None]
                future = encoded.time[np.where(inside, steps, 0)][..., encoder.n_time - encoder.n_future:]
                future = np.where(inside[..., None], future, 0.0).astype(np.float32)  # (W * S, H, F)
            covariates = WindowCovariates(encoded.time[inputs], future, np.tile(encoded.static_num, (reps, 1)),
                                          np.tile(encoded.static_cat, (reps, 1)))
        return self._forecast_windows(tails, np.tile(memory.loc, reps), np.tile(memory.scale, reps), h, covariates)

    def _updated_memory(self, panel, known: np.ndarray) -> SeriesMemory:
        """The memory after ``update``: ``panel`` holds new observations, ``known`` (S_panel,) the
        position of each of its series in ``memory_`` (-1: a new series, its whole history in
        ``panel``; new series join at the end)."""
        updated = self._continued_memory(panel, known)
        fresh = np.flatnonzero(known < 0)
        return updated.append(self._memory_for(panel.take(fresh))) if fresh.size else updated

    def _continued_memory(self, panel, known: np.ndarray) -> SeriesMemory:
        """``memory_`` with the known series of ``panel`` continued by its new observations."""
        memory = self.memory_
        T = memory.tails.shape[1]
        tails, last = memory.tails.copy(), memory.last
        covariates = None if memory.covariates is None else memory.covariates.copy()
        encoded = self._encoded(panel) if covariates is not None else None
        seen = np.flatnonzero(known >= 0)
        for j in seen:
            i = int(known[j])
            tails[i] = np.concatenate([tails[i], panel.series(int(j))])[-T:]
            if encoded is not None:
                new = encoded.time[panel.offsets[j]:panel.offsets[j + 1]]
                covariates[i] = np.concatenate([covariates[i], new])[-T:]
        if seen.size:
            moved = pd.Series(last)
            moved.iloc[known[seen]] = pd.Index(panel.last).take(seen)
            last = pd.Index(moved)
        return SeriesMemory(ids=memory.ids, last=last, tails=tails, loc=memory.loc, scale=memory.scale,
                            covariates=covariates, static_num=memory.static_num, static_cat=memory.static_cat)

    # ------------------------------------------------------------------ public API
    @property
    def _spec(self) -> FrameSpec:
        return FrameSpec(self.id_col, self.time_col, self.target_col)

    def fit(self, df):
        """Learn from ``df`` (long frame, wide frame or Series) and return self."""
        self._check_params()
        return self._fit_validated(self._panel(df))

    def _fit_validated(self, panel, **fit_options):
        """Fit on a validated panel (``fit`` after validation; cross-validation and tuning).

        All or nothing: when training raises (a NaN loss, an interrupt, bad data found late), the
        estimator is left exactly as it was before the call, fitted or not. A ``FloatingPointError``
        carries the model trained up to its best epoch as ``error.estimator``.
        """
        need, why = self._min_length(panel)
        check_min_length(panel, need, why)
        before = dict(vars(self))
        for name in [a for a in vars(self) if a.endswith("_") and not a.startswith("_")]:
            delattr(self, name)  # a refit starts from nothing
        try:
            self._fit_panel(panel, **fit_options)
            self.freq_ = panel.freq
        except BaseException as error:
            if isinstance(error, FloatingPointError) and hasattr(self, "memory_"):
                error.estimator = copy.copy(self)  # the best weights so far, never lost
                error.args = (f"{error.args[0] if error.args else error}; this {type(self).__name__} is left as it "
                              f"was before fit, and error.estimator holds the model with those weights",)
            vars(self).clear()
            vars(self).update(before)
            raise
        return self

    def _clone(self):
        """An unfitted copy with the same parameters (sklearn's ``clone`` without sklearn)."""
        return type(self)(**copy.deepcopy(self.get_params()))

    def cross_validate(self, df, *, n_windows: int = 3, step_size: int | None = None, refit=False):
        """Rolling-origin evaluation over the last ``n_windows`` cutoffs of every series.

        Works on copies: this estimator is left as it is (fitted or not).

        Parameters
        ----------
        df : DataFrame or Series
            The history (long, wide or Series).
        n_windows : int, default 3
            Number of forecast origins (cutoffs) per series.
        step_size : int, optional
            Steps between consecutive cutoffs (default ``h``).
        refit : bool or int, default False
            False: one model trained on the data up to the earliest cutoff scores every cutoff
            (in batched forward passes); True: refit at every cutoff; k: refit every k cutoffs.

        Returns
        -------
        DataFrame
            id, time, ``cutoff`` (the last observed timestamp), ``step`` (1..h), the actual
            value (after ``fill``) and ``yhat`` (+ quantile columns), in the user's column names.
        """
        from tsrsa.forecasters.crossval import cross_validate

        return cross_validate(self, df, n_windows=n_windows, step_size=step_size, refit=refit)

    def predict(self, h: int | None = None, *, df=None, future_df=None):
        """Forecast the next ``h`` steps of every series.

        Parameters
        ----------
        h : int, optional
            Steps to forecast; at most the trained horizon (default: all of it).
        df : DataFrame or Series, optional
            Forecast after the end of each series in ``df`` instead of the training data;
            ids not seen in training are allowed.
        future_df : DataFrame, optional
            A model with ``future_covariates``: a long frame (id, time and those columns) with
            their values for the next ``h`` steps of every series forecast (the whole trained
            horizon with ``known_future="tokens"``); other rows are ignored. Horizon step j reads
            the covariates of step j only, so ``h`` steps are enough.

        Returns
        -------
        DataFrame
            Long frame: id, time, ``yhat`` (and ``yhat_q..`` columns for quantile losses).
        """
        self._check_is_fitted()
        h = self._check_predict_h(h)
        with quiet(getattr(self, "verbose", 0)):
            memory = self.memory_ if df is None else self._memory_for(self._predict_panel(df))
            columns = self._forecast_memory(memory, h, future_df)
        check_finite_forecast(columns, memory.ids)
        times = self.freq_.future(memory.last, h)
        return forecast_frame(memory.ids, times, columns, self._spec)

    def update(self, df, *, new_ids: str = "raise"):
        """Take in observations that continue each series, without refitting; returns self.

        As sktime's ``update`` and statsmodels' ``append``: ``predict()`` then forecasts from the
        new end of each series. A fixed-window model keeps the last ``input_size`` values; a model in
        the streaming configuration advances its recurrent state over the new steps only. Validated
        like ``fit``; when it raises, the model is left as it was.

        Parameters
        ----------
        df : DataFrame or Series
            New observations (long, wide or Series, the fitted column names and frequency): each
            series starts one step after the last observation the model has of it. Series absent
            from ``df`` keep their state.
        new_ids : {"raise", "add"}, default "raise"
            Ids not seen in fit: an error, or taken in as new series whose whole history is in
            ``df`` (scaled by their own statistics, as in ``predict(df=...)``).

        Returns
        -------
        self
        """
        self._check_is_fitted()
        check_choice("new_ids", new_ids, ("raise", "add"))
        panel = self._panel(df, fitted=True)
        memory = self.memory_
        known = memory.ids.get_indexer(panel.ids)  # (S_panel,) position in the memory, -1 if new
        check_continuation(panel, memory.last, known, new_ids=new_ids)
        if (known < 0).any():
            check_min_length(panel.take(np.flatnonzero(known < 0)), memory.tails.shape[1],
                             "the model's look-back, for a new series")
        seen = np.flatnonzero(known >= 0)
        self._check_scaled(panel.take(seen), memory.loc[known[seen]], memory.scale[known[seen]],
                           "the statistics the model fitted for it")
        encoded = self._encoded(panel)
        if encoded is not None:
            self.covariates_.check_statics_unchanged(panel, encoded, known, memory.static_num, memory.static_cat)
        with quiet(getattr(self, "verbose", 0)):
            memory = self._updated_memory(panel, known)
        self.memory_ = memory
        return self

    def _predict_panel(self, df):
        panel = self._panel(df, fitted=True)
        check_min_length(panel, self.memory_.tails.shape[1], "the model's look-back at predict time")
        return panel

    def _check_predict_h(self, h) -> int:
        if h is None:
            return int(self.h)
        check_int("h", h)
        if h > self.h:
            raise ValueError(
                f"h={h} is above the horizon this model was trained for ({self.h}); refit with "
                f"h={h} or forecast at most {self.h} steps"
            )
        return int(h)

    def _check_is_fitted(self) -> None:
        if not hasattr(self, "memory_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet; call fit(df) before "
                f"predict, plot or save."
            )

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "memory_")

    def plot(self, df=None, *, forecast=None, ids=None, max_series: int = 4, history: int | None = None):
        """Plot recent history and the forecast of a few series; returns a matplotlib Figure.

        Parameters
        ----------
        df : DataFrame or Series, optional
            History to draw (and to forecast from when ``forecast`` is None); default: the
            tail the model remembers from fitting.
        forecast : DataFrame, optional
            Output of ``predict``; computed when not given.
        ids : list, optional
            Series to draw; default the first ``max_series``.
        max_series : int, default 4
        history : int, optional
            Number of past steps to draw per series (default: 3 horizons).
        """
        from tsrsa.forecasters.plotting import plot_forecast

        self._check_is_fitted()
        if forecast is None:
            forecast = self.predict(df=df)
        panel = self._predict_panel(df) if df is not None else None
        return plot_forecast(
            self, panel, forecast, ids=ids, max_series=max_series,
            history=history if history is not None else 3 * int(self.h),
        )

    def save(self, path, *, overwrite: bool = False) -> None:
        """Write the fitted model to the folder ``path`` (new or empty), all or nothing (see :func:`tsrsa.load`).

        ``overwrite=True`` replaces a model saved in ``path`` whole; a folder that holds anything else
        is never written into. A save that is refused (ValueError) or fails leaves ``path`` as it was."""
        from tsrsa.forecasters.persistence import save

        save(self, path, overwrite=overwrite)

    def _fitted_state(self) -> tuple[dict, dict, dict | None]:
        """(JSON state, numpy arrays, torch weights or None) that ``predict`` needs."""
        memory = self.memory_
        state = {"freq": self.freq_.to_json(), "ids": encode_index(memory.ids), "last": encode_times(memory.last)}
        arrays = {"tails": memory.tails, "loc": memory.loc, "scale": memory.scale}
        encoder = getattr(self, "covariates_", None)
        if encoder is not None:
            state["covariates"] = encoder.to_json()
            arrays.update(covariates=memory.covariates, static_num=memory.static_num, static_cat=memory.static_cat)
        return state, arrays, None

    def _restore_fitted_state(self, state: dict, arrays: dict, weights, device) -> None:
        self.freq_ = Frequency.from_json(state["freq"])
        encoder = state.get("covariates")  # format 3; earlier formats have none
        self.covariates_ = None if encoder is None else CovariateEncoder.from_json(encoder)
        self.memory_ = SeriesMemory(
            ids=decode_index(state["ids"]), last=decode_times(state["last"]),
            tails=arrays["tails"], loc=arrays["loc"], scale=arrays["scale"],
            covariates=arrays.get("covariates"), static_num=arrays.get("static_num"),
            static_cat=arrays.get("static_cat"),
        )

