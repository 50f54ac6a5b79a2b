"""The estimator contract every forecaster shares: fit/predict frames, update, plot, save.

A forecaster class names its parameters in ``__init__`` (stored as given, nothing else: the
parameter protocol of :mod:`tsrsa.estimator.protocol`) and implements:

- ``check_params()``: validate the constructor arguments (run at the entry of ``fit``);
- ``required_length(panel)``: how many observations a series needs for fitting, and why;
- ``_fit(panel)``: learn from a validated :class:`~tsrsa.data.Panel`, set ``memory_`` (its fitted
  state, :class:`~tsrsa.estimator.window_state.WindowState` or, in the streaming configuration,
  :class:`~tsrsa.estimator.stream_state.StreamState`: ``state_type()`` picks which, once);
- ``forecast_windows(tails, loc, scale, h, covariates=None)``: forecasts ``{column: (n, h) array}``
  from ``n`` input windows (each series' last values, or any windows: cross-validation, scoring)
  and, for a model with covariates, their :class:`~tsrsa.data.memory.WindowCovariates`.

Validation of frames, output framing, ``predict(df=...)``, ``update(df)``, plotting and saving live
here; what depends on the kind of state (advancing it, forecasting from it, saving it) is the state
object's.

Capabilities are data: ``stochastic`` (a fit is random), ``reads_scaled`` (the model reads values
scaled by per-series statistics, in float32), ``takes_covariates`` (the covariate parameters),
``saves_weights`` (a saved model holds network weights), ``model_intervals`` (intervals of its own),
``forecasts_any_horizon`` (``predict(h)`` beyond the fitted ``h``).

Prediction intervals: every forecaster takes ``conformal_windows`` (None, or k held-out horizons per
series); a model fitted with it is calibrated (``conformal_``) and ``predict(level=[80, 95])`` adds
split-conformal intervals (:mod:`tsrsa.estimator.conformal`). Without a calibration, ETS, ARIMA and Theta
give their engine's own intervals (``model_intervals``) and a network with a quantile or distribution head the
interval between two of its quantiles; the frame says which (``frame.attrs["interval_source"]``).
"""
from __future__ import annotations

import contextlib
import copy
import warnings

import numpy as np

from tsrsa.data.covariate_encoding import CovariateEncoder
from tsrsa.data.covariates import CovariateSpec, check_covariate_frame, covariate_spec
from tsrsa.data.frames import FrameSpec, forecast_frame
from tsrsa.data.frequency import Frequency, parse_freq
from tsrsa.data.limits import check_request_size
from tsrsa.data.native import PANDAS, as_kind, frame_kind, to_pandas
from tsrsa.data.shards import ParquetShards
from tsrsa.data.validation import (
    build_panel, check_continuation, check_fill, check_finite_forecast, check_min_length, check_time_zone,
    requested_horizon,
)
from tsrsa.estimator.conformal import (
    CONFORMAL, HEAD_QUANTILES, INTERVAL_SOURCE, MODEL, ConformalCalibration, calibrated, calibration_length,
    check_levels, frame_scale, head_interval_pairs, held_out_errors, interval_columns, interval_source,
    updated_calibration,
)
from tsrsa.estimator.conveniences import fitted_values, future_frame
from tsrsa.estimator.params import check_choice, check_int, check_str
from tsrsa.estimator.protocol import Estimator
from tsrsa.estimator.sharded import shard_frame
from tsrsa.estimator.window_state import WindowState, encoded


