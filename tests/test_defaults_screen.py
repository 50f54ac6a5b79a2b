"""The defaults screen pairs runs by cell and compares the model choices on validation."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from tsrsa.benchmarking.defaults_screen import (
    CHOICES, REGIMES, SHORT_FITS, long_horizon_cells, many_series_cells, render, screen, short_series_cells,
)
from tsrsa.forecasters.rsa import SINGLE_SERIES_GATE

REFERENCE = {"loss": "mse", "lr_schedule": None, "patch_len": 4, "learning_rate": 1e-3, "gate_init": 0.0,
             "scaler": "standard", "start": None, "start_weight": "auto", "ensemble_size": "auto"}


def regime_cells(ltsf: pd.DataFrame, m4: pd.DataFrame, short: pd.DataFrame) -> dict:
    """RSA's cells of the three regimes, the defaults being REFERENCE's choices at the automatic budget."""
    defaults = {**REFERENCE, "stream": False, "h": 1, "max_epochs": "auto"}
    return dict(zip(REGIMES, (long_horizon_cells(ltsf, "RSAForecaster", defaults),
                              many_series_cells(m4, "RSA", defaults),
                              short_series_cells(short, "RSAForecaster", defaults))))


def params(**changed) -> str:
    return json.dumps({**REFERENCE, "stream": False, **changed, "max_epochs": changed.pop("max_epochs", 10)})


def test_candidates_are_scored_by_the_geometric_mean_of_their_paired_ratios():
    ltsf = pd.DataFrame([
        # a reference and a candidate in two cells; a run at another input is not a cell of the screen
        dict(dataset="ETTh1", horizon=96, seed=0, val_mse=0.60, val_loss=0.6, params=params()),
        dict(dataset="ETTh1", horizon=96, seed=0, val_mse=0.54, val_loss=0.3, params=params(loss="mae")),
        dict(dataset="ETTh2", horizon=96, seed=0, val_mse=np.nan, val_loss=0.2, params=params()),  # MSE loss
        dict(dataset="ETTh2", horizon=96, seed=0, val_mse=0.25, val_loss=0.1, params=params(loss="mae")),
        dict(dataset="ETTh1", horizon=96, seed=1, val_mse=0.10, val_loss=0.1, params=params(loss="mae")),
        # another configuration (streaming), not a candidate: left out however good
        dict(dataset="ETTh1", horizon=96, seed=0, val_mse=0.01, val_loss=0.01, params=params(stream=True)),
    ]).assign(model="RSAForecaster", input_size=96, train_fraction=1.0)
    ltsf.loc[4, "input_size"] = 720
    m4 = pd.DataFrame([
        dict(frequency="Hourly", seed=0, owa=0.70, params=params(batches_per_epoch=400)),
        dict(frequency="Hourly", seed=0, owa=0.56, params=params(loss="mae", batches_per_epoch=400)),
        dict(frequency="Hourly", seed=0, owa=0.10, params=params(loss="mae", batches_per_epoch=None)),  # budget
    ]).assign(model="RSA", split="validation", date="2026-11-27")
    short = pd.DataFrame([
        dict(dataset="co2", train_length=200, seed=0, val_mse=1.0, params=params(max_epochs="auto")),
        dict(dataset="co2", train_length=200, seed=0, val_mse=1.1, params=params(max_epochs="auto", loss="mae")),
        dict(dataset="co2", train_length=200, seed=0, val_mse=0.5, params=params(max_epochs="auto", patch_len=8)),
    ]).assign(model="RSAForecaster", date="2026-11-27")
    cells = regime_cells(ltsf, m4, short)
    table = screen(cells, REFERENCE).set_index("candidate")
    mae = table.loc["loss=mae"]
    assert mae["long horizon cells"] == 2
    assert math.isclose(mae["long horizon ratio"], math.sqrt(0.54 / 0.60 * 0.25 / 0.2))  # val_loss stands in
    assert math.isclose(mae["many series ratio"], 0.56 / 0.70) and math.isclose(mae["short series ratio"], 1.1)
    expected = (math.sqrt(0.9 * 1.25) * 0.8 * 1.1) ** (1 / 3)
    assert math.isclose(mae["overall"], expected)
    assert np.isnan(table.loc["patch_len=8", "overall"])  # one regime only: no overall figure
    assert table.loc["default", "overall"] == 1.0
    text = render(screen(cells, REFERENCE), REGIMES)
    assert "| loss=mae | 1.061 (2) | 0.800 (1) | 1.100 (1) |" in text
    assert set(CHOICES) == set(REFERENCE)


def test_a_training_fraction_is_a_cell_of_its_own():
    """A run on part of the training windows pairs only with runs on the same part."""
    rows = [dict(train_fraction=1.0, val_mse=0.60, params=params()),
            dict(train_fraction=0.2, val_mse=0.80, params=params()),
            dict(train_fraction=0.2, val_mse=0.40, params=params(loss="mae")),
            dict(train_fraction=1.0, val_mse=0.90, params=params(patch_len=8))]
    ltsf = pd.DataFrame(rows).assign(model="RSAForecaster", input_size=96, dataset="ETTm1", horizon=96, seed=0,
                                     val_loss=np.nan)
    cells = long_horizon_cells(ltsf, "RSAForecaster")
    assert len(cells) == 4 and sorted(cells["train_fraction"]) == [0.2, 0.2, 1.0, 1.0]
    table = screen({"long horizon": cells}, REFERENCE).set_index("candidate")
    assert math.isclose(table.loc["loss=mae", "long horizon ratio"], 0.5)  # against 0.80, not 0.60
    assert math.isclose(table.loc["patch_len=8", "long horizon ratio"], 1.5)


def test_runs_made_before_a_choice_existed_are_named_so_and_count_as_the_defaults_where_auto_gives_it():
    def before(*added, **changed) -> str:  # a row made before the choices in ``added`` existed
        values = json.loads(params(**changed))
        for key in added:
            del values[key]
        return json.dumps(values)

    old = ("ensemble_size", "start_weight")  # one network, its forecast as trained
    ltsf = pd.DataFrame([
        dict(dataset="ETTh1", horizon=96, seed=0, val_mse=0.60, val_loss=0.6, params=before(*old)),
        dict(dataset="ETTh1", horizon=96, seed=0, val_mse=0.66, val_loss=0.3, params=before(*old, loss="mae")),
    ]).assign(model="RSAForecaster", input_size=96, train_fraction=1.0)
    m4 = pd.DataFrame([
        dict(frequency="Hourly", seed=0, owa=0.70, params=before("start_weight", batches_per_epoch=400)),
        dict(frequency="Hourly", seed=0, owa=0.77, params=before(*old, loss="mae", batches_per_epoch=400)),
    ]).assign(model="RSA", split="validation", date="2026-11-27")
    short = pd.DataFrame([
        dict(dataset="co2", train_length=200, seed=0, val_mse=1.0, params=before(*old, max_epochs="auto")),
        dict(dataset="co2", train_length=200, seed=0, val_mse=1.2, params=before(*old, max_epochs="auto", loss="mae")),
        dict(dataset="co2", train_length=200, seed=0, val_mse=0.9, params=before("start_weight", max_epochs="auto")),
        dict(dataset="co2", train_length=200, seed=0, val_mse=0.8, params=params(max_epochs="auto")),  # today's
    ]).assign(model="RSAForecaster", date="2026-11-28")
    cells = regime_cells(ltsf, m4, short)
    table = screen(cells, REFERENCE).set_index("candidate")
    for name, short_ratio in (("start_weight=0.0,ensemble_size=1", 1.0 / 0.8), ("start_weight=0.0", 0.9 / 0.8)):
        candidate = table.loc[name]  # rows of ETT and M4 at one network, as trained, are the defaults' there too
        assert (candidate["long horizon ratio"], candidate["many series ratio"]) == (1.0, 1.0)
        assert math.isclose(candidate["short series ratio"], short_ratio)
    mae = table.loc["loss=mae,start_weight=0.0,ensemble_size=1"]  # an earlier candidate, against today's defaults
    assert math.isclose(mae["long horizon ratio"], 1.1) and math.isclose(mae["many series ratio"], 1.1)
    assert math.isclose(mae["short series ratio"], 1.5)
    assert table.loc["default", "overall"] == 1.0 and "loss=mae" not in table.index


def ett_h96(default: float, gate: float) -> pd.DataFrame:
    """Two long-horizon rows of one cell (ETTh1, H96, seed 0): the validation MSE at REFERENCE and with the gate
    at -2."""
    return pd.DataFrame([
        dict(val_mse=default, params=params()),
        dict(val_mse=gate, params=params(gate_init=-2.0)),
    ]).assign(model="RSAForecaster", input_size=96, dataset="ETTh1", horizon=96, seed=0, val_loss=np.nan,
              train_fraction=1.0)


def test_a_real_valued_choice_written_as_a_whole_number_is_the_same_candidate():
    """gate_init -2 from a command line and -2.0 from a configuration file name one candidate, scored over
    both regimes' cells; an integer choice keeps its spelling."""
    ltsf = ett_h96(0.60, 0.48)
    m4 = pd.DataFrame([
        dict(owa=0.70, params=params(batches_per_epoch=400)),
        dict(owa=0.77, params=params(gate_init=-2, batches_per_epoch=400)),
        dict(owa=0.63, params=params(patch_len=8, batches_per_epoch=400)),
    ]).assign(model="RSA", split="validation", date="2026-11-27", frequency="Hourly", seed=0)
    cells = {"long horizon": long_horizon_cells(ltsf, "RSAForecaster"), "many series": many_series_cells(m4, "RSA")}
    table = screen(cells, REFERENCE).set_index("candidate")
    assert "gate_init=-2" not in table.index
    gate = table.loc["gate_init=-2.0"]
    assert math.isclose(gate["long horizon ratio"], 0.8) and math.isclose(gate["many series ratio"], 1.1)
    assert "patch_len=8" in table.index


