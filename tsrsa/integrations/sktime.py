"""Every tsrsa forecaster as an sktime forecaster: ``TsrsaForecaster(estimator)``.

sktime reaches neuralforecast and pytorch-forecasting through its own adapters; this module is
tsrsa's: one sktime ``BaseForecaster`` that wraps any tsrsa forecaster instance (the neural ones,
the seasonal naive, the statistical ones), so that sktime's ``fit(y, X, fh)``, ``predict``,
``predict_interval``, ``predict_quantiles``, ``update``, ``update_predict``, ``evaluate``, pipelines
and tuners (``estimator__d_model`` names a parameter of the wrapped model) work on it.

How sktime's contract maps onto tsrsa's:

- **Data.** y is one series (pd.Series / pd.DataFrame), a panel (2-level row MultiIndex) or a
  hierarchy (3 or more levels), with a DatetimeIndex, PeriodIndex or integer time level. Every
  (instance, column) pair becomes one series of one global tsrsa model (a multivariate y is read
  channel by channel, as tsrsa reads a wide frame). Series may end at different times.
- **Horizon.** A tsrsa model has a fixed horizon ``h``; the adapter sets it at ``fit`` from the
  ``fh`` sktime passes there (``requires-fh-in-fit``): the largest step, so a sparse ``fh=[2, 5]``
  trains ``h=5`` and returns steps 2 and 5. Relative steps count from each series' own end; an
  absolute ``fh`` (timestamps, periods, integers) gives those times for every series. In-sample
  steps (``fh <= 0``, the end and before) are the model's one-step-ahead fitted values over all the
  data seen (tsrsa's ``fitted(step=1)``), NaN within a series' first look-back; intervals are
  out-of-sample only (``capability:pred_int:insample`` is False).
- **Exogenous X.** X's columns are tsrsa covariates of every series (variable) of their instance.
  The wrapped estimator's declared covariates (``covariates=tsrsa.Covariates(...)``): ``past`` (read up
  to each series' end: X in ``fit`` and ``update``), ``future`` (also read for the horizon: X in
  ``predict``) and ``static`` (one value per instance) name X's columns; when it declares none, every
  column of X given to ``fit`` becomes a known-future covariate (sktime's reading of X: known for
  the forecast times too). Other X columns are ignored; a model without covariates
  (``SeasonalNaiveForecaster``) ignores X (``capability:exogenous`` False).
- **Update.** ``update(y, X, update_params=False)`` is tsrsa's ``update``: the new observations enter
  the model's state without refitting (a streaming model advances its recurrent state; a calibrated
  model refreshes its conformal residuals); rows at or before a series' last seen time are dropped,
  new instances are taken in. ``update_params=True`` (sktime's default) means the parameters are
  updated: the model is refitted on everything seen, unless ``refit_on_update=False``, which makes it
  the same state update.
- **Intervals and quantiles.** ``predict_interval(coverage=c)`` is tsrsa's split-conformal interval
  ``predict(level=[100 * c])`` for an estimator fitted with ``conformal_windows=k``; for one with
  ``loss="quantile"`` and no calibration, the trained quantiles ``(1 - c) / 2`` and ``(1 + c) / 2``.
  ``predict_quantiles(alpha=a)`` reads the trained quantile ``a`` of a quantile loss (or of a
  distribution loss with ``quantiles=``), else the conformal bound of coverage ``|1 - 2a|`` (the
  lower one below 0.5, ``yhat`` at 0.5). A level the model cannot give (too few calibration
  windows, an untrained quantile) is a ValueError saying why.
- **Errors.** sktime checks y and X before the adapter sees them. Where it refuses a frame it cannot
  read ("Unsupported input data type"), the adapter names the fault instead: a time that comes twice
  in a series, a time index out of order (sort it), or sktime's own reason for the format the frame
  has (:mod:`tsrsa.integrations.sktime_inputs`). sktime's other refusals come through as sktime words
  them, and they name their fault: NaN in y ("cannot handle missing data"; give the estimator a
  ``fill=`` to accept it), categorical values in y. Everything after sktime's checks is tsrsa's own
  validation, with its messages (series, timestamp and fix; a series is named by its instance levels
  and variable, "north/shop_1/sales", and an unnamed pd.Series is the series 0).

Needs the ``sktime`` extra: ``pip install 'tsrsa[sktime]'``.

Examples
--------
>>> from sktime.datasets import load_airline
>>> from tsrsa import SeasonalNaiveForecaster
>>> from tsrsa.integrations.sktime import TsrsaForecaster
>>> y = load_airline()
>>> forecaster = TsrsaForecaster(SeasonalNaiveForecaster(h=1, season_length=12, conformal_windows=4))
>>> forecaster.fit(y, fh=[1, 2, 3]).predict().round(1).tolist()
[417.0, 391.0, 419.0]
>>> forecaster.predict_interval(coverage=0.8).shape
(3, 2)
"""
from __future__ import annotations

