"""benchmarks/start_margin_edge.py: the fit specs it takes and the table of edges it writes."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import start_margin_edge  # noqa: E402


def test_a_fit_spec_is_model_dataset_horizon_seed():
    assert start_margin_edge.parse_fit("RSA:ETTh1:96:0") == ("RSA", "ETTh1", 96, 0)
    for bad in ("RSA:ETTh1:96", "RSA:ETTh1:h96:0", "RSA:ETTh1:96:x"):
        with pytest.raises(ValueError, match="model:dataset:horizon:seed"):
            start_margin_edge.parse_fit(bad)


def test_a_bad_spec_stops_the_run_before_any_fit(tmp_path):
    with pytest.raises(ValueError, match="model:dataset:horizon:seed"):
        start_margin_edge.main(["--fits", "RSA:ETTh1:96:0,oops", "--rows", str(tmp_path / "rows.jsonl"),
                                "--results-md", str(tmp_path / "R.md")])
    assert not (tmp_path / "rows.jsonl").exists() and not (tmp_path / "R.md").exists()


def test_the_table_reads_each_fit_once_by_its_latest_row(tmp_path):
    base = {"machine": "test", "command": "python benchmarks/start_margin_edge.py --fits X", "seed": 0}
    rows = [
        {**base, "date": "2026-11-28T01:00:00", "model": "RSA", "dataset": "ETTh2", "h": 720, "start": "ar",
         "edge": 1.5, "best_epoch": 0, "kept": "start", "test_mse": 0.5, "val_mse": 0.7, "fit_seconds": 1.0},
        {**base, "date": "2026-11-28T02:00:00", "model": "RSA", "dataset": "ETTh2", "h": 720, "start": "ar",
         "edge": 2.4237, "best_epoch": 3, "kept": "network", "test_mse": 0.4123, "val_mse": 0.6177, "fit_seconds": 1.0},
        {**base, "date": "2026-11-28T03:00:00", "model": "RSA", "dataset": "M4-Weekly", "h": 13, "start": "ets",
         "edge": 2.581, "best_epoch": 9, "kept": "network", "test_owa": 0.7003, "val_owa": 0.7608, "fit_seconds": 1.0},
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    start_margin_edge.main(["--rows", str(path), "--results-md", str(tmp_path / "R.md")])
    text = (tmp_path / "R.md").read_text()
    assert "| RSA | ETTh2 | 720 | 0 | ar | 2.42 | network | 3 | MSE 0.4123 | MSE 0.6177 |" in text
    assert "| RSA | M4-Weekly | 13 | 0 | ets | 2.58 | network | 9 | OWA 0.700 | OWA 0.761 |" in text
    assert "1.50" not in text  # the earlier run of the same fit is replaced
    assert "start_margin_edge.jsonl" in text and "2026-11-28 to 2026-11-28" in text
