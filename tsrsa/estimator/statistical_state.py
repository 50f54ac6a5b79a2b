"""The fitted state of a statistical forecaster: one statsmodels model per series, and its filter state.

A statistical model's state is not a window of values: it is, per series, the fitted parameters, the
state of the model's filter after the last observation (ETS: level, trend and seasonal states;
ARIMA: the Kalman filter's predicted mean and covariance; Theta: the smoothed level) and the state
before the first one (:class:`~tsrsa.statistical.series_fit.SeriesFit`). :class:`StatisticalState`
keeps them with each series' id, first and last timestamps and last values, and answers what
:class:`~tsrsa.estimator.window_state.WindowState` answers for a window model, each call given the
model and returning a new state, never changing itself:

- ``for_frame(model, panel)`` (``predict(df=...)``): a known series that starts where its model was
  fitted from is run again from its fitted initial state over the frame (statsmodels'
  ``append(refit=False)``), so ``predict(df=train)`` is ``predict()`` after ``fit(train)``; a known
  series that starts elsewhere has its initial state set from the frame, parameters fixed
  (``apply(refit=False)``); a new id is fitted on its own history, as ``fit`` would;
- ``advance(model, panel, known)`` (``update``): the filter continued over the new observations from
  the stored state, parameters fixed, in O(new steps) (equal to statsmodels' ``append(refit=False)``);
  new series join at the end, fitted on their history;
- ``forecast(model, h)``: the next ``h`` steps of every series from its state, any ``h``;
- ``intervals(model, h, levels)``: the engine's own prediction intervals of those steps (ETS, ARIMA),
  scaled by the variance of each model's one-step errors, which ``fit`` measures and the calls above
  carry on as statsmodels' ``append``/``apply`` without refit re-estimate it;
- ``forecast_at(model, panel, cutoffs, h)`` (cross-validation, scoring): each series of ``panel``,
  which starts where its model was fitted from, filtered once from the fitted initial state with the
  fitted parameters, and forecast after each cutoff (nothing after a cutoff is read);
- ``to_files()`` / ``from_files(state, arrays)``: JSON (forms, counts) and flat arrays, no pickle.

The model functions of each kind live in :mod:`~tsrsa.statistical.ets_model`,
:mod:`~tsrsa.statistical.arima_model` and :mod:`~tsrsa.statistical.theta_model` (:data:`FAMILIES`).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tsrsa.data.index_encoding import decode_index, decode_times, encode_index, encode_times
from tsrsa.data.intervals import interval_columns
from tsrsa.data.validation import format_id
from tsrsa.estimator.base import quiet
from tsrsa.estimator.window_state import horizon_covariates
from tsrsa.statistical import arima_model, ets_model, theta_model
from tsrsa.statistical.series_fit import SeriesFit

#: the module of each kind of model (``SeriesFit.form["kind"]``)
FAMILIES = {"ets": ets_model, "arima": arima_model, "theta": theta_model}
#: the kinds whose module computes the engine's own prediction intervals (``intervals``)
INTERVAL_KINDS = ("ets", "arima", "theta")
#: the arrays of a saved model, each the series' arrays one after the other
SAVED_ARRAYS = ("params", "initial", "state")


@contextlib.contextmanager
def statsmodels_calls(model):
    """Where statsmodels runs for ``model``: its warnings hidden at ``verbose=0`` (:func:`quiet`), and
    BLAS on one thread (threadpoolctl, which scikit-learn brings): the small matrices of a model's
    filter and fit gain nothing from threads and lose much to starting them, the more so on a busy
    machine (a fit of a seasonal ARIMA took 0.07 s on one thread and 0.5 to 9 s on the default ones)."""
    # statsmodels puts "always" filters for its warnings first in line as it is imported: importing it
    # here, before quiet's "ignore" goes in front, keeps a first fit as silent as the next ones
    import statsmodels.tools.sm_exceptions  # noqa: F401

    with quiet(model.verbosity), contextlib.ExitStack() as stack:
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # pragma: no cover - installed with scikit-learn
            pass
        else:
            stack.enter_context(threadpool_limits(limits=1, user_api="blas"))
        yield


def family(fit: SeriesFit):
    """The module that runs ``fit`` (ValueError for a kind it does not know)."""
    kind = fit.form.get("kind")
    if kind not in FAMILIES:
        raise ValueError(f"unknown kind of statistical model {kind!r}")
    return FAMILIES[kind]


def steps_from(freq, first: pd.Index, start) -> np.ndarray:
    """(S,) grid steps from ``first`` to ``start`` (aligned; negative where ``start`` is earlier)."""
    first, start = pd.Index(first), pd.Index(start)
    ahead = np.asarray(start >= first)
    out = np.zeros(len(first), dtype=np.int64)
    if ahead.any():
        out[ahead] = freq.positions(start[ahead], first[ahead])
    if (~ahead).any():
        out[~ahead] = -freq.positions(first[~ahead], start[~ahead])
    return out


def check_values(fit: SeriesFit, y: np.ndarray, panel, i: int) -> None:
    """ValueError naming the series and timestamp of the first value of series ``i`` of ``panel`` (``y``)
    that its model cannot take (a value <= 0 for a multiplicative form)."""
    bad = family(fit).first_bad(fit, y)
    if bad >= 0:
        when = panel.freq.shift(pd.Index(panel.first[i:i + 1]), [bad])[0]
        name = family(fit).describe(fit)[0]
        raise ValueError(f"series {format_id(panel.ids[i])} has the value {y[bad]:g} at {when}, but its model "
                         f"{name} is multiplicative and takes only positive values: fix or fill the value, or "
                         f"refit with an additive form (error='add', seasonal 'add' or None)")


@dataclass(frozen=True)
class StatisticalState:
    """Per series: id, first and last timestamps, last values and its fitted model (module docstring)."""

    ids: pd.Index  # (S,)
    first: pd.Index  # (S,) the first timestamp each model has seen
    last: pd.Index  # (S,) the last one
    tails: np.ndarray  # (S, T) float64: the last T values (T: the fewest a series needs)
    fits: tuple  # (S,) SeriesFit

    @property
    def n_series(self) -> int:
        return len(self.ids)

    @property
    def loc(self) -> np.ndarray:
        """(S,) zeros: a statistical model reads raw values."""
        return np.zeros(self.n_series)

    @property
    def scale(self) -> np.ndarray:
        """(S,) ones: a statistical model reads raw values."""
        return np.ones(self.n_series)

    @classmethod
    def from_fits(cls, panel, fits, width: int) -> "StatisticalState":
        """The state of ``panel``'s series with their fitted models ``fits``."""
        return cls(panel.ids, pd.Index(panel.first), pd.Index(panel.last), panel.tails(width), tuple(fits))

    def append(self, other: "StatisticalState") -> "StatisticalState":
        """This state followed by ``other``'s series."""
        return StatisticalState(self.ids.append(other.ids), self.first.append(other.first),
                                self.last.append(other.last), np.concatenate([self.tails, other.tails]),
                                self.fits + other.fits)

    # ------------------------------------------------------------------ new data
    def for_frame(self, model, panel) -> "StatisticalState":
        """The state of ``panel``'s series (``predict(df=...)``; module docstring)."""
        with statsmodels_calls(model):
            known = self.ids.get_indexer(panel.ids)  # (S_panel,) row here, -1 for a new id
            seen = known >= 0
            offset = np.zeros(panel.n_series, dtype=np.int64)
            if seen.any():
                offset[seen] = steps_from(panel.freq, self.first.take(known[seen]), pd.Index(panel.first)[seen])
            fits = []
            for i in range(panel.n_series):
                if known[i] < 0:
                    fits.append(model.fit_series(panel, i))
                    continue
                fit, y = self.fits[known[i]], panel.series(i)
                check_values(fit, y, panel, i)
                runner = family(fit)
                fits.append(runner.replay(fit, y) if offset[i] == 0 else runner.restart(fit, y, int(offset[i])))
            return StatisticalState.from_fits(panel, fits, self.tails.shape[1])

    def advance(self, model, panel, known: np.ndarray) -> "StatisticalState":
        """The state after ``update``: ``panel`` holds new observations, ``known`` (S_panel,) the row of
        each of its series here (-1: a new series, its whole history in ``panel``, fitted on it)."""
        with statsmodels_calls(model):
            T = self.tails.shape[1]
            fits, tails, last = list(self.fits), self.tails.copy(), pd.Series(self.last)
            seen = np.flatnonzero(known >= 0)
            for j in seen:
                i, y = int(known[j]), panel.series(int(j))
                check_values(fits[i], y, panel, int(j))
                fits[i] = family(fits[i]).run(fits[i], y)
                tails[i] = np.concatenate([tails[i], y])[-T:]
            if seen.size:
                last.iloc[known[seen]] = pd.Index(panel.last).take(seen)
            out = StatisticalState(self.ids, self.first, pd.Index(last), tails, tuple(fits))
            fresh = np.flatnonzero(known < 0)
            return out.append(self.for_frame(model, panel.take(fresh))) if fresh.size else out

    # ------------------------------------------------------------------ forecasting
    def forecast(self, model, h: int, future_df=None) -> dict[str, np.ndarray]:
        """Forecasts ``{"yhat": (S, h)}`` after the end of every series."""
        horizon_covariates(model, self.ids, self.last, h, future_df)  # refuses a future_df
        with statsmodels_calls(model):
            return {"yhat": np.stack([family(fit).forecast(fit, h) for fit in self.fits]).reshape(-1, h)}

    def check_intervals(self, model, fit: SeriesFit, i: int) -> None:
        """ValueError unless the model ``fit`` of series ``i`` gives its own intervals: a kind without them, or
        a model saved by a release that did not keep its one-step errors, which scale them (a Theta model
        before 0.20.1)."""
        if fit.form["kind"] not in INTERVAL_KINDS:
            raise ValueError(f"{type(model).__name__} has no intervals of its own: fit with conformal_windows=k "
                             f"for conformal ones")
        if not np.isfinite(fit.noise_variance):
            raise ValueError(f"series {format_id(self.ids[i])}: its model was saved without its one-step errors (a "
                             f"release before the models' own intervals), which scale the intervals: refit, or "
                             f"pass its history as predict(df=...)")

    def intervals(self, model, h: int, levels: tuple[float, ...]) -> dict[str, np.ndarray]:
        """``{column: (S, h)}`` the engine's own prediction intervals of every level over the next ``h``
        steps of every series (``yhat_lo_80``, ``yhat_hi_80``, ...; :func:`ets_model.intervals`,
        :func:`arima_model.intervals`), from each model's state and error variance (a ValueError from
        :meth:`check_intervals` for the first series whose model has none)."""
        bounds = np.empty((len(levels), 2, self.n_series, h))
        with statsmodels_calls(model):
            for i, fit in enumerate(self.fits):
                self.check_intervals(model, fit, i)
                bounds[:, :, i] = family(fit).intervals(fit, h, levels)
        out = {}
        for level, (lower, upper) in zip(levels, bounds):
            out.update(zip(interval_columns(level), (lower, upper)))
        return out

    def intervals_at(self, model, panel, cutoffs: np.ndarray, h: int,
                     levels: tuple[float, ...]) -> dict[str, np.ndarray]:
        """The engine's intervals of every level after positions ``cutoffs`` (S, W) of every series of ``panel``
        (as :meth:`forecast_at`: each series from its fitted start, nothing after a cutoff read), each from
        the model's state there with its fitted error variance: ``{column: (W * S, h)}``, window-major."""
        rows = self.ids.get_indexer(panel.ids)
        W = cutoffs.shape[1]
        bounds = np.empty((len(levels), 2, W, panel.n_series, h))
        with statsmodels_calls(model):
            for i in range(panel.n_series):
                fit = self.fits[rows[i]]
                self.check_intervals(model, fit, rows[i])
                y = panel.series(i)[:int(cutoffs[i].max()) + 1]
                bounds[:, :, :, i] = family(fit).intervals_at(fit, y, cutoffs[i], h, levels).transpose(1, 2, 0, 3)
        out = {}
        for level, (lower, upper) in zip(levels, bounds):
            out.update(zip(interval_columns(level), (lower.reshape(W * panel.n_series, h),
                                                     upper.reshape(W * panel.n_series, h))))
        return out

    def forecast_at(self, model, panel, cutoffs: np.ndarray, h: int) -> dict[str, np.ndarray]:
        """Forecasts after positions ``cutoffs`` (S, W) of every series of ``panel`` (series of this state,
        each from the first timestamp its model was fitted from): ``{"yhat": (W * S, h)}``, window-major."""
        rows = self.ids.get_indexer(panel.ids)
        if (rows < 0).any():
            raise ValueError(f"series {format_id(panel.ids[int(np.argmax(rows < 0))])} is not one of this model's "
                             f"series: forecasts at cutoffs run each fitted model over its own series")
        moved = np.flatnonzero(self.first.take(rows) != pd.Index(panel.first))
        if moved.size:
            i = int(moved[0])
            raise ValueError(f"series {format_id(panel.ids[i])} starts at {panel.first[i]}, but its model was fitted "
                             f"from {self.first[rows[i]]}: forecasts at cutoffs run the fitted model from its first "
                             f"observation; pass each series from there")
        W = cutoffs.shape[1]
        out = np.empty((W, panel.n_series, h))
        with statsmodels_calls(model):
            for i in range(panel.n_series):
                fit, y = self.fits[rows[i]], panel.series(i)[:int(cutoffs[i].max()) + 1]  # nothing after a cutoff
                check_values(fit, y, panel, i)
                out[:, i] = family(fit).forecasts_at(fit, y, cutoffs[i], h)
        return {"yhat": out.reshape(W * panel.n_series, h)}

    def window_forecasts(self, rows: np.ndarray, windows: np.ndarray, h: int) -> np.ndarray:
        """(n, h) forecasts from ``windows`` (n, T), window k read by the model of series ``rows[k]``
        with its initial state set from the window (``forecast_windows``)."""
        out = np.empty((len(windows), h))
        for k, (row, y) in enumerate(zip(rows, windows)):
            fit = self.fits[row]
            bad = family(fit).first_bad(fit, y)
            if bad >= 0:
                raise ValueError(f"window {k} has the value {y[bad]:g} at its position {bad}, but the model of "
                                 f"series {format_id(self.ids[row])} is multiplicative: it takes only positive values")
            moved = family(fit).restart(fit, y, None)
            out[k] = family(fit).forecast(moved, h)
        return out

    def kept_history(self, model) -> pd.DataFrame:
        """Which history bounded caches keep: a statistical model has no cache (its state is ``params_``
        and the filter state), only the streaming configuration of the transformers has."""
        raise ValueError(f"kept_history() is about the bounded caches of a streaming transformer; a "
                         f"{type(model).__name__} keeps each series' fitted model and filter state instead "
                         f"(see params_)")

    def describe(self, id_col: str) -> pd.DataFrame:
        """One row per series: its id, chosen form ("model"), AIC and named parameters."""
        rows = []
        for fit in self.fits:
            name, values = family(fit).describe(fit)
            rows.append({"model": name, "aic": fit.aic, **values})
        out = pd.DataFrame(rows, index=pd.RangeIndex(self.n_series))
        out.insert(0, id_col, self.ids)
        return out

    # ------------------------------------------------------------------ saving
    def to_files(self) -> tuple[dict, dict]:
        """(JSON-able state, arrays) of this state for a saved model."""
        state = {"ids": encode_index(self.ids), "first": encode_times(self.first), "last": encode_times(self.last),
                 "statistical": [fit.to_json() for fit in self.fits]}
        arrays = {"tails": self.tails}
        for name in SAVED_ARRAYS:
            parts = [getattr(fit, name) for fit in self.fits]
            arrays[f"statistical.{name}"] = np.concatenate(parts) if parts else np.empty(0)
            arrays[f"statistical.{name}_sizes"] = np.array([len(p) for p in parts], dtype=np.int64)
        return state, arrays

    @classmethod
    def from_files(cls, state: dict, arrays: dict) -> "StatisticalState":
        """The state ``to_files`` wrote (KeyError/TypeError/ValueError when it is not one)."""
        ids, first, last = decode_index(state["ids"]), decode_times(state["first"]), decode_times(state["last"])
        saved, tails = state["statistical"], np.asarray(arrays["tails"], dtype=np.float64)
        S = len(ids)
        if not isinstance(saved, list) or len(saved) != S or len(first) != S or len(last) != S or tails.ndim != 2 \
                or len(tails) != S:
            raise ValueError(f"the saved series ({S} ids) and their models, timestamps or values do not match")
        split = {}
        for name in SAVED_ARRAYS:
            flat, sizes = np.asarray(arrays[f"statistical.{name}"]), np.asarray(arrays[f"statistical.{name}_sizes"])
            if sizes.shape != (S,) or (sizes < 0).any() or sizes.sum() != len(flat):
                raise ValueError(f"the saved array 'statistical.{name}' does not hold the {S} series' models")
            split[name] = np.split(flat, np.cumsum(sizes)[:-1]) if S else []
        fits = []
        for i, data in enumerate(saved):
            fit = SeriesFit.from_saved(data, *(split[name][i] for name in SAVED_ARRAYS))
            family(fit).check(fit)
            fits.append(fit)
        return cls(ids, pd.Index(first), pd.Index(last), tails, tuple(fits))
