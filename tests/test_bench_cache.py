"""The bounded-cache benchmark: one fit streamed under every cache of its grid, and the table."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tsrsa.benchmarking.protocol import prepare
from tsrsa.benchmarking.results import append_rows

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_cache  # noqa: E402  (a script of benchmarks/)


def test_the_grid_halves_the_tokens_and_starts_unbounded():
    assert bench_cache.caches(128)[0] == ("unbounded", None)
    assert sorted({k for p, k in bench_cache.caches(128) if p == "tova"}) == [8, 16, 32, 64, 128]
    assert {p for p, _ in bench_cache.caches(128)} == {"unbounded", "window", "sinks", "h2o", "tova"}
    assert bench_cache.caches(64, ["sinks"]) == [("sinks", k) for k in (4, 8, 16, 32, 64)]  # some rows only
    with pytest.raises(ValueError, match="unknown cache policies"):
        bench_cache.caches(64, ["lru"])


def test_one_fit_streams_under_each_cache_and_the_table_is_relative_to_the_trained_context(tmp_path):
    rng = np.random.default_rng(0)
    t = np.arange(300)[:, None]
    values = 5 + 3 * np.sin(2 * np.pi * t / 12 + np.arange(2)) + 0.3 * rng.standard_normal((300, 2))
    data = prepare("weather", values, ["a", "b"], 16)
    tiny = {"d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 8, "max_epochs": 1}
    rows = bench_cache.run_model(data, "Transformer", 4, 0, input_size=16, patch_len=4, params=tiny, max_windows=6)
    assert [(r["policy"], r["cache_size"]) for r in rows][:3] == [("unbounded", ""), ("window", 2), ("window", 4)]
    assert len(rows) == 1 + 4 * 2 and all(np.isfinite(r["mse"]) for r in rows)
    by = {(r["policy"], r["cache_size"]): r["mse"] for r in rows}
    assert by[("window", 2)] != by[("unbounded", "")]  # a cache of 2 tokens streams differently
    path = tmp_path / "cache.csv"
    append_rows(path, rows, columns=bench_cache.COLUMNS)
    text = bench_cache.table(path)
    assert "N = 4 tokens** (input_size 16, patch_len 4, max_epochs 1;" in text
    window = next(x for x in text.splitlines() if x.startswith("| window |"))
    assert window.endswith("| 1.000 |")  # window at k = N is the reference
    tova = next(x for x in text.splitlines() if x.startswith("| tova |"))
    assert f"| {by[('tova', 2)] / by[('window', 4)]:.3f} |" in tova
