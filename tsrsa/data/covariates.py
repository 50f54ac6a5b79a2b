"""Covariates: declared columns read beside the target, checked, filled and encoded for a network.

Three kinds, named by column on the estimator (the peers' vocabulary):

- past covariates: known up to each series' end (read from the frame given to ``fit``/``update``);
- known-future covariates: known for the horizon too (the frame for the history, and a
  ``future_df`` with the next steps at ``predict``), and the calendar features generated from the
  timestamps (``tsrsa.data.calendar``), which never need a ``future_df``;
- static covariates: one value per series, as columns constant within each series (the id column
  itself may be one: an embedding per series).

Here the declared columns are read, checked and filled; ``tsrsa.data.covariate_encoding`` turns
them into numbers (fitted on the training part only, saved with the model). Categorical columns are
pandas ``category``, strings or objects; ``unknown_categories="unknown"`` sends a category not seen
in fit to an "unknown" bucket instead of raising.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from tsrsa.data.fill import fill_missing
from tsrsa.data.validation import format_id

UNKNOWN_POLICIES = ("raise", "unknown")

__all__ = ["CovariateSpec", "UNKNOWN_POLICIES", "check_covariate_frame", "column_names", "covariate_spec",
           "future_rows",
           "static_frame"]


def column_names(name: str, value) -> tuple[str, ...]:
    """``value`` (the option ``name``: a column name, a list of them or None) as a tuple of names, checked."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"{name}={value!r} must be a column name or a list of column names (strings)")
    if len(set(value)) != len(value):
        raise ValueError(f"{name}={list(value)!r} names a column twice")
    return tuple(value)


@dataclass(frozen=True)
class CovariateSpec:
    """The covariates an estimator declares (its parameters, checked)."""

    past: tuple[str, ...] = ()
    future: tuple[str, ...] = ()
    static: tuple[str, ...] = ()
    calendar: tuple[str, ...] | str | None = None  # None, "auto" or feature names
    country: str | None = None  # holidays of this country (a known-future flag)
    unknown: str = "raise"
    id_col: str = "unique_id"

    @property
    def active(self) -> bool:
        return bool(self.past or self.future or self.static or self.calendar is not None or self.country)

    @property
    def generated(self) -> bool:
        """Whether calendar or holiday features are generated from the timestamps."""
        return self.calendar is not None or self.country is not None

    @property
    def columns(self) -> tuple[str, ...]:
        """The frame columns to read (the id column is read as the ids, not as a column)."""
        return tuple(c for c in self.past + self.future + self.static if c != self.id_col)


def covariate_spec(estimator) -> CovariateSpec:
    """The checked :class:`CovariateSpec` of an estimator's ``covariates`` (each option checked by
    ``estimator.resolved_covariates``; here, that the columns are other than the time and target columns
    and declared once); ValueError/TypeError otherwise."""
    given = estimator.resolved_covariates
    past, future, static = (column_names(kind, getattr(given, kind)) for kind in ("past", "future", "static"))
    seen: dict[str, str] = {}
    for kind, names in (("past", past), ("future", future), ("static", static)):
        for name in names:
            if name in seen:
                raise ValueError(f"column {name!r} is declared in both covariates' {seen[name]} and {kind}; "
                                 f"declare it once")
            seen[name] = kind
            if name in (estimator.time_col, estimator.target_col):
                raise ValueError(f"covariates' {kind} names {name!r}, the "
                                 f"{'time' if name == estimator.time_col else 'target'} column; covariates are "
                                 f"other columns of the frame")
            if name == estimator.id_col and kind != "static":
                raise ValueError(f"covariates' {kind} names the id column {name!r}; it can only be a static "
                                 f"covariate")
    calendar = given.calendar
    if calendar is not None and not isinstance(calendar, str):
        calendar = column_names("calendar", calendar)
    return CovariateSpec(past, future, static, calendar, given.holidays, given.unknown_categories, estimator.id_col)


def is_categorical(values: pd.Series) -> bool:
    dtype = values.dtype
    return (isinstance(dtype, pd.CategoricalDtype) or pd.api.types.is_string_dtype(dtype)
            or pd.api.types.is_object_dtype(dtype))


