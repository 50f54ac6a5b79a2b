"""The time axis of a panel: a pandas offset for datetimes, an integer step for integer time.

Every series of a panel shares one :class:`Frequency`. It places timestamps on a grid
(``positions``), continues a series past its end (``future``) and names the natural
seasonal periods of its spacing (``natural_periods``).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from pandas.tseries.frequencies import to_offset
from pandas.tseries import offsets as pd_offsets

_DAY = pd.Timedelta(days=1)


class Frequency:
    """Regular spacing shared by the series of a panel.

    Parameters
    ----------
    alias : str or None
        pandas offset alias ("h", "15min", "W-SAT", "MS", ...) for datetime time;
        None for integer time.
    step : int, default 1
        Spacing of integer time (ignored for datetimes).
    """

    __slots__ = ("alias", "step", "_offset")

    def __init__(self, alias: str | None = None, step: int = 1):
        self.alias = alias
        self.step = int(step)
        self._offset = to_offset(alias) if alias is not None else None

    # ------------------------------------------------------------------ identity
    @property
    def is_datetime(self) -> bool:
        return self.alias is not None

    @property
    def offset(self):
        return self._offset

    def _grid(self) -> tuple:
        """A few grid points: two frequencies are equal when their grids are (QS-JAN == QS-OCT)."""
        if not self.is_datetime:
            return ("integer", self.step)
        return tuple(pd.date_range("2000-01-01", periods=8, freq=self.offset).asi8)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Frequency):
            return NotImplemented
        return self._grid() == other._grid()

    def __hash__(self) -> int:
        return hash(self._grid())

    def __repr__(self) -> str:
        return f"Frequency({self.alias!r})" if self.is_datetime else f"Frequency(step={self.step})"

    def describe(self) -> str:
        """Short human form for error messages: 'h', 'W-SAT', 'integer step 1'."""
        return repr(self.alias) if self.is_datetime else f"integer step {self.step}"

    def to_json(self) -> dict:
        return {"alias": self.alias, "step": self.step}

    @classmethod
    def from_json(cls, data: dict) -> "Frequency":
        return cls(data["alias"], int(data["step"]))

    # ------------------------------------------------------------------ grid
    def fixed_delta(self, tz=None) -> pd.Timedelta | None:
        """Width of one step when it is the same everywhere on the time line, else None.

        Calendar offsets (months, business days) and, for tz-aware data, days and weeks
        (daylight saving) have no fixed width.
        """
        off = self.offset
        if off is None:
            return None
        if isinstance(off, pd_offsets.Tick):
            return pd.Timedelta(off)
        if tz is not None:
            return None
        if isinstance(off, pd_offsets.Day):
            return off.n * _DAY
        if isinstance(off, pd_offsets.Week) and off.weekday is not None:
            return off.n * 7 * _DAY
        return None

    def positions(self, times, first) -> np.ndarray:
        """Integer step counts of ``times`` after ``first``; -1 where a time is off the grid.

        ``times`` and ``first`` are aligned arrays (one ``first`` per time), both datetime
        (DatetimeIndex/array) or both integer.
        """
        if not self.is_datetime:
            t = np.asarray(times, dtype=np.int64)
            f = np.asarray(first, dtype=np.int64)
            gap = t - f
            pos = gap // self.step
            return np.where(gap % self.step == 0, pos, -1)
        times = pd.DatetimeIndex(times)
        first = pd.DatetimeIndex(first)
        delta = self.fixed_delta(times.tz)
        on_offset = self._on_offset(first)
        if delta is not None:
            unit_delta = _in_units(delta, times.unit)
            gap = times.asi8 - first.as_unit(times.unit).asi8
            pos = gap // unit_delta
            ok = (gap % unit_delta == 0) & on_offset
            return np.where(ok, pos, -1)
        # calendar offsets: one shared grid from the earliest to the latest time (of ``times`` and ``first``)
        grid = pd.date_range(min(times.min(), first.min()), max(times.max(), first.max()), freq=self.offset,
                             unit=times.unit)
        where_t = grid.searchsorted(times)
        where_f = grid.searchsorted(first)
        hit_t = (where_t < len(grid)) & (grid[np.minimum(where_t, len(grid) - 1)] == times)
        hit_f = (where_f < len(grid)) & (grid[np.minimum(where_f, len(grid) - 1)] == first)
        return np.where(hit_t & hit_f, where_t - where_f, -1)

    def ordinals(self, times) -> np.ndarray:
        """(n,) int64 absolute step numbers of ``times``: the same timestamp has the same number in every
        series and every call, and consecutive steps of the grid consecutive numbers (a cycle's phase is
        the number modulo its period). Integer time: ``t // step``; steps of fixed width: whole steps since
        1970-01-01 (UTC); months, quarters and years: months since year 0 over the months of a step; other
        calendar offsets (business days, weeks of tz-aware data): steps since the grid's first point on or
        after 1900-01-01.
        """
        if not self.is_datetime:
            return np.floor_divide(np.asarray(times, dtype=np.int64), self.step)
        times = pd.DatetimeIndex(times)
        delta = self.fixed_delta(times.tz)
        if delta is not None:
            return np.floor_divide(times.asi8, _in_units(delta, times.unit))
        off, n = self.offset, max(abs(self.offset.n), 1)
        months = {pd_offsets.MonthBegin: 1, pd_offsets.MonthEnd: 1, pd_offsets.BusinessMonthBegin: 1,
                  pd_offsets.BusinessMonthEnd: 1, pd_offsets.QuarterBegin: 3, pd_offsets.QuarterEnd: 3,
                  pd_offsets.BQuarterBegin: 3, pd_offsets.BQuarterEnd: 3, pd_offsets.YearBegin: 12,
                  pd_offsets.YearEnd: 12, pd_offsets.BYearBegin: 12, pd_offsets.BYearEnd: 12}
        for kind, width in months.items():
            if isinstance(off, kind):
                count = times.year.to_numpy(np.int64) * 12 + times.month.to_numpy(np.int64) - 1
                return np.floor_divide(count, width * n)
        origin = pd.Timestamp("1900-01-01", tz=times.tz)
        if len(times) and times.min() < origin:
            raise ValueError(f"timestamps before 1900 with freq={self.alias!r} have no step number here; use "
                             f"integer time or a fixed-width frequency")
        grid = pd.date_range(origin, times.max() if len(times) else origin, freq=off, unit=times.unit)
        return grid.searchsorted(times).astype(np.int64)

    def _on_offset(self, times: pd.DatetimeIndex) -> np.ndarray:
        off = self.offset
        if isinstance(off, pd_offsets.Tick) or isinstance(off, pd_offsets.Day):
            return np.ones(len(times), dtype=bool)
        unique = pd.unique(times)
        flags = {t: off.is_on_offset(t) for t in unique}
        return np.fromiter((flags[t] for t in times), dtype=bool, count=len(times))

    def future(self, last, h: int):
        """The ``h`` timestamps after each value of ``last``, flat and series-major (n * h)."""
        steps = np.arange(1, h + 1)
        if not self.is_datetime:
            last = np.asarray(last)
            return (last[:, None] + (self.step * steps)[None, :].astype(last.dtype)).ravel()
        last = pd.DatetimeIndex(last)
        delta = self.fixed_delta(last.tz)
        if delta is not None:
            ticks = last.asi8[:, None] + steps[None, :] * _in_units(delta, last.unit)
            out = pd.to_datetime(ticks.ravel(), unit=last.unit, utc=last.tz is not None)
            return out.as_unit(last.unit) if last.tz is None else out.tz_convert(last.tz).as_unit(last.unit)
        out = np.empty((len(last), h), dtype=object)
        for t in pd.unique(last):  # series usually share their last timestamp
            rows = np.flatnonzero(last == t)
            out[rows] = np.asarray(pd.date_range(t, periods=h + 1, freq=self.offset)[1:], dtype=object)
        return pd.DatetimeIndex(out.ravel()).as_unit(last.unit)

    def shift(self, times, steps):
        """``times`` moved by ``steps`` (aligned integer array, may be negative) grid steps."""
        steps = np.asarray(steps, dtype=np.int64)
        if not self.is_datetime:
            return np.asarray(times, dtype=np.int64) + self.step * steps
        times = pd.DatetimeIndex(times)
        delta = self.fixed_delta(times.tz)
        if delta is not None:
            return times + pd.to_timedelta(steps * _in_units(delta, times.unit), unit=times.unit)
        out = np.empty(len(times), dtype=object)
        for k in np.unique(steps):  # calendar offsets: one vectorised addition per distinct shift
            rows = steps == k
            out[rows] = np.asarray(times[rows] + int(k) * self.offset, dtype=object)
        return pd.DatetimeIndex(out).as_unit(times.unit)

    def range(self, first, n: int):
        """``n`` consecutive timestamps starting at ``first`` (one series)."""
        if not self.is_datetime:
            return first + self.step * np.arange(n)
        return pd.date_range(first, periods=n, freq=self.offset)

    # ------------------------------------------------------------------ seasonality
    def natural_periods(self) -> list[int]:
        """Seasonal periods (in steps) that the spacing suggests, strongest first.

        Hourly: 24, 168; 15-minute: 96, 672; daily: 7, 365; business daily: 5; weekly: 52;
        monthly: 12; quarterly: 4. Empty for integer time and for yearly data.
        """
        off = self.offset
        if off is None:
            return []
        n = max(abs(off.n), 1)
        delta = self.fixed_delta()
        if delta is not None and delta < _DAY:
            if delta < pd.Timedelta(minutes=1):
                base = [pd.Timedelta(minutes=1), pd.Timedelta(hours=1)]
            else:
                base = [_DAY, 7 * _DAY]
            periods = [int(b / delta) for b in base if (b % delta) == pd.Timedelta(0)]
            return [p for p in periods if p > 1]
        if delta is not None and delta == _DAY:
            return [7, 365]
        if delta is not None and delta == 7 * _DAY:
            return [52]
        per_year = {
            pd_offsets.MonthBegin: 12, pd_offsets.MonthEnd: 12,
            pd_offsets.BusinessMonthBegin: 12, pd_offsets.BusinessMonthEnd: 12,
            pd_offsets.SemiMonthBegin: 24, pd_offsets.SemiMonthEnd: 24,
            pd_offsets.QuarterBegin: 4, pd_offsets.QuarterEnd: 4,
            pd_offsets.BQuarterBegin: 4, pd_offsets.BQuarterEnd: 4,
        }
        for kind, count in per_year.items():
            if isinstance(off, kind) and count % n == 0 and count // n > 1:
                return [count // n]
        if isinstance(off, pd_offsets.BusinessDay) and n == 1:
            return [5]
        return []


def season_steps(freq: Frequency | None, season_length: int | None = None) -> int:
    """The season in steps: ``season_length`` when given, else the frequency's first natural period (24
    hourly, 7 daily, 52 weekly, 12 monthly, 4 quarterly, ...), else 1 (integer time, yearly data)."""
    if season_length is not None:
        return int(season_length)
    periods = freq.natural_periods() if freq is not None and freq.is_datetime else []
    return int(periods[0]) if periods else 1


def look_back_seasons(freq: Frequency | None) -> tuple[int, ...]:
    """The seasons a network's default look-back may hold, in steps, longest first: the week and the day of data
    spaced an hour or more and less than a day apart ((168, 24) hourly, (84, 12) two-hourly); else the season
    alone (:func:`season_steps`: (48,) half-hourly, (52,) weekly, (12,) monthly, (7,) daily, (1,) integer time).

    The day of hourly data is shorter than two horizons of most forecasts; the week (working days and the
    weekend) is the cycle such data repeat beyond it. The week of finer data was not taken: on half-hourly
    series it helped some networks and hurt others (benchmarks/RESULTS.md, "A network's look-back: the week")."""
    season = season_steps(freq)
    if freq is not None and freq.is_datetime:
        delta = freq.fixed_delta()
        periods = freq.natural_periods()
        if delta is not None and pd.Timedelta(hours=1) <= delta < _DAY and len(periods) == 2:
            return int(periods[1]), season
    return (season,)


def _in_units(delta: pd.Timedelta, unit: str) -> int:
    """``delta`` as an integer count of ``unit`` ("s", "ms", "us", "ns")."""
    return int(delta // pd.Timedelta(1, unit=unit))


def parse_freq(freq) -> Frequency | None:
    """The user's ``freq=`` argument as a Frequency (None stays None: infer it).

    Raises
    ------
    TypeError, ValueError
        For anything that is neither a pandas offset alias nor a positive integer step.
    """
    if freq is None:
        return None
    if isinstance(freq, (bool, np.bool_)):
        raise TypeError("freq must be a pandas offset alias such as 'h' or 'MS', or a positive integer step")
    if isinstance(freq, (int, np.integer)):
        if freq < 1:
            raise ValueError(f"freq={freq} is not a valid integer step; use a positive integer")
        return Frequency(None, int(freq))
    if isinstance(freq, (str, pd_offsets.BaseOffset, pd.Timedelta)):
        try:
            offset = to_offset(freq)
        except (ValueError, TypeError) as err:
            raise ValueError(
                f"freq={freq!r} is not a pandas offset alias; use one such as 'h', '15min', 'D', "
                "'W-SUN', 'MS', or an integer step for integer time"
            ) from err
        return Frequency(offset.freqstr)
    raise TypeError(
        f"freq must be a pandas offset alias such as 'h' or 'MS', or a positive integer step; "
        f"got {type(freq).__name__}"
    )
