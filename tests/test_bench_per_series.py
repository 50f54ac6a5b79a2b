"""benchmarks/per_series.py: the series it takes, the arguments it refuses and the table it writes."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import per_series  # noqa: E402


def test_the_series_are_spread_over_the_file_first_included():
    ids = [f"W{i}" for i in range(1, 101)]
    assert per_series.chosen_ids(ids, 4) == ["W1", "W34", "W67", "W100"]
    assert per_series.chosen_ids(ids[:3], 10) == ids[:3]
    with pytest.raises(ValueError, match="--series"):
        per_series.chosen_ids(ids, 0)


TODAY = {"ensemble_size": 1, "start_weight": "auto"}  # a network's row made at today's choices


def row(model, label, split, seed, scores, date="2026-11-28T06:00:00", params=None):
    return {"date": date, "machine": "test machine", "command": f"python benchmarks/per_series.py --models {model}",
            "model": model, "label": label, "split": split, "seed": seed, "frequency": "Weekly",
            "series": ["W1", "W2"], "scores": {sid: {"smape": s, "mase": q} for sid, (s, q) in scores.items()},
            "fit_seconds": 2.0, "params": TODAY if params is None and model in per_series.NEURAL else params or {}}


def test_the_table_averages_seeds_per_series_and_sets_each_model_against_ets(tmp_path):
    rows = [
        row("ETS", "default", "test", 0, {"W1": (10.0, 1.0), "W2": (20.0, 3.0)}),
        row("RSA", "default", "test", 0, {"W1": (8.0, 0.8), "W2": (30.0, 4.0)}),
        row("RSA", "default", "test", 1, {"W1": (12.0, 1.2), "W2": (30.0, 3.0)}),
        row("RSA", "default", "test", 0, {"W1": (99.0, 99.0), "W2": (99.0, 99.0)}, date="2026-11-28T01:00:00"),
        row("Naive2", "default", "validation", 0, {"W1": (5.0, 0.5), "W2": (5.0, 0.5)}),
        # made before start_weight existed: named for what it ran at, not averaged with today's seed 0
        row("RSA", "default", "test", 0, {"W1": (9.0, 0.9), "W2": (20.0, 2.0)}, params={"ensemble_size": 1}),
        # made at an earlier default of the gate: named for it, not averaged with today's seed 0 either
        row("RSA", "default", "test", 0, {"W1": (7.0, 0.7), "W2": (20.0, 2.0)}, params={**TODAY, "gate_init": 0.0}),
        row("RSA", "gate_init=0", "test", 0, {"W1": (6.0, 0.6), "W2": (20.0, 2.0)}, params={**TODAY, "gate_init": 0}),
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    per_series.main(["--tables-only", "--rows", str(path), "--results-md", str(tmp_path / "R.md")])
    text = (tmp_path / "R.md").read_text()
    # RSA per series: W1 MASE 1.0, W2 3.5 -> mean 2.25 against ETS's 2.0; ahead on neither series
    assert "| RSA | default | 2 | 20.00 | 2.250 | 1.125 | 0/2 | 2.00 |" in text
    assert "| ETS | default | 1 | 15.00 | 2.000 | 1.000 |  | 2.00 |" in text
    assert "**Weekly, validation** (2 series)" in text and "| Naive2 | default | 1 | 5.00 | 0.500 |  |  |" in text
    assert "99.0" not in text  # the earlier run of the same row is replaced
    assert "| RSA | default (ran at start_weight=0.0) | 1 | 14.50 | 1.450 | 0.725 | 2/2 | 2.00 |" in text
    assert "| RSA | default (ran at gate_init=0.0) | 1 | 13.50 | 1.350 | 0.675 | 2/2 | 2.00 |" in text
    assert "| RSA | gate_init=0 | 1 | 13.00 | 1.300 | 0.650 | 2/2 | 2.00 |" in text  # an option keeps its label


@pytest.mark.parametrize("argv, words", [
    (["--models", "RSA,Prophet"], "--models"),
    (["--splits", "train"], "--splits"),
    (["--params", "{bad"], "not valid JSON"),
    (["--params", "[1]"], "JSON object"),
    (["--series", "0"], "--series"),
])
def test_bad_arguments_stop_before_any_fit(argv, words, tmp_path):
    with pytest.raises(ValueError, match=words):
        per_series.main([*argv, "--rows", str(tmp_path / "rows.jsonl"), "--results-md", str(tmp_path / "R.md")])
    assert not (tmp_path / "rows.jsonl").exists() and not (tmp_path / "R.md").exists()


def test_a_run_at_todays_choices_is_the_default_whatever_its_label():
    # one series at the automatic budget: RSA's gate at -2 is what "auto" gives, at 0 an earlier default
    ran = {**TODAY, "gate_init": -2}
    assert per_series.shown_label(row("RSA", "gate_init=-2", "test", 0, {}, params=ran)) == "default"
    assert per_series.shown_label(row("RSA", "default", "test", 0, {}, params={**TODAY, "gate_init": "auto"})) \
        == "default"
    assert per_series.shown_label(row("RSA", "default", "test", 0, {}, params={**TODAY, "gate_init": 0.0})) \
        == "default (ran at gate_init=0.0)"
    assert per_series.shown_label(row("RSA", "lr", "test", 0, {}, params={**ran, "learning_rate": 0.01})) == "lr"
    assert per_series.shown_label(row("ETS", "default", "test", 0, {})) == "default"
