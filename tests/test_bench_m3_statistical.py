"""The M3 benchmark of the statistical forecasters: statsforecast's references run in their own environment,
and a run that cannot start them writes nothing."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tsrsa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import m3_statistical  # noqa: E402
import m3_statsforecast  # noqa: E402


def write_quarterly(folder: Path) -> None:
    """Three quarterly series in M3's file layout under ``folder/m3``."""
    (folder / "m3").mkdir(parents=True)
    t = np.arange(40)
    frames = [pd.DataFrame({"unique_id": f"Q{i}", "ds": t, "y": 100 + i * t + 10 * np.sin(np.pi * t / 2)})
              for i in range(3)]
    pd.concat(frames).to_csv(folder / "m3" / "M3-quarterly.csv", index=False)


def test_a_statsforecast_model_without_its_environment_is_refused_and_writes_nothing(tmp_path, monkeypatch):
    write_quarterly(tmp_path)
    monkeypatch.setenv("TSRSA_DATA_DIR", str(tmp_path))
    output, series = tmp_path / "rows.csv", tmp_path / "series.csv"
    with pytest.raises(ValueError, match="--sf-python"):
        m3_statistical.run("quarterly", "sf-AutoARIMA", 1, 1, output, series, sf_python=None)
    assert not output.exists() and not series.exists()
    with pytest.raises(ValueError, match="sf-AutoETS, sf-AutoARIMA, sf-Theta"):
        m3_statistical.run("quarterly", "AutoARIMA", 1, 1, output, series)
    with pytest.raises(ValueError, match="choose among"):
        m3_statsforecast.run_sf("sf-CES", pd.DataFrame(), 8, 4, sys.executable)


def test_the_worker_forecasts_every_series_after_its_last_step(tmp_path):
    sf_python = os.environ.get("TSRSA_SF_PYTHON")
    if not sf_python:
        pytest.skip("set TSRSA_SF_PYTHON to the Python of an environment with statsforecast "
                    "(benchmarks/requirements-statsforecast.txt)")
    write_quarterly(tmp_path)
    train = pd.read_csv(tmp_path / "m3" / "M3-quarterly.csv", dtype={"unique_id": str})
    forecast, seconds, params = m3_statsforecast.run_sf("sf-Theta", train, 8, 4, sf_python)
    assert sorted(forecast["unique_id"].unique()) == ["Q0", "Q1", "Q2"] and seconds >= 0
    assert (forecast.groupby("unique_id")["ds"].min() == 40).all() and len(forecast) == 24
    assert params["model"] == "Theta(season_length=4)" and np.isfinite(forecast["yhat"]).all()


def test_the_validation_origin_holds_out_the_training_parts_last_values(tmp_path, monkeypatch):
    write_quarterly(tmp_path)
    frame = pd.read_csv(tmp_path / "m3" / "M3-quarterly.csv", dtype={"unique_id": str})
    short = pd.DataFrame({"unique_id": "Q3", "ds": np.arange(25), "y": np.arange(25.0) + 1})  # 25 - 16 < 10 left
    pd.concat([frame, short]).to_csv(tmp_path / "m3" / "M3-quarterly.csv", index=False)
    monkeypatch.setenv("TSRSA_DATA_DIR", str(tmp_path))
    train, test = m3_statistical.read_subset("quarterly", 1)
    vtrain, vtest = m3_statistical.read_subset("quarterly", 1, "validation")
    assert sorted(vtrain["unique_id"].unique()) == ["Q0", "Q1", "Q2"] and "Q3" in set(train["unique_id"])
    for uid in ("Q0", "Q1", "Q2"):
        part = train[train["unique_id"] == uid]
        assert vtest[vtest["unique_id"] == uid]["y"].tolist() == part["y"].iloc[-8:].tolist()
        assert vtrain[vtrain["unique_id"] == uid]["y"].tolist() == part["y"].iloc[:-8].tolist()
    assert vtrain.groupby("unique_id")["ds"].max().tolist() == [23, 23, 23]
    output, series = tmp_path / "rows.csv", tmp_path / "series.csv"
    row = m3_statistical.run("quarterly", "Theta", 1, 1, output, series, origin="validation")
    assert row["origin"] == "validation" and row["series"] == 3
    assert set(pd.read_csv(series)["origin"]) == {"validation"} and "| validation | Theta |" in (
        m3_statistical.table(output))
    with pytest.raises(ValueError, match="choose among"):
        m3_statistical.read_subset("quarterly", 1, "later")
    columns = list(m3_statistical.COLUMNS)
    old = pd.read_csv(output)[columns[:columns.index("origin")]]  # a file written before rows had an origin: M3's test
    old.to_csv(tmp_path / "old.csv", index=False)
    assert "| quarterly | test | Theta |" in m3_statistical.table(tmp_path / "old.csv")
    row = m3_statistical.run("quarterly", "Theta", 1, 1, tmp_path / "old.csv", series)  # extends the old header
    table = m3_statistical.table(tmp_path / "old.csv")
    assert table.count("| quarterly | test | Theta |") == 2 and row["series"] == 4


def test_the_models_own_intervals_are_scored_with_level(tmp_path, monkeypatch):
    write_quarterly(tmp_path)
    monkeypatch.setenv("TSRSA_DATA_DIR", str(tmp_path))
    output, series = tmp_path / "rows.csv", tmp_path / "series.csv"
    row = m3_statistical.run("quarterly", "Theta", 1, 1, output, series, level=True)
    train, test = m3_statistical.read_subset("quarterly", 1)
    forecast = tsrsa.ThetaForecaster(h=8, season_length=4).fit(train).predict(level=[80, 95])
    joined = test.merge(forecast, on=["unique_id", "ds"])
    for level in (80, 95):
        inside = (joined["y"] >= joined[f"yhat_lo_{level}"]) & (joined["y"] <= joined[f"yhat_hi_{level}"])
        assert row[f"coverage_{level}"] == pytest.approx(inside.mean(), abs=1e-4)
    scores = []
    for uid, part in joined.groupby("unique_id", sort=False):
        y, lo, hi = (part[c].to_numpy() for c in ("y", "yhat_lo_95", "yhat_hi_95"))
        history = train.loc[train["unique_id"] == uid, "y"].to_numpy()
        miss = 40 * np.maximum(lo - y, 0) + 40 * np.maximum(y - hi, 0)  # 2 / alpha = 40 at 95 %
        scores.append(np.mean(hi - lo + miss) / np.mean(np.abs(history[4:] - history[:-4])))
    assert row["msis_95"] == pytest.approx(np.mean(scores), abs=1e-4)
    naive = m3_statistical.run("quarterly", "SeasonalNaive", 1, 1, output, series, level=True)
    assert naive["coverage_80"] == "" and naive["msis_95"] == ""  # no intervals of its own: not scored
