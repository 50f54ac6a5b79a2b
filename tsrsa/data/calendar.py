"""Calendar features from timestamps: the known-future covariates a forecaster never has to build.

``calendar_features(ds, freq)`` turns timestamps into cyclical encodings of where each falls in
the day, week, month and year, and (with ``country=``) a public-holiday flag from the ``holidays``
package (an optional extra: ``pip install holidays``). Each position v of a cycle of length P
becomes two columns, sin(2πv / P) and cos(2πv / P), so that the end of a cycle sits next to its
start (23:00 beside 00:00, December beside January), as is the convention in the peer libraries.

| feature | v | P | used when the step is shorter than |
|---|---|---|---|
| ``minute_of_hour`` | minute | 60 | an hour |
| ``hour_of_day`` | hour + minute / 60 | 24 | a day |
| ``day_of_week`` | Monday = 0 … Sunday = 6 | 7 | a week |
| ``day_of_month`` | day − 1 | days in that month | a month (28 days) |
| ``week_of_year`` | ISO week − 1 | 52 (ISO years of 53 weeks wrap) | a year, and at most a week |
| ``month_of_year`` | month − 1 | 12 | a year |

``features="auto"`` takes every feature whose cycle the series' step resolves (the last column
above); a list names them.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from pandas.tseries.frequencies import to_offset

__all__ = ["CALENDAR_FEATURES", "calendar_features"]

#: feature -> (cycle length in time, whether it needs steps of at most a week)
CALENDAR_FEATURES = {
    "minute_of_hour": (pd.Timedelta(hours=1), False),
    "hour_of_day": (pd.Timedelta(days=1), False),
    "day_of_week": (pd.Timedelta(weeks=1), False),
    "day_of_month": (pd.Timedelta(days=28), False),
    "week_of_year": (pd.Timedelta(days=365), True),
    "month_of_year": (pd.Timedelta(days=365), False),
}


def _step(freq) -> pd.Timedelta:
    """The typical length of one step of ``freq`` (a month is 30 days, a year 365)."""
    try:
        offset = to_offset(freq)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"freq={freq!r} is not a pandas offset alias such as 'h', 'D', 'W' or 'MS'") from exc
    grid = pd.date_range("2001-01-01", periods=13, freq=offset)  # on the offset's own anchors
    return (grid[-1] - grid[0]) / 12  # averaged over twelve steps (months differ in length)


def _auto(freq) -> list[str]:
    step = _step(freq)
    return [name for name, (cycle, weekly) in CALENDAR_FEATURES.items()
            if step < cycle and (not weekly or step <= pd.Timedelta(weeks=1))]


def _position(ds: pd.DatetimeIndex, name: str) -> tuple[np.ndarray, np.ndarray | float]:
    if name == "minute_of_hour":
        return ds.minute.to_numpy(float), 60.0
    if name == "hour_of_day":
        return ds.hour.to_numpy(float) + ds.minute.to_numpy(float) / 60.0, 24.0
    if name == "day_of_week":
        return ds.dayofweek.to_numpy(float), 7.0
    if name == "day_of_month":
        return ds.day.to_numpy(float) - 1.0, ds.days_in_month.to_numpy(float)
    if name == "week_of_year":
        return ds.isocalendar().week.to_numpy(float) - 1.0, 52.0
    return ds.month.to_numpy(float) - 1.0, 12.0


def _holidays(ds: pd.DatetimeIndex, country: str) -> np.ndarray:
    try:
        import holidays
    except ImportError as exc:
        raise ImportError(f"country={country!r} needs the holidays package: pip install holidays") from exc
    try:
        calendar = holidays.country_holidays(country, years=sorted(set(ds.year)))
    except (KeyError, NotImplementedError) as exc:
        raise ValueError(f"country={country!r} is not a country code the holidays package knows (e.g. 'US', "
                         f"'DE', 'GB')") from exc
    days = ds.normalize()
    return np.fromiter((day.date() in calendar for day in days), dtype=float, count=len(days))


def calendar_features(ds, freq, *, features="auto", country: str | None = None) -> pd.DataFrame:
    """Cyclical calendar encodings (and a holiday flag) for the timestamps ``ds``.

    Parameters
    ----------
    ds : array-like of datetimes
        Timestamps (a column, an index or a list); left unchanged.
    freq : str
        The series' pandas offset alias ("15min", "h", "D", "W", "MS", ...); with
        ``features="auto"`` it decides which cycles a step resolves.
    features : "auto" or list of str, default "auto"
        Names from ``CALENDAR_FEATURES``.
    country : str, optional
        A country code of the ``holidays`` package: adds ``holiday`` (1.0 on its public holidays).

    Returns
    -------
    DataFrame with ``<feature>_sin`` and ``<feature>_cos`` per feature (and ``holiday``), one row per
    timestamp, on a fresh RangeIndex.
    """
    try:
        stamps = pd.DatetimeIndex(ds)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"ds must hold datetimes (calendar features need dates); got {type(ds).__name__}") from exc
    if stamps.hasnans:
        raise ValueError("ds holds missing timestamps (NaT); calendar features need every timestamp")
    if isinstance(features, str):
        if features != "auto":
            raise ValueError(f"features={features!r} must be 'auto' or a list of {list(CALENDAR_FEATURES)}")
        names = _auto(freq)
    else:
        names = list(features)
        unknown = [n for n in names if n not in CALENDAR_FEATURES]
        if unknown:
            raise ValueError(f"unknown calendar feature(s) {unknown}; choose from {list(CALENDAR_FEATURES)}")
        _step(freq)  # a bad alias is an error here too
    columns = {}
    for name in names:
        position, period = _position(stamps, name)
        angle = 2.0 * np.pi * position / period
        columns[f"{name}_sin"], columns[f"{name}_cos"] = np.sin(angle), np.cos(angle)
    if country is not None:
        columns["holiday"] = _holidays(stamps, country)
    return pd.DataFrame(columns, index=pd.RangeIndex(len(stamps)))
