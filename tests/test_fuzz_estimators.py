"""Fuzzing the estimators with hostile frames: every call either forecasts or refuses cleanly.

Frames are drawn as a user might pass them after a fit -- continuations of the fitted series, new ids,
whole histories -- and then damaged: gaps, duplicate rows, shuffled rows, NaN, inf and huge values in
the target and the covariates, other dtypes, time zones, a static covariate that changed. For each call
(``update``, ``predict(df=...)``, ``predict(future_df=...)``, ``fit`` on a capped number of examples):

- the outcome is a valid forecast (finite, one row per series and step) or a ValueError/TypeError
  raised by tsrsa's own code (never one from pandas, numpy or torch deep inside);
- the frames passed in are never mutated;
- a call that raises leaves the model's forecast bit-identical.

``make test`` runs the "ci" profile of ``tests/conftest.py`` (a fixed seed, a few dozen examples);
``TSRSA_FUZZ=long`` runs thousands (README, "Testing").
"""
from __future__ import annotations

import copy
import traceback
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tsrsa import RSAForecaster, TransformerForecaster

PACKAGE = Path(__file__).resolve().parents[1] / "tsrsa"
H, LENGTH = 4, 48
START = pd.Timestamp("2024-01-01")
SMALL = dict(h=H, input_size=8, d_model=8, n_heads=2, n_layers=1, d_ff=8, max_epochs=1, random_state=0)
DAMAGE = ("nan", "inf", "-inf", "huge", "drop", "duplicate", "shuffle", "overlap", "gap", "float32", "int",
          "object", "tz", "string_time", "extra_column", "int_ids", "empty")
COVARIATE_DAMAGE = ("nan", "inf", "huge", "static_change", "unknown_category", "missing_column", "object")


def series_rows(sid: str, start: int, n: int, seed: int) -> pd.DataFrame:
    """Steps [start, start + n) of series ``sid``: y, a past covariate p, a known-future f, statics."""
    t = np.arange(start, start + n)
    rng = np.random.default_rng(seed)
    k = int(sid[1:]) if sid[1:].isdigit() else 7
    return pd.DataFrame({"unique_id": sid, "ds": START + pd.to_timedelta(t, unit="h"),
                         "y": 10 + k + np.sin(t / 3) + 0.1 * rng.standard_normal(n), "p": np.cos(t / 5),
                         "f": np.sin(t / 7), "st": float(k), "kind": "a" if k % 2 == 0 else "b"})


HISTORY = pd.concat([series_rows("s0", 0, LENGTH, 0), series_rows("s1", 0, LENGTH, 1)], ignore_index=True)


@pytest.fixture(scope="module")
def models():
    """Fitted once: a fixed-window model with every kind of covariate, and two that stream."""
    plain = HISTORY[["unique_id", "ds", "y"]]
    return {
        "covariates": TransformerForecaster(covariates={"past": ["p"], "future": ["f"], "static": ["st", "kind"]},
                                            **SMALL).fit(HISTORY),
        "stream": RSAForecaster(stream=True, **{**SMALL, "n_heads": 4}).fit(plain),
        "stream_covariates": TransformerForecaster(stream=True, covariates={"past": ["p"], "static": ["st"]},
                                                   **SMALL).fit(HISTORY[["unique_id", "ds", "y", "p", "st"]]),
    }