import numpy as np
import pandas as pd

try:
    from sktime.forecasting.base import BaseForecaster
except ImportError as err:  # pragma: no cover - the extra is part of the dev install
    raise ImportError(
        f"tsrsa.integrations.sktime needs sktime ({err}); install it with: pip install 'tsrsa[sktime]'"
    ) from err

from tsrsa.estimator.base import BaseForecaster as TsrsaBaseForecaster
from tsrsa.estimator.conformal import interval_columns
from tsrsa.estimator.params import quantile_column
from tsrsa.integrations.sktime_frames import (
    SeriesTable, TimeAxis, conformal_level, covariate_columns, declares_covariates, select, trained,
)
from tsrsa.integrations.sktime_inputs import named_faults

#: the row formats of y and X the adapter reads (one series, a panel, a hierarchy)
FRAME_MTYPES = ["pd.DataFrame", "pd-multiindex", "pd_multiindex_hier"]


def capability_tags(estimator) -> dict:
    """The sktime tags that depend on the wrapped estimator (None: ``RSAForecaster``'s defaults)."""
    if estimator is None:
        return {"capability:exogenous": True, "capability:pred_int": False, "capability:missing_values": False}
    return {
        "capability:exogenous": bool(getattr(estimator, "takes_covariates", False)),
        "capability:pred_int": (getattr(estimator, "conformal_windows", None) is not None
                                or getattr(estimator, "loss", None) == "quantile"
                                or getattr(estimator, "quantiles", None) is not None),
        "capability:missing_values": getattr(estimator, "fill", None) is not None,
    }


