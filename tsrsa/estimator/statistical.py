"""What the statistical forecasters share: one statsmodels model fitted per series, and its state.

:class:`StatisticalForecaster` is the estimator contract of :class:`~tsrsa.estimator.base.
BaseForecaster` for local models (:class:`~tsrsa.forecasters.ets.ETSForecaster`,
:class:`~tsrsa.forecasters.arima.ARIMAForecaster`, :class:`~tsrsa.forecasters.theta.ThetaForecaster`):
``fit`` fits one model per series, in turn or, with ``n_jobs``, in parallel processes (joblib: the
series cut into contiguous blocks, each block fitted in turn by one process, the fits put back in
order, so the fits are those of ``n_jobs=1``); its fitted state is a
:class:`~tsrsa.estimator.statistical_state.StatisticalState` (``state_type()``), which runs each
model's filter over new observations with the fitted parameters (``update``, ``predict(df=...)``,
``forecast_cutoffs``) and saves parameters and states as JSON and arrays. A subclass names its
parameters and implements ``minimum_length(m)`` and ``fit_series(panel, i)``.

``predict(h)`` forecasts any number of steps (``forecasts_any_horizon``: the fitted ``h`` is the default
and what cross-validation and the conformal calibration use, not a limit). ETS, ARIMA and Theta
(``model_intervals``) answer ``predict(level=[80, 95])`` without a conformal calibration with
each series' model's own prediction intervals (ETS: statsmodels' ``get_prediction(...).pred_int``;
ARIMA: ``get_forecast(h).conf_int``; Theta: R's ``thetaf``'s, :mod:`tsrsa.statistical.theta_model`), scaled
by the variance of the model's one-step errors, which the fit measures and ``update`` carries on; a
calibration fitted with ``conformal_windows`` wins.
"""
from __future__ import annotations

import os

import numpy as np
import pandas as pd

from tsrsa.data.frequency import season_steps
from tsrsa.data.validation import format_id
from tsrsa.estimator.base import BaseForecaster
from tsrsa.estimator.params import check_int
from tsrsa.estimator.statistical_state import StatisticalState, statsmodels_calls


#: the first arguments every statistical forecaster shares, documented once (each docstring's ``{series}`` mark)
STATISTICAL_SERIES_DOC = """
    h : int
        Forecast horizon (steps).
    season_length : int, optional
        Season m in steps. None takes the first natural period of the frequency (24 hourly, 7 daily, 12
        monthly, 4 quarterly), or 1 (no season) where there is none, as for integer time.
"""
#: the arguments every statistical forecaster shares, documented once (each docstring's ``{common}`` mark)
STATISTICAL_PARAMS_DOC = """
    n_jobs : int, default 1
        Processes fitting the series in parallel (joblib); -1 uses every core. The fits are the same
        as with 1; a panel of a few series gains nothing (starting processes costs about a second).
    conformal_windows : int, optional
        Hold out the last ``conformal_windows`` horizons of every series to calibrate conformal
        prediction intervals, ``predict(level=[80, 95])`` (one extra fit per series); they replace the
        model's own. None: each series' model gives its own (ETS and ARIMA statsmodels', Theta R's ``thetaf``'s).
    fill : {"ffill", "interpolate", "zero"} or None, default None
        How to fill missing timestamps and NaN values; None makes them errors.
    freq : str or int, optional
        pandas offset alias or integer step; inferred when None.
    verbose : int, default 0
        0 hides statsmodels' warnings (convergence); 1 lets them through.
    id_col, time_col, target_col : str, default "unique_id", "ds", "y"
        Column names of long frames, in and out.
"""


def statistical_doc(doc: str) -> str:
    """A statistical forecaster's docstring with its ``{series}`` and ``{common}`` marks filled."""
    return doc.replace("{series}", STATISTICAL_SERIES_DOC.strip("\n").lstrip()).replace(
        "{common}", STATISTICAL_PARAMS_DOC.strip("\n").lstrip())


#: blocks of series per process of a parallel fit: several, so that a block of slow series does not
#: leave the other processes idle at the end
BLOCKS_PER_WORKER = 4
#: magnitudes past which statsmodels' likelihoods leave float64 (squares overflow or underflow)
LARGEST, SMALLEST_SPREAD = 1e100, 1e-100


