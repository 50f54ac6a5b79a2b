"""The long-input benchmark's table: runs per input length beside the published anchors."""
from __future__ import annotations

import sys
from pathlib import Path

from tsrsa.benchmarking.results import append_rows

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_long_input  # noqa: E402  (a script of benchmarks/)


def row(model, variant, input_size, seed, mse, dataset="ETTh1", h=96):
    return {"dataset": dataset, "horizon": h, "model": model, "variant": variant, "seed": seed, "mse": mse,
            "mae": mse, "input_size": input_size, "train_fraction": 1.0, "device": "cpu", "train_seconds": 1.0,
            "best_epoch": 1, "val_loss": mse, "params": "{}"}


def test_the_table_gives_each_model_per_input_and_the_anchors(tmp_path):
    path = tmp_path / "ltsf.csv"
    append_rows(path, [
        row("TransformerForecaster", "attention=block_recurrent", 96, 0, 0.40),
        row("TransformerForecaster", "attention=block_recurrent", 720, 0, 0.36),
        row("TransformerForecaster", "attention=block_recurrent", 720, 1, 0.38),
        row("DLinearForecaster", "default", 720, 0, 0.37),
        row("TransformerForecaster", "learning_rate=1e-3", 720, 0, 0.99),  # another variant: not in the table
        row("DLinearForecaster", "default", 96, 0, 0.50, h=720),  # a horizon with no long input: left out
    ])
    text = bench_long_input.table(path)
    lines = text.splitlines()
    assert "**ETTh1, H96**" in text and "H720" not in text
    assert "| model | input 96 | input 720 |" in lines
    assert "| Block-recurrent | 0.400 (1) | 0.370 (2) |" in lines
    assert "| DLinear |  | 0.370 (1) |" in lines
    assert "| PatchTST (input 512), published | 0.370 | |" in lines
    assert "0.99" not in text


def test_an_empty_grid_says_how_to_run_it(tmp_path):
    path = tmp_path / "ltsf.csv"
    append_rows(path, [row("DLinearForecaster", "default", 96, 0, 0.4)])
    assert "No run at an input above 96" in bench_long_input.table(path)


def test_the_plot_draws_the_long_input_runs_and_links_from_the_table(tmp_path):
    path = tmp_path / "ltsf.csv"
    append_rows(path, [row("DLinearForecaster", "default", 96, 0, 0.4)])
    assert not bench_long_input.plot(path, tmp_path / "none.png") and not (tmp_path / "none.png").exists()
    append_rows(path, [row("DLinearForecaster", "default", 336, 0, 0.37),
                       row("TransformerForecaster", "default", 336, 0, 0.36)])
    assert bench_long_input.plot(path, tmp_path / "plot.png")
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert bench_long_input.table(path, "results/long_input.png").endswith("(results/long_input.png)")
    assert "![" not in bench_long_input.table(path)
