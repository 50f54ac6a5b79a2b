"""sktime's frames to tsrsa's long frames and back, for :mod:`tsrsa.integrations.sktime` (no sktime import).

sktime hands a forecaster a frame whose row index ends in the time (``(instance levels..., time)``
for panels and hierarchies, the time alone for one series) and whose columns are the variables.
tsrsa reads a long frame (id, time, target, covariate columns). Here:

- :class:`TimeAxis`: the time level as tsrsa reads it. Datetimes stay datetimes, periods become the
  timestamps of their start (and come back as periods), integers stay integers (their step is
  kept for ``freq=``).
- :class:`SeriesTable`: every (instance, variable) pair is one tsrsa series, numbered in order of
  appearance (instance position * number of variables + variable position) and named by its
  instance levels and variable, so that tsrsa's messages name it ("north/shop_1/sales"). It writes
  the long frames (history and known-future rows) and turns a tsrsa forecast frame back into
  sktime's shape.
- :func:`covariate_columns` / :func:`select`: which columns of X a model reads, under which names.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tsrsa.estimator.params import quantile_column


# ---------------------------------------------------------------------- time
@dataclass(frozen=True)
class TimeAxis:
    """The kind of sktime's time index ("datetime", "period", "integer"), the period frequency, and the
    step of integer time."""

    kind: str
    period_freq: object = None
    step: int = 1

    @classmethod
    def of(cls, index: pd.Index) -> "TimeAxis":
        """The axis of ``index`` (a frame's row index; its last level is the time)."""
        times = time_level(index)
        if isinstance(times, pd.PeriodIndex):
            return cls("period", times.freq)
        if isinstance(times, pd.DatetimeIndex):
            return cls("datetime")
        if pd.api.types.is_integer_dtype(times.dtype):
            return cls("integer", step=integer_step(index))
        raise TypeError(f"tsrsa reads a time index of datetimes, periods or integers; this one holds "
                        f"{times.dtype} values ({type(times).__name__}): set a DatetimeIndex, PeriodIndex or "
                        f"integer index on the time level")

    def to_tsrsa(self, times: pd.Index):
        """``times`` (sktime's) as tsrsa's ``ds`` values."""
        times = pd.Index(times)
        if self.kind == "period":
            if not isinstance(times, pd.PeriodIndex):
                raise TypeError(f"the model was fitted on a PeriodIndex; got {type(times).__name__} time values")
            return times.to_timestamp(how="start")
        if self.kind == "datetime" and not isinstance(times, pd.DatetimeIndex):
            raise TypeError(f"the model was fitted on a DatetimeIndex; got {type(times).__name__} time values")
        if self.kind == "integer" and not pd.api.types.is_integer_dtype(times.dtype):
            raise TypeError(f"the model was fitted on integer time; got {times.dtype} time values")
        return times

    def from_tsrsa(self, ds) -> pd.Index:
        """tsrsa's ``ds`` values as sktime's time index."""
        if self.kind == "period":
            return pd.DatetimeIndex(ds).to_period(self.period_freq)
        return pd.Index(ds)


def time_level(index: pd.Index) -> pd.Index:
    """The time values of a row index: its last level."""
    return index.get_level_values(-1) if isinstance(index, pd.MultiIndex) else index


def instance_keys(index: pd.Index) -> pd.Index:
    """Each row's instance as a tuple of its instance levels (``()`` for a single series)."""
    if not isinstance(index, pd.MultiIndex):
        return pd.Index([()] * len(index), dtype=object, tupleize_cols=False)
    levels = [index.get_level_values(k) for k in range(index.nlevels - 1)]
    return pd.Index(list(zip(*levels)), dtype=object, tupleize_cols=False)


def integer_step(index: pd.Index) -> int:
    """The spacing of integer time: the greatest common divisor of the steps within each instance."""
    times = np.asarray(time_level(index), dtype=np.int64)
    codes = pd.factorize(instance_keys(index))[0]
    order = np.lexsort((times, codes))
    gaps = np.diff(times[order])[np.diff(codes[order]) == 0]
    gaps = gaps[gaps > 0]
    return int(np.gcd.reduce(gaps)) if gaps.size else 1


# ---------------------------------------------------------------------- series
@dataclass(frozen=True)
class SeriesTable:
    """The series of a fitted adapter: instance keys (tuples, in order of appearance), the variables
    (y's columns), the row index's level names, whether y was a single series, and each series' tsrsa
    id (series k = instance k // V, variable k % V, for V variables)."""

    keys: tuple
    variables: pd.Index
    names: tuple
    single: bool
    ids: tuple = ()

    @classmethod
    def of(cls, y: pd.DataFrame) -> "SeriesTable":
        table = cls((), y.columns, tuple(y.index.names), not isinstance(y.index, pd.MultiIndex))
        return table.positions(y.index)[0]

    @property
    def n_variables(self) -> int:
        return len(self.variables)

    def series_name(self, key: tuple, variable) -> str:
        """A series' id as tsrsa's messages name it: its instance levels and (with several) its variable,
        joined by "/" ("sales", "shop_1", "north/shop_1/sales")."""
        parts = [str(level) for level in key]
        if self.n_variables > 1 or not parts:
            parts.append(str(variable))
        return "/".join(parts)

    def positions(self, index: pd.Index) -> tuple["SeriesTable", np.ndarray]:
        """(this table with the new instances of ``index`` added at the end, each row's instance position)."""
        codes, uniques = pd.factorize(instance_keys(index))
        known = {key: k for k, key in enumerate(self.keys)}
        added = [key for key in uniques if key not in known]
        known.update({key: len(known) + k for k, key in enumerate(added)})
        table = self
        if added:  # ids stay as they were; a new one that reads like an old one gets its number appended
            ids, taken = list(self.ids), set(self.ids)
            for key in added:
                for variable in self.variables:
                    name = self.series_name(key, variable)
                    name = name if name not in taken else f"{name}#{len(ids)}"
                    ids.append(name)
                    taken.add(name)
            table = SeriesTable(self.keys + tuple(added), self.variables, self.names, self.single, tuple(ids))
        return table, np.array([known[key] for key in uniques], dtype=np.int64)[codes]

    def series_ids(self, positions: np.ndarray, j: int) -> np.ndarray:
        """The tsrsa ids of variable ``j`` of the instances at ``positions``."""
        return np.asarray(self.ids, dtype=object)[positions * self.n_variables + j]

    def check_columns(self, y: pd.DataFrame) -> None:
        """ValueError unless ``y`` has the variables the model was fitted on."""
        if list(y.columns) != list(self.variables):
            raise ValueError(f"y has the columns {list(y.columns)}, the model was fitted on {list(self.variables)}; "
                             f"give the same variables, or refit")

    def long(self, y: pd.DataFrame, X: pd.DataFrame | None, axis: TimeAxis, spec,
             ) -> tuple["SeriesTable", pd.DataFrame]:
        """(the table with y's new instances, y and its X rows as a tsrsa long frame: one series per
        (instance, variable), X's columns beside the target of every variable of the instance)."""
        table, rows = self.positions(y.index)
        times = axis.to_tsrsa(time_level(y.index))
        covariates = None if X is None else aligned(X, y.index, spec)
        frames = []
        for j, variable in enumerate(self.variables):
            frame = pd.DataFrame({spec.id_col: table.series_ids(rows, j), spec.time_col: times,
                                  spec.target_col: pd.to_numeric(y[variable]).to_numpy(dtype=np.float64)})
            frames.append(frame if covariates is None else pd.concat([frame, covariates], axis=1))
        return table, pd.concat(frames, ignore_index=True)

    def future(self, X: pd.DataFrame, axis: TimeAxis, spec, columns) -> pd.DataFrame:
        """X's rows of known instances as a tsrsa ``future_df``: id, time and ``columns``, per variable."""
        missing = [c for c in columns if c not in X.columns]
        if missing:
            raise ValueError(f"X lacks the known-future covariate columns {missing} the model reads for the horizon")
        known = instance_keys(X.index).isin(list(self.keys))
        X = X[np.asarray(known)]
        _, rows = self.positions(X.index)
        times = axis.to_tsrsa(time_level(X.index))
        values = X[list(columns)].reset_index(drop=True)
        frames = []
        for j in range(self.n_variables):
            frame = pd.DataFrame({spec.id_col: self.series_ids(rows, j), spec.time_col: times})
            frames.append(pd.concat([frame, values], axis=1))
        return pd.concat(frames, ignore_index=True)

    def wide(self, forecast: pd.DataFrame, columns: dict, axis: TimeAxis, spec) -> pd.DataFrame:
        """A tsrsa forecast frame in sktime's shape: rows (instance levels..., time), one column per
        variable for ``columns={None: "yhat"}``, else ``(variable, *label)`` for each ``label: column``."""
        codes = pd.Index(self.ids).get_indexer(forecast[spec.id_col])  # (n,) series number of each row
        index = pd.MultiIndex.from_arrays([codes // self.n_variables, forecast[spec.time_col].to_numpy(),
                                           codes % self.n_variables], names=["instance", "time", "variable"])
        names = list(dict.fromkeys(columns.values()))
        table = pd.DataFrame({name: forecast[name].to_numpy(dtype=np.float64) for name in names},
                             index=index).unstack("variable").sort_index()
        picks = [(column, j) for j in range(self.n_variables) for column in columns.values()]
        values = table.reindex(columns=pd.MultiIndex.from_tuples(picks)).to_numpy()
        if list(columns) == [None]:
            out_columns = self.variables
        else:
            out_columns = pd.MultiIndex.from_tuples([(v, *label) for v in self.variables for label in columns])
        return pd.DataFrame(values, index=self.row_index(table.index, axis), columns=out_columns)

    def row_index(self, rows: pd.MultiIndex, axis: TimeAxis) -> pd.Index:
        """sktime's row index of (instance position, tsrsa time) pairs."""
        times = axis.from_tsrsa(rows.get_level_values(1))
        if self.single:
            return times.rename(self.names[0])
        positions = rows.get_level_values(0).to_numpy()
        levels = [pd.Index([self.keys[p][k] for p in positions]) for k in range(len(self.names) - 1)]
        return pd.MultiIndex.from_arrays([*levels, times], names=list(self.names))


def aligned(X: pd.DataFrame, index: pd.Index, spec) -> pd.DataFrame:
    """X's rows at ``index`` (y's rows), with a clear error for a clash of names or a missing row."""
    clash = [c for c in X.columns if c in (spec.id_col, spec.time_col, spec.target_col)]
    if clash:
        raise ValueError(f"X has a column named {clash[0]!r}, which the tsrsa estimator uses for its "
                         f"{'id' if clash[0] == spec.id_col else 'time' if clash[0] == spec.time_col else 'target'}; "
                         f"rename the column or set id_col/time_col/target_col on the estimator")
    if not index.isin(X.index).all():
        raise ValueError("X must hold a row for every row of y (the same instances and times)")
    return X.loc[index].reset_index(drop=True)


# ---------------------------------------------------------------------- X and quantiles
def trained(forecast: pd.DataFrame, q: float) -> bool:
    """Whether ``forecast`` holds the quantile ``q`` of a model's own (``yhat`` is the median)."""
    return bool(np.isclose(q, 0.5)) or quantile_column(q) in forecast.columns


def declares_covariates(model) -> bool:
    """Whether a model with covariates names any past, known-future or static ones."""
    spec = model.declared_covariates()
    return bool(spec.past or spec.future or spec.static)


def covariate_columns(model, X) -> dict:
    """The columns of X the model reads, as {X's column: the covariate's name}: its declared covariates,
    or, when it declares none, every column of X (named by ``str``: tsrsa names columns by strings)."""
    if not model.takes_covariates:
        return {}
    if declares_covariates(model):
        declared = list(model.declared_covariates().columns)
        missing = [c for c in declared if X is None or c not in X.columns]
        if missing:
            raise ValueError(f"{type(model).__name__} declares the covariate columns {missing}; pass them as "
                             f"columns of X")
        return {c: c for c in declared}
    if X is None:
        return {}
    names = {c: str(c) for c in X.columns}
    if len(set(names.values())) < len(names):
        raise ValueError(f"X's columns {list(X.columns)} are not distinct as strings; rename them")
    clash = [c for c in names.values() if c in (model.id_col, model.time_col, model.target_col)]
    if clash:
        raise ValueError(f"X has a column named {clash[0]!r}, a name the tsrsa estimator uses for its id, time or "
                         f"target; rename the column or set id_col/time_col/target_col on the estimator")
    return names


def select(X, read: dict):
    """X's columns that the model reads, under their covariate names (None when there are none)."""
    if X is None or not read:
        return None
    missing = [c for c in read if c not in X.columns]
    if missing:
        raise ValueError(f"X lacks the covariate columns {missing} the model was fitted with")
    return X[list(read)].set_axis(list(read.values()), axis=1)


def conformal_level(coverage: float) -> float:
    """sktime's coverage (a fraction) as tsrsa's level (a percentage), free of float noise (0.9 -> 90)."""
    return round(100 * float(coverage), 10)
