"""The default path, as a new user walks it: every forecaster at its defaults (only ``h`` given) on one short
series, a panel and one long series (and, for the networks, a panel with covariates): fit → predict → save →
load → the same forecast → update (both) → the same forecast → cross_validate; and the command line's fit →
predict at the defaults. The statistical forecasters walk the same path in test_default_path_statistical.py
(a file of their own, so that the suite's workers share the two).

The suite runs the code path a user gets; what keeps it fast is a lower step target of the automatic
budget (``small_budget``), never another parameter. A model whose ``load`` decided "auto" again instead of
reading what its fit decided (0.13.0's RSA gate) fails ``test_the_default_path``'s forecast equality and
the command line's predict.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tsrsa

from conftest import run_cli

NETWORKS = ("RSAForecaster", "TransformerForecaster", "LSTMForecaster", "DLinearForecaster")
STATISTICAL = ("ETSForecaster", "ARIMAForecaster", "ThetaForecaster", "SeasonalNaiveForecaster")
CLI_NAMES = {"RSAForecaster": "RSA", "TransformerForecaster": "Transformer", "LSTMForecaster": "LSTM",
             "DLinearForecaster": "DLinear", "ETSForecaster": "ETS", "ARIMAForecaster": "ARIMA",
             "ThetaForecaster": "Theta", "SeasonalNaiveForecaster": "SeasonalNaive"}


def seasonal(n: int, period: int, seed: int, freq: str, start: str = "2000-01-01", level: float = 100.0) -> pd.Series:
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    y = level + 0.3 * t + 10 * np.sin(2 * np.pi * t / period) + rng.standard_normal(n)
    return pd.Series(y, index=pd.date_range(start, periods=n, freq=freq))


def regime(name: str) -> tuple[pd.DataFrame, int]:
    """(long frame, h) of one regime: a short monthly series (144 months, the size of AirPassengers), a panel
    of monthly series of unequal lengths, one long daily series (more than 2,000 training windows), and
    the panel with a past and a future covariate."""
    if name == "short":
        y = seasonal(144, 12, 0, "MS")
        return pd.DataFrame({"unique_id": "air", "ds": y.index, "y": y.to_numpy()}), 12
    if name in ("panel", "covariates"):
        parts = []
        for k, n in enumerate((60, 84, 100)):
            y = seasonal(n, 12, k, "MS", start=f"{2001 + k}-01-01", level=50.0 * (k + 1))
            parts.append(pd.DataFrame({"unique_id": f"s{k}", "ds": y.index, "y": y.to_numpy()}))
        df = pd.concat(parts, ignore_index=True)
        if name == "covariates":
            df["price"] = np.cos(np.arange(len(df)) / 5.0)
            df["promo"] = (np.arange(len(df)) % 7 == 0).astype(float)
        return df, 6
    y = seasonal(2300, 7, 3, "D")
    return pd.DataFrame({"unique_id": "daily", "ds": y.index, "y": y.to_numpy()}), 14


def split(df: pd.DataFrame, steps: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(history, the next ``steps`` rows of every series)."""
    rank = df.groupby("unique_id").cumcount(ascending=False)
    return df[rank >= steps].reset_index(drop=True), df[rank < steps].reset_index(drop=True)


def covariate_params(name: str) -> dict:
    return {"covariates": {"past": ["price"], "future": ["promo"]}} if name == "covariates" else {}


def future_frame(model, rows: pd.DataFrame) -> pd.DataFrame | None:
    """The known-future rows a forecast after ``rows``' history needs, or None without covariates."""
    if not model.declared_covariates().future:
        return None
    future = model.make_future_frame()
    return future.assign(promo=(np.arange(len(future)) % 7 == 0).astype(float))


CASES = [(cls, name) for cls in NETWORKS for name in ("short", "panel", "long", "covariates")]


