"""benchmarks/auto_m3_sample.py: its rows, resuming, and that its rules are AutoForecaster's choice."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

import tsrsa
from tsrsa.benchmarking import m3_sample as m3

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))
import auto_m3_sample  # noqa: E402
from test_bench_m3_sample import write_m3  # noqa: E402

#: the fast candidates (ETS and ARIMA fit the same way, only slower)
FAST = ("SeasonalNaive", "Theta")


def test_rows_resume_and_the_rules_are_autoforecasters(tmp_path, capsys):
    folder = write_m3(tmp_path / "m3")
    output = tmp_path / "rows.csv"
    args = ["--data-dir", str(folder), "--sample", str(folder / "sample.csv"), "--output", str(output),
            "--candidates", ",".join(FAST)]
    auto_m3_sample.main(args)
    rows = pd.read_csv(output, dtype={"unique_id": str})
    assert list(rows.columns) == list(auto_m3_sample.COLUMNS)
    assert len(rows) == 2 * len(auto_m3_sample.ORIGINS) * len(FAST)
    auto_m3_sample.main(args)  # a rerun resumes: nothing is added
    assert len(pd.read_csv(output)) == len(rows)
    auto_m3_sample.main([*args, "--summary"])
    assert "rule chosen on val1: Auto-" in capsys.readouterr().out
    # the best rule on the monthly series equals AutoForecaster fitted on the series itself
    rules = auto_m3_sample.rule_rows(rows, folder, folder / "sample.csv")
    sample = m3.read_sample(folder / "sample.csv").iloc[:1]
    series = m3.read_series(folder, sample)["N2001"]
    part = m3.origin(series, 18, "test")
    models = [(name, getattr(tsrsa, auto_m3_sample.CANDIDATES[name])(h=18, season_length=12)) for name in FAST]
    auto = tsrsa.AutoForecaster(h=18, models=models, n_windows=1, season_length=12, combine=None).fit(part.fit)
    best = rules[(rules.model == "Auto-best") & (rules.unique_id == "N2001") & (rules.origin == "test")]
    assert best["error"].iloc[0] == auto.choice_["kept"].iloc[0]
    yhat = auto.predict()["yhat"].to_numpy()
    assert best["mase"].iloc[0] == round(m3.mase(part.target, yhat, part.fit.to_numpy(), 12), 6)
    saved = rows[(rows.model == auto.choice_["kept"].iloc[0]) & (rows.unique_id == "N2001") & (rows.origin == "test")]
    np.testing.assert_allclose(json.loads(saved["forecast"].iloc[0]), yhat, rtol=1e-7)
