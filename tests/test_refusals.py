"""Inputs that used to break a fitted model silently are refused, naming the problem and the fix, and
the refused call leaves the model's forecast bit-identical.

Each case is a frame a user could pass: an infinite covariate, a value far beyond the fitted scale,
a static covariate that changed, timestamps in another zone, a column given twice.
"""
from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

from tsrsa import DLinearForecaster, LSTMForecaster, RSAForecaster, SeasonalNaiveForecaster, TransformerForecaster
from tsrsa.data.scalers import MAX_SCALED

SMALL = dict(h=4, input_size=8, d_model=8, n_heads=2, n_layers=1, d_ff=8, max_epochs=1, random_state=0)


def frame(n_series: int = 2, length: int = 60, start: str = "2024-01-01") -> pd.DataFrame:
    """Series with a past covariate ``p``, a known-future one ``f`` and a numeric static ``st``."""
    parts = []
    for i in range(n_series):
        t = np.arange(length)
        parts.append(pd.DataFrame({"unique_id": f"s{i}", "ds": pd.date_range(start, periods=length, freq="h"),
                                   "y": 10 + np.sin(t / 3) + i, "p": np.cos(t / 5), "f": np.sin(t / 7),
                                   "st": float(i), "kind": "a" if i == 0 else "b"}))
    return pd.concat(parts, ignore_index=True)


HISTORY = frame()
LATER = frame(length=64).groupby("unique_id").tail(4).reset_index(drop=True)  # the next 4 steps
FUTURE = frame(length=72).groupby("unique_id").tail(12).reset_index(drop=True)  # known-future values ahead


@pytest.fixture(scope="module")
def with_covariates():
    model = TransformerForecaster(covariates={"past": ["p"], "future": ["f"], "static": ["st", "kind"]},
                                  **SMALL)
    return model.fit(HISTORY)


@pytest.fixture(scope="module")
def plain():
    return TransformerForecaster(**SMALL).fit(HISTORY[["unique_id", "ds", "y"]])


def forecast(model, **kw) -> np.ndarray:
    return model.predict(**kw)["yhat"].to_numpy()


def refused(model, call, match: str, **predict_kw):
    """``call(model)`` raises a ValueError matching ``match``; the model forecasts as before, to the bit."""
    before = forecast(model, **predict_kw)
    state = copy.deepcopy(model.memory_)
    with pytest.raises(ValueError, match=match):
        call(model)
    assert np.array_equal(forecast(model, **predict_kw), before)
    assert np.array_equal(model.memory_.tails, state.tails) and model.memory_.last.equals(state.last)


def with_value(df: pd.DataFrame, column: str, value, row: int = 0) -> pd.DataFrame:
    out = df.copy()
    out.loc[out.index[row], column] = value
    return out


# ---------------------------------------------------------------------- infinite and huge covariates
@pytest.mark.parametrize("column", ["p", "f", "st"])
def test_an_infinite_covariate_in_update_is_refused(with_covariates, column):
    bad = with_value(LATER, column, np.inf)
    refused(with_covariates, lambda m: m.update(bad), rf"covariate '{column}' of series 's0' is infinite at "
            r"2024-01-03 12:00:00; replace it with a finite value", future_df=FUTURE)


def test_an_infinite_covariate_in_predict_df_is_refused(with_covariates):
    bad = with_value(HISTORY, "p", -np.inf, row=5)  # outside the look-back: refused all the same
    refused(with_covariates, lambda m: m.predict(df=bad, future_df=FUTURE),
            r"covariate 'p' of series 's0' is infinite at 2024-01-01 05:00:00", future_df=FUTURE)


def test_an_infinite_known_future_value_is_refused(with_covariates):
    bad = with_value(FUTURE, "f", np.inf, row=1)
    refused(with_covariates, lambda m: m.predict(future_df=bad),
            r"future_df's covariate 'f' is infinite for series 's0' at 2024-01-03 13:00:00; give every forecast "
            r"step a finite value", future_df=FUTURE)


def test_an_infinite_covariate_at_fit_is_refused_and_a_fitted_model_kept(with_covariates):
    model = copy.deepcopy(with_covariates)
    refused(model, lambda m: m.fit(with_value(HISTORY, "p", np.inf, row=3)), r"covariate 'p' .* infinite",
            future_df=FUTURE)