def damaged(draw, df: pd.DataFrame, covariates: tuple[str, ...], target: str = "y") -> pd.DataFrame:
    """``df`` with a few kinds of damage drawn from ``DAMAGE`` (and ``COVARIATE_DAMAGE``) done to its
    ``target`` column, its rows, its times and ids, and its ``covariates``."""
    actions = draw(st.lists(st.sampled_from(DAMAGE), max_size=3))
    if covariates:
        actions += [("covariate", a) for a in draw(st.lists(st.sampled_from(COVARIATE_DAMAGE), max_size=2))]
    for action in actions:
        if len(df) == 0:
            break
        i = df.index[draw(st.integers(0, len(df) - 1))]
        dated = pd.api.types.is_datetime64_any_dtype(df["ds"])
        if isinstance(action, tuple):
            df = damaged_covariate(draw, df, action[1], i, covariates)
        elif action in ("nan", "inf", "-inf", "huge") and pd.api.types.is_numeric_dtype(df[target]):
            df[target] = df[target].astype(np.float64)
            huge = draw(st.sampled_from([1e30, -1e200, 3e38, 1.7e308]))
            df.loc[i, target] = huge if action == "huge" else float(action)
        elif action == "drop":
            df = df.drop(index=i)
        elif action == "duplicate":
            df = pd.concat([df, df.loc[[i]]])
        elif action == "shuffle":
            df = df.sample(frac=1.0, random_state=draw(st.integers(0, 9)))
        elif action in ("overlap", "gap") and dated:
            df["ds"] = df["ds"] + pd.Timedelta(hours=-1 if action == "overlap" else 2)
        elif action == "float32" and pd.api.types.is_numeric_dtype(df[target]):
            df[target] = df[target].astype(np.float32)
        elif action == "int" and pd.api.types.is_float_dtype(df[target]):
            df[target] = df[target].fillna(0).clip(-1e9, 1e9).round().astype(np.int64)
        elif action == "object":
            df[target] = df[target].astype(object)
        elif action == "tz" and dated and df["ds"].dt.tz is None:
            df["ds"] = pd.DatetimeIndex(df["ds"]).tz_localize(draw(st.sampled_from(["UTC", "Asia/Tokyo"])))
        elif action == "string_time":
            df["ds"] = df["ds"].astype(str)
        elif action == "extra_column":
            df["note"] = "x"
        elif action == "int_ids" and pd.api.types.is_string_dtype(df["unique_id"]):
            df["unique_id"] = df["unique_id"].str[1:].map(lambda v: int(v) if v.isdigit() else 9)
        elif action == "empty":
            df = df.iloc[:0]
    return df


def damaged_covariate(draw, df, action: str, i, covariates) -> pd.DataFrame:
    name = draw(st.sampled_from(covariates))
    if name not in df.columns:  # an earlier action dropped it
        return df
    if action == "missing_column":
        return df.drop(columns=[name])
    numeric = pd.api.types.is_numeric_dtype
    if action == "static_change" and "st" in df.columns and numeric(df["st"]):
        df["st"] = df["st"] + 1.0
    elif action == "unknown_category" and "kind" in df.columns:
        df["kind"] = "z"
    elif action == "object":
        df[name] = df[name].astype(str)
    elif action in ("nan", "inf", "huge") and numeric(df[name]):
        df[name] = df[name].astype(np.float64)
        df.loc[i, name] = {"nan": np.nan, "inf": np.inf, "huge": 1e30}[action]
    return df


@st.composite
def continuations(draw, covariates: tuple[str, ...]):
    """New steps of some fitted series (and perhaps a new one with its whole history), damaged."""
    ids = draw(st.lists(st.sampled_from(["s0", "s1", "new"]), min_size=1, max_size=3, unique=True))
    n = draw(st.integers(1, 6))
    parts = [series_rows(sid, 0, LENGTH + n, 9) if sid == "new" else series_rows(sid, LENGTH, n, draw(st.integers(0, 9)))
             for sid in ids]
    frame = pd.concat(parts, ignore_index=True)[["unique_id", "ds", "y", *covariates]]
    return damaged(draw, frame, covariates)


@st.composite
def histories(draw, covariates: tuple[str, ...]):
    """Whole histories of the fitted series (and perhaps others), damaged: for predict(df=...) and fit."""
    ids = draw(st.lists(st.sampled_from(["s0", "s1", "s5"]), min_size=1, max_size=3, unique=True))
    n = draw(st.integers(2, LENGTH + 8))
    frame = pd.concat([series_rows(sid, 0, n, 3) for sid in ids], ignore_index=True)
    return damaged(draw, frame[["unique_id", "ds", "y", *covariates]], covariates)


def from_tsrsa(error: BaseException) -> bool:
    """Whether ``error`` was raised by a line of tsrsa's own code (not from a library it calls)."""
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and Path(frames[-1].filename).resolve().is_relative_to(PACKAGE)


