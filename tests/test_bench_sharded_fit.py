"""benchmarks/sharded_fit.py: the memory table of a fit from Parquet shards, and its arguments."""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import sharded_fit  # noqa: E402


def test_the_section_sets_each_rank_beside_the_whole_frame_and_states_the_ratio():
    base = dict(date="2026-11-27", machine="test", n_series=1000, steps=64, files=4, start_mb=100.0,
                load_average=0.1, command="python benchmarks/sharded_fit.py --series 1000", params="{}")
    rows = [dict(base, mode="one process", rank=0, world_size=1, series_held=1000, peak_mb=500.0, data_mb=400.0,
                 best_val_loss=0.5, fit_seconds=2.0)]
    rows += [dict(base, mode="2 ranks reading the whole frame", rank=r, world_size=2, series_held=1000,
                  peak_mb=500.0, data_mb=400.0, best_val_loss=0.5, fit_seconds=3.0) for r in range(2)]
    rows += [dict(base, mode="2 ranks reading their shares", rank=r, world_size=2, series_held=500,
                  peak_mb=300.0, data_mb=200.0 - r, best_val_loss=0.51, fit_seconds=3.0) for r in range(2)]
    text = sharded_fit.section(pd.DataFrame(rows))
    assert "| 1,000 | 2 ranks reading their shares | 1 | 500 | 300 | 199 | 0.5100 | 3.0 |" in text
    assert "needed 0.50× the memory past start-up" in text and "1.0200× its" in text
    assert "--series 1000" in text


def test_an_unknown_mode_is_refused_before_anything_runs(capsys):
    with pytest.raises(SystemExit):
        sharded_fit.main(["--series", "10", "--modes", "three ranks"])
    assert "unknown mode(s) ['three ranks']" in capsys.readouterr().err