#: bytes per forecast value of a frame of ``predict(h)``: the value, its row's id and time, and their copies
FORECAST_VALUE_BYTES = 72


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
    stochastic = False
    #: whether the model reads values scaled by per-series statistics (a float32 network), so that a
    #: value too large once scaled is refused
    reads_scaled = False
    #: whether the class takes the covariate parameters (``past_covariates``, ...)
    takes_covariates = False
    #: whether a saved model holds network weights (weights.pt): ``tsrsa.load`` expects them exactly then
    saves_weights = False
    #: whether the model computes its own prediction intervals (ETS, ARIMA: the engine's analytic ones), which
    #: ``predict(level=...)`` gives when no conformal calibration was fitted
    model_intervals = False
    #: whether ``predict(h)`` forecasts any horizon (the statistical models), not only up to the fitted ``h``
    forecasts_any_horizon = False
    #: the conformal calibration of a model fitted with ``conformal_windows`` (None: no intervals)
    conformal_: ConformalCalibration | None = None

    @property
    def verbosity(self) -> int:
        """How much the model shows while it works: its ``verbose`` (0, silent, for a model without one; a
        neural forecaster's is its trainer's)."""
        return int(getattr(self, "verbose", 0) or 0)

    # ------------------------------------------------------------------ hooks
    def check_params(self) -> None:
        """Validate the constructor arguments (``fit`` does this first); ValueError/TypeError naming the fix."""
        check_int("h", self.h)
        check_int("conformal_windows", self.conformal_windows, allow_none=True)
        check_fill(self.fill)
        parse_freq(self.freq)
        for name in ("id_col", "time_col", "target_col"):
            check_str(name, getattr(self, name))

    def required_length(self, panel) -> tuple[int, str]:
        """The observations a series of ``panel`` needs for fitting, and why."""
        raise NotImplementedError

    def _fit(self, panel, **fit_options) -> None:
        raise NotImplementedError

    def forecast_windows(self, tails: np.ndarray, loc: np.ndarray, scale: np.ndarray,
                         h: int, covariates=None) -> dict[str, np.ndarray]:
        """Forecasts ``{column: (n, h)}`` from input windows ``tails`` (n, T) whose series have scaling
        statistics ``loc``/``scale`` (n,) (and, with covariates, their ``WindowCovariates``): the
        fitted model applied to any windows (cross-validation, scoring, benchmarks)."""
        raise NotImplementedError

    def state_type(self) -> type:
        """The class of the fitted state (``memory_``): fixed windows here."""
        return WindowState

    def learned_cycle(self) -> dict | None:
        """The fitted model's learned cycle (period and series, :mod:`tsrsa.data.cycles`): None here."""
        return None

    def future_steps(self, h: int) -> int:
        """How many steps of known-future covariates a forecast of ``h`` steps reads (``h``)."""
        return h

    # ------------------------------------------------------------------ covariates
    def declared_covariates(self) -> CovariateSpec:
        """The declared covariates, checked (none for a forecaster without the covariate parameters)."""
        return covariate_spec(self) if self.takes_covariates else CovariateSpec()

    def to_panel(self, df, *, fitted: bool = False):
        """``df`` validated as a Panel with its declared covariate columns checked (and filled by
        ``fill``); ``fitted``: new data for a fitted model (its frequency and time zone are required)."""
        spec, share, df = self.declared_covariates(), None, to_pandas(df)
        if isinstance(df, ParquetShards):  # every file, or this rank's share (tsrsa.estimator.sharded)
            df, share = shard_frame(df)
        panel = build_panel(df, self.frame_spec, freq=self.freq, fill=self.fill,
                            expected_freq=self.freq_ if fitted else None, columns=spec.columns)
        if fitted:
            check_time_zone(panel, self.memory_.last)
        panel = check_covariate_frame(panel, spec, self.fill) if spec.active else panel
        panel.share = share
        return panel

    def forecast_cutoffs(self, panel, cutoffs: np.ndarray, h: int) -> dict[str, np.ndarray]:
        """Forecasts after positions ``cutoffs`` (S, W) of every series of ``panel`` (the series this
        model was fitted on, in its order): ``{column: (W * S, h)}``, window-major (cross-validation
        and scoring without a refit)."""
        return self.memory_.forecast_at(self, panel, cutoffs, h)

    # ------------------------------------------------------------------ public API
    @property
    def frame_spec(self) -> FrameSpec:
        return FrameSpec(self.id_col, self.time_col, self.target_col)

    def fit(self, df):
        """Learn from ``df`` (long frame, wide frame, Series, a polars or pyarrow long frame, or a folder of
        Parquet shards: :mod:`tsrsa.estimator.sharded`) and return self. ``predict()`` answers in the kind
        of frame given here (:mod:`tsrsa.data.native`)."""
        self.check_params()
        return self.fit_panel(self.to_panel(df), frame_kind=frame_kind(df))

    def fit_panel(self, panel, **fit_options):
        """Fit on a validated panel (``fit`` after validation; cross-validation and tuning).

        All or nothing: when training raises (a NaN loss, an interrupt, bad data found late), the
        estimator is left exactly as it was before the call, fitted or not. A ``FloatingPointError``
        carries the model trained up to its best epoch as ``error.estimator``. With
        ``conformal_windows`` a copy is first fitted without the held-out horizons to calibrate the
        intervals (:mod:`tsrsa.estimator.conformal`).
        """
        need, why = self.required_length(panel)
        check_min_length(panel, need, why)
        calibration_length(self, panel, need, why)
        kind = fit_options.pop("frame_kind", PANDAS)  # of the user's frame: what predict() answers in
        before = dict(vars(self))
        for name in [a for a in vars(self) if a.endswith("_") and not a.startswith("_")]:
            delattr(self, name)  # a refit starts from nothing
        try:
            self.frame_kind_ = kind  # before training: a model it raises from (error.estimator) answers in it
            self.train_panel_ = panel  # what fitted() reads (never saved)
            errors = held_out_errors(self, panel, **fit_options) if self.conformal_windows is not None else None
            self._fit(panel, **fit_options)
            self.freq_ = panel.freq
            self.conformal_ = None if errors is None else calibrated(self, panel, errors)
        except BaseException as error:
            if isinstance(error, FloatingPointError) and hasattr(self, "memory_"):
                error.estimator = copy.copy(self)  # the best weights so far, never lost
                error.args = (f"{error.args[0] if error.args else error}; this {type(self).__name__} is left as it "
                              f"was before fit, and error.estimator holds the model with those weights",)
            vars(self).clear()
            vars(self).update(before)
            raise
        return self

    def clone(self):
        """An unfitted copy with the same parameters (as ``sklearn.base.clone``)."""
        return type(self)(**copy.deepcopy(self.get_params()))

    def cross_validate(self, df, *, n_windows: int = 3, step_size: int | None = None, refit=False, level=None):
        """Rolling-origin evaluation over the last ``n_windows`` cutoffs of every series.

        Works on copies: this estimator is left as it is (fitted or not).

        Parameters
        ----------
        df : DataFrame, Series or ParquetShards
            The history (long, wide or Series; shards: :mod:`tsrsa.estimator.sharded`).
        n_windows : int, default 3
            Number of forecast origins (cutoffs) per series.
        step_size : int, optional
            Steps between consecutive cutoffs (default ``h``).
        refit : bool or int, default False
            False: one model trained on the data up to the earliest cutoff scores every cutoff
            (in batched forward passes); True: refit at every cutoff; k: refit every k cutoffs.
        level : list of float, optional
            Add intervals, as ``predict(level=...)``: for an estimator with ``conformal_windows=k``
            conformal ones, each fitted model calibrated on the k horizons before its first cutoff (one
            extra fit per fitted model; series need k * h more steps; without ``level`` the fits skip
            the calibration); without it, ETS's and ARIMA's own and a quantile or distribution head's.

        Returns
        -------
        DataFrame
            id, time, ``cutoff`` (the last observed timestamp), ``step`` (1..h), the actual
            value (after ``fill``) and ``yhat`` (+ quantile and interval columns), in the user's
            column names.
        """
        from tsrsa.estimator.crossval import cross_validate

        return as_kind(cross_validate(self, df, n_windows=n_windows, step_size=step_size, refit=refit, level=level),
                       frame_kind(df))

    def predict(self, h: int | None = None, *, df=None, future_df=None, level=None):
        """Forecast the next ``h`` steps of every series.

        Parameters
        ----------
        h : int, optional
            Steps to forecast (default: the fitted ``h``); at most it for a network, any number for a
            statistical model (ETS, ARIMA, Theta, seasonal naive), within the size of one request.
        df : DataFrame or Series, optional
            Forecast after the end of each series in ``df`` instead of the training data;
            ids not seen in training are allowed.
        future_df : DataFrame, optional
            A model with ``future_covariates``: a long frame (id, time and those columns) with
            their values for the next ``h`` steps of every series forecast (the whole trained
            horizon with ``known_future="tokens"``); other rows are ignored. Horizon step j reads
            the covariates of step j only, so ``h`` steps are enough.
        level : list of float, optional
            Coverage percentages in (0, 100), e.g. ``[80, 95]``: split-conformal intervals around
            ``yhat``, calibrated per horizon step on held-out windows, for a model fitted with
            ``conformal_windows`` (:mod:`tsrsa.estimator.conformal`). Each level adds
            ``yhat_lo_{level}`` and ``yhat_hi_{level}`` (``yhat_lo_80``; ``yhat_lo_97.5``). A quantile or
            distribution loss fitted without ``conformal_windows`` answers from its own quantiles: level 80
            copies ``yhat_q10`` and ``yhat_q90`` (``quantiles=`` must hold both ends); ETS, ARIMA and Theta
            fitted without it give each series' model's own intervals; with ``conformal_windows``
            the conformal intervals are given. A pandas frame says which in
            ``frame.attrs["interval_source"]``: "conformal", "quantiles" or "model".

        Returns
        -------
        DataFrame
            Long frame: id, time, ``yhat`` (and ``yhat_q..`` columns for quantile losses, then
            the interval columns of each level, in increasing order).
        """
        self.check_is_fitted()
        h = self._check_predict_h(h)
        levels = check_levels(level)
        source = interval_source(self, levels, h)  # refused before any work when nothing gives them
        with quiet(self.verbosity):
            panel = None if df is None else self._predict_panel(df)
            memory = self.memory_ if df is None else self.memory_.for_frame(self, panel)
            columns = memory.forecast(self, h, to_pandas(future_df))
            if source == MODEL:
                columns.update(memory.intervals(self, h, levels))
        if source == HEAD_QUANTILES:
            for level, (lower, upper) in head_interval_pairs(self, levels).items():
                columns.update(zip(interval_columns(level), (columns[lower], columns[upper])))
        elif source == CONFORMAL:
            scale = self.conformal_.scale if df is None else frame_scale(self, panel, memory)
            columns.update(self.conformal_.intervals(columns["yhat"], scale, levels))
        check_finite_forecast(columns, memory.ids)
        times = self.freq_.future(memory.last, h)
        kind = self.frame_kind_ if df is None else frame_kind(df)
        frame = forecast_frame(memory.ids, times, columns, self.frame_spec)
        if source is not None:
            frame.attrs[INTERVAL_SOURCE] = source  # "conformal", "quantiles" or "model"
        return as_kind(frame, kind)

    def update(self, df, *, new_ids: str = "raise"):
        """Take in observations that continue each series, without refitting; returns self.

        As sktime's ``update`` and statsmodels' ``append``: ``predict()`` then forecasts from the
        new end of each series. A fixed-window model keeps the last ``input_size`` values; a model in
        the streaming configuration advances its recurrent state over the new steps only. Validated
        like ``fit``; when it raises, the model is left as it was.

        Parameters
        ----------
        df : DataFrame, Series or ParquetShards
            New observations (long, wide or Series, the fitted column names and frequency; in a
            group of ranks, shards give each rank its share: :mod:`tsrsa.estimator.sharded`): each
            series starts one step after the last observation the model has of it. Series absent
            from ``df`` keep their state.
        new_ids : {"raise", "add"}, default "raise"
            Ids not seen in fit: an error, or taken in as new series whose whole history is in
            ``df`` (scaled by their own statistics, as in ``predict(df=...)``).

        A model with prediction intervals also scores the forecasts it makes without refit on every
        whole window of ``h`` new steps of a known series: those residuals replace the oldest ones
        of its calibration (:mod:`tsrsa.estimator.conformal`).

        Returns
        -------
        self
        """
        self.check_is_fitted()
        check_choice("new_ids", new_ids, ("raise", "add"))
        panel = self.to_panel(df, fitted=True)
        memory = self.memory_
        known = memory.ids.get_indexer(panel.ids)  # (S_panel,) position in the memory, -1 if new
        check_continuation(panel, memory.last, known, new_ids=new_ids)
        if (known < 0).any():
            check_min_length(panel.take(np.flatnonzero(known < 0)), memory.tails.shape[1],
                             "the model's look-back, for a new series")
        rows = encoded(self, panel)
        if rows is not None:
            self.covariates_.check_statics_unchanged(panel, rows, known, memory.static_num, memory.static_cat)
        with quiet(self.verbosity):
            after = memory.advance(self, panel, known)
            calibration = None if self.conformal_ is None else updated_calibration(self, memory, after, panel, known)
        self.memory_, self.conformal_ = after, calibration
        return self

    def _predict_panel(self, df):
        panel = self.to_panel(df, fitted=True)
        check_min_length(panel, self.memory_.tails.shape[1], "the model's look-back at predict time")
        return panel

    def _check_predict_h(self, h) -> int:
        """The steps asked of ``predict`` (None: the fitted ``h``): at most the fitted ``h``, or, for a model that
        ``forecasts_any_horizon``, any number given within the size of one request (its frame of every series' steps,
        :func:`~tsrsa.data.limits.check_request_size`); a TypeError or ValueError naming the fix."""
        if not self.forecasts_any_horizon:
            return requested_horizon(h, int(self.h), f"refit with h={h} or forecast at most {self.h} steps")
        if h is None:  # the fitted h, which the fit's own frames already hold
            return int(self.h)
        h = requested_horizon(h, int(self.h), None)
        rows = self.memory_.n_series * h
        check_request_size(f"predict(h={h})", rows * FORECAST_VALUE_BYTES,
                           f"{rows:,} forecast rows ({self.memory_.n_series} series x h={h})",
                           "ask for fewer steps, or forecast fewer series at a time with predict(df=...)")
        return h

    def head_quantile_levels(self) -> tuple[float, ...]:
        """The quantile levels the model's forecasts carry as ``yhat_q..`` columns (none here; a quantile
        or distribution loss has them), from which ``predict(level=...)`` reads an interval when no
        conformal calibration was fitted."""
        return ()

    def check_is_fitted(self) -> None:
        """NotFittedError unless ``fit`` (or ``tsrsa.load``) has run."""
        if not hasattr(self, "memory_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet; call fit(df) before "
                f"predict, plot or save."
            )

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "memory_")

    # ------------------------------------------------------------------ fitted values, the known-future frame
    def fitted(self, df=None, *, step: int = 1):
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
            if self.train_panel_ is None:
                raise ValueError(f"this {type(self).__name__} holds no training data (a model read by "
                                 f"tsrsa.load keeps none): pass the series, fitted(df=...)")
            panel = self.train_panel_
        else:
            panel = self.to_panel(df, fitted=True)
        return as_kind(fitted_values(self, panel, int(step)), self.frame_kind_ if df is None else frame_kind(df))

    def make_future_frame(self, h: int | None = None, *, df=None):
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
        return as_kind(future_frame(self, ids, last, h), self.frame_kind_ if df is None else frame_kind(df))

    def plot(self, df=None, *, forecast=None, ids=None, max_series: int = 4, history: int | None = None):
        """Plot recent history and the forecast of a few series; returns a matplotlib Figure.

        Parameters
        ----------
        df : DataFrame or Series, optional
            History to draw (and to forecast from when ``forecast`` is None); default: the
            tail the model remembers from fitting.
        forecast : DataFrame, optional
            Output of ``predict`` (pandas, polars or pyarrow); computed when not given. Its bands are
            drawn, quantile pairs and ``yhat_lo_{level}``/``yhat_hi_{level}`` intervals alike.
        ids : list, optional
            Series to draw; default the first ``max_series``.
        max_series : int, default 4
        history : int, optional
            Number of past steps to draw per series (default: 3 horizons).
        """
        from tsrsa.estimator.plotting import plot_forecast

        self.check_is_fitted()
        forecast = to_pandas(self.predict(df=df) if forecast is None else forecast)
        panel = self._predict_panel(df) if df is not None else None
        return plot_forecast(
            self, panel, forecast, ids=ids, max_series=max_series,
            history=history if history is not None else 3 * int(self.h),
        )

    def save(self, path, *, overwrite: bool = False) -> None:
        """Write the fitted model to the folder ``path`` (new or empty), all or nothing (see :func:`tsrsa.load`).

        ``overwrite=True`` replaces a model saved in ``path`` whole; a folder that holds anything else
        is never written into. A save that is refused (ValueError) or fails leaves ``path`` as it was."""
        from tsrsa.estimator.persistence import save

        save(self, path, overwrite=overwrite)

    def fitted_files(self) -> tuple[dict, dict, dict | None]:
        """(JSON state, numpy arrays, torch weights or None): what ``save`` writes of the fitted model."""
        state, arrays = self.memory_.to_files()
        state["freq"] = self.freq_.to_json()
        if self.frame_kind_ != PANDAS:  # a pandas model's files are those of the releases before frame kinds
            state["frame_kind"] = self.frame_kind_
        encoder = self.covariates_ if self.takes_covariates else None
        if encoder is not None:
            state["covariates"] = encoder.to_json()
        if self.conformal_ is not None:
            arrays.update(self.conformal_.to_arrays())
        return state, arrays, None

    def adopt_plan(self, state: dict) -> None:
        """What a saved model's fit decided automatically, taken before its files are checked and its model
        rebuilt (``tsrsa.load``); a forecaster without a fit plan takes nothing."""

    def restore_fitted(self, state: dict, arrays: dict, weights, device) -> None:
        """Set the fitted model from what ``fitted_files`` wrote (``tsrsa.load``)."""
        self.freq_ = Frequency.from_json(state["freq"])
        self.frame_kind_ = state.get("frame_kind", PANDAS)
        encoder = state.get("covariates")  # format 3; earlier formats have none
        self.covariates_ = None if encoder is None else CovariateEncoder.from_json(encoder)
        self.memory_ = self.state_type().from_files(state, arrays)
        self.train_panel_ = None  # a loaded model holds no training data (fitted() asks for it)
        self.conformal_ = ConformalCalibration.from_arrays(arrays)  # None: saved without intervals
