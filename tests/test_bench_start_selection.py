"""benchmarks/start_selection.py: the rule that keeps a statistical start, and its nested-validation table."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import start_selection  # noqa: E402


def test_the_network_is_kept_only_when_it_beats_the_start_by_the_margin():
    rng = np.random.default_rng(0)
    start = np.ones(60)
    clear = start - 0.5 + 0.01 * rng.standard_normal(60)  # better in every window
    noisy = start - 0.02 + rng.standard_normal(60)  # better on average, by far less than its spread
    assert start_selection.keeps_network(clear, start, h=4, margin=2.0)
    assert start_selection.keeps_network(noisy, start, h=4, margin=0.0) == bool(np.mean(noisy) < 1)
    assert not start_selection.keeps_network(noisy, start, h=4, margin=2.0)
    assert not start_selection.keeps_network(clear, start, h=4, margin=float("inf"))  # the start, always
    assert not start_selection.keeps_network(start, start, h=4, margin=1.0)  # no difference: the start


def test_the_table_scores_each_rule_on_the_outer_validation_against_the_best_epoch():
    better, worse = [0.5] * 8, [1.0] * 8  # inner losses per window
    rows = pd.DataFrame([
        # the network clearly better inside, and outside: every rule but "always the start" keeps it
        dict(model="RSA", dataset="a", n=200, seed=0, h=4, inner_network=better, inner_start=worse,
             outer_network=[1.0], outer_start=[2.0]),
        # the network worse inside: every rule keeps the start
        dict(model="RSA", dataset="b", n=200, seed=0, h=4, inner_network=worse, inner_start=better,
             outer_network=[1.0], outer_start=[4.0]),
    ]).assign(date="2026-11-28", machine="test")
    text = start_selection.section(rows, "python benchmarks/start_selection.py")
    # z = 0 to 2 choose alike: ratio 1; z = inf keeps the start in both: (2/1 * 4/4) ** 0.5
    assert "| RSA | 1 | 2 | 1.000 (1) | 1.000 (1) | 1.000 (1) | 1.000 (1) | 1.000 (1) | 1.414 (2) |" in text
    assert "z = ∞" in text and "start_selection.jsonl" in text and "| both |" not in text
    # a second block where the start is the better: keeping it always halves the first fit's error there
    second = rows.assign(fold=2, outer_network=[[2.0], [2.0]], outer_start=[[1.0], [1.0]])
    text = start_selection.section(pd.concat([rows.assign(fold=1), second], ignore_index=True), "cmd")
    assert "| RSA | 2 | 2 | 1.000 (1) | 1.000 (1) | 1.000 (1) | 1.000 (1) | 1.000 (1) | 0.707 (2) |" in text
    assert "| RSA | both | 4 | 1.000 (2) |" in text and "| 1.000 (4) |" in text  # (2 x 1 x 0.5 x 1) ** 0.25
