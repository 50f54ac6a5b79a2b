"""benchmarks/accuracy.py: the screen against its reference runs, and the paired candidate table."""
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import accuracy  # noqa: E402  (a script of benchmarks/, importable beside rem_init)


def _row(variant, horizon, seed, mse, model="RSAForecaster", best_epoch=2):
    return {"dataset": "ETTh1", "horizon": horizon, "model": model, "variant": variant, "seed": seed,
            "mse": mse, "mae": mse, "input_size": 96, "train_fraction": 1.0, "device": "cpu",
            "train_seconds": 1.0, "best_epoch": best_epoch}


def _results(horizons=(96, 192, 336, 720)):
    rows = []
    for i, h in enumerate(horizons):
        for seed in (0, 1, 2):
            rows.append(_row("default", h, seed, 0.40 + 0.01 * i + 0.002 * seed))
        for seed in (0, 1):  # the candidate ran two of the three seeds, 0.005 better in each
            rows.append(_row("lr1e-4", h, seed, 0.40 + 0.01 * i + 0.002 * seed - 0.005))
    rows.append(_row("lr1e-4", 96, 0, 0.1, model="TransformerForecaster"))  # no twin baseline: no row
    return pd.DataFrame(rows)


def test_candidate_is_paired_by_seed_and_averaged_over_four_horizons():
    table = accuracy.candidate_table(_results(), "lr1e-4", "default")
    rsa = table[table["model"] == "RSA"]
    assert list(rsa["horizon"]) == ["96", "192", "336", "720", "**average**"]
    assert (rsa["seeds"] == 2).all()  # seed 2 has no candidate run: left out of every pair
    average = rsa.iloc[-1]
    assert average["lr1e-4 MSE"] == "0.411 ± 0.001"  # seeds 0 and 1 average 0.410 and 0.412 over horizons
    assert average["lr1e-4 − default"] == "-0.005 ± 0.000" and average["lr1e-4 wins"] == "2/2"
    assert "Transformer" not in set(table["model"])


def test_no_average_unless_all_four_horizons_were_compared():
    table = accuracy.candidate_table(_results(horizons=(96, 192, 336)), "lr1e-4", "default")
    assert "**average**" not in set(table["horizon"]) and len(table) == 3


def test_screen_change_is_variant_minus_the_same_seed_of_the_reference():
    results = _results()
    screen = pd.DataFrame([_row("dropout0.3", 336, 0, 0.43, best_epoch=1)])
    table = accuracy.screen_table(screen, results, "default")
    reference, variant = table.iloc[0], table.iloc[1]
    assert reference["variant"] == "default (reference)" and reference["ETTh1 H336 seed 0: MSE (change)"] == "0.4200"
    assert variant["ETTh1 H336 seed 0: MSE (change)"] == "0.4300 (+0.0100)"
    assert variant["ETTh1 H336 seed 0: best epoch"] == 1