def test_a_covariate_far_beyond_its_fitted_scale_is_refused(with_covariates):
    huge = with_value(LATER, "p", 1e30)
    refused(with_covariates, lambda m: m.update(huge),
            r"covariate 'p' of series 's0' at 2024-01-03 12:00:00: the value 1e\+30, standardised by the mean .* "
            r"lies beyond the \+-1e\+18", future_df=FUTURE)
    far = with_value(FUTURE, "f", 1e30, row=2)
    refused(with_covariates, lambda m: m.predict(future_df=far),
            r"covariate 'f' in future_df for series 's0' at 2024-01-03 14:00:00: the value 1e\+30", future_df=FUTURE)


def test_a_covariate_at_the_edge_of_float64_is_standardised():
    """Its moments are computed on a rescaled copy, so they stay finite."""
    values = HISTORY.assign(p=np.where(np.arange(len(HISTORY)) % 2, 1.7e308, -1.7e308))
    model = TransformerForecaster(covariates={"past": ["p"]}, **SMALL).fit(values)
    mean, spread = model.covariates_.numeric["p"]
    assert abs(mean) < 1e306 and spread == pytest.approx(1.7e308)


# ---------------------------------------------------------------------- the target's range
def test_an_update_beyond_float32_once_scaled_is_refused(plain):
    huge = with_value(LATER[["unique_id", "ds", "y"]], "y", 1e200)
    refused(plain, lambda m: m.update(huge),
            r"series 's0' has the value 1e\+200 at 2024-01-03 12:00:00: scaled by the statistics the model fitted "
            r"for it \(location .*\) it becomes .* beyond the \+-1e\+18 .*; check the value")


def test_predict_df_beyond_float32_once_scaled_is_refused(plain):
    bad = with_value(HISTORY[["unique_id", "ds", "y"]], "y", -1e25, row=70)
    refused(plain, lambda m: m.predict(df=bad), r"series 's1' has the value -1e\+25 at 2024-01-01 10:00:00")


@pytest.mark.parametrize("cls", [TransformerForecaster, DLinearForecaster, LSTMForecaster])
def test_a_huge_but_well_scaled_target_forecasts_in_proportion(cls):
    """Statistics are computed without overflow: y * 1e300 forecasts 1e300 times y's forecast."""
    y = HISTORY[["unique_id", "ds", "y"]]
    kw = {k: v for k, v in SMALL.items() if cls is TransformerForecaster or k in ("h", "input_size", "max_epochs",
                                                                                 "random_state")}
    small = cls(**kw).fit(y).predict()["yhat"].to_numpy()
    large = cls(**kw).fit(y.assign(y=y["y"] * 1e300)).predict()["yhat"].to_numpy()
    assert np.all(np.isfinite(large))
    np.testing.assert_allclose(large / 1e300, small, rtol=1e-6)


def test_scaler_statistics_that_overflow_are_refused():
    y = HISTORY[["unique_id", "ds", "y"]]
    y = y.assign(y=np.where(np.arange(len(y)) % 2, 1.7e308, -1.7e308))
    with pytest.raises(ValueError, match=r"series 's0' cannot be scaled: .* overflow float64 .* divide the series"):
        TransformerForecaster(scaler="minmax", **SMALL).fit(y)


def test_max_scaled_keeps_the_networks_squares_finite_in_float32():
    assert np.isfinite(np.float32(MAX_SCALED) ** 2 * np.float32(10))


def test_seasonal_naive_reads_raw_values_and_takes_large_ones():
    """A model without a network forecasts in float64: a level of 1e200 is only a number."""
    model = SeasonalNaiveForecaster(h=4, season_length=4).fit(HISTORY[["unique_id", "ds", "y"]])
    later = LATER[["unique_id", "ds", "y"]].assign(y=1e200)
    assert np.all(model.update(later).predict()["yhat"] == 1e200)


# ---------------------------------------------------------------------- statics, time zones, columns
def test_a_static_covariate_that_changed_in_update_is_refused(with_covariates):
    refused(with_covariates, lambda m: m.update(LATER.assign(st=LATER["st"] + 5)),
            r"static covariate 'st' of series 's0' was 0 in fit, but this frame gives 5: a static covariate holds "
            r"one value per series", future_df=FUTURE)
    refused(with_covariates, lambda m: m.update(LATER.assign(kind="b")),
            r"static covariate 'kind' of series 's0' was 'a' in fit, but this frame gives 'b'", future_df=FUTURE)


def test_an_unchanged_static_covariate_is_taken(with_covariates):
    model = copy.deepcopy(with_covariates).update(LATER)
    assert model.predict(future_df=FUTURE)["ds"].min() == pd.Timestamp("2024-01-03 16:00")