def _check_dtype(name: str, values: pd.Series) -> None:
    dtype = values.dtype
    if is_categorical(values) or (pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_timedelta64_dtype(dtype)):
        return
    raise TypeError(f"covariate {name!r} has dtype {dtype}: a covariate must be numeric or categorical (pandas "
                    f"'category' or strings); convert it, e.g. with .astype('category') or pd.to_numeric")


def _where(panel, rows: np.ndarray) -> tuple[str, str]:
    """("'s0'", "t1, t2, t3 (and n more)"): the first series among ``rows`` (positions of ``panel``,
    ascending) and its first three timestamps among them."""
    _, first = panel.stamps_at(rows[:1])
    own = rows[(rows >= panel.offsets[first[0]]) & (rows < panel.offsets[first[0] + 1])]  # its series'
    stamps, _ = panel.stamps_at(own[:3])
    more = f" (and {rows.size - len(stamps)} more)" if rows.size > len(stamps) else ""
    return format_id(panel.ids[int(first[0])]), ", ".join(str(t) for t in stamps) + more


def row_place(panel, row: int) -> str:
    """'of series X at t': the series and timestamp of position ``row`` of ``panel``."""
    stamps, series = panel.stamps_at(np.array([row]))
    return f"of series {format_id(panel.ids[int(series[0])])} at {stamps[0]}"


def panel_stamps(panel):
    """Every timestamp of ``panel``, aligned with its values (N,)."""
    return panel.stamps_at(np.arange(int(panel.offsets[-1])))[0]


def check_covariate_frame(panel, spec: CovariateSpec, fill: str | None):
    """``panel`` with its covariate columns checked and (with ``fill``) filled: dtypes, NaN, statics
    constant per series. A new panel; the given one is left as it is."""
    frame = panel.covariates
    if frame is None:
        return panel
    out = {}
    for name in frame.columns:
        values = frame[name]
        _check_dtype(name, values)
        if not is_categorical(values):
            infinite = np.flatnonzero(np.isinf(values.to_numpy(np.float64, na_value=np.nan)))
            if infinite.size:
                series, times = _where(panel, infinite)
                raise ValueError(f"covariate {name!r} of series {series} is infinite at {times}; replace it with a "
                                 f"finite value, or with NaN and a fill= (or drop those rows)")
        missing = values.isna().to_numpy()
        if missing.any() and name not in spec.static:
            if fill is None:
                series, times = _where(panel, np.flatnonzero(missing))
                raise ValueError(
                    f"covariate {name!r} of series {series} is missing (NaN or a missing row) at {times}; fill the "
                    f"column, or pass fill='ffill', 'interpolate' or 'zero' to fill covariates as the target")
            if is_categorical(values):  # categories: the last earlier one, else the first later one
                group = np.repeat(np.arange(panel.n_series), panel.lengths)
                values = values.groupby(group).ffill().groupby(group).bfill()
            else:
                values = pd.Series(fill_missing(values.to_numpy(np.float64, na_value=np.nan), panel.offsets, fill),
                                   index=values.index)
            if values.isna().any():
                row = int(np.flatnonzero(values.isna().to_numpy())[0])
                _, series = panel.stamps_at(np.array([row]))
                raise ValueError(f"covariate {name!r} of series {panel.ids[int(series[0])]!r} has no value at all; "
                                 f"nothing can fill it: give it values or drop the series")
        out[name] = values
    for name in spec.static:
        if name == spec.id_col:
            continue
        values = out[name]
        group = np.repeat(np.arange(panel.n_series), panel.lengths)
        counts = values.groupby(group, observed=True).nunique(dropna=True).reindex(range(panel.n_series), fill_value=0)
        changing = np.flatnonzero(counts.to_numpy() > 1)
        if changing.size:
            i = int(changing[0])
            seen = pd.unique(values.iloc[panel.offsets[i]:panel.offsets[i + 1]].dropna())[:2]
            raise ValueError(
                f"static covariate {name!r} changes within series {panel.ids[i]!r} ({seen[0]!r}, then {seen[1]!r}); "
                f"a static covariate holds one value per series: declare it in covariates' past or "
                f"future if it varies")
        empty = np.flatnonzero(counts.to_numpy() == 0)
        if empty.size:
            raise ValueError(f"static covariate {name!r} has no value for series {panel.ids[int(empty[0])]!r}; "
                             f"give every series its value")
    return replace(panel, covariates=pd.DataFrame(out, index=frame.index))