def walk_the_default_path(tmp_path, cls: str, name: str) -> tuple[pd.DataFrame, int]:
    """fit → predict → save → load → the same forecast → update (both) → the same forecast → cross_validate;
    (the cross-validation frame, h)."""
    df, h = regime(name)
    history, new = split(df, 3)
    model = getattr(tsrsa, cls)(h=h, **covariate_params(name))
    model.fit(history)
    future = future_frame(model, history)
    forecast = model.predict(future_df=future)
    assert len(forecast) == h * history["unique_id"].nunique() and forecast["yhat"].notna().all()
    model.save(tmp_path / "model")
    loaded = tsrsa.load(tmp_path / "model")
    pd.testing.assert_frame_equal(loaded.predict(future_df=future), forecast)
    if hasattr(model, "plan_"):
        assert loaded.plan_ == model.plan_  # what the fit decided, read back, never decided again
    for fitted in (model, loaded):
        fitted.update(new)
    future = future_frame(model, df)
    after = model.predict(future_df=future)
    assert (after["ds"].min() > forecast["ds"].min()) and after["yhat"].notna().all()
    pd.testing.assert_frame_equal(loaded.predict(future_df=future), after)
    return model.cross_validate(history, n_windows=2), h


def walk_the_command_line(tmp_path, capsys, cls: str) -> tuple[pd.DataFrame, int]:
    """``tsrsa fit`` then ``tsrsa predict`` at the defaults (only ``--h``) on a CSV of one short series; (the
    forecast file read back, h)."""
    df, h = regime("short")
    df.to_csv(tmp_path / "train.csv", index=False)
    status, _, err = run_cli(capsys, "fit", "--model", CLI_NAMES[cls], "--h", h, "--input", tmp_path / "train.csv",
                             "--output", tmp_path / "model")
    assert status == 0, err
    status, _, err = run_cli(capsys, "predict", "--model-dir", tmp_path / "model", "--output", tmp_path / "fc.csv")
    assert status == 0, err
    return pd.read_csv(tmp_path / "fc.csv"), h


@pytest.mark.parametrize("cls, name", CASES, ids=[f"{c.removesuffix('Forecaster')}-{n}" for c, n in CASES])
def test_the_default_path(small_budget, tmp_path, cls, name):
    cv, h = walk_the_default_path(tmp_path, cls, name)
    assert set(cv["step"]) == set(range(1, h + 1)) and cv["yhat"].notna().all()


@pytest.mark.parametrize("cls", NETWORKS)
def test_the_command_line_fits_and_predicts_at_the_defaults(small_budget, tmp_path, capsys, cls):
    forecast, h = walk_the_command_line(tmp_path, capsys, cls)
    assert len(forecast) == h and forecast["yhat"].notna().all()


def test_a_folder_saved_before_plans_were_kept_loads_with_what_its_fit_decided(small_budget, tmp_path):
    """A model saved by 0.13.0 kept the word "auto" and no plan: its RSA gate is recovered as that version's fit
    resolved it (-2 for one series at the automatic budget), so the folder loads and forecasts as saved."""
    import hashlib
    import json

    from tsrsa.estimator.persistence import config_checksum

    df, h = regime("short")
    model = tsrsa.RSAForecaster(h=h, random_state=0).fit(df)
    assert model.plan_.gate_init == -2.0
    folder = tmp_path / "m"
    model.save(folder)
    state = json.loads((folder / "state.json").read_text())
    del state["plan"]  # what 0.13.0 wrote: no plan, and config.json without the files' sizes
    (folder / "state.json").write_text(json.dumps(state, indent=1))
    config = json.loads((folder / "config.json").read_text())
    config.pop("sizes", None)
    config["files"]["state.json"] = hashlib.sha256((folder / "state.json").read_bytes()).hexdigest()
    config["config_sha256"] = config_checksum(config)
    (folder / "config.json").write_text(json.dumps(config, indent=1))
    loaded = tsrsa.load(tmp_path / "m")
    assert loaded.plan_.recovered and loaded.plan_.gate_init == -2.0
    pd.testing.assert_frame_equal(loaded.predict(), model.predict())
