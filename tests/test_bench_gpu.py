"""The GPU benchmark's tables: the scaling grid of one run, compile rows against the eager row of their
own run, and the long-horizon suite paired by seed beside the CPU rows."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_gpu  # noqa: E402  (a script of benchmarks/)


def _speed_rows():
    def row(run, model, mode, L, w, compile_s=None):
        return {"date": "2024-01-02", "run": run, "model": model, "mode": mode, "input_size": L, "patch_len": 4,
                "tokens": L // 4, "batch_size": 32, "windows_per_s": w, "peak_mb": L / 10, "compile_s": compile_s,
                "params": 1, "device": "test GPU"}

    return pd.DataFrame([
        row(1, "linear", "eager", 96, 1000.0), row(1, "linear", "eager", 384, 500.0),  # linear: 0.5 per token x4
        row(1, "softmax", "eager", 96, 1000.0), row(1, "softmax", "eager", 384, 125.0),
        row(2, "softmax", "eager", 96, 900.0), row(2, "softmax", "compile", 96, 1800.0, 20.0),
    ])


def test_the_speed_section_takes_the_fullest_run_and_pairs_compile_rows_within_their_run():
    text = bench_gpu.speed_section(_speed_rows())
    lines = text.splitlines()
    assert "| linear | 1,000, 10 | 500, 38 | 0.50 (24 → 96 tokens) |" in lines
    assert "| softmax | 1,000, 10 | 125, 38 | 2.00 (24 → 96 tokens) |" in lines
    assert "| softmax | 96 | 2024-01-02 #2 | 900 | 1,800 | 2.00 | 20 |" in lines  # run 2's eager row, not run 1's
    assert "run 1, test GPU" in text


def test_the_suite_section_pairs_seeds_and_sets_the_cpu_mean_beside():
    def row(model, seed, mse, h=96, fraction=1.0, variant=None):
        variant = bench_gpu.SUITE[model] if variant is None else variant
        return {"dataset": "ETTh1", "horizon": h, "model": model, "variant": variant, "seed": seed, "mse": mse,
                "mae": mse, "input_size": 96, "train_fraction": fraction, "device": "cuda (test GPU)",
                "train_seconds": 60.0 + seed}

    gpu = pd.DataFrame([row("RSAForecaster", 0, 0.40), row("TransformerForecaster", 0, 0.42),
                        row("TransformerForecaster", 1, 0.44)])
    cpu = pd.DataFrame([row("RSAForecaster", 0, 0.30), row("RSAForecaster", 0, 0.38),  # a re-run replaces seed 0
                        row("RSAForecaster", 1, 0.40), row("RSAForecaster", 2, 0.90, fraction=0.2),
                        row("TransformerForecaster", 0, 0.41)])
    text = bench_gpu.suite_section(gpu, cpu, [{"command": "python benchmarks/ltsf.py", "date": "2024-01-02T00:00",
                                               "rows": 3, "wall_seconds": 99.0}])
    line = next(x for x in text.splitlines() if x.startswith("| ETTh1 | 96 |"))
    assert line == "| ETTh1 | 96 | 0.400 | — | 0.420 | 0.440 | -0.0200 (1) | 0.390 (2) / 0.410 (1) | 60–61 |"
    assert "GPU (test GPU)" in text and "3 rows in 99 s" in text


def test_a_cell_measures_a_training_step_on_any_device():
    row = bench_gpu.cell("linear", 16, 4, device="cpu")
    assert row["tokens"] == 4 and row["windows_per_s"] > 0 and np.isnan(row["peak_mb"]) and row["params"] > 0


def test_the_fla_rows_are_set_against_the_torch_backend_of_their_own_run():
    def row(run, mode, w, rel=None):
        return {"date": "2024-01-02", "run": run, "model": "linear", "mode": mode, "input_size": 720, "patch_len": 1,
                "tokens": 720, "batch_size": 32, "windows_per_s": w, "peak_mb": 100.0, "compile_s": None,
                "params": 1, "device": "test GPU, torch 0", "rel_diff": rel}

    rows = pd.DataFrame([row(1, "eager", 500.0), row(1, "bf16 torch", 400.0), row(2, "bf16 torch", 1000.0),
                         row(2, "bf16 fla", 3000.0, 2e-3)])
    lines = bench_gpu.speed_section(rows).splitlines()
    assert "| linear | 720 (720) | test GPU | 1,000, 100 | 3,000, 100 | 3.00 | 2.0e-03 |" in lines  # run 2's torch row


def test_a_cell_with_a_backend_trains_under_bf16_autocast():
    row = bench_gpu.cell("fast_weight", 16, 1, device="cpu", backend="torch")
    assert row["mode"] == "bf16 torch" and row["windows_per_s"] > 0 and row["rel_diff"] is None
