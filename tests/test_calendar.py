"""Calendar features: the cyclical encodings elementwise, which cycles a frequency resolves, holidays, errors."""
from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd
import pytest

from tsrsa.data.calendar import CALENDAR_FEATURES, calendar_features


def test_each_encoding_is_the_cycle_position_as_sine_and_cosine():
    ds = pd.to_datetime(["2024-02-26 06:00", "2024-02-29 18:30", "2024-12-31 23:00"])  # Mon, Thu (leap), Tue
    out = calendar_features(ds, "30min", features=list(CALENDAR_FEATURES))
    def expect(v, p):
        return np.sin(2 * np.pi * np.asarray(v, float) / np.asarray(p, float)), \
            np.cos(2 * np.pi * np.asarray(v, float) / np.asarray(p, float))
    cases = {"minute_of_hour": ([0, 30, 0], 60), "hour_of_day": ([6, 18.5, 23], 24), "day_of_week": ([0, 3, 1], 7),
             "day_of_month": ([25, 28, 30], [29, 29, 31]), "week_of_year": ([8, 8, 0], 52),
             "month_of_year": ([1, 1, 11], 12)}
    for name, (v, p) in cases.items():
        sin, cos = expect(v, p)
        np.testing.assert_allclose(out[f"{name}_sin"], sin, atol=1e-12, err_msg=name)
        np.testing.assert_allclose(out[f"{name}_cos"], cos, atol=1e-12, err_msg=name)
    assert out.loc[0, "hour_of_day_sin"] == pytest.approx(1.0)  # 06:00 is a quarter of the day


@pytest.mark.parametrize("freq, expected", [
    ("15min", ["minute_of_hour", "hour_of_day", "day_of_week", "day_of_month", "week_of_year", "month_of_year"]),
    ("h", ["hour_of_day", "day_of_week", "day_of_month", "week_of_year", "month_of_year"]),
    ("D", ["day_of_week", "day_of_month", "week_of_year", "month_of_year"]),
    ("W-SUN", ["day_of_month", "week_of_year", "month_of_year"]),
    ("MS", ["month_of_year"]),
    ("YS", []),
])
def test_auto_takes_the_cycles_a_step_resolves(freq, expected):
    ds = pd.date_range("2024-01-01", periods=5, freq=freq)
    out = calendar_features(ds, freq)
    assert list(out.columns) == [f"{n}_{f}" for n in expected for f in ("sin", "cos")]


def test_input_is_left_alone_and_bad_input_is_named():
    ds = pd.Series(pd.date_range("2024-01-01", periods=3, freq="h"))
    before = ds.copy()
    calendar_features(ds, "h")
    pd.testing.assert_series_equal(ds, before)
    with pytest.raises(ValueError, match="unknown calendar feature"):
        calendar_features(ds, "h", features=["hour"])
    with pytest.raises(ValueError, match="offset alias"):
        calendar_features(ds, "hourly")
    with pytest.raises(ValueError, match="NaT"):
        calendar_features(pd.to_datetime(["2024-01-01", None]), "D")
    with pytest.raises(TypeError, match="datetimes"):
        calendar_features([1.5, object()], "D")


@pytest.mark.skipif(importlib.util.find_spec("holidays") is None, reason="the holidays extra is not installed")
def test_holidays_flag_a_countrys_public_holidays():
    ds = pd.date_range("2024-12-24", periods=3, freq="D")
    assert calendar_features(ds, "D", features=[], country="US")["holiday"].tolist() == [0.0, 1.0, 0.0]
    with pytest.raises(ValueError, match="country"):
        calendar_features(ds, "D", country="XX")


@pytest.mark.skipif(importlib.util.find_spec("holidays") is not None, reason="the holidays extra is installed")
def test_holidays_without_the_package_say_how_to_install_it():
    with pytest.raises(ImportError, match="pip install holidays"):
        calendar_features(pd.date_range("2024-12-24", periods=3, freq="D"), "D", country="US")
