"""The covariate benchmark: an MS and an S cell on a tiny synthetic data set, its scoring and its table."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from tsrsa import DLinearForecaster
from tsrsa.benchmarking.protocol import prepare
from tsrsa.benchmarking.results import append_rows

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import covariates as bench  # noqa: E402  (a script of benchmarks/)

TINY = {"d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 8, "max_epochs": 1, "patch_len": 4}


def _data():
    rng = np.random.default_rng(0)
    loads = rng.standard_normal((400, 6)).cumsum(axis=0) * 0.1
    ot = loads.sum(axis=1, keepdims=True) + 0.1 * rng.standard_normal((400, 1))
    return prepare("weather", np.hstack([loads, ot]), [*bench.ETT_COVARIATES, "OT"], 24)


def test_ms_and_s_cells_differ_in_the_covariates_alone_and_the_table_pairs_them(tmp_path):
    data = _data()
    rows = [bench.run_ett(data, "Transformer", 6, 0, setting, overrides=TINY, max_test_windows=30)
            for setting in ("S", "MS")]
    s, ms = rows
    assert '"past_covariates": null' in s["params"]
    assert '"past_covariates": ["HUFL", "HULL", "MUFL", "MULL", "LUFL", "LULL"]' in ms["params"]
    assert s["n_windows"] == ms["n_windows"] == 30 and all(np.isfinite(r["mse"]) for r in rows)
    path = tmp_path / "covariates.csv"
    append_rows(path, rows, columns=bench.COLUMNS)
    text = bench.table(path)
    line = next(x for x in text.splitlines() if x.startswith("| weather | 6 | Transformer | MS |"))
    assert f"| {ms['mse'] / s['mse']:.3f} (" in line
    # rows are told apart by their parameters, not by their date
    assert "rows whose parameters do not name the option ran this way" in text and "dated before" not in text


def test_the_score_is_the_forecast_from_each_cutoff_against_the_next_steps():
    frame = bench.ett_frame(_data(), "MS")
    model = DLinearForecaster(h=4, input_size=12, max_epochs=1, random_state=0,
                              covariates={"past": list(bench.ETT_COVARIATES)}).fit(frame.iloc[:300])
    mse, mae, n = bench.score(model, frame, 320, 3, 4, chunk=2)
    errors = []
    for first in (320, 321, 322):
        forecast = model.predict(df=frame.iloc[:first])["yhat"].to_numpy()
        errors.append(forecast - frame["y"].to_numpy()[first:first + 4])
    errors = np.concatenate(errors)
    assert n == 3 and np.isclose(mse, np.mean(errors ** 2)) and np.isclose(mae, np.mean(np.abs(errors)))


def test_the_validation_choices_are_geometric_means_of_paired_cells():
    rows = []
    for seed, (window, fit, alone) in enumerate([(0.1, 0.2, 0.1), (0.4, 0.2, 0.2)]):
        for setting, loss in (("MS", window), ("MS/fit", fit), ("S", alone)):
            rows.append({"part": "ett", "dataset": "ETTh2", "horizon": 96, "model": "RSAForecaster", "seed": seed,
                         "setting": setting, "val_loss": loss})
    lines = bench.validation_choices(pd.DataFrame(rows))
    assert lines[0].startswith("Validation")
    assert "*MS* (window) against *MS/fit*: validation loss ratio 1.000 over 2 cells (ETTh2 1.000)" in lines[1]
    assert "*MS* against *S*: validation loss ratio 1.414 over 2 cells" in lines[2]  # sqrt(1 * 2)
