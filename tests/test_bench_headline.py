"""benchmarks/headline.py: the README's figure reads the results files as the tables do."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tsrsa

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import headline  # noqa: E402


@pytest.fixture
def results(tmp_path) -> Path:
    ltsf = [("ETTh1", h, "RSAForecaster", "default", s, mse, 96, 1.0)
            for h, base in zip((96, 192, 336, 720), (0.4, 0.5, 0.6, 0.7)) for s, mse in ((0, base), (1, base + 0.02))]
    ltsf += [("ETTh1", 96, "TransformerForecaster", "default", 0, 9.0, 96, 1.0),  # one horizon only: left out
             ("ETTh1", 96, "RSAForecaster", "learning_rate=1e-3", 0, 9.0, 96, 1.0)]  # another variant
    ltsf += [("ETTm1", h, "SeasonalNaiveForecaster", "default", 0, 0.5, 96, 1.0)  # none of the drawn models
             for h in (96, 192, 336, 720)]
    pd.DataFrame(ltsf, columns=["dataset", "horizon", "model", "variant", "seed", "mse", "input_size",
                                "train_fraction"]).to_csv(tmp_path / "ltsf.csv", index=False)
    m4 = [("Hourly", "RSA", "default", 0, "test", 99.0, 999.0),  # seed 0, run again below: the latest counts
          ("Hourly", "RSA", "default", 0, "test", 12.0, 100.0), ("Hourly", "RSA", "default", 1, "test", 14.0, 300.0),
          ("Hourly", "RSA", "default", 0, "validation", 1.0, 1.0), ("Hourly", "NHITS", "default", 0, "test", 13.0, 50.0)]
    pd.DataFrame(m4, columns=["frequency", "model", "label", "seed", "split", "smape", "fit_seconds"]) \
        .to_csv(tmp_path / "m4.csv", index=False)
    from tsrsa.estimator.trainer import flat_params

    today = flat_params(tsrsa.RSAForecaster(h=1).get_params(), tsrsa.RSAForecaster)  # as the runs record them
    at = {"today": json.dumps(today), "patch_len=1": json.dumps({**today, "patch_len": 1}),
          "mse": json.dumps({**today, "loss": "mse", "lr_schedule": None}), "stat": "{}"}
    short = [("co2", 200, "RSAForecaster", "default", 0, 2.0, "today"),
             ("co2", 200, "RSAForecaster", "loss=mae", 0, 3.0, "today"),  # the label does not matter, the params do
             ("co2", 200, "RSAForecaster", "default", 1, 5.0, "today"), ("co2", 200, "ETS", "default", 0, 2.0, "stat"),
             ("co2", 200, "ARIMA", "default", 0, 8.0, "stat"),
             ("co2", 200, "RSAForecaster", "default", 2, 9.0, "mse"),  # made at earlier defaults: left out
             ("ar2_cycle", 200, "RSAForecaster", "default", 0, 1.0, "today"),
             ("co2", 500, "RSAForecaster", "patch_len=1", 0, 1.0, "patch_len=1")]
    pd.DataFrame([(*row[:-1], at[row[-1]]) for row in short],
                 columns=["dataset", "train_length", "model", "label", "seed", "test_mse", "params"]) \
        .to_csv(tmp_path / "short_series.csv", index=False)
    return tmp_path


def test_each_panel_reads_the_default_runs_as_the_tables_do(results):
    long = headline.long_horizon(results)
    # seeds, then horizons; ETTm1, where only the seasonal naive ran, is left out
    assert list(long.index) == ["ETTh1"] and long.loc["ETTh1", "RSA"] == pytest.approx(0.56)
    assert np.isnan(long.loc["ETTh1", "Transformer"])  # not every horizon ran
    m4 = headline.m4(results)
    assert m4.loc[("Hourly", "RSA")].tolist() == [13.0, 200.0] and ("Hourly", "NHITS") in m4.index
    ratio = headline.short_series(results)
    assert ratio.to_dict() == {("co2", 200): pytest.approx(4.0 / 2.0)}  # the latest seed-0 run, over ETS


def test_the_figure_is_drawn(results, tmp_path):
    pytest.importorskip("matplotlib")
    out = headline.draw(results, tmp_path / "figure" / "headline.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_m4_default_row_made_at_earlier_defaults_is_left_out(tmp_path):
    rows = [("Hourly", "RSA", "default", 0, "test", 12.0, 4000.0, '{"h": 48, "max_epochs": 10}'),  # whole passes
            ("Hourly", "RSA", "default", 0, "test", 13.0, 100.0, '{"h": 48, "max_epochs": "auto"}'),
            ("Hourly", "NHITS", "default", 0, "test", 12.5, 300.0, "")]
    pd.DataFrame(rows, columns=["frequency", "model", "label", "seed", "split", "smape", "fit_seconds", "params"]) \
        .to_csv(tmp_path / "m4.csv", index=False)
    m4 = headline.m4(tmp_path)
    assert m4.loc[("Hourly", "RSA")].tolist() == [13.0, 100.0] and ("Hourly", "NHITS") in m4.index
