"""User frames in and out: long, wide or Series input to row arrays; forecasts to a long frame.

Input layouts (see the architecture's "Data in and out"):

- long: a DataFrame with the id and target columns (and the time column);
- wide: a DataFrame indexed by time (datetimes, or integers read as integer time), one column
  per series; leading and trailing NaN of a column are padding and are trimmed;
- a Series indexed by time: one series whose id is the Series' name, or "y".

Nothing here mutates what the user passed.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class FrameSpec:
    """Column names of the user's long frames (input and output)."""

    id_col: str = "unique_id"
    time_col: str = "ds"
    target_col: str = "y"


@dataclass
class Rows:
    """One row per observation, in the user's order; not yet validated."""

    ids: pd.Series  # (n_rows,) the user's ids, dtype kept
    times: pd.Series  # (n_rows,) datetime64 (any unit / tz) or integer
    values: np.ndarray  # (n_rows,) float64, NaN where missing
    layout: str  # "long", "wide" or "series"


def _type_name(obj) -> str:
    return type(obj).__name__


def to_rows(data, spec: FrameSpec, *, require_target: bool = True) -> Rows:
    """Read a long frame, a wide frame or a Series into :class:`Rows`.

    Raises
    ------
    TypeError
        For input that is not a DataFrame or Series, a non-numeric target, or a time that
        is neither datetime nor integer.
    ValueError
        For an empty frame, missing columns, or missing ids.
    """
    if isinstance(data, pd.Series):
        return _series_rows(data, spec)
    if not isinstance(data, pd.DataFrame):
        raise TypeError(
            f"expected a pandas DataFrame (long: columns {spec.id_col!r}, {spec.time_col!r}, "
            f"{spec.target_col!r}; or wide: a time index and one column per series) or a pandas "
            f"Series indexed by time; got {_type_name(data)}"
        )
    if data.shape[0] == 0 or data.shape[1] == 0:
        raise ValueError("the frame is empty: it needs at least one row and one column of observations")
    columns = set(map(str, data.columns)) if not isinstance(data.columns, pd.MultiIndex) else set()
    if spec.id_col in columns:
        return _long_rows(data, spec, require_target)
    if spec.time_col in columns:
        raise ValueError(
            f"the frame has a time column {spec.time_col!r} but no id column {spec.id_col!r}. "
            f"For one series per column (wide), move the time to the index: "
            f"df.set_index({spec.time_col!r}); for a long frame, add an id column or name yours "
            f"with id_col=..."
        )
    if spec.target_col in columns and not _is_time_index(data.index):
        raise ValueError(
            f"the frame has a target column {spec.target_col!r} but no id column {spec.id_col!r} "
            f"or time column {spec.time_col!r}; name your columns with id_col=, time_col=, "
            f"target_col=, or pass a wide frame indexed by time"
        )
    return _wide_rows(data, spec)


def _is_time_index(index: pd.Index) -> bool:
    return isinstance(index, pd.DatetimeIndex) or pd.api.types.is_integer_dtype(index.dtype)


def _check_time(times: pd.Series, where: str) -> pd.Series:
    dtype = times.dtype
    if isinstance(dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_dtype(dtype):
        if times.isna().any():
            raise ValueError(f"{where} has missing timestamps (NaT); drop those rows or fill them in")
        return times
    if pd.api.types.is_integer_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype):
        if times.isna().any():
            raise ValueError(f"{where} has missing integer times; drop those rows or fill them in")
        return times.astype(np.int64) if not isinstance(dtype, np.dtype) else times
    hint = "parse it with pd.to_datetime(...)"
    if pd.api.types.is_float_dtype(dtype):
        hint = "cast whole-number times to int with .astype('int64')"
    raise TypeError(f"{where} must hold datetimes or integers, got dtype {dtype}; {hint}")


def _numeric_values(values: pd.Series, where: str) -> np.ndarray:
    if not pd.api.types.is_numeric_dtype(values.dtype):
        raise TypeError(
            f"{where} must be numeric, got dtype {values.dtype}; convert it with "
            f"pd.to_numeric(..., errors='coerce') and choose a fill= for the values that fail"
        )
    return values.to_numpy(dtype=np.float64, na_value=np.nan)


def _series_rows(series: pd.Series, spec: FrameSpec) -> Rows:
    if len(series) == 0:
        raise ValueError("the Series is empty: it needs at least one observation")
    if not _is_time_index(series.index):
        raise TypeError(
            f"a Series must be indexed by time (datetimes or integers), got an index of dtype "
            f"{series.index.dtype}; set it with series.index = pd.to_datetime(...)"
        )
    name = series.name if series.name is not None else "y"
    times = _check_time(series.index.to_series(index=None), "the Series' index")
    values = _numeric_values(series, f"the Series {name!r}")
    ids = pd.Series([name] * len(series))
    return Rows(ids=ids, times=times.reset_index(drop=True), values=values, layout="series")


