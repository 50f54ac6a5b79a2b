"""The T2R benchmark: one cell on a tiny synthetic data set, its rows and its table."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from tsrsa.benchmarking.protocol import prepare
from tsrsa.benchmarking.results import append_rows

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_t2r  # noqa: E402  (a script of benchmarks/)


def test_a_cell_gives_original_converted_and_scratch_rows_and_the_table_pairs_them(tmp_path):
    rng = np.random.default_rng(0)
    t = np.arange(400)[:, None]
    values = 5 + 3 * np.sin(2 * np.pi * t / 12 + np.arange(2)) + 0.3 * rng.standard_normal((400, 2))
    data = prepare("weather", values, ["a", "b"], 24)
    tiny = {"d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 8, "max_epochs": 2, "patch_len": 4}
    seen = []
    rows = bench_t2r.run_cell(data, "Transformer", 6, 0, [4], num_threads=1, params=tiny, write=seen.append)
    assert [r["role"] for r in rows] == ["original", "converted", "scratch"] and seen == rows
    original, converted, scratch = rows
    assert '"stream": true' in original["params"] and '"attention": "softmax"' in original["params"]
    assert '"attention": "t2r"' in converted["params"] and '"feature_size": 4' in converted["params"]
    # the scratch model gets as many epochs as the original and the finetuning ran together
    assert f'"max_epochs": {original["epochs_run"] + converted["epochs_run"]}' in scratch["params"]
    assert all(np.isfinite(r["mse"]) and r["mse"] > 0 for r in rows)
    path = tmp_path / "t2r.csv"
    append_rows(path, rows, columns=bench_t2r.COLUMNS)
    text = bench_t2r.table(path)
    # the text says what each setting is, not when it became the default
    assert "`ALiBi decay`" in text and not any(word in text for word in ("since", "first written", "earlier"))
    line = next(x for x in text.splitlines() if x.startswith("| weather | 6 | Transformer | 4 | ALiBi decay |"))
    ratio = converted["mse"] / original["mse"]
    assert f"| {ratio:.3f} |" in line
    # a conversion that ran without the decay (T2R as first written) is a row of its own beside it
    plain = [dict(r, mse=r["mse"] * 2, params=r["params"].replace('"alibi": true', '"alibi": false'))
             for r in rows[1:]]
    append_rows(path, plain, columns=bench_t2r.COLUMNS)
    text = bench_t2r.table(path)
    assert f"| {ratio:.3f} |" in next(x for x in text.splitlines() if "| 4 | ALiBi decay |" in x)
    assert f"| {2 * ratio:.3f} |" in next(x for x in text.splitlines() if "| 4 | none |" in x)


def test_epochs_to_within_one_percent_reads_the_first_epoch_that_gets_there():
    history = pd.DataFrame({"epoch": [1, 2, 3, 4], "val_loss": [1.5, 1.02, 1.009, 0.99]})
    assert bench_t2r.epochs_to_within(history, 1.0) == 3
    assert bench_t2r.epochs_to_within(history, 0.5) is None
