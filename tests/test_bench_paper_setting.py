"""benchmarks/paper_setting.py: the table pairs RSA and the Transformer by seed."""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import paper_setting  # noqa: E402


def test_the_table_pairs_runs_by_seed_and_counts_wins():
    rows = [(24, "Transformer", 0, 0.30, 0.40), (24, "RSA", 0, 0.20, 0.35), (24, "Transformer", 1, 0.10, 0.2),
            (24, "RSA", 1, 0.40, 0.5), (48, "RSA", 0, 0.5, 0.6)]  # h 48: RSA alone, no pair, no row
    table = pd.DataFrame([dict(date="2026-11-27", horizon=h, model=m, seed=s, mse=e, mae=a, machine="cpu")
                          for h, m, s, e, a in rows])
    text = paper_setting.section(table)
    assert "| 24 | 2 | 0.2000 | 0.3000 | 1.500 | 0.3000 | 0.4250 | 1/2 |" in text
    assert "| 48 |" not in text


def test_the_setting_is_one_token_per_step_without_revin():
    model = paper_setting.MODELS["RSA"](h=24, **paper_setting.SETTING)
    assert model.patch_len == 1 and model.revin is False and model.input_size == 96
