"""benchmarks/coverage_m4.py: coverage, width and interval score of prediction intervals, and its rows."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tsrsa.metrics import weighted_quantile_loss

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import coverage_m4  # noqa: E402


def tiny_case():
    """Two series of 4 values: the first half inside [0.5, 2.5] (one below, one above by 0.5), the
    second inside [0, 100] everywhere, its upper bound met exactly once."""
    y = np.array([[0.0, 1.0, 2.0, 3.0], [10.0, 20.0, 30.0, 100.0]])
    lower = np.array([[0.5] * 4, [0.0] * 4])
    upper = np.array([[2.5] * 4, [100.0] * 4])
    return y, lower, upper, np.array([2.0, 10.0])


def test_interval_scores_count_values_inside_and_scale_width_and_score_per_series():
    y, lower, upper, scale = tiny_case()
    got = coverage_m4.interval_scores(y, lower, upper, scale, 80)
    assert got["coverage"] == 6 / 8  # a value on the bound is inside
    assert got["width"] == pytest.approx((4 * 2.0 / 2.0 + 4 * 100.0 / 10.0) / 8)
    # 80 %: 2/alpha = 10; the first series' misses of 0.5 add 5 to its width of 2, over its scale 2
    first = np.array([2 + 5, 2, 2, 2 + 5]) / 2.0
    assert got["msis"] == pytest.approx((first.sum() + 4 * 10.0) / 8)
    wider = coverage_m4.interval_scores(y, lower, upper, scale, 95)  # 2/alpha = 40: misses cost more
    assert wider["coverage"] == got["coverage"] and wider["msis"] > got["msis"]


def test_a_calibrated_normal_interval_covers_its_level():
    y = np.random.default_rng(0).standard_normal((200, 50))
    for level, z in ((80, 1.2815516), (95, 1.9599640)):
        got = coverage_m4.interval_scores(y, np.full_like(y, -z), np.full_like(y, z), np.ones(200), level)
        assert abs(got["coverage"] - level / 100) < 0.01
        assert got["width"] == pytest.approx(2 * z)


def test_summary_leaves_a_missing_level_blank_and_scores_wql_from_bounds_and_point():
    y, lower, upper, scale = tiny_case()
    point = (lower + upper) / 2
    only80 = coverage_m4.summary(y, point, {80: (lower, upper)}, scale)
    assert only80["coverage_80"] == 0.75 and np.isnan(only80["coverage_95"]) and np.isnan(only80["wql"])
    both = {80: (lower, upper), 95: (lower - 1, upper + 1)}
    got = coverage_m4.summary(y, point, both, scale)
    assert got["wql"] == pytest.approx(weighted_quantile_loss(y, [lower - 1, lower, point, upper, upper + 1],
                                                              [0.025, 0.1, 0.5, 0.9, 0.975]))
    assert got["coverage_95"] == 1.0 and got["values"] == 8
    assert np.isnan(coverage_m4.summary(y, point, both, scale, wql=False)["wql"])


def test_windows_that_fit_take_the_target_or_what_the_length_holds():
    assert coverage_m4.windows_that_fit(652, 168 + 48 + 48, 48, 5) == 5  # M4 Hourly's shortest history
    assert coverage_m4.windows_that_fit(652, 264, 48, 20) == 8
    assert coverage_m4.windows_that_fit(200, 48 + 48 + 72, 48, 20) == 0  # taylor at n = 200
    assert coverage_m4.windows_that_fit(100, 168, 12, 20) == 0


def test_quantile_bound_columns_name_the_central_interval():
    assert coverage_m4.quantile_bound_columns(80) == ("yhat_q10", "yhat_q90")
    assert coverage_m4.quantile_bound_columns(95) == ("yhat_q2.5", "yhat_q97.5")


def test_rows_keep_the_latest_run_and_the_section_shows_the_gap(tmp_path):
    path = tmp_path / "rows.csv"
    y, lower, upper, scale = tiny_case()
    base = {"dataset": "M4 Hourly", "run": "RSA-conformal", "model": "RSA", "seed": 0, "k": 5, "residuals_per_step": 10,
            "mase": 1.0, "fit_seconds": 3.0, "predict_seconds": 0.1, "machine": "test", "params": {"h": 4}}
    coverage_m4.append({**base, **coverage_m4.summary(y, lower, {80: (lower, upper)}, scale)}, path)
    coverage_m4.append({**base, **coverage_m4.summary(y, lower, {80: (lower, upper), 95: (lower, upper)}, scale)},
                       path)
    rows = coverage_m4.read_rows(path)
    assert len(rows) == 1 and rows["coverage_95"].iloc[0] == 0.75
    text = coverage_m4.section(rows, "python benchmarks/coverage_m4.py", ["taylor at n = 200 is left out"])
    assert "| 75.0 % | -5.0 |" in text and "| 75.0 % | -20.0 |" in text
    assert "- taylor at n = 200 is left out." in text
    # a row trained otherwise (a later change of the library's defaults) is kept beside it, not over it
    coverage_m4.append({**base, "params": {"h": 4, "scaler": "standard", "loss": "mae", "lr_schedule": "onecycle"},
                        **coverage_m4.summary(y, lower, {80: (lower, upper)}, scale)}, path)
    rows = coverage_m4.read_rows(path)
    assert list(rows["training"]) == ["", "loss=mae, lr_schedule=onecycle"]
    assert "| loss=mae, lr_schedule=onecycle | 5 | 75.0 % | -5.0 |" in coverage_m4.section(rows, "command")