def _long_rows(df: pd.DataFrame, spec: FrameSpec, require_target: bool) -> Rows:
    missing = [c for c in (spec.id_col, spec.time_col) if c not in df.columns]
    if require_target and spec.target_col not in df.columns:
        missing.append(spec.target_col)
    if missing:
        raise ValueError(
            f"the long frame is missing column(s) {missing}; it has {list(df.columns)[:10]}. "
            f"Name yours with id_col=, time_col=, target_col="
        )
    check_unique_columns(df, (spec.id_col, spec.time_col, spec.target_col))
    ids = df[spec.id_col].reset_index(drop=True)
    if ids.isna().any():
        row = int(np.flatnonzero(ids.isna().to_numpy())[0])
        raise ValueError(f"column {spec.id_col!r} has missing ids (first at row {row}); drop or name those rows")
    times = _check_time(df[spec.time_col].reset_index(drop=True), f"column {spec.time_col!r}")
    if spec.target_col in df.columns:
        values = _numeric_values(df[spec.target_col], f"column {spec.target_col!r}")
    else:
        values = np.full(len(df), np.nan)
    return Rows(ids=ids, times=times, values=values, layout="long")


def check_unique_columns(df: pd.DataFrame, names) -> None:
    """ValueError when one of ``names`` labels more than one column of ``df``."""
    counts = pd.Series(df.columns).value_counts()
    twice = [name for name in names if counts.get(name, 0) > 1]
    if twice:
        raise ValueError(f"the frame has {int(counts[twice[0]])} columns named {twice[0]!r}; keep one (e.g. "
                         f"df.loc[:, ~df.columns.duplicated()]) or rename the others")


def _wide_rows(df: pd.DataFrame, spec: FrameSpec) -> Rows:
    if not _is_time_index(df.index):
        raise TypeError(
            f"a wide frame must be indexed by time (datetimes, or integers read as integer time), "
            f"got an index of dtype {df.index.dtype}; set it with df.set_index(<time column>) after "
            f"pd.to_datetime, or pass a long frame with columns {spec.id_col!r}, {spec.time_col!r}, "
            f"{spec.target_col!r}"
        )
    for col in df.columns:
        if not pd.api.types.is_numeric_dtype(df[col].dtype):
            raise TypeError(
                f"column {col!r} of the wide frame must be numeric, got dtype {df[col].dtype}; "
                f"convert it with pd.to_numeric or drop it"
            )
    if df.columns.has_duplicates:
        dup = df.columns[df.columns.duplicated()][0]
        raise ValueError(f"the wide frame has two columns named {dup!r}; series ids must be unique")
    times = _check_time(df.index.to_series(index=None).reset_index(drop=True), "the wide frame's index")
    matrix = df.to_numpy(dtype=np.float64, na_value=np.nan)  # (T, n_series)
    present = ~np.isnan(matrix)
    keep = np.zeros_like(present)
    for j in range(matrix.shape[1]):  # trim the NaN padding before and after each series
        rows = np.flatnonzero(present[:, j])
        if len(rows):
            keep[rows[0] : rows[-1] + 1, j] = True
    if not keep.any():
        raise ValueError("the wide frame holds no observations: every value is NaN")
    sj, ti = np.nonzero(keep.T)  # series-major order: (series j, time i)
    return Rows(
        ids=pd.Series(df.columns.take(sj)),
        times=times.take(ti).reset_index(drop=True),
        values=matrix[ti, sj],
        layout="wide",
    )


def forecast_frame(ids: pd.Index, times, columns: dict[str, np.ndarray], spec: FrameSpec) -> pd.DataFrame:
    """A tidy long frame: one row per (series, step), the user's column names and id dtype.

    Parameters
    ----------
    ids : pd.Index
        One id per series, in the dtype the user gave.
    times : array-like
        Flat (n_series * h) timestamps, series-major.
    columns : dict of str -> ndarray
        Each value of shape (n_series, h).
    """
    n = len(ids)
    h = next(iter(columns.values())).shape[1] if columns else 0
    out = {
        spec.id_col: ids.repeat(h),
        spec.time_col: times,
    }
    for name, block in columns.items():
        out[name] = np.asarray(block, dtype=np.float64).reshape(n * h)
    return pd.DataFrame(out)