def forecast(model, future_df=None) -> np.ndarray:
    return model.predict(future_df=future_df)["yhat"].to_numpy()


def check_call(model, call, frames: list[pd.DataFrame], future_df=None):
    """Run ``call(model)``; the outcome rules of the module docstring. Returns the result or None."""
    copies = [f.copy(deep=True) for f in frames]
    before = forecast(model, future_df) if hasattr(model, "memory_") else None
    try:
        result = call(model)
    except (ValueError, TypeError) as error:
        assert from_tsrsa(error), "".join(traceback.format_exception(error))
        after = forecast(model, future_df) if hasattr(model, "memory_") else None
        assert (before is None and after is None) or np.array_equal(before, after)
        result = None
    for frame, original in zip(frames, copies):
        pd.testing.assert_frame_equal(frame, original)
    return result


def valid_forecast(out: pd.DataFrame, ids) -> None:
    assert np.all(np.isfinite(out["yhat"].to_numpy()))
    assert len(out) == len(ids) * H and set(out["unique_id"]) == set(ids)


def future_frame(model, extra: int = 0) -> pd.DataFrame:
    """Known-future values for the next H steps of every series the model remembers."""
    parts = []
    for sid, last in zip(model.memory_.ids, model.memory_.last):
        start = int((last - START) / pd.Timedelta(hours=1)) + 1
        parts.append(series_rows(str(sid) if isinstance(sid, str) else f"s{sid}", start, H + extra, 0)
                     .assign(unique_id=sid)[["unique_id", "ds", "f"]])
    return pd.concat(parts, ignore_index=True)


#: the covariate columns each fitted model of ``models`` reads
COVARIATES = {"covariates": ("p", "f", "st", "kind"), "stream": (), "stream_covariates": ("p", "st")}
FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                       HealthCheck.function_scoped_fixture])


@FUZZ
@given(data=st.data(), which=st.sampled_from(["covariates", "stream", "stream_covariates"]))
def test_update_then_predict_forecasts_or_refuses(models, data, which):
    covariates = COVARIATES[which]
    model = copy.deepcopy(models[which])
    future = future_frame(model, extra=8) if which == "covariates" else None
    new = data.draw(continuations(covariates))
    updated = check_call(model, lambda m: m.update(new, new_ids=data.draw(st.sampled_from(["raise", "add"]))),
                         [new] + ([future] if future is not None else []), future_df=future)
    if updated is not None:
        future = future_frame(model) if which == "covariates" else None
        valid_forecast(model.predict(future_df=future), model.memory_.ids)


@FUZZ
@given(data=st.data(), which=st.sampled_from(["covariates", "stream", "stream_covariates"]))
def test_predict_on_a_frame_forecasts_or_refuses(models, data, which):
    model = models[which]
    df = data.draw(histories(COVARIATES[which]))
    future = None
    if which == "covariates":  # known-future values covering every step the frame's series may need
        future = pd.concat([series_rows(sid, 0, LENGTH + 8 + H, 0) for sid in ("s0", "s1", "s5")],
                           ignore_index=True)[["unique_id", "ds", "f"]]
        future = damaged(data.draw, future, (), target="f")
    out = check_call(model, lambda m: m.predict(df=df, future_df=future), [df] + ([future] if future is not None
                     else []), future_df=None if future is None else future_frame(model))
    if out is not None:
        valid_forecast(out, out["unique_id"].unique())


@settings(parent=FUZZ, max_examples=max(5, settings.default.max_examples // 8))  # a fit costs about a second
@given(data=st.data(), stream=st.booleans())
def test_fit_on_a_damaged_frame_fits_or_refuses_and_leaves_no_state(data, stream):
    df = data.draw(histories(("p",)))
    model = TransformerForecaster(stream=stream, covariates={"past": ["p"]}, **SMALL)
    params = model.get_params()
    fitted = check_call(model, lambda m: m.fit(df), [df])
    if fitted is None:
        assert vars(model) == params
    else:
        valid_forecast(fitted.predict(), fitted.memory_.ids)
