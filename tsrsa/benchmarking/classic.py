"""Classic short series (airline passengers, milk, beer, CO2, sunspots, ...) as regular series.

The files sit in ``<data folder>/classic`` (``shared/datasets/classic`` in this repository's
layout); each has its own columns, read here into one series with a regular datetime index. Each
entry of :data:`CLASSIC` says its horizon, its season (None: no fixed season), and how many
steps at its end form the test part.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Classic:
    """One classic series and its forecasting task."""

    file: str
    h: int
    season: int | None
    test: int  # steps of the test part (the end of the series)
    text: str
    end: str | None = None  # last date used


CLASSIC = {
    "AirPassengers": Classic("AirPassengers.csv", 12, 12, 24, "monthly, 144 steps"),
    "monthly_milk": Classic("monthly-milk.csv", 12, 12, 24, "monthly, 168 steps"),
    "ausbeer": Classic("ausbeer.csv", 8, 4, 11, "quarterly, 211 steps"),
    "co2": Classic("co2_mm_mlo.csv", 12, 12, 48, "monthly Mauna Loa CO₂ (average), 789 steps"),
    "sunspots": Classic("monthly-sunspots.csv", 12, None, 120, "monthly, 2,820 steps; ~11-year cycle, no fixed season"),
    "daily_min_temperatures": Classic("daily-min-temperatures.csv", 14, None, 365,
                                      "daily, 3,652 steps (2 missing days interpolated); yearly season not modelled"),
    "us_gasoline": Classic("us_gasoline.csv", 13, 52, 104, "weekly, up to 2019 (1,508 steps; 2020's collapse in "
                           "demand is a break no history forecasts)", end="2019-12-31"),
    "taylor": Classic("taylor.csv", 48, 48, 336, "half-hourly electricity demand, 4,032 steps (daily season 48)"),
    "taxi": Classic("taxi_new_york_passengers.csv", 48, 48, 336, "half-hourly NYC taxi demand, 10,320 steps"),
}


def read_classic(name: str, folder) -> pd.Series:
    """One classic series with a regular datetime index.

    Parameters
    ----------
    name : str
        A key of :data:`CLASSIC`.
    folder : str or os.PathLike
        The folder that holds the files (``<data folder>/classic``).

    Returns
    -------
    pandas.Series
        float64 values, sorted by time, up to the entry's ``end``; gaps of up to 2 steps
        interpolated (daily_min_temperatures lacks 1984-12-31 and 1988-12-31).

    Raises
    ------
    ValueError
        When the series is not regular and complete after that.
    """
    path = Path(folder) / CLASSIC[name].file
    raw = pd.read_csv(path)
    if name == "co2":
        index, values = pd.to_datetime(dict(year=raw["year"], month=raw["month"], day=1)), raw["average"]
    elif name == "ausbeer":
        index, values = pd.to_datetime(raw["date"]), raw["Y"]
    elif name == "taylor":
        index, values = pd.date_range("2000-06-05", periods=len(raw), freq="30min"), raw["Y"]
    elif name == "us_gasoline":
        index, values = pd.to_datetime(raw["Week"], format="%m/%d/%Y"), raw["Gasoline"]
    else:
        index, values = pd.to_datetime(raw.iloc[:, 0]), raw.iloc[:, 1]
    series = pd.Series(values.to_numpy(dtype=np.float64), index=pd.DatetimeIndex(index)).sort_index()
    series = series[: CLASSIC[name].end].asfreq(pd.infer_freq(series.index[:60]))  # regular steps
    series = series.interpolate(limit=2)
    if series.isna().any():
        raise ValueError(f"{path} is not a regular, complete series")
    return series