class TsrsaForecaster(BaseForecaster):
    """A tsrsa forecaster in sktime's forecaster contract (the module docstring says how each part maps).

    Parameters
    ----------
    estimator : tsrsa forecaster, optional
        The model to fit, e.g. ``RSAForecaster(h=1, input_size=96)``, left unfitted (a clone is
        fitted as ``estimator_``). Its ``h`` is replaced by the horizon ``fh`` asks for; its other
        parameters are used as they are. None: ``RSAForecaster()`` with its defaults.
    refit_on_update : bool, default True
        What ``update(update_params=True)`` does: refit on all the data seen (True), or only take the
        new observations into the model's state, as ``update_params=False`` always does (False).

    Attributes
    ----------
    estimator_ : tsrsa forecaster
        The fitted clone of ``estimator``.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from tsrsa import DLinearForecaster
    >>> from tsrsa.integrations.sktime import TsrsaForecaster
    >>> index = pd.MultiIndex.from_product([["a", "b"], pd.date_range("2024-01-01", periods=40, freq="D")])
    >>> y = pd.DataFrame({"sales": np.sin(np.arange(80) / 3) + 5}, index=index)
    >>> model = TsrsaForecaster(DLinearForecaster(h=1, input_size=8, max_epochs=2, random_state=0))
    >>> model.fit(y, fh=[1, 2]).predict().shape
    (4, 1)
    """

    _tags = {
        "authors": ["tsrsa developers"],
        "maintainers": ["tsrsa developers"],
        "y_inner_mtype": FRAME_MTYPES,
        "X_inner_mtype": FRAME_MTYPES,
        "capability:multivariate": True,
        "capability:exogenous": True,
        "capability:insample": True,
        "capability:pred_int": True,
        "capability:pred_int:insample": False,
        "capability:missing_values": False,
        "capability:non_contiguous_X": False,
        "capability:categorical_in_X": True,
        "capability:unequal_length": True,
        "capability:update": True,
        "requires-fh-in-fit": True,
        "X-y-must-have-same-index": True,
        "fit_is_empty": False,
    }
    # the adapter keeps the history it refits on itself, so sktime's own pool of y and X (``_y``, ``_X``,
    # kept under the ``remember_data`` config) is off; it starts empty when a user turns it on
    _config = {"remember_data": False}
    _y = None
    _X = None

    def __init__(self, estimator=None, refit_on_update=True):
        self.estimator = estimator
        self.refit_on_update = refit_on_update
        super().__init__()
        self.set_tags(**capability_tags(estimator))

    # ------------------------------------------------------------------ sktime's calls, faults named
    def fit(self, y, X=None, fh=None):
        with named_faults(y=y, X=X):
            return super().fit(y, X=X, fh=fh)

    def predict(self, fh=None, X=None):
        with named_faults(X=X):
            return super().predict(fh=fh, X=X)

    def predict_interval(self, fh=None, X=None, coverage=0.90):
        with named_faults(X=X):
            return super().predict_interval(fh=fh, X=X, coverage=coverage)

    def predict_quantiles(self, fh=None, X=None, alpha=None):
        with named_faults(X=X):
            return super().predict_quantiles(fh=fh, X=X, alpha=alpha)

    def update(self, y, X=None, update_params=True):
        with named_faults(y=y, X=X):
            return super().update(y, X=X, update_params=update_params)

    # ------------------------------------------------------------------ fit
    def _fit(self, y, X, fh):
        model = self.wrapped()
        if not isinstance(self.refit_on_update, (bool, np.bool_)):
            raise TypeError(f"refit_on_update={self.refit_on_update!r} must be True or False")
        axis = TimeAxis.of(y.index)
        params = {"h": int(max(1, self.relative_steps(fh).max()))}  # in-sample steps need no horizon
        if axis.kind == "integer" and axis.step != 1 and model.freq is None:
            params["freq"] = axis.step  # integer time in steps of k: tsrsa's freq=k
        read = covariate_columns(model, X)
        if model.takes_covariates and X is not None and not declares_covariates(model):
            params["covariates__future"] = list(read.values())  # no declaration: X is known for the horizon too
        fitted = model.clone().set_params(**params)
        fitted.check_params()
        table, history = SeriesTable.of(y).long(y, select(X, read), axis, fitted.frame_spec)
        panel = fitted.to_panel(history)
        if not fh.is_relative:  # an absolute horizon: the farthest step of any series
            fitted.set_params(h=self.farthest_step(fh, axis, panel))
            fitted.check_params()
        fitted.fit_panel(panel)
        self.estimator_ = fitted
        self._axis, self._table, self._read = axis, table, read
        self._history = history
        self._last = history.groupby(fitted.id_col)[fitted.time_col].max()
        return self

    def wrapped(self):
        """The estimator to clone: ``estimator``, checked, or ``RSAForecaster()``."""
        if self.estimator is None:
            from tsrsa.forecasters.rsa import RSAForecaster

            return RSAForecaster(h=1)
        if not isinstance(self.estimator, TsrsaBaseForecaster):
            raise TypeError(f"TsrsaForecaster wraps a tsrsa forecaster (RSAForecaster, TransformerForecaster, "
                            f"LSTMForecaster, DLinearForecaster, SeasonalNaiveForecaster, ...); got "
                            f"{type(self.estimator).__name__}")
        return self.estimator

    def farthest_step(self, fh, axis: TimeAxis, panel) -> int:
        """The largest number of steps from a series' end to a time of the absolute ``fh``."""
        targets = np.asarray(axis.to_tsrsa(fh.to_absolute_index(self.cutoff)))
        ends = np.asarray(panel.last)
        steps = panel.freq.positions(np.tile(targets, len(ends)), np.repeat(ends, len(targets)))
        return int(max(1, steps.max()))  # in-sample times (and times off the grid) need no horizon

    def relative_steps(self, fh) -> np.ndarray:
        """The steps of ``fh`` from the cutoff, as integers (<= 0: in-sample)."""
        return np.asarray(fh.to_relative(self.cutoff).to_numpy(), dtype=np.int64)

    # ------------------------------------------------------------------ predict
    def _predict(self, fh, X):
        forecast = self.forecast(fh, X)
        return self._table.wide(forecast, {None: "yhat"}, self._axis, self.estimator_.frame_spec)

    def _predict_interval(self, fh, X, coverage):
        model = self.estimator_
        if model.conformal_ is not None:
            levels = [conformal_level(c) for c in coverage]
            forecast = self.forecast(fh, X, level=levels)
            columns = {}
            for c, level in zip(coverage, levels):
                columns[(c, "lower")], columns[(c, "upper")] = interval_columns(level)
        else:
            forecast = self.forecast(fh, X)
            columns = {}
            for c in coverage:
                columns[(c, "lower")] = self.quantile_name(forecast, (1 - c) / 2, f"coverage={c}")
                columns[(c, "upper")] = self.quantile_name(forecast, (1 + c) / 2, f"coverage={c}")
        return self._table.wide(forecast, columns, self._axis, model.frame_spec)

    def _predict_quantiles(self, fh, X, alpha):
        model = self.estimator_
        forecast = self.forecast(fh, X)
        conformal = [a for a in alpha if not trained(forecast, a)]
        if conformal and model.conformal_ is not None:
            levels = sorted({conformal_level(abs(1 - 2 * a)) for a in conformal})
            forecast = self.forecast(fh, X, level=levels)
        columns = {}
        for a in alpha:
            if trained(forecast, a) or model.conformal_ is None:
                columns[(a,)] = self.quantile_name(forecast, a, f"alpha={a}")
            else:  # the conformal bound of coverage |1 - 2a|: the lower one below the median
                lower, upper = interval_columns(conformal_level(abs(1 - 2 * a)))
                columns[(a,)] = lower if a < 0.5 else upper
        return self._table.wide(forecast, columns, self._axis, model.frame_spec)

    def quantile_name(self, forecast: pd.DataFrame, q: float, asked: str) -> str:
        """The column of ``forecast`` holding the trained quantile ``q`` (``yhat`` for the median)."""
        if np.isclose(q, 0.5):
            return "yhat"
        name = quantile_column(q)
        if name not in forecast.columns:
            trained = sorted(float(c[len("yhat_q"):]) / 100 for c in forecast.columns if c.startswith("yhat_q"))
            raise ValueError(f"{asked} needs the quantile {q:g}, which {type(self.estimator_).__name__} was not "
                             f"trained for (its quantiles: {trained} and 0.5); add it to quantiles=, or fit with "
                             f"conformal_windows=k for conformal intervals at any level")
        return name

    def reads_future(self) -> bool:
        """Whether the fitted model reads known-future covariates (X at predict)."""
        return bool(self.estimator_.declared_covariates().future)

    def forecast(self, fh, X, level=None) -> pd.DataFrame:
        """The rows ``fh`` asks for, as a tsrsa frame (id, time, ``yhat``, ...): forecasts (with the columns
        of ``level``) after each series' end, one-step-ahead fitted values at or before it."""
        model = self.estimator_
        spec = model.frame_spec
        if fh.is_relative:  # steps from each series' own end
            steps = self.relative_steps(fh)
            ahead, behind = (steps > 0).any(), (steps <= 0).any()
        else:  # the same times for every series
            targets = np.asarray(self._axis.to_tsrsa(fh.to_absolute_index(self.cutoff)))
            after = targets[None, :] > self._last.to_numpy()[:, None]  # (S, T) after the series' end
            ahead, behind = after.any(), (~after).any()
        parts = []
        if ahead:
            forecast = model.predict(future_df=self.future_frame(X), level=level)
            if fh.is_relative:
                step = forecast.groupby(spec.id_col, sort=False).cumcount().to_numpy() + 1
                parts.append(forecast[np.isin(step, steps)])
            else:
                chosen = forecast[np.isin(forecast[spec.time_col].to_numpy(), targets)]
                got = chosen.groupby(spec.id_col).size().reindex(self._last.index, fill_value=0).to_numpy()
                if (got < after.sum(axis=1)).any():
                    raise ValueError(f"fh holds times after a series' end that its forecasts do not reach: times "
                                     f"off the data's frequency ({model.freq_.describe()}) or beyond h={model.h}; "
                                     f"give times on that grid, or refit with the fh to forecast")
                parts.append(chosen)
        if behind:
            history = self._history
            if fh.is_relative:
                back = history.groupby(spec.id_col).cumcount(ascending=False).to_numpy()  # 0 at each end
                rows = np.isin(-back, steps)
            else:
                rows = np.isin(history[spec.time_col].to_numpy(), targets)
            parts.append(self.in_sample(history[rows]))
        return pd.concat(parts, ignore_index=True)

    def in_sample(self, rows: pd.DataFrame) -> pd.DataFrame:
        """The one-step-ahead fitted values (tsrsa's ``fitted(step=1)``, over all the data seen) at the id and
        time of each of ``rows``; NaN where a series has none (within its first look-back)."""
        model = self.estimator_
        keys = [model.id_col, model.time_col]
        fitted = model.fitted(df=self._history, step=1)[[*keys, "yhat"]]
        return rows[keys].merge(fitted, on=keys, how="left")

    def future_frame(self, X):
        """X at predict as the fitted model's ``future_df`` (None for a model without known-future covariates)."""
        model = self.estimator_
        if not self.reads_future():
            return None
        if X is None:
            raise ValueError(f"{type(model).__name__} reads the known-future covariates "
                             f"{list(model.declared_covariates().future)}: pass X to predict with their values at "
                             f"the forecast times")
        future = model.declared_covariates().future
        read = {label: name for label, name in self._read.items() if name in future}
        return self._table.future(select(X, read), self._axis, model.frame_spec, future)

    # ------------------------------------------------------------------ update
    def _update(self, y, X=None, update_params=True):
        model = self.estimator_
        spec = model.frame_spec
        self._table.check_columns(y)
        if self._read and X is None:
            raise ValueError(f"this model was fitted with the covariates {list(self._read)} of X: pass X with "
                             f"their values at the new times to update")
        table, rows = self._table.long(y, select(X, self._read), self._axis, spec)
        last = self._last.reindex(rows[spec.id_col]).to_numpy()
        new = rows[pd.isna(last) | (rows[spec.time_col].to_numpy() > last)].reset_index(drop=True)
        if new.empty:
            return self
        if update_params and self.refit_on_update:
            history = pd.concat([self._history, new], ignore_index=True)
            model = model.clone().fit(history)
        else:
            model.update(new, new_ids="add")
            history = pd.concat([self._history, new], ignore_index=True)
        self.estimator_, self._table, self._history = model, table, history
        self._last = history.groupby(spec.id_col)[spec.time_col].max()
        return self

    # ------------------------------------------------------------------ sktime's test instances
    @classmethod
    def get_test_params(cls, parameter_set="default"):
        """Small, fast instances for sktime's ``check_estimator``: the seasonal naive (point forecasts,
        no X), and a one-epoch DLinear with a quantile loss holding every level sktime's checks ask
        for (intervals and quantiles from the trained quantiles; X as known-future covariates), without
        the statistical start (whose fits would outlast the epoch many times over)."""
        from tsrsa.forecasters.dlinear import DLinearForecaster
        from tsrsa.forecasters.naive import SeasonalNaiveForecaster

        levels = [0.05, 0.1, 0.125, 0.25, 0.375, 0.45, 0.475, 0.525, 0.55, 0.625, 0.75, 0.875, 0.9, 0.95]
        return [
            {"estimator": SeasonalNaiveForecaster(h=1, season_length=2)},
            {"estimator": DLinearForecaster(h=1, input_size=4, max_epochs=1, batch_size=16, loss="quantile",
                                            quantiles=levels, start=None, random_state=0),
             "refit_on_update": False},
        ]


__all__ = ["TsrsaForecaster", "capability_tags"]
