"""benchmarks/seed_ensemble.py: the ensemble's ratios, the anchor counts and the table it writes."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import seed_ensemble  # noqa: E402


def row(model, dataset, n, members_val, members_test, ensembles, date="2026-11-28T05:00:00"):
    return {"date": date, "machine": "test machine", "command": "python benchmarks/seed_ensemble.py --models X",
            "model": model, "dataset": dataset, "n": n, "members": len(members_val), "params": {},
            "member_val_mse": members_val, "member_test_mse": members_test, "ensembles": ensembles,
            "fit_seconds": [2.0] * len(members_val)}


def test_the_ratio_is_the_ensemble_over_the_mean_of_its_own_members():
    r = row("RSA", "co2", 200, [1.0, 2.0, 3.0, 10.0, 10.0], [2.0, 2.0, 2.0, 9.0, 9.0],
            {"3": {"val_mse": 1.5, "test_mse": 1.0}, "5": {"val_mse": 2.6, "test_mse": 4.8}})
    assert seed_ensemble.ratios(r, 3) == pytest.approx((0.75, 0.5))
    assert seed_ensemble.ratios(r, 5) == pytest.approx((0.5, 1.0))


def test_the_table_counts_cells_within_the_anchor_and_keeps_each_cell_once(tmp_path):
    rows = [
        row("RSA", "co2", 200, [1.0] * 5, [1.0] * 5, {"3": {"val_mse": 9.0, "test_mse": 9.0}}, "2026-11-28T01:00:00"),
        row("RSA", "co2", 200, [1.0] * 5, [1.06] * 5, {"3": {"val_mse": 0.9, "test_mse": 1.01},
                                                       "5": {"val_mse": 0.8, "test_mse": 1.0}}),
        row("RSA", "ar2_cycle", 200, [2.0] * 5, [2.0] * 5, {"3": {"val_mse": 2.2, "test_mse": 1.8},
                                                            "5": {"val_mse": 2.0, "test_mse": 2.0}}),
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pd.DataFrame({"dataset": ["co2", "co2"], "train_length": [200, 200], "model": ["ETS", "ARIMA"],
                  "test_mse": [1.0, 1.2]}).to_csv(tmp_path / "short.csv", index=False)
    seed_ensemble.main(["--tables-only", "--rows", str(path), "--results-md", str(tmp_path / "R.md"),
                        "--anchors", str(tmp_path / "short.csv")])
    text = (tmp_path / "R.md").read_text()
    # k=3: co2 0.9 / (1.01 / 1.06); ar2_cycle 1.1 / 0.9; co2 single 1.06 > 1.05, its ensemble 1.01 within 2 %
    gm_val, gm_test = (0.9 * 1.1) ** 0.5, ((1.01 / 1.06) * 0.9) ** 0.5
    assert f"| RSA | 3 | 2 | {gm_val:.3f} | 1/2 | {gm_test:.3f} | 2/2 | 0 / 1 of 1 | 0 / 1 of 1 | 2.0 |" in text
    assert "| co2 | 200 | 0.900 / 0.953 |" in text
    assert "9.000" not in text and "2026-11-28 to 2026-11-28" in text  # the earlier row of the cell is replaced


def test_bad_arguments_stop_before_any_fit(tmp_path):
    for argv in (["--models", "RSA,Prophet"], ["--models", ""], ["--members", "2"]):
        with pytest.raises(ValueError, match="--models|--members"):
            seed_ensemble.main([*argv, "--rows", str(tmp_path / "rows.jsonl"), "--results-md", str(tmp_path / "R.md")])
    assert not (tmp_path / "rows.jsonl").exists() and not (tmp_path / "R.md").exists()


def test_without_the_data_folder_the_cells_are_the_processes():
    cells = seed_ensemble.cells(None)
    assert cells and {n for _, n in cells} == {200, 500}
    assert all(name in seed_ensemble.PROCESSES for name, _ in cells)
