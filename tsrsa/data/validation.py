"""Validate a user frame once and turn it into a :class:`~tsrsa.data.panel.Panel`.

Every problem is reported at the entry of ``fit``/``predict`` as a ``ValueError`` or
``TypeError`` that names the series, the timestamp and the way to fix it.
"""
from __future__ import annotations

import numbers

import numpy as np
import pandas as pd
from pandas.tseries.frequencies import to_offset

from tsrsa.data.fill import FILL_METHODS, fill_missing
from tsrsa.data.frames import FrameSpec, check_unique_columns, to_rows
from tsrsa.data.frequency import Frequency, parse_freq
from tsrsa.data.panel import Panel

_FILL_HINT = "pass fill='ffill', 'interpolate' or 'zero' to fill them"
_DAY = pd.Timedelta(days=1)
_OR_INFERRED = {True: ", or leave freq out (it is inferred)", False: ""}
_WEEKDAYS = ("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")


def check_fill(fill) -> None:
    if fill is not None and fill not in FILL_METHODS:
        raise ValueError(f"fill={fill!r} is not supported; use None or one of {FILL_METHODS}")


def _factorize(ids: pd.Series) -> tuple[np.ndarray, pd.Index]:
    try:
        codes, uniques = pd.factorize(ids, sort=True)
    except TypeError:  # ids of mixed types cannot be sorted: keep their order of appearance
        codes, uniques = pd.factorize(ids, sort=False)
    if isinstance(ids.dtype, pd.CategoricalDtype):
        return codes.astype(np.int64), pd.CategoricalIndex(uniques, dtype=ids.dtype)
    return codes.astype(np.int64), pd.Index(uniques, dtype=ids.dtype)


def format_id(value) -> str:
    """A series id as users wrote it: 'A', 7 (not np.int64(7))."""
    return repr(value.item() if isinstance(value, np.generic) else value)


class _Describe:
    """Formats series ids and timestamps for messages."""

    def __init__(self, uniques: pd.Index, times):
        self.uniques = uniques
        self.times = times

    def series(self, code: int) -> str:
        return f"series {format_id(self.uniques[code])}"

    def time(self, row: int) -> str:
        return str(self.times[row])

    def rows(self, rows: np.ndarray, codes: np.ndarray, what: str, fix: str) -> str:
        first = int(rows[0])
        more = f" (and {len(rows) - 1} more)" if len(rows) > 1 else ""
        return f"{self.series(int(codes[first]))} has {what} at {self.time(first)}{more}; {fix}"


