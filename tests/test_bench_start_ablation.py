"""benchmarks/start_ablation.py: the start alone is what the networks start from; the table's ratios."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from tsrsa.benchmarking.short_series import make_cell, run_forecaster

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import start_ablation  # noqa: E402


def test_the_start_alone_is_the_untrained_started_network():
    cell = make_cell("ar2_cycle", 200, 0, None)
    alone = start_ablation.start_alone(cell, "ar")
    untrained = run_forecaster("DLinear", cell, 0, {"start": "ar", "max_epochs": 1, "learning_rate": 1e-12,
                                                    "weight_decay": 0.0})
    np.testing.assert_allclose(untrained["val_mse"], alone["val"], rtol=1e-5)
    np.testing.assert_allclose(untrained["test"][0], alone["test"], rtol=1e-5)


def test_the_section_pairs_each_run_and_reports_geometric_means():
    table = pd.DataFrame({"dataset": ["ar2_cycle", "co2"], "train_length": [200, 200], "seed": [0, 0],
                          **{f"{k}_{p}_mse": [1.0, 1.0] for k in "bcde" for p in ("val", "test")},
                          "a_val_mse": [0.5, 2.0], "a_test_mse": [0.25, 1.0]})
    text = start_ablation.section(table, "ar", {"ar2_cycle"}, "python benchmarks/start_ablation.py")
    assert "| (a) / (b) | what REM adds on top of the start | 2 | 1.000 | 0.500 | 1/2 |" in text
    assert "| ar2_cycle | 200 | 1 | 0.250 | 1.000 |" in text
    assert "Simulated series only, (a) / (b): validation 0.500, test 0.250 (1 runs)." in text


def test_the_m4_arm_averages_every_run_and_divides_the_mean_owa():
    rows = [("Hourly", "validation", model, label, owa) for (model, label), owas in {
        start_ablation.M4_ARMS["a"]: [0.50, 0.52, 0.54],  # a repeated seed counts too
        start_ablation.M4_ARMS["b"]: [0.40],
        start_ablation.M4_ARMS["c"]: [0.60],
        start_ablation.M4_ARMS["d"]: [0.48],
    }.items() for owa in owas]
    m4 = pd.DataFrame(rows, columns=["frequency", "split", "model", "label", "owa"]).assign(smape=10.0, mase=1.0)
    line = next(l for l in start_ablation.m4_arm(m4).splitlines() if l.startswith("| Hourly | validation"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[2].startswith("0.520 (10.00 / 1.000) [3]") and cells[6] == "—"  # (e) not run: no cell
    assert cells[7:] == ["1.300", "1.250", "0.867", "0.833"]  # a / b, c / d, a / c, b / d