def failure_hint(y: np.ndarray) -> str:
    """What to do about a series statsmodels could not fit: rescale values of extreme magnitude, else check it."""
    top, spread = float(np.abs(y).max(initial=0.0)), float(np.ptp(y)) if len(y) else 0.0
    if top > LARGEST:
        return (f"its values reach {top:.3g}, beyond what statsmodels' likelihood computes in float64 (their "
                f"squares overflow): divide the series by a power of ten, e.g. {10.0 ** int(np.log10(top)):.0e}, and "
                f"multiply the forecasts back")
    if 0 < spread < SMALLEST_SPREAD:
        return (f"its values vary by {spread:.3g} only, below what statsmodels' likelihood resolves in float64: "
                f"multiply the series by a power of ten, e.g. {10.0 ** -int(np.log10(spread)):.0e}, and divide the "
                f"forecasts back")
    return "check the series (too short for its season, a few values far from the rest?), or give a simpler form"


class StatisticalForecaster(BaseForecaster):
    """A statsmodels model per series (module docstring)."""

    #: the kind of model of every series (``SeriesFit.form["kind"]``)
    kind = ""
    #: ``predict(h)`` takes any number of steps, not only the fitted ``h``
    forecasts_any_horizon = True

    def state_type(self) -> type:
        """The class of the fitted state: per-series models and their filter states."""
        return StatisticalState

    # ------------------------------------------------------------------ hooks of a subclass
    def minimum_length(self, m: int) -> tuple[int, str]:
        """The observations a series needs with a season of ``m`` steps, and why."""
        raise NotImplementedError

    def fit_series(self, panel, i: int):
        """The fitted :class:`~tsrsa.statistical.series_fit.SeriesFit` of series ``i`` of ``panel``
        (``fit``, and a series new at ``update(new_ids="add")`` or ``predict(df=...)``)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ the contract
    def check_params(self) -> None:
        super().check_params()
        check_int("season_length", self.season_length, allow_none=True)
        check_int("verbose", self.verbose, minimum=0)
        check_int("n_jobs", self.n_jobs, minimum=-1)
        if self.n_jobs == 0:
            raise ValueError("n_jobs=0 fits nothing: pass 1 (in turn), k > 1 processes, or -1 (every core)")

    def resolved_season(self, freq) -> int:
        """The season in steps: ``season_length``, else the first natural period of the frequency (24
        hourly, 7 daily, 12 monthly, 4 quarterly, ...), else 1 (integer time, yearly data)."""
        return season_steps(freq, self.season_length)

    def required_length(self, panel) -> tuple[int, str]:
        return self.minimum_length(self.resolved_season(panel.freq))

    def _fit(self, panel, **fit_options) -> None:
        self.season_length_ = self.resolved_season(panel.freq)
        need, _ = self.minimum_length(self.season_length_)
        fits = self.fit_each(panel)
        self.memory_ = StatisticalState.from_fits(panel, fits, need)

    def workers(self, n_series: int) -> int:
        """The processes a fit of ``n_series`` series uses: ``n_jobs`` (-1: every core), at most one per series."""
        jobs = getattr(self, "n_jobs", 1)
        if jobs == -1:
            jobs = os.cpu_count() or 1
        return max(1, min(int(jobs), n_series))

    def fit_each(self, panel) -> list:
        """The fitted model of every series of ``panel``, in order: in turn, or in ``n_jobs`` processes,
        each given contiguous blocks of series (:meth:`fit_block`); the first series that fails raises
        its error, as in turn."""
        workers = self.workers(panel.n_series)
        if workers == 1:
            return self.fit_block(panel)
        from joblib import Parallel, delayed

        blocks = np.array_split(np.arange(panel.n_series), min(panel.n_series, BLOCKS_PER_WORKER * workers))
        fitter = type(self)(**self.get_params())  # what a process needs: the arguments and the season, no state
        fitter.season_length_ = self.season_length_
        done = Parallel(n_jobs=workers)(delayed(fitter.fit_block)(panel.take(rows)) for rows in blocks)
        return [fit for block in done for fit in block]

    def fit_block(self, panel) -> list:
        """The fitted model of every series of ``panel``, in turn (one process's share of a fit)."""
        with statsmodels_calls(self):
            return [self.fit_series(panel, i) for i in range(panel.n_series)]

    def failed(self, panel, i: int, error: Exception) -> ValueError:
        """The ValueError for a series whose model statsmodels could not fit, with the likely cause."""
        return ValueError(f"series {format_id(panel.ids[i])}: {type(self).__name__} could not fit it ({error}); "
                          f"{failure_hint(panel.series(i))}")

    def forecast_windows(self, tails, loc, scale, h: int, covariates=None, *, series=None) -> dict[str, np.ndarray]:
        """Forecasts ``{"yhat": (n, h)}`` from input windows ``tails`` (n, T) with the fitted parameters.

        Each window is read as a series of its own: its model's initial state is set from the window as
        statsmodels sets it when a model meets new data (ETS: statsmodels' heuristic initial states; ARIMA:
        SARIMAX's initialisation, which follows from the parameters; Theta: smoothing from the first
        value), the fitted parameters run its filter over the window, and the forecast follows. A model
        whose terms depend on the position in the season (ARIMA's Fourier regressors, Theta's seasonal
        adjustment) cannot place a bare window and refuses it; ``predict(df=...)`` and ``cross_validate``,
        which know the timestamps, serve those. ``loc`` and ``scale`` are not read (the models read raw
        values).

        Parameters
        ----------
        tails : array (n, T)
            The windows, T at least the length a series needs (``memory_.tails.shape[1]``).
        loc, scale : array (n,)
            Not read.
        h : int
        covariates : None
            Statistical models take no covariates.
        series : array (n,) of int, optional
            The row in ``memory_.ids`` of the series whose parameters read each window; may be left out
            for a model of one series.
        """
        self.check_is_fitted()
        if covariates is not None:
            raise ValueError(f"{type(self).__name__} takes no covariates; call forecast_windows without them")
        tails = np.asarray(tails, dtype=np.float64)
        memory = self.memory_
        if tails.ndim != 2 or tails.shape[1] < memory.tails.shape[1]:
            raise ValueError(f"forecast_windows needs windows (n, T) of at least {memory.tails.shape[1]} values, "
                             f"got shape {tails.shape}")
        if series is None:
            if memory.n_series != 1:
                raise ValueError(f"this {type(self).__name__} holds {memory.n_series} series, each with its own "
                                 f"parameters: pass series= (n,), the row in memory_.ids of each window's series")
            rows = np.zeros(len(tails), dtype=np.int64)
        else:
            rows = np.asarray(series)
            if rows.shape != (len(tails),) or not np.issubdtype(rows.dtype, np.integer) \
                    or (rows < 0).any() or (rows >= memory.n_series).any():
                raise ValueError(f"series must hold one row of memory_.ids (0 to {memory.n_series - 1}) for each of "
                                 f"the {len(tails)} windows")
        with statsmodels_calls(self):
            return {"yhat": memory.window_forecasts(rows, tails, int(h))}

    def interval_cutoffs(self, panel, cutoffs: np.ndarray, h: int, levels: tuple[float, ...]) -> dict[str, np.ndarray]:
        """The model's own prediction intervals (``model_intervals``) of every level after positions ``cutoffs``
        (S, W) of every series of ``panel`` (the series this model was fitted on, from the same start):
        ``{column: (W * S, h)}``, window-major, as ``forecast_cutoffs`` (``cross_validate(level=...)``)."""
        self.check_is_fitted()
        if not self.model_intervals:
            raise ValueError(f"{type(self).__name__} has no intervals of its own: fit with conformal_windows=k for "
                             f"conformal ones")
        return self.memory_.intervals_at(self, panel, cutoffs, h, levels)

    @property
    def params_(self) -> pd.DataFrame:
        """One row per series: its id, the chosen form (``model``), the AIC of its fit and its fitted
        parameters under statsmodels' names (NaN where the form of a series has no such parameter)."""
        self.check_is_fitted()
        return self.memory_.describe(self.id_col)

    def restore_fitted(self, state, arrays, weights, device) -> None:
        super().restore_fitted(state, arrays, weights, device)
        self.season_length_ = self.resolved_season(self.freq_)
        kinds = {fit.form["kind"] for fit in self.memory_.fits}
        if kinds - {self.kind}:
            raise ValueError(f"the saved models are of kind {sorted(kinds)}, not a {type(self).__name__}'s "
                             f"{self.kind!r}")
