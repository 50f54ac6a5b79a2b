"""Metrics: formulas elementwise, and scoring of tidy frames."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tsrsa import metrics


@pytest.fixture
def pair():
    rng = np.random.default_rng(0)
    y = rng.normal(5, 2, size=(4, 6))
    return y, y + rng.normal(0, 1, size=(4, 6))


def test_point_metrics_elementwise(pair):
    y, p = pair
    e = y - p
    assert metrics.mse(y, p) == pytest.approx(sum(v * v for v in e.ravel()) / e.size)
    assert metrics.mae(y, p) == pytest.approx(sum(abs(v) for v in e.ravel()) / e.size)
    assert metrics.rmse(y, p) == pytest.approx(np.sqrt(metrics.mse(y, p)))
    terms = [200 * abs(a - b) / (abs(a) + abs(b)) for a, b in zip(y.ravel(), p.ravel())]
    assert metrics.smape(y, p) == pytest.approx(sum(terms) / len(terms))
    assert metrics.smape([0.0, 1.0], [0.0, 1.0]) == 0.0


def test_mase_and_pinball():
    train = np.array([1.0, 3.0, 2.0, 4.0, 3.0, 5.0])
    scale = np.mean(np.abs(train[2:] - train[:-2]))  # seasonal naive with m=2
    assert metrics.mase([6.0, 4.0], [5.0, 5.0], train, season_length=2) == pytest.approx(1.0 / scale)
    y, q = np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 2.0])
    expected = np.mean([0.9 * 1.0, 0.0, 0.1 * 1.0])  # over-forecast costs 1-q, under-forecast q
    assert metrics.pinball(y, q, 0.1) == pytest.approx(np.mean([(1 - 0.1) * 1.0, 0.0, 0.1 * 1.0]))
    assert metrics.pinball(y, q, 0.9) == pytest.approx(expected)


def test_metric_errors():
    with pytest.raises(ValueError, match="shape"):
        metrics.mse([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="empty"):
        metrics.mae([], [])
    with pytest.raises(ValueError, match="q=1.5"):
        metrics.pinball([1.0], [1.0], 1.5)
    with pytest.raises(ValueError, match="undefined"):
        metrics.mase([1.0], [1.0], [2.0, 2.0, 2.0], 1)


def test_evaluate_frames():
    cv = pd.DataFrame({
        "unique_id": ["a", "a", "b", "b"],
        "step": [1, 2, 1, 2],
        "y": [1.0, 2.0, 3.0, 4.0],
        "yhat": [1.5, 2.0, 2.0, 4.0],
        "yhat_q10": [1.0, 1.0, 1.0, 1.0],
        "yhat_q90": [5.0, 5.0, 5.0, 5.0],
    })
    overall = metrics.evaluate(cv, ["mae", "mse", "pinball"])
    assert overall.loc[0, "mae"] == pytest.approx(metrics.mae(cv["y"], cv["yhat"]))
    expected_pinball = np.mean([metrics.pinball(cv["y"], cv["yhat_q10"], 0.1),
                                metrics.pinball(cv["y"], cv["yhat_q90"], 0.9)])
    assert overall.loc[0, "pinball"] == pytest.approx(expected_pinball)
    by_step = metrics.evaluate(cv, "mse", by="step")
    assert by_step["step"].tolist() == [1, 2]
    assert by_step["mse"].tolist() == pytest.approx([(0.25 + 1.0) / 2, 0.0])
    train = pd.DataFrame({"unique_id": ["a"] * 3 + ["b"] * 3, "y": [0.0, 1.0, 3.0, 0.0, 2.0, 2.0]})
    mase = metrics.evaluate(cv, ["mase"], train_df=train)
    scale_a, scale_b = 1.5, 1.0
    assert mase.loc[0, "mase"] == pytest.approx(np.mean([0.25 / scale_a, 0.5 / scale_b]))
    with pytest.raises(ValueError, match="unknown metric"):
        metrics.evaluate(cv, ["r2"])
    with pytest.raises(ValueError, match="train_df"):
        metrics.evaluate(cv, ["mase"])
    with pytest.raises(ValueError, match="quantile columns"):
        metrics.evaluate(cv.drop(columns=["yhat_q10", "yhat_q90"]), ["pinball"])
