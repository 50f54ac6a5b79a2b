"""Frame validation: layouts, frequencies, fills and the messages of every rejection."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tsrsa.data import FrameSpec, build_panel, check_min_length
from tsrsa.data.validation import format_id

from conftest import make_panel

SPEC = FrameSpec()


def _series_values(panel, sid):
    return panel.series(list(panel.ids).index(sid))


# ---------------------------------------------------------------------- layouts
def test_long_wide_and_series_give_the_same_panel():
    long = make_panel()
    wide = long.pivot(index="ds", columns="unique_id", values="y")
    a, b = build_panel(long, SPEC), build_panel(wide, SPEC)
    assert list(a.ids) == list(b.ids) == ["s0", "s1", "s2"]
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.offsets, b.offsets)
    assert a.freq == b.freq
    one = long[long["unique_id"] == "s1"].set_index("ds")["y"].rename("s1")
    c = build_panel(one, SPEC)
    assert list(c.ids) == ["s1"] and c.layout == "series"
    np.testing.assert_array_equal(c.values, _series_values(a, "s1"))
    unnamed = build_panel(pd.Series([1.0, 2.0, 3.0], index=pd.RangeIndex(3)), SPEC)
    assert list(unnamed.ids) == ["y"]


def test_unsorted_rows_are_sorted_and_input_untouched():
    df = make_panel()
    shuffled = df.sample(frac=1.0, random_state=1)
    before = shuffled.copy()
    a, b = build_panel(df, SPEC), build_panel(shuffled, SPEC)
    np.testing.assert_array_equal(a.values, b.values)
    pd.testing.assert_frame_equal(shuffled, before)


def test_custom_column_names_and_extra_columns():
    df = make_panel().rename(columns={"unique_id": "store", "ds": "when", "y": "sales"}).assign(extra=1)
    panel = build_panel(df, FrameSpec("store", "when", "sales"))
    assert panel.n_series == 3
    with pytest.raises(ValueError, match=r"missing column\(s\) \['ds', 'y'\]"):
        build_panel(df.rename(columns={"store": "unique_id"}), SPEC)


def test_wide_frame_trims_padding_but_not_inner_gaps():
    idx = pd.date_range("2021-01-01", periods=6, freq="MS")
    wide = pd.DataFrame({"late": [np.nan, np.nan, 1.0, 2.0, 3.0, 4.0],
                         "early": [1.0, 2.0, 3.0, 4.0, np.nan, np.nan]}, index=idx)
    panel = build_panel(wide, SPEC)
    assert list(panel.ids) == ["early", "late"]
    assert list(panel.lengths) == [4, 4]
    assert panel.first[1] == idx[2] and panel.last[0] == idx[3]
    holed = wide.assign(late=[np.nan, 1.0, np.nan, 2.0, 3.0, 4.0])
    with pytest.raises(ValueError, match="series 'late' has NaN in the target at 2021-03-01"):
        build_panel(holed, SPEC)


def test_id_dtypes_are_kept():
    df = make_panel()
    ints = df.assign(unique_id=df["unique_id"].str[1:].astype("int64"))
    assert build_panel(ints, SPEC).ids.dtype == np.int64
    cats = df.assign(unique_id=df["unique_id"].astype("category"))
    assert isinstance(build_panel(cats, SPEC).ids.dtype, pd.CategoricalDtype)


def test_integer_time_and_integer_steps():
    df = pd.DataFrame({"unique_id": 1, "ds": [0, 2, 4, 6], "y": [1.0, 2, 3, 4]})
    with pytest.raises(ValueError, match="series 1 has a gap.*spaced by 2, not integer step 1: pass freq=2;"):
        build_panel(df, SPEC)
    panel = build_panel(df, SPEC, freq=2)
    assert panel.freq.step == 2 and list(panel.lengths) == [4]
    wide = pd.DataFrame({"a": [1.0, 2.0, 3.0]}, index=pd.RangeIndex(10, 13))
    assert build_panel(wide, SPEC).first[0] == 10


def test_timezone_aware_datetimes():
    df = make_panel(n_series=1, length=30).assign(ds=lambda d: d["ds"].dt.tz_localize("Europe/Berlin"))
    panel = build_panel(df, SPEC)
    assert str(panel.last.tz) == "Europe/Berlin"


# ---------------------------------------------------------------------- frequencies
@pytest.mark.parametrize("freq", ["h", "15min", "D", "W-SUN", "MS", "QS-JAN", "B"])
def test_frequency_is_inferred(freq):
    df = make_panel(length=30, freq=freq)
    inferred = build_panel(df, SPEC).freq
    assert inferred == build_panel(df, SPEC, freq=freq).freq
    assert inferred != build_panel(make_panel(length=30, freq="W-SAT" if freq == "W-SUN" else "W-SUN"), SPEC).freq


def test_frequency_inferred_despite_gaps_in_some_series():
    df = make_panel(length=30, freq="MS")
    holed = df.drop(index=[5, 40])
    panel = build_panel(holed, SPEC, fill="ffill")
    assert panel.freq.alias == "MS"
    assert list(panel.lengths) == [30, 30, 30]


@pytest.mark.parametrize("start", ["2023-01-01", "2023-02-01"])  # a step of 31 days, then of 28
def test_two_new_months_per_series_are_one_step_of_a_monthly_model(start):
    from tsrsa.data.frequency import Frequency

    new = pd.DataFrame({"unique_id": ["a", "a", "b", "b"], "y": [1.0, 2.0, 3.0, 4.0],
                        "ds": pd.to_datetime([start, pd.Timestamp(start) + pd.offsets.MonthBegin()] * 2)})
    assert build_panel(new, SPEC, expected_freq=Frequency("MS")).freq.alias == "MS"
    # the same spacing is not one step of a daily model, nor of a monthly one when off the month's start
    with pytest.raises(ValueError, match="but the model was fitted on"):
        build_panel(new, SPEC, expected_freq=Frequency("D"))
    off = new.assign(ds=new["ds"] + pd.Timedelta(days=3))
    with pytest.raises(ValueError, match="but the model was fitted on"):
        build_panel(off, SPEC, expected_freq=Frequency("MS"))


def test_a_monthly_model_is_updated_with_two_new_months():
    from tsrsa import SeasonalNaiveForecaster

    df = make_panel(length=36, freq="MS")
    last = df["ds"].max()
    new = pd.concat([pd.DataFrame({"unique_id": sid, "y": [7.0, 8.0],
                                   "ds": [last + pd.offsets.MonthBegin(k) for k in (1, 2)]})
                     for sid in df["unique_id"].unique()], ignore_index=True)
    model = SeasonalNaiveForecaster(h=3, season_length=12).fit(df)
    model.update(new)
    whole = SeasonalNaiveForecaster(h=3, season_length=12).fit(pd.concat([df, new], ignore_index=True))
    pd.testing.assert_frame_equal(model.predict(), whole.predict())


def test_freq_override_mismatch():
    with pytest.raises(ValueError, match="off the 'D' grid"):
        build_panel(make_panel(freq="h"), SPEC, freq="D")
    with pytest.raises(TypeError, match="does not suit a time column of datetimes"):
        build_panel(make_panel(), SPEC, freq=3)


def test_single_timestamps_need_freq():
    df = pd.DataFrame({"unique_id": ["a", "b"], "ds": pd.to_datetime(["2020-01-01", "2020-01-02"]), "y": [1.0, 2.0]})
    with pytest.raises(ValueError, match="single timestamp; pass freq="):
        build_panel(df, SPEC)
    assert build_panel(df, SPEC, freq="D").n_series == 2


# ---------------------------------------------------------------------- fill
def test_fill_covers_missing_rows_and_nan_values():
    df = make_panel(n_series=2, length=10)
    df.loc[3, "y"] = np.nan
    df = df.drop(index=[5, 6])
    for method in ("ffill", "interpolate", "zero"):
        panel = build_panel(df, SPEC, fill=method)
        assert list(panel.lengths) == [10, 10]
        assert np.isfinite(panel.values).all()
    s0 = make_panel(n_series=1, length=10)["y"].to_numpy()
    inter = _series_values(build_panel(df, SPEC, fill="interpolate"), "s0")
    np.testing.assert_allclose(inter[3], (s0[2] + s0[4]) / 2)
    np.testing.assert_allclose(inter[5:7], s0[4] + (s0[7] - s0[4]) * np.array([1, 2]) / 3)
    np.testing.assert_allclose(_series_values(build_panel(df, SPEC, fill="ffill"), "s0")[5:7], s0[4])
    np.testing.assert_allclose(_series_values(build_panel(df, SPEC, fill="zero"), "s0")[[3, 5, 6]], 0.0)


def test_fill_cannot_rescue_an_empty_series():
    df = make_panel(n_series=2, length=5)
    df.loc[df["unique_id"] == "s1", "y"] = np.nan
    with pytest.raises(ValueError, match="series 's1' has no observed value"):
        build_panel(df, SPEC, fill="ffill")


def test_inf_is_an_error_even_with_fill():
    df = make_panel()
    df.loc[7, "y"] = -np.inf
    with pytest.raises(ValueError, match="series 's0' has an infinite value"):
        build_panel(df, SPEC, fill="zero")


def test_min_length_message():
    panel = build_panel(make_panel(length=10), SPEC)
    with pytest.raises(ValueError, match=r"series 's0' has 10 observations but needs at least 12 \(why\) \(2 other"):
        check_min_length(panel, 12, "why")


def test_format_id_uses_plain_python_values():
    assert format_id(np.int64(7)) == "7"
    assert format_id("a") == "'a'"


# ---------------------------------------------------------------------- fuzzing
_IDS = st.sampled_from(["a", "b", "c"])


@st.composite
def messy_frames(draw):
    """Long frames with random lengths, then random damage of every kind the validator knows."""
    n_series = draw(st.integers(1, 3))
    rows = []
    for k in range(n_series):
        n = draw(st.integers(1, 12))
        start = pd.Timestamp("2024-01-01") + pd.Timedelta(hours=draw(st.integers(0, 5)))
        ds = pd.date_range(start, periods=n, freq="h")
        values = draw(st.lists(st.floats(-1e6, 1e6), min_size=n, max_size=n))
        rows += [(f"id{k}", t, v) for t, v in zip(ds, values)]
    df = pd.DataFrame(rows, columns=["unique_id", "ds", "y"])
    for action in draw(st.lists(st.sampled_from(["drop", "nan", "inf", "dup", "shift", "shuffle"]), max_size=3)):
        if len(df) == 0:
            break
        i = draw(st.integers(0, len(df) - 1))
        if action == "drop":
            df = df.drop(index=df.index[i])
        elif action == "nan":
            df.loc[df.index[i], "y"] = np.nan
        elif action == "inf":
            df.loc[df.index[i], "y"] = np.inf
        elif action == "dup":
            df = pd.concat([df, df.iloc[[i]]])
        elif action == "shift":
            df.loc[df.index[i], "ds"] = df.loc[df.index[i], "ds"] + pd.Timedelta(minutes=draw(st.integers(1, 59)))
        else:
            df = df.sample(frac=1.0, random_state=draw(st.integers(0, 10)))
    return df


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=messy_frames(), fill=st.sampled_from([None, "ffill", "interpolate", "zero"]))
def test_validator_accepts_or_explains(df, fill):
    before = df.copy()
    try:
        panel = build_panel(df, SPEC, fill=fill, freq="h")
    except (ValueError, TypeError) as err:
        message = str(err)
        if "empty" not in message:
            assert re.search(r"series 'id\d'", message), message  # names the series at fault
    else:
        assert np.isfinite(panel.values).all()
        assert panel.offsets[-1] == len(panel.values) and (panel.lengths >= 1).all()
        for i in range(panel.n_series):  # every series regular from first to last
            assert len(panel.timestamps(i)) == panel.lengths[i]
            assert panel.timestamps(i)[-1] == panel.last[i]
        if fill is None:  # nothing to fill: the values are the rows themselves
            assert sorted(panel.values.tolist()) == sorted(df["y"].tolist())
    pd.testing.assert_frame_equal(df, before)