def test_a_gate_that_follows_the_data_pairs_each_regimes_runs_at_what_auto_gives_there():
    """gate_init="auto": 0 on the long horizons and a large panel, -2 on one short series; a run at that value
    is the defaults' run there, and a run at the other value is a candidate of its own."""
    reference = {**REFERENCE, "gate_init": "auto"}
    defaults = {**reference, "stream": False, "h": 1, "max_epochs": "auto"}
    ltsf = ett_h96(0.60, 0.66)
    short = pd.DataFrame([
        dict(val_mse=1.0, params=params(max_epochs="auto")),
        dict(val_mse=0.8, params=params(max_epochs="auto", gate_init=-2.0)),
        dict(val_mse=0.5, params=params(max_epochs="auto", gate_init=1.0)),
    ]).assign(model="RSAForecaster", date="2026-11-28", dataset="co2", train_length=200, seed=0)
    cells = {"long horizon": long_horizon_cells(ltsf, "RSAForecaster", defaults),
             "short series": short_series_cells(short, "RSAForecaster", defaults)}
    table = screen(cells, reference).set_index("candidate")
    assert table.loc["default", "long horizon ratio"] == 1.0 and table.loc["default", "short series ratio"] == 1.0
    assert math.isclose(table.loc["gate_init=-2.0", "long horizon ratio"], 1.1)  # -2 on every fit
    assert table.loc["gate_init=-2.0", "short series ratio"] == 1.0
    assert math.isclose(table.loc["gate_init=0.0", "short series ratio"], 1.25)  # 0 on every fit
    assert table.loc["gate_init=0.0", "long horizon ratio"] == 1.0
    assert math.isclose(table.loc["gate_init=1.0", "short series ratio"], 0.625)
    assert SHORT_FITS["gate_init"] == SINGLE_SERIES_GATE  # the rule the estimator follows
