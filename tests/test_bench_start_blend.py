"""benchmarks/start_blend.py: a share of the network's correction, scored on the outer validation."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import start_blend  # noqa: E402


def moments(start: np.ndarray, network: np.ndarray, y: np.ndarray) -> dict:
    """The per-window means a row keeps, from forecasts (windows, h) of the start and the network."""
    e, c = start - y, network - start
    return {"ee": (e * e).mean(axis=1).tolist(), "ec": (e * c).mean(axis=1).tolist(),
            "cc": (c * c).mean(axis=1).tolist()}


def row_of(rng, n_inner: int = 12, n_outer: int = 9, h: int = 4, pull: float = 0.6) -> dict:
    row = {}
    for part, n in (("inner", n_inner), ("outer", n_outer)):
        y = rng.standard_normal((n, h))
        start = y + rng.standard_normal((n, h))
        network = start + pull * (y - start) + 0.3 * rng.standard_normal((n, h))  # corrects part of the error
        row.update({f"{part}_{k}": v for k, v in moments(start, network, y).items()})
        row[f"{part}_forecasts"] = (start, network, y)
    return row


@pytest.mark.parametrize("share", [0.0, 0.3, 1.0])
def test_the_outer_error_of_a_share_is_that_of_the_combined_forecast(share):
    row = row_of(np.random.default_rng(0))
    start, network, y = row["outer_forecasts"]
    blended = start + share * (network - start)
    assert start_blend.outer_mse(row, share) == pytest.approx(np.mean((blended - y) ** 2), rel=1e-12)


def test_the_fitted_share_is_the_least_squares_one_on_the_inner_windows_clipped():
    rng = np.random.default_rng(1)
    row = row_of(rng)
    start, network, y = row["inner_forecasts"]
    grid = np.linspace(0, 1, 100001)
    errors = [np.mean((start + a * (network - start) - y) ** 2) for a in grid[::100]]
    assert start_blend.fitted_share(row) == pytest.approx(grid[::100][int(np.argmin(errors))], abs=1e-3)
    away = row_of(rng, pull=-1.0)  # a correction that only hurts: no share of it
    assert start_blend.fitted_share(away) == 0.0
    assert start_blend.fitted_share({**row, "inner_cc": [0.0] * 12}) == 1.0  # no correction at all


def test_the_table_reports_each_share_against_the_network_as_trained(tmp_path):
    rng = np.random.default_rng(2)
    rows = pd.DataFrame([{**row_of(rng), "model": "RSA", "dataset": d, "n": 200, "seed": 0, "fold": f}
                         for d in ("a", "b", "c") for f in (1, 2)]).assign(date="2026-11-28", machine="test")
    text = start_blend.section(rows, "python benchmarks/start_blend.py")
    table = start_blend.scored(rows)
    half = float(np.exp(np.mean(np.log(table[0.5] / table[1.0]))))
    assert "| RSA | both | 6 | 1.000 (0/0) |" in text and f"{half:.3f}" in text
    assert "| RSA | 1 | 3 |" in text and "| RSA | 2 | 3 |" in text and "start_blend.jsonl" in text
    low, high = start_blend.interval((table[0.5] / table[1.0]).to_numpy())
    assert low <= half <= high

