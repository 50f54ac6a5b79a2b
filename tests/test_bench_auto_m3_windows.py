"""benchmarks/auto_m3_windows.py (every cutoff of the validation block against the default's two windows) and the
median screen of auto_m3_rules: the rows hold the study's two windows, and the summary's rules are AutoForecaster's."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tsrsa
from tsrsa.benchmarking import m3_sample as m3

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import auto_m3_data as m3_data  # noqa: E402
import auto_m3_rules as rules  # noqa: E402
import auto_m3_study as study  # noqa: E402
import auto_m3_windows as windows  # noqa: E402
from test_bench_auto_m3_study import write_yearly  # noqa: E402

pytestmark = pytest.mark.slow  # candidate fits on an M3-like panel (~5 s)

NAIVE = {"SeasonalNaive": "SeasonalNaiveForecaster", "Theta": "ThetaForecaster"}


def test_every_cutoff_holds_the_two_windows_and_its_rules_are_autoforecasters(tmp_path, monkeypatch):
    for module in (study, windows):
        monkeypatch.setattr(module, "CANDIDATES", NAIVE)
        monkeypatch.setattr(module, "NETWORKS", ("DLinear",))
    folder = write_yearly(tmp_path / "m3", n_series=5, length=60)
    data = ["--data-dir", str(folder), "--subsets", "yearly"]
    study.main([*data, "--output", str(tmp_path / "study.csv"), "--per-subset", "5",
                "--models", "SeasonalNaive,Theta,DLinear"])
    output = tmp_path / "windows.csv"
    windows.main([*data, "--output", str(output)])
    windows.main([*data, "--output", str(output), "--models", "DLinear"])
    windows.main([*data, "--output", str(output), "--models", "SeasonalNaive,Theta,DLinear"])  # resumes: nothing new
    rows = pd.read_csv(output, dtype={"unique_id": str}, keep_default_na=False)
    assert list(rows.columns) == list(windows.COLUMNS) and len(rows) == 5 * 3
    old = pd.read_csv(tmp_path / "study.csv", dtype={"unique_id": str}, keep_default_na=False)
    h = 6
    for row in rows.itertuples():  # cutoffs 0 and h of the step-1 windows are the study's two windows, the network
        # at the look-back DLinear chose on them (twice the default here: the series hold it)
        dense = m3_data.load_forecast(row.forecast).reshape(h + 1, h)
        two = m3_data.load_forecast(old[(old.unique_id == row.unique_id) & (old.model == row.model)]
                                    ["cv2_fit1_forecast"].item()).reshape(2, h)
        np.testing.assert_allclose(dense[[0, h]], two, rtol=1e-6)
    table = windows.summary(output, tmp_path / "study.csv", folder)
    later = rules.rule_table(rules.latest_rows(old), folder)
    later = later[(later.origin == "later") & (later.n_windows == 2)].set_index("model")["mase"]
    two = table[table.windows == "two"].set_index("model")["mase"]
    pd.testing.assert_series_equal(two.loc[list(rules.RULES)], later.loc[list(rules.RULES)], check_names=False)
    alone = table[table.windows == "alone"].set_index("model")
    assert np.isfinite(alone["validation_mase"]).all() and set(alone.index) == {*NAIVE, "DLinear"}
    # every cutoff: AutoForecaster with n_windows=h+1, step_size=1, fitted on the training parts less h (the
    # statistical candidates: the network's look-back is chosen on the two windows, AutoForecaster's on all)
    rows[rows.model != "DLinear"].to_csv(tmp_path / "statistical.csv", index=False)
    table = windows.summary(tmp_path / "statistical.csv", tmp_path / "study.csv", folder)
    values = m3_data.read_values(folder, old.drop_duplicates("unique_id"))
    ids = sorted(values)
    models = {name: getattr(tsrsa, cls)(h=h, season_length=1) for name, cls in NAIVE.items()}
    for rule, params in {"noise2_gate_all": {"combine": "mean"}, "noise2_best": {"combine": None},
                         "auto": {}}.items():
        auto = tsrsa.AutoForecaster(h=h, season_length=1, models=models, n_windows=h + 1, step_size=1, **params)
        yhat = auto.fit(study.long_frame(values, ids, 2 * h)).predict()["yhat"].to_numpy().reshape(len(ids), h)
        want = np.mean([m3.mase(values[sid][-2 * h:-h], f, values[sid][:-2 * h], 1) for sid, f in zip(ids, yhat)])
        got = table[(table.windows == "every cutoff") & (table.model == rule)]["mase"].item()
        assert got == pytest.approx(want, rel=1e-6), rule


def test_the_median_of_what_a_series_keeps():
    yhat = np.array([[[1.0, 5.0], [2.0, 7.0], [9.0, np.nan]],
                     [[1.0, 1.0], [3.0, 3.0], [4.0, 4.0]]])  # (S=2, C=3, h=2)
    weights = np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    got = rules.median_of_kept(weights, yhat)
    np.testing.assert_array_equal(got, [[1.5, 6.0], [3.0, 3.0]])  # two kept: their mean; weights ignored
    assert np.isnan(rules.median_of_kept(np.zeros((1, 3)), yhat[:1])).all()