def build_panel(
    data,
    spec: FrameSpec,
    *,
    freq=None,
    fill: str | None = None,
    expected_freq: Frequency | None = None,
    columns: tuple[str, ...] = (),
) -> Panel:
    """Validate ``data`` and return it as a Panel.

    Parameters
    ----------
    data : DataFrame or Series
        Long, wide or Series input (see :mod:`tsrsa.data.frames`).
    spec : FrameSpec
        The user's column names.
    freq : str, int or None
        Frequency override; None infers it (datetimes) or means step 1 (integers).
    fill : {"ffill", "interpolate", "zero"} or None
        How to fill missing timestamps and NaN values; None makes them errors.
    expected_freq : Frequency, optional
        The frequency a fitted model was trained on; a different one is an error.
    columns : tuple of str, optional
        Covariate columns of a long frame to carry beside the target (``Panel.covariates``: one row
        per value, NaN where a row was missing); checked by ``tsrsa.data.covariates``.
    """
    check_fill(fill)
    user_freq = parse_freq(freq)
    rows = to_rows(data, spec)
    if columns:
        if rows.layout != "long":
            raise ValueError(
                f"covariates {list(columns)} are read from a long frame (columns {spec.id_col!r}, "
                f"{spec.time_col!r}, {spec.target_col!r} and the covariates); this input is {rows.layout}: "
                f"melt it, e.g. df.melt(ignore_index=False)")
        absent = [c for c in columns if c not in data.columns]
        if absent:
            raise ValueError(f"the frame is missing the declared covariate column(s) {absent}; it has "
                             f"{list(data.columns)[:12]}: add them or change the estimator's covariate lists")
        check_unique_columns(data, columns)
    codes, uniques = _factorize(rows.ids)
    is_datetime = not pd.api.types.is_integer_dtype(rows.times.dtype)
    times = pd.DatetimeIndex(rows.times) if is_datetime else rows.times.to_numpy(dtype=np.int64)
    key = times.asi8 if is_datetime else times
    order = np.lexsort((key, codes))  # unsorted rows are sorted, not rejected
    codes, key, values = codes[order], key[order], rows.values[order]
    times = times[order]
    describe = _Describe(uniques, times)
    lengths = np.bincount(codes, minlength=len(uniques))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    same = codes[1:] == codes[:-1]  # (n - 1,) consecutive rows of one series

    dup = np.flatnonzero(same & (key[1:] == key[:-1])) + 1
    if dup.size:
        raise ValueError(describe.rows(
            dup, codes, "duplicate timestamps",
            "keep one row per timestamp, e.g. df.drop_duplicates([id, time]) or a groupby mean",
        ))
    inf = np.flatnonzero(np.isinf(values))
    if inf.size:
        raise ValueError(describe.rows(
            inf, codes, "an infinite value",
            "replace inf with NaN and choose a fill=, or drop those rows",
        ))
    missing = np.isnan(values)
    if fill is None and missing.any():
        raise ValueError(describe.rows(np.flatnonzero(missing), codes, "NaN in the target", _FILL_HINT))

    frequency = _resolve_frequency(user_freq, expected_freq, is_datetime, times, offsets, uniques)
    first_rows = offsets[:-1][codes]
    pos = frequency.positions(times, times[first_rows])
    off_grid = np.flatnonzero(pos < 0)
    if off_grid.size:
        raise ValueError(describe.rows(
            off_grid, codes, f"a timestamp off the {frequency.describe()} grid",
            "resample or round the timestamps to one regular frequency (or pass freq=)",
        ))
    jumps = np.flatnonzero(same & (np.diff(pos) > 1)) + 1
    coarser = _coarser_spacing(jumps, same, pos, user_freq, is_datetime, times, offsets, uniques, frequency)
    if jumps.size and fill is None:
        r = int(jumps[0])
        more = f" (and {jumps.size - 1} more gaps)" if jumps.size > 1 else ""
        where = (f"{describe.series(int(codes[r]))} has a gap of {int(pos[r] - pos[r - 1]) - 1} missing "
                 f"step(s) between {describe.time(r - 1)} and {describe.time(r)} at frequency "
                 f"{frequency.describe()}{more}")
        if coarser is not None:  # no two observations one step apart: the data's own spacing is coarser
            raise ValueError(
                f"{where}; every observation is followed by a gap, so the data are spaced by {coarser}, not "
                f"{frequency.describe()}: pass freq={coarser}{_OR_INFERRED[is_datetime]}; a fill= would put made-up "
                f"values between every two observations")
        hint = _FILL_HINT + " or add the missing rows"
        if not is_datetime:
            hint += f"; if your integer time steps by k, pass freq=k (now {frequency.describe()})"
        raise ValueError(f"{where}; {hint}")
    last = times[offsets[1:] - 1]
    first = times[offsets[:-1]]
    placed = np.arange(len(values))  # panel position of each sorted row
    if fill is not None and (jumps.size or missing.any()):
        full_lengths = pos[offsets[1:] - 1] + 1
        full_offsets = np.concatenate([[0], np.cumsum(full_lengths)]).astype(np.int64)
        full = np.full(full_offsets[-1], np.nan)
        placed = full_offsets[codes] + pos
        full[placed] = values
        values, offsets = full, full_offsets
        empty = np.flatnonzero(np.add.reduceat(~np.isnan(values), offsets[:-1]) == 0)
        if empty.size:
            raise ValueError(
                f"{describe.series(int(empty[0]))} has no observed value; drop it (nothing can fill it)"
            )
        values = fill_missing(values, offsets, fill)
    covariates = None
    if columns:
        source = np.full(len(values), -1, dtype=np.int64)  # (N,) the user's row behind each position, -1: none
        source[placed] = order
        frame = data[list(columns)].reset_index(drop=True)
        frame = frame.astype({c: np.float64 for c in columns if pd.api.types.is_bool_dtype(frame[c].dtype)})
        covariates = frame.reindex(source).reset_index(drop=True)
    return Panel(
        ids=uniques,
        values=np.ascontiguousarray(values, dtype=np.float64),
        offsets=offsets,
        first=pd.Index(first),
        last=pd.Index(last),
        freq=frequency,
        layout=rows.layout,
        covariates=covariates,
    )


def _coarser_spacing(jumps, same, pos, user_freq, is_datetime, times, offsets, uniques, frequency) -> str | None:
    """How ``freq=`` is written for the data's own spacing (``'W-SUN'``, ``7``) when the frequency, given by
    the user (or step 1 of integer time), is finer than every step of the data (each observation followed
    by a gap), else None."""
    steps = int(same.sum())
    if (user_freq is None and is_datetime) or not steps or jumps.size != steps:
        return None
    if not is_datetime:  # integer time: the common step of the data, in the user's units
        step = int(np.gcd.reduce(np.diff(pos)[same])) * frequency.step
        return repr(step)
    try:
        own = _infer_datetime_frequency(times, offsets, uniques)
    except ValueError:  # no regular spacing: a coarser grid cannot be named, gaps are gaps
        return None
    return repr(own.alias) if own != frequency else None


