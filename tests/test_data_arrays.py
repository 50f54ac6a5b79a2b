"""Frequencies, fills, scalers and lazy windows: the array side of the data layer."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tsrsa.data import Frequency, fill_missing, parse_freq, scale_values, series_statistics
from tsrsa.data.windows import SlidingWindows, training_windows, validation_windows


# ---------------------------------------------------------------------- Frequency
@pytest.mark.parametrize("alias,last,expected", [
    ("h", "2024-01-01 23:00", ["2024-01-02 00:00", "2024-01-02 01:00"]),
    ("MS", "2024-01-01", ["2024-02-01", "2024-03-01"]),
    ("W-SAT", "2024-01-06", ["2024-01-13", "2024-01-20"]),
    ("B", "2024-01-05", ["2024-01-08", "2024-01-09"]),
])
def test_future_timestamps(alias, last, expected):
    out = Frequency(alias).future(pd.DatetimeIndex([last, last]), 2)
    assert list(out) == list(pd.to_datetime(expected + expected))


def test_future_keeps_unit_timezone_and_integer_steps():
    last = pd.DatetimeIndex(["2024-03-30 23:00"], tz="Europe/Berlin").as_unit("s")
    out = Frequency("h").future(last, 3)
    assert str(out.dtype) == "datetime64[s, Europe/Berlin]"
    assert (np.diff(out.asi8) == 3600).all()  # absolute hours across the DST switch
    np.testing.assert_array_equal(Frequency(None, 5).future(np.array([10, 20]), 2), [15, 20, 25, 30])


def test_positions_mark_off_grid_times():
    t = pd.DatetimeIndex(["2024-01-01", "2024-01-01 02:00", "2024-01-01 02:30"])
    np.testing.assert_array_equal(Frequency("h").positions(t, t[[0, 0, 0]]), [0, 2, -1])
    months = pd.DatetimeIndex(["2024-01-01", "2024-03-01", "2024-03-15"])
    np.testing.assert_array_equal(Frequency("MS").positions(months, months[[0, 0, 0]]), [0, 2, -1])
    saturdays = pd.DatetimeIndex(["2024-01-06", "2024-01-13"])
    np.testing.assert_array_equal(Frequency("W-SUN").positions(saturdays, saturdays[[0, 0]]), [-1, -1])
    np.testing.assert_array_equal(Frequency(None, 2).positions([4, 6, 7], [4, 4, 4]), [0, 1, -1])


@pytest.mark.parametrize("alias,periods", [
    ("h", [24, 168]), ("15min", [96, 672]), ("30min", [48, 336]), ("D", [7, 365]), ("W-SUN", [52]),
    ("MS", [12]), ("QS", [4]), ("YS", []), ("B", [5]),
])
def test_natural_periods(alias, periods):
    assert Frequency(alias).natural_periods() == periods


def test_equal_grids_are_equal_frequencies():
    assert Frequency("QS-JAN") == Frequency("QS-OCT")
    assert Frequency("h") == Frequency("60min")
    assert Frequency("W-SAT") != Frequency("W-SUN")
    assert Frequency(None, 1) != Frequency("h")
    assert Frequency.from_json(Frequency("MS").to_json()) == Frequency("MS")


def test_parse_freq_errors():
    assert parse_freq(None) is None and parse_freq(3).step == 3
    with pytest.raises(ValueError, match="not a pandas offset alias"):
        parse_freq("every tuesday")
    with pytest.raises(ValueError, match="positive integer"):
        parse_freq(0)
    with pytest.raises(TypeError):
        parse_freq(True)
    with pytest.raises(TypeError):
        parse_freq(1.5)


# ---------------------------------------------------------------------- fill
def test_fill_matches_pandas_per_series():
    rng = np.random.default_rng(0)
    values = rng.standard_normal(40)
    values[rng.random(40) < 0.35] = np.nan
    values[20] = 1.0  # every series keeps at least one value
    values[5] = 2.0
    offsets = np.array([0, 12, 13, 30, 40])
    values[12] = 3.0
    values[35] = 4.0
    for method in ("ffill", "interpolate", "zero"):
        out = fill_missing(values, offsets, method)
        for a, b in zip(offsets[:-1], offsets[1:]):
            s = pd.Series(values[a:b])
            if method == "ffill":
                ref = s.ffill().bfill()
            elif method == "interpolate":
                ref = s.interpolate(method="linear", limit_direction="both")
            else:
                ref = s.fillna(0.0)
            np.testing.assert_allclose(out[a:b], ref.to_numpy())
    assert np.isnan(values).any()  # the input is left as it was


# ---------------------------------------------------------------------- scalers
def test_statistics_use_only_the_training_part():
    values = np.concatenate([np.arange(10.0), 5 + 2 * np.arange(6.0), np.full(4, 7.0)])
    offsets = np.array([0, 10, 16, 20])
    fit = np.array([8, 4, 4])
    loc, scale = series_statistics(values, offsets, fit, "standard")
    np.testing.assert_allclose(loc, [np.mean(values[:8]), np.mean(values[10:14]), 7.0])
    np.testing.assert_allclose(scale, [np.std(values[:8]), np.std(values[10:14]), 1.0])  # constant -> 1
    loc, scale = series_statistics(values, offsets, fit, "robust")
    q1, med, q3 = np.percentile(values[:8], [25, 50, 75])
    assert loc[0] == med and scale[0] == q3 - q1
    loc, scale = series_statistics(values, offsets, fit, "minmax")
    assert (loc[0], scale[0]) == (0.0, 7.0)
    loc, scale = series_statistics(values, offsets, fit, None)
    assert (loc == 0).all() and (scale == 1).all()
    scaled = scale_values(values, offsets, *series_statistics(values, offsets, fit, "standard"))
    assert scaled.dtype == np.float32 and scaled.flags["C_CONTIGUOUS"]
    np.testing.assert_allclose(scaled[:8].mean(), 0.0, atol=1e-6)
    with pytest.raises(ValueError, match="scaler='zscore'"):
        series_statistics(values, offsets, fit, "zscore")


# ---------------------------------------------------------------------- windows
def _brute_force(values, offsets, fit, L, h, part):
    out = []
    for i, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
        for s in range(a, b - L - h + 1):
            target_start = s + L
            in_train = target_start + h <= a + fit[i]
            in_val = target_start >= a + fit[i]
            if (part == "train" and in_train) or (part == "val" and in_val):
                out.append(values[s : s + L + h])
    return np.array(out).reshape(-1, L + h)


@pytest.mark.parametrize("L,h", [(3, 2), (1, 1), (5, 4)])
def test_windows_equal_brute_force_enumeration(L, h):
    values = np.arange(60, dtype=np.float32)
    offsets = np.array([0, 15, 20, 60])
    fit = np.array([12, 5, 30])
    for part, make in (("train", training_windows), ("val", validation_windows)):
        windows = make(values, offsets, fit, L, h)
        x, y = windows.batch(np.arange(len(windows)))
        expected = _brute_force(values, offsets, fit, L, h, part)
        np.testing.assert_array_equal(np.concatenate([x, y], axis=1), expected)


def test_windows_are_lazy_views_of_one_array():
    values = np.zeros(1_000_000, dtype=np.float32)
    offsets = np.array([0, 500_000, 1_000_000])
    windows = training_windows(values, offsets, np.array([500_000, 500_000]), 96, 24)
    assert windows.values is values  # no copy of the data
    assert len(windows) == 2 * (500_000 - 120 + 1)
    # the index costs O(series), not O(windows)
    assert windows.cum.nbytes + windows.lo.nbytes < 100
    x, y = windows.batch(np.array([0, len(windows) - 1]))
    assert x.shape == (2, 96) and y.shape == (2, 24)


def test_window_locate_maps_to_series():
    w = SlidingWindows(np.arange(20.0), lo=np.array([0, 10]), hi=np.array([2, 11]), input_size=2, h=1)
    starts, series = w.locate(np.arange(len(w)))
    np.testing.assert_array_equal(starts, [0, 1, 2, 10, 11])
    np.testing.assert_array_equal(series, [0, 0, 0, 1, 1])


def test_calendar_positions_count_from_a_first_time_before_every_time():
    from tsrsa.data.frequency import Frequency
    from tsrsa.estimator.statistical_state import steps_from

    monthly = Frequency("MS")
    first = pd.DatetimeIndex(["2020-01-01", "2021-01-01"])
    start = pd.DatetimeIndex(["2022-01-01", "2021-05-01"])  # the earliest first lies before every start
    np.testing.assert_array_equal(monthly.positions(start, first), [24, 4])
    np.testing.assert_array_equal(steps_from(monthly, first, start), [24, 4])
    np.testing.assert_array_equal(steps_from(monthly, start, first), [-24, -4])
    assert monthly.positions(pd.DatetimeIndex(["2023-04-01"]), pd.DatetimeIndex(["2023-01-01"]))[0] == 3
    assert monthly.positions(pd.DatetimeIndex(["2023-04-01"]), pd.DatetimeIndex(["2023-01-04"]))[0] == -1  # off grid
