"""The kinds-scaling benchmark's table: per-token cost ratios and the note on cells not run."""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_kinds  # noqa: E402  (a script of benchmarks/)


def _rows():
    rows = []
    for tokens in (100, 200, 400):
        # linear: windows/s halves as tokens double; softmax: quarters, and stops short of 400 tokens
        rows.append(("linear", tokens, 800.0 * 100 / tokens, 10.0 * tokens / 100))
        if tokens < 400:
            rows.append(("softmax", tokens, 800.0 * (100 / tokens) ** 2, 10.0 * (tokens / 100) ** 2))
    return pd.DataFrame([{"date": "2024-01-02", "kind": k, "input_size": t, "patch_len": 1, "tokens": t,
                          "batch_size": 16, "windows_per_s": w, "peak_mb": m, "params": 1, "machine": "test machine"}
                         for k, t, w, m in rows])


def test_the_table_gives_the_growth_of_the_time_per_token_and_why_a_cell_is_empty():
    text = bench_kinds.table(_rows())
    lines = text.splitlines()
    linear = next(x for x in lines if x.startswith("| linear |"))
    softmax = next(x for x in lines if x.startswith("| softmax |"))
    assert linear == "| linear | 800, 10 | 400, 20 | 200, 40 | 1.00 (100 → 400 tokens) |"
    assert softmax == "| softmax | 800, 10 | 200, 40 |  | 2.00 (100 → 200 tokens) |"
    # 10 MB at 100 tokens, 40 MB at 200: ×4 per doubling, so 160 MB projected at 400 tokens
    assert "softmax at patch_len 1: 10 MB at 100 tokens, 40 MB at 200, about 160 MB projected at 400" in text
    assert "linear at patch_len" not in text  # it reached the most tokens