def test_timestamps_in_another_zone_are_refused(plain):
    later = LATER[["unique_id", "ds", "y"]]
    utc = later.assign(ds=later["ds"].dt.tz_localize("UTC"))
    refused(plain, lambda m: m.update(utc), "fitted on timestamps without a time zone, but this frame's are in UTC; "
                                            "drop the zone")
    history = HISTORY[["unique_id", "ds", "y"]]
    refused(plain, lambda m: m.predict(df=history.assign(ds=history["ds"].dt.tz_localize("UTC"))), "in UTC")
    aware = TransformerForecaster(**SMALL).fit(history.assign(ds=history["ds"].dt.tz_localize("Europe/Berlin")))
    refused(aware, lambda m: m.update(later), "in Europe/Berlin, but this frame's are without one; give them in "
                                              "that zone")


def test_a_column_named_twice_is_refused():
    y = HISTORY[["unique_id", "ds", "y"]]
    twice = pd.concat([y, y[["y"]]], axis=1)
    with pytest.raises(ValueError, match=r"the frame has 2 columns named 'y'; keep one"):
        TransformerForecaster(**SMALL).fit(twice)
    covariate = pd.concat([HISTORY, HISTORY[["p"]]], axis=1)
    with pytest.raises(ValueError, match=r"2 columns named 'p'"):
        TransformerForecaster(covariates={"past": ["p"]}, **SMALL).fit(covariate)


# ---------------------------------------------------------------------- arguments checked when given
@pytest.mark.parametrize("make,match", [
    (lambda: RSAForecaster(h=4, input_size=24, patch_len=48, max_epochs=1),
     r"patch_len=48 is longer than input_size=24"),
    (lambda: LSTMForecaster(h=4, input_size=6, patch_len=8, max_epochs=1), r"patch_len=8 is longer than input_size=6"),
    (lambda: DLinearForecaster(h=4, input_size=8, kernel_size=25, max_epochs=1),
     r"kernel_size=25 is longer than input_size=8: .* use kernel_size <= input_size"),
    (lambda: RSAForecaster(h=4, input_size=8, d_model=8, attention_options={"cache_size": 4}, max_epochs=1),
     r"cache_size=4 bound the key/value cache of the streaming configuration; .* pass stream=True"),
    (lambda: TransformerForecaster(attention_options={"cache_policy": "tova"}, **SMALL),
     r"cache_policy='tova' bound the key/value cache"),
])
def test_impossible_combinations_are_refused_at_fit(make, match):
    with pytest.raises(ValueError, match=match):
        make().fit(HISTORY[["unique_id", "ds", "y"]])


def test_defaults_stay_possible_for_a_short_horizon():
    """h=1 at the defaults: the input covers one patch (one day of hourly data), DLinear's trend window the
    whole input."""
    hourly = HISTORY[["unique_id", "ds", "y"]]
    y = hourly.assign(ds=hourly.groupby("unique_id").cumcount())  # integer time: no season
    transformer = TransformerForecaster(h=1, d_model=8, n_heads=2, max_epochs=1, random_state=0).fit(y)
    assert transformer.resolved_input_size == transformer.patch_len == 4
    day = TransformerForecaster(h=1, d_model=8, n_heads=2, max_epochs=1, random_state=0).fit(hourly)
    assert day.resolved_input_size == 24 and day.predict()["yhat"].notna().all()
    dlinear = DLinearForecaster(h=4, max_epochs=1, random_state=0).fit(y)
    assert dlinear.network_.config.kernel_size == 8  # the paper's 25 shortened to the input
    assert DLinearForecaster(h=20, max_epochs=1)._kernel_size() == 25


def test_a_misspelt_argument_names_the_estimator_and_the_closest_names():
    with pytest.raises(TypeError, match=r"TransformerForecaster got an unexpected keyword argument 'inpt_size'; "
                                        r"did you mean 'input_size'"):
        TransformerForecaster(h=4, inpt_size=8)
    with pytest.raises(TypeError, match=r"RSAForecaster got an unexpected keyword argument 'n_regulr'; "
                                        r"did you mean rem=\{'n_regular': 2\} \(an option of tsrsa.REM\)"):
        RSAForecaster(h=4, n_regulr=2)
    with pytest.raises(TypeError, match=r"SeasonalNaiveForecaster: too many positional arguments; pass h by "
                                        r"position"):
        SeasonalNaiveForecaster(4, 12)
    with pytest.raises(ValueError, match=r"has no parameter 'dmodel'; did you mean 'd_model'"):
        TransformerForecaster(h=4).set_params(dmodel=8)
    with pytest.raises(TypeError, match="valid parameters: \\['h', 'season_length'"):
        SeasonalNaiveForecaster(h=4, zzz=1)
