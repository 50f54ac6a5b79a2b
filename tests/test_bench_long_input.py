"""The long-input benchmark's table: runs per input length beside the published anchors."""
from __future__ import annotations

import sys
from pathlib import Path

from tsrsa.benchmarking.results import append_rows

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_long_input  # noqa: E402  (a script of benchmarks/)


#: the variants the study ran: the earlier tables' configuration of each model
EARLIER = "learning_rate=1e-4,loss=mse,lr_schedule=null,start=null"
BLOCK, TRANSFORMER, DLINEAR = f"attention=block_recurrent,{EARLIER}", EARLIER, f"{EARLIER},weight_decay=0"


def row(model, variant, input_size, seed, mse, dataset="ETTh1", h=96):
    return {"dataset": dataset, "horizon": h, "model": model, "variant": variant, "seed": seed, "mse": mse,
            "mae": mse, "input_size": input_size, "train_fraction": 1.0, "device": "cpu", "train_seconds": 1.0,
            "best_epoch": 1, "val_loss": mse, "params": "{}", "val_mse": mse, "val_mae": None}


def test_the_table_gives_each_model_per_input_and_the_anchors(tmp_path):
    path = tmp_path / "ltsf.csv"
    append_rows(path, [
        row("TransformerForecaster", BLOCK, 96, 0, 0.40),
        row("TransformerForecaster", BLOCK, 720, 0, 0.36),
        row("TransformerForecaster", BLOCK, 720, 1, 0.38),
        row("DLinearForecaster", DLINEAR, 720, 0, 0.37),
        row("TransformerForecaster", "default", 720, 0, 0.99),  # another variant: not in the table
        row("DLinearForecaster", DLINEAR, 96, 0, 0.50, h=720),  # a horizon with no long input: left out
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
    append_rows(path, [row("DLinearForecaster", DLINEAR, 96, 0, 0.4)])
    assert "No run at an input above 96" in bench_long_input.table(path)


def test_the_plot_draws_the_long_input_runs_and_links_from_the_table(tmp_path):
    path = tmp_path / "ltsf.csv"
    append_rows(path, [row("DLinearForecaster", DLINEAR, 96, 0, 0.4)])
    assert not bench_long_input.plot(path, tmp_path / "none.png") and not (tmp_path / "none.png").exists()
    append_rows(path, [row("DLinearForecaster", DLINEAR, 336, 0, 0.37),
                       row("TransformerForecaster", TRANSFORMER, 336, 0, 0.36)])
    assert bench_long_input.plot(path, tmp_path / "plot.png")
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert bench_long_input.table(path, "results/long_input.png").endswith("(results/long_input.png)")
    assert "![" not in bench_long_input.table(path)


def speed_row(model, input_size, seconds_per_batch, peak_mb=100.0):
    return {"date": "2026-11-26", "dataset": "ETTh1", "model": model, "input_size": input_size, "horizon": 96,
            "batch_size": 32, "batches_timed": 10, "seconds_per_batch": seconds_per_batch, "windows_per_epoch": 3200,
            "seconds_per_epoch": seconds_per_batch * 100, "peak_mb": peak_mb, "params": "{}", "machine": "test"}


def test_the_speed_table_tells_a_linear_model_from_a_quadratic_one():
    import pandas as pd

    df = pd.DataFrame([
        speed_row("Block-recurrent", 96, 0.1), speed_row("Block-recurrent", 960, 1.0, 900.0),
        speed_row("Transformer", 96, 0.1), speed_row("Transformer", 960, 10.0),
        speed_row("Transformer", 960, 8.0),  # a later measurement of the same cell replaces the earlier
        speed_row("DLinear", 96, 0.01),
    ])
    lines = bench_long_input.speed_table(df).splitlines()
    assert "| model | input 96 | input 960 | time per input step, last ÷ first |" in lines
    assert "| Block-recurrent | 10, 100 | 100, 900 | 1.00 (96 → 960) |" in lines
    assert "| Transformer | 10, 100 | 800, 100 | 8.00 (96 → 960) |" in lines
    assert "| DLinear | 1, 100 |  | 1.00 (96 → 96) |" in lines


def test_a_speed_cell_times_the_configured_model_and_scales_to_a_full_epoch():
    import os

    import pytest

    if not os.environ.get("TSRSA_DATA_DIR") or not (Path(os.environ["TSRSA_DATA_DIR"]) / "ETTh1.csv").is_file():
        pytest.skip("needs ETTh1.csv in $TSRSA_DATA_DIR")
    got = bench_long_input.speed_cell("ETTh1", "DLinear", 96, 24, batches=2)
    assert got["windows_per_epoch"] == 7 * (8640 - 96 - 24 + 1)  # every channel's training windows
    batches_per_epoch = -(-got["windows_per_epoch"] // 32)  # batches of 32
    full_epoch = got["seconds_per_batch"] * batches_per_epoch
    # the epoch is rounded to 0.1 s from a per-batch time rounded to 1e-6 s: both roundings bound the difference
    assert abs(got["seconds_per_epoch"] - full_epoch) <= 0.05 + batches_per_epoch * 0.5e-6 + 1e-9
    assert got["seconds_per_batch"] > 0 and got["batches_timed"] == 2
    assert '"batches_per_epoch": 2' in got["params"] and '"input_size": 96' in got["params"]
