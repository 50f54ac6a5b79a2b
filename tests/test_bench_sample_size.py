"""benchmarks/sample_size.py: the ETTh1 points of the sample-size curve, read from the long-horizon rows."""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import sample_size  # noqa: E402


def row(model, variant, fraction, seed, mse, date="2026-11-27", horizon=96):
    return {"dataset": "ETTh1", "horizon": horizon, "input_size": 96, "model": model, "variant": variant,
            "train_fraction": fraction, "seed": seed, "mse": mse, "date": date}


def test_each_curve_takes_its_defaults_variant_the_latest_run_per_seed_and_the_fraction_as_steps():
    rsa, default = sample_size.ETT_CURVES["RSA"]
    twin, twin_default = sample_size.ETT_CURVES["twin"]
    ltsf = pd.DataFrame([
        row(rsa, default, 0.05, 0, 0.50), row(rsa, default, 0.05, 0, 0.40),  # rerun: the later one counts
        row(rsa, default, 0.05, 1, 0.60),
        row(rsa, "loss=mse,lr_schedule=null", 0.05, 0, 9.0),  # another configuration: not a curve
        row(rsa, default, 0.05, 0, 9.0, horizon=336),  # another horizon
        row(twin, twin_default, 1.0, 0, 0.30),
    ])
    out = sample_size.ett_curves(ltsf).set_index(["curve", "train_length"])
    assert out.loc[("RSA", 432), "mse"] == 0.5 and out.loc[("RSA", 432), "seeds"] == 2  # mean of 0.40 and 0.60
    assert out.loc[("twin", 8640), "mse"] == 0.3
    assert len(out) == 2 and set(out["dataset"]) == {sample_size.ETT_NAME}


def test_no_etth1_rows_give_an_empty_table():
    empty = sample_size.ett_curves(pd.DataFrame([row("LSTMForecaster", "x", 0.5, 0, 1.0)]))
    assert empty.empty and {"dataset", "train_length", "curve", "mse", "seeds"} <= set(empty.columns)