def _alias_of(step: pd.Timedelta, times: pd.DatetimeIndex) -> str:
    """The alias users write for a fixed ``step`` of ``times``: 'D' or '3D' for whole days, 'W-SUN' for weeks
    whose timestamps all fall on one weekday (time-zone-naive data, where a day is 24 hours), else pandas'
    own ('15min', '6h'; pandas 3 writes a day as '24h' and a week as '168h')."""
    plain = to_offset(step).freqstr
    if times.tz is not None or step % _DAY != pd.Timedelta(0):
        return plain
    days = int(step // _DAY)
    if days % 7 == 0:
        weekdays = np.unique(times.weekday)
        if len(weekdays) == 1:
            weeks = days // 7
            return f"{weeks if weeks > 1 else ''}W-{_WEEKDAYS[int(weekdays[0])]}"
    return "D" if days == 1 else f"{days}D"


def _resolve_frequency(user_freq, expected, is_datetime, times, offsets, uniques) -> Frequency:
    kind = "datetimes" if is_datetime else "integers"
    if user_freq is not None and user_freq.is_datetime != is_datetime:
        raise TypeError(
            f"freq={user_freq.alias or user_freq.step!r} does not suit a time column of {kind}; "
            f"use {'a pandas offset alias' if is_datetime else 'an integer step'}"
        )
    if expected is not None and expected.is_datetime != is_datetime:
        fitted = "datetimes" if expected.is_datetime else "integers"
        raise TypeError(f"the model was fitted on time of {fitted}, but this frame's time holds {kind}")
    if user_freq is not None:
        frequency = user_freq
    elif not is_datetime:
        frequency = expected if expected is not None else Frequency(None, 1)
    else:
        frequency = _infer_datetime_frequency(times, offsets, uniques, fallback=expected)
    if expected is not None and frequency != expected:
        raise ValueError(
            f"this frame has frequency {frequency.describe()}, but the model was fitted on "
            f"{expected.describe()}; resample it to {expected.describe()}"
        )
    return frequency


def _infer_datetime_frequency(times: pd.DatetimeIndex, offsets, uniques, fallback=None) -> Frequency:
    """One frequency for all series: from the spacing, else per series with pandas."""
    key = times.asi8
    same = np.ones(len(key) - 1, dtype=bool) if len(key) > 1 else np.zeros(0, dtype=bool)
    same[offsets[1:-1] - 1] = False  # no difference across a series boundary
    spacing = np.unique(np.diff(key)[same])
    if spacing.size == 0:
        if fallback is not None:
            return fallback
        raise ValueError(
            "cannot infer the frequency: every series has a single timestamp; pass freq= "
            "(e.g. freq='D')"
        )
    unit = times.unit
    lengths = np.diff(offsets)
    found: dict[str, int] = {}
    cache: dict[tuple, str | None] = {}
    candidates = range(len(uniques)) if spacing.size > 1 else [int(np.argmax(lengths))]
    for i in candidates:
        a, b = offsets[i], offsets[i + 1]
        if b - a < 3:
            continue
        signature = (key[a], key[b - 1], b - a)
        if signature not in cache:
            cache[signature] = pd.infer_freq(times[a:b])
        alias = cache[signature]
        if alias is not None:
            found.setdefault(to_offset(alias).freqstr, i)
    if len(found) > 1:
        (a1, i1), (a2, i2) = list(found.items())[:2]
        raise ValueError(
            f"mixed frequencies: series {format_id(uniques[i1])} is {a1!r} but series "
            f"{format_id(uniques[i2])} is {a2!r}; resample them to one frequency or fit them "
            f"separately"
        )
    if spacing.size == 1:
        step = pd.Timedelta(int(spacing[0]), unit=unit)
        if found:
            alias = next(iter(found))
            if Frequency(alias).fixed_delta(times.tz) == step:
                return Frequency(alias)
        if fallback is not None and (fallback.positions(times[1:][same], times[:-1][same]) == 1).all():
            return fallback  # too few timestamps for pandas to name the frequency, each one step of the model's
        return Frequency(_alias_of(step, times))
    if found:
        return Frequency(next(iter(found)))
    if fallback is not None:
        return fallback
    step = int(spacing[0])
    if step > 0 and np.all(spacing % step == 0):
        return Frequency(_alias_of(pd.Timedelta(step, unit=unit), times))
    raise ValueError(
        "cannot infer one regular frequency from these timestamps; pass freq= (e.g. 'h', 'D', "
        "'MS') and a fill= if some timestamps are missing"
    )


def check_min_length(panel: Panel, min_length: int, why: str) -> None:
    """ValueError naming the first series shorter than ``min_length`` and what it needs."""
    short = np.flatnonzero(panel.lengths < min_length)
    if short.size:
        i = int(short[0])
        more = f" ({short.size - 1} other series too)" if short.size > 1 else ""
        raise ValueError(
            f"series {format_id(panel.ids[i])} has {int(panel.lengths[i])} observations but needs "
            f"at least {min_length} ({why}){more}; lower those settings or drop the short series"
        )


def check_continuation(panel: Panel, last: pd.Index, known: np.ndarray, *, new_ids: str = "raise") -> None:
    """ValueError unless every known series of ``panel`` starts one step after its last timestamp.

    panel: new observations; last: (S_model,) the last timestamp the model has of each series;
    known: (S_panel,) each panel series' position in ``last``, -1 for an id the model has not seen
    (an error unless ``new_ids="add"``).
    """
    unseen = np.flatnonzero(known < 0)
    if unseen.size and new_ids != "add":
        i = int(unseen[0])
        more = f" (and {unseen.size - 1} more)" if unseen.size > 1 else ""
        raise ValueError(
            f"series {format_id(panel.ids[i])}{more} was not seen in fit; update() takes new observations of "
            f"known series: pass new_ids='add' to take such series in with their whole history, or refit"
        )
    seen = np.flatnonzero(known >= 0)
    if not seen.size:
        return
    expected = panel.freq.shift(pd.Index(last).take(known[seen]), np.ones(seen.size, dtype=np.int64))
    first = pd.Index(panel.first).take(seen)
    wrong = np.flatnonzero(np.asarray(first != pd.Index(expected)))
    if wrong.size:
        j = int(wrong[0])
        i, was = int(seen[j]), pd.Index(last)[int(known[seen[j]])]
        more = f" ({wrong.size - 1} other series too)" if wrong.size > 1 else ""
        what = "overlaps what the model has seen" if first[j] <= was else "leaves a gap"
        raise ValueError(
            f"series {format_id(panel.ids[i])}: the new data starts at {first[j]} and {what} (its last observation "
            f"is {was}, so the next one is {pd.Index(expected)[j]}){more}; pass only the observations after "
            f"each series' last one, with no missing steps"
        )


def check_time_zone(panel: Panel, fitted_last: pd.Index) -> None:
    """ValueError unless ``panel``'s timestamps carry the time zone the model was fitted with."""
    if not (isinstance(fitted_last, pd.DatetimeIndex) and isinstance(panel.first, pd.DatetimeIndex)):
        return
    fitted, new = fitted_last.tz, panel.first.tz
    if str(fitted) == str(new):
        return
    if fitted is None:
        fix = "drop the zone with .dt.tz_convert(None) (times in UTC) or .dt.tz_localize(None) (local times)"
    else:
        fix = f"give them in that zone, with .dt.tz_localize({str(fitted)!r}) or .dt.tz_convert({str(fitted)!r})"
    raise ValueError(
        f"the model was fitted on timestamps {'without a time zone' if fitted is None else f'in {fitted}'}, but "
        f"this frame's are {'without one' if new is None else f'in {new}'}; {fix}")


def check_finite_forecast(columns: dict, ids: pd.Index) -> None:
    """FloatingPointError naming the first series whose forecast ``columns[name]`` (S, h) is not finite."""
    for name, block in columns.items():
        rows = np.flatnonzero(~np.isfinite(block).all(axis=1))
        if rows.size:
            more = f" ({rows.size - 1} other series too)" if rows.size > 1 else ""
            raise FloatingPointError(
                f"the forecast {name!r} of series {format_id(ids[int(rows[0])])} is not finite{more}, although every "
                f"input was checked: the network overflowed; refit with a lower learning_rate, or rescale the data")


def requested_horizon(h, trained: int, fix: str | None) -> int:
    """The steps ``h`` asked of a model trained for ``trained`` (None: all of them); a TypeError or ValueError
    otherwise, ``fix`` saying what to do for more steps than it was trained for (None: a model that forecasts
    any number of steps, more taken as they are)."""
    if h is None:
        return int(trained)
    if isinstance(h, (bool, np.bool_)) or not isinstance(h, numbers.Integral):
        raise TypeError(f"h must be an int >= 1, got {h!r} ({type(h).__name__})")
    if h < 1:
        raise ValueError(f"h={h} must be >= 1")
    if fix is not None and h > trained:
        raise ValueError(f"h={h} is above the horizon this model was trained for ({trained}); {fix}")
    return int(h)
