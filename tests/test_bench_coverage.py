"""benchmarks/coverage.py: coverage and width of conformal intervals over the protocol's test windows."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tsrsa
from tsrsa.benchmarking.protocol import fit_frame, prepare
from tsrsa.benchmarking.scoring import score_model

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import coverage  # noqa: E402


def test_coverage_counts_the_test_values_inside_each_interval():
    t = np.arange(400)[:, None]
    values = 5 + np.sin(2 * np.pi * t / 12 + np.arange(2)) + 0.3 * np.random.default_rng(0).standard_normal((400, 2))
    data = prepare("weather", values, ["a", "b"], 12)
    h = 4
    model = tsrsa.SeasonalNaiveForecaster(h=h, season_length=12, conformal_windows=20)
    model.fit(fit_frame(data, 0, data.borders.val_end))
    got = coverage.coverage(model, data, h)
    assert got["mse"] == pytest.approx(score_model(model, data, h).mse, rel=1e-12)
    assert 0.6 < got["coverage_80"] < got["coverage_95"] <= 1.0 and got["width_80"] < got["width_95"]
    # the same count by hand, channel by channel
    q = model.conformal_.quantiles((80.0,), h)[0]
    inside, widths = [], []
    for c, name in enumerate(("a", "b")):
        x, y = coverage.window_views(data, c, h, lookback=12)
        row = model.memory_.ids.get_loc(name)
        stats = np.full(len(x), model.memory_.loc[row]), np.full(len(x), model.memory_.scale[row])
        yhat = model.forecast_windows(x, *stats, h)["yhat"]
        half = model.conformal_.scale[row] * q  # (h,)
        inside.append((np.abs(y - yhat) <= half).ravel())
        widths.append(np.broadcast_to(2 * half, y.shape).ravel())
    assert got["coverage_80"] == pytest.approx(np.concatenate(inside).mean(), abs=1e-12)
    assert got["width_80"] == pytest.approx(np.concatenate(widths).mean(), rel=1e-12)
    table = pd.DataFrame([dict(date="2026-11-27", dataset="weather", horizon=h, model="SeasonalNaive",
                               conformal_windows=20, calibration="fixed at fit", windows="all", fit_seconds=0.1,
                               machine="test", **got)])
    text = coverage.section(table, "python benchmarks/coverage.py")
    assert f"| weather | {h} | SeasonalNaive | 20 | fixed at fit | all | {100 * got['coverage_80']:.1f} % |" in text
    # every h-th window: the same forecasts and bounds, on the windows starting each block
    every = coverage.coverage(model, data, h, stride=h)
    assert every["values"] == sum(y[::h].size for y in (coverage.window_views(data, c, h, lookback=12)[1]
                                                         for c in range(2)))
    assert every["coverage_80"] == pytest.approx(np.concatenate([m.reshape(-1, h)[::h].ravel() for m in (
        inside[0].reshape(-1, h), inside[1].reshape(-1, h))]).mean(), abs=1e-12)


def test_a_refreshed_calibration_takes_in_the_errors_of_each_block_of_test_rows_as_they_arrive():
    t = np.arange(400)[:, None]
    values = 5 + np.sin(2 * np.pi * t / 12 + np.arange(2)) + 0.3 * np.random.default_rng(1).standard_normal((400, 2))
    data = prepare("weather", values, ["a", "b"], 12)
    h, b = 4, data.borders
    model = tsrsa.SeasonalNaiveForecaster(h=h, season_length=12, conformal_windows=20)
    model.fit(fit_frame(data, 0, b.val_end))
    fixed = coverage.coverage(model, data, h)
    before = model.conformal_.residuals.copy()
    refreshed = coverage.coverage(model, data, h, refresh=True)
    assert refreshed["mse"] == fixed["mse"] and refreshed["values"] == fixed["values"]  # the same forecasts
    n = b.n_windows("test", h)
    blocks = -(-n // h)
    assert int(model.memory_.last[0]) == b.val_end + (blocks - 1) * h - 1  # every block but the last arrived
    table = model.conformal_.residuals
    assert table.shape == before.shape and not np.allclose(table, before)
    # the newest rows: each channel's errors on the window forecast at the end before the last update
    for c, name in enumerate(("a", "b")):
        x, y = coverage.window_views(data, c, h, lookback=12)
        row = model.memory_.ids.get_loc(name)
        stats = np.full(len(x), model.memory_.loc[row]), np.full(len(x), model.memory_.scale[row])
        yhat = model.forecast_windows(x, *stats, h)["yhat"]
        last = (blocks - 2) * h
        expected = np.abs(y[last] - yhat[last]) / model.conformal_.scale[row]
        assert np.any(np.all(np.isclose(table[-2:], expected), axis=1))
