"""benchmarks/auto_rules.py: the rules' ratios per regime and their ranking over the regimes."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import auto_m3_rules as rules  # noqa: E402
import auto_m3_study as study  # noqa: E402
import auto_rules  # noqa: E402
from test_bench_auto_m3_study import FAST, write_yearly  # noqa: E402

pytestmark = pytest.mark.slow  # the study's candidate fits on an M3-like panel (~3 s)


def test_the_ranking_is_the_geometric_mean_and_the_worst_over_the_regimes():
    a = pd.DataFrame({"mase": [0.9, 1.2], "smape": [1.0, 0.8]}, index=["r1", "r2"])
    b = pd.DataFrame({"mase": [1.1, 0.7], "smape": [0.5, 2.0]}, index=["r1", "r2"])
    out = auto_rules.ranking({"A": a, "B": b})
    assert list(out.index) == ["r2", "r1"]  # sqrt(1.2 * 0.7) = 0.917 < sqrt(0.9 * 1.1) = 0.995
    assert out.loc["r1", "mase_gmean"] == pytest.approx(np.sqrt(0.9 * 1.1), rel=1e-12)
    assert out.loc["r2", "smape_gmean"] == pytest.approx(np.sqrt(0.8 * 2.0), rel=1e-12)
    assert out.loc["r1", "mase_worst"] == 1.1 and out.loc["r2", "smape_worst"] == 2.0


def test_an_m3_regime_divides_each_rules_later_block_by_the_best_candidates(tmp_path, monkeypatch):
    monkeypatch.setattr(study, "CANDIDATES", FAST)
    folder = write_yearly(tmp_path / "m3")
    output = tmp_path / "rows.csv"
    study.main(["--data-dir", str(folder), "--output", str(output), "--subsets", "yearly", "--per-subset", "4"])
    rows = pd.read_csv(output, dtype={"unique_id": str}, keep_default_na=False)
    table = rules.rule_table(rows, folder)
    later = table[table["origin"] == "later"]
    best = later[later["model"].isin(FAST) & (later["n_windows"] == 1)]["mase"].min()
    ratios = auto_rules.m3_ratios(rows, folder, "yearly")
    assert set(ratios.index) == set(rules.RULES)
    want = later[(later["model"] == "noise2_gate2") & (later["n_windows"] == 2)]["mase"].item() / best
    assert ratios.loc["noise2_gate2", "mase"] == pytest.approx(want, rel=1e-12)
    # without Theta the rules choose among the seasonal naive alone: every rule is that candidate
    alone = auto_rules.m3_ratios(rows, folder, "yearly", without=["Theta"])
    assert np.allclose(alone["mase"], 1.0)


def test_every_stand_in_of_the_m4_regimes_has_rows_in_the_committed_study():
    rows = pd.read_csv(ROOT / "benchmarks" / "results" / "auto_m4_study.csv", usecols=["frequency", "model"])
    have = set(zip(rows["frequency"], rows["model"]))
    for _, frequency, use, longer in auto_rules.M4_REGIMES:
        for label in (*use, *longer):
            assert (frequency, label) in have, f"{label} has no {frequency} rows"
    # every default candidate has rows of its own name at both frequencies (no regime lacks one)
    assert all((f, name) in have for f in ("Weekly", "Hourly") for name in auto_rules.m4.NAMES if name != "ARIMA")
    assert ("Weekly", "ARIMA") in have  # ARIMA is left out on Hourly for its cost
    labels = [label for label, *_ in auto_rules.M4_REGIMES]
    assert len(set(labels)) == len(labels)  # each regime its own column of the ranking
