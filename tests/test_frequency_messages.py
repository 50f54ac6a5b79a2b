"""Frequencies in messages are named as users write them ('W-SUN', 'D', not '168h', '24h'), and a freq=
finer than every step of the data is answered with the data's own spacing, never with a fill=."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tsrsa import SeasonalNaiveForecaster


def series(index) -> pd.Series:
    return pd.Series(np.arange(len(index), dtype=np.float64), index=index)


def naive(**kw) -> SeasonalNaiveForecaster:
    return SeasonalNaiveForecaster(h=2, season_length=1, **kw)


def test_a_gap_in_weekly_or_daily_data_names_the_frequency_as_written():
    weekly = pd.date_range("2024-01-07", periods=20, freq="W-SUN")
    with pytest.raises(ValueError, match=r"a gap of 1 missing step\(s\) between 2024-02-04 00:00:00 and 2024-02-18 "
                                         r"00:00:00 at frequency 'W-SUN'; pass fill="):
        naive().fit(series(weekly.delete(5)))
    daily = pd.date_range("2024-01-01", periods=20, freq="D")
    with pytest.raises(ValueError, match=r"a gap of 1 missing step\(s\) .* at frequency 'D'; pass fill="):
        naive().fit(series(daily.delete(5)))
    assert naive(fill="ffill").fit(series(weekly.delete(5))).freq_.alias == "W-SUN"
    upsampled = naive(freq="D", fill="ffill").fit(series(weekly[:5]))  # a fill asked for still upsamples
    assert upsampled.freq_.alias == "D" and upsampled.predict()["ds"].iloc[0] == pd.Timestamp("2024-02-05")


@pytest.mark.parametrize("index, freq, spacing", [
    (pd.date_range("2024-01-07", periods=20, freq="W-SUN"), "D", "'W-SUN'"),
    (pd.date_range("2024-01-07", periods=20, freq="W-SUN"), "h", "'W-SUN'"),
    (pd.date_range("2024-01-01", periods=20, freq="MS"), "D", "'MS'"),
    (pd.date_range("2024-01-01", periods=20, freq="2D"), "D", "'2D'"),
    (pd.Index(np.arange(0, 140, 7)), None, "7"),
    (pd.Index(np.arange(0, 280, 14)), 7, "14"),
])
def test_a_freq_finer_than_every_step_gets_the_datas_own_spacing(index, freq, spacing):
    y = series(index)
    with pytest.raises(ValueError, match=rf"every observation is followed by a gap, so the data are spaced by "
                                         rf"{spacing}, not .*: pass freq={spacing}.*; a fill= would put made-up "
                                         rf"values between every two observations"):
        naive(freq=freq).fit(y)
