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