def static_frame(panel, spec: CovariateSpec) -> pd.DataFrame:
    """One row per series of ``panel``: its static values (the first non-missing of each column)."""
    out = {}
    for name in spec.static:
        if name == spec.id_col:
            out[name] = pd.Series(panel.ids)
            continue
        values = panel.covariates[name]
        group = np.repeat(np.arange(panel.n_series), panel.lengths)
        out[name] = values.groupby(group, observed=False).first().reindex(range(panel.n_series)).reset_index(drop=True)
    return pd.DataFrame(out, index=pd.RangeIndex(panel.n_series))


def future_rows(future_df, ids: pd.Index, stamps, h: int, spec: CovariateSpec, id_col: str, time_col: str) -> pd.DataFrame:
    """The rows of ``future_df`` for the next ``h`` steps of every series (flat, series-major (S * h)),
    its declared known-future columns only; ValueError naming the first missing (id, time) pairs."""
    if not isinstance(future_df, pd.DataFrame):
        raise TypeError(f"future_df must be a long DataFrame with columns {id_col!r}, {time_col!r} and "
                        f"{list(spec.future)}; got {type(future_df).__name__}")
    missing = [c for c in (id_col, time_col, *spec.future) if c not in future_df.columns]
    if missing:
        raise ValueError(f"future_df is missing column(s) {missing}; it needs {id_col!r}, {time_col!r} and the "
                         f"known-future covariates {list(spec.future)}")
    key = pd.MultiIndex.from_arrays([future_df[id_col].to_numpy(), _as_times(future_df[time_col], stamps)])
    if key.has_duplicates:
        first = key[key.duplicated()][0]
        raise ValueError(f"future_df has two rows for series {first[0]!r} at {first[1]}; keep one row per (id, time)")
    wanted = pd.MultiIndex.from_arrays([np.repeat(ids.to_numpy(), h), stamps])
    where = key.get_indexer(wanted)
    if (where < 0).any():
        absent = wanted[where < 0]
        shown = ", ".join(f"({i!r}, {t})" for i, t in absent[:3])
        more = f" and {len(absent) - 3} more" if len(absent) > 3 else ""
        raise ValueError(f"future_df has no row for {shown}{more}: it needs the known-future covariates of the "
                         f"next {h} step(s) of every series forecast (rows beyond them are ignored)")
    rows = future_df[list(spec.future)].iloc[where].reset_index(drop=True)
    for name in spec.future:
        _check_dtype(name, rows[name])
        if rows[name].isna().any():
            bad = int(np.flatnonzero(rows[name].isna().to_numpy())[0])
            raise ValueError(f"future_df's covariate {name!r} is missing for series {format_id(wanted[bad][0])} at "
                             f"{wanted[bad][1]}; give every forecast step its value")
        if not is_categorical(rows[name]):
            infinite = np.flatnonzero(np.isinf(rows[name].to_numpy(np.float64)))
            if infinite.size:
                bad = int(infinite[0])
                raise ValueError(f"future_df's covariate {name!r} is infinite for series "
                                 f"{format_id(wanted[bad][0])} at {wanted[bad][1]}; give every forecast step a "
                                 f"finite value")
    return rows


def _as_times(column: pd.Series, like):
    if isinstance(like, pd.DatetimeIndex):
        try:
            times = pd.DatetimeIndex(column)
        except (TypeError, ValueError) as err:
            raise TypeError(f"future_df's time column must hold datetimes like the fitted data; got {column.dtype}") from err
        if (times.tz is None) != (like.tz is None):
            raise ValueError("future_df's timestamps and the fitted data's differ in time zone; use the same")
        return times.as_unit(like.unit) if hasattr(like, "unit") else times
    return column.to_numpy()
