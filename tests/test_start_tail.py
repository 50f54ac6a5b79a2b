"""The statistical start's cost bound: every fit reads a bounded tail of each series, in numpy.

A start's map reads one window, so its fit reads only each series' latest
``tail_length(window, season)`` steps (and the record says how many); its fitters (least squares,
exponential smoothing by variable projection, conditional least squares for the ARIMA, KPSS and the
seasonal strength) are numpy's, checked here against statsmodels, which the start no longer imports.
"""
from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

import tsrsa
from tsrsa.start.batched_least_squares import least_squares
from tsrsa.start.differencing import differencing, kpss_pvalue, seasonal_strength
from tsrsa.start.ets import ets_matrices, fit_ets, fit_ets_batch, profile_residuals
from tsrsa.start.fit import fit_start, forget_kept_fits
from tsrsa.start.maps import AR_TAIL_STEPS, TAIL_SEASONS, TAIL_STEPS, tail_length
from tsrsa.statistical.ets_model import EtsForm, candidate_forms, smoothed


def ar2_drift(n: int, seed: int = 0) -> np.ndarray:
    """An AR(2) cycle with a slow level shift half-way, so that its early part fits differently."""
    rng = np.random.default_rng(seed)
    y = np.zeros(n)
    for t in range(2, n):
        y[t] = 1.3 * y[t - 1] - 0.6 * y[t - 2] + rng.standard_normal()
    return y + np.where(np.arange(n) < n // 2, 0.0, 3.0) + 0.4 * np.sin(2 * np.pi * np.arange(n) / 24)


def seasonal_trend(n: int, m: int = 12, seed: int = 1) -> np.ndarray:
    t = np.arange(n)
    rng = np.random.default_rng(seed)
    return 0.02 * t + np.sin(2 * np.pi * t / m) + 0.3 * rng.standard_normal(n)


# ---------------------------------------------------------------------- the bound
def test_the_tail_is_a_few_hundred_steps_or_a_few_seasons_and_the_window():
    assert tail_length(48, 24) == tail_length(48, 24, "arima") == max(TAIL_STEPS, TAIL_SEASONS * 24) + 48
    assert tail_length(36, 1, "ets") == TAIL_STEPS + 36
    assert tail_length(200, 96, "ets") == TAIL_SEASONS * 96 + 200  # a long season: so many of them
    assert tail_length(48, 24, "ar") == AR_TAIL_STEPS + 48  # one least-squares fit: a longer stretch


@pytest.mark.parametrize("model", ["ar", "ets", "arima", "auto"])
def test_a_long_series_start_reads_only_its_tail(model):
    forget_kept_fits()
    window, h, season = 48, 12, 24
    y = ar2_drift(10_000)
    held_out = [ar2_drift(10_060)[10_000:]] if model == "auto" else None
    reads = tail_length(window, season, "ar" if model == "auto" else model)  # "auto": the longest, the AR's
    candidates = ("ar", "ets", "arima")
    whole = fit_start(model, [y], window, h, season, held_out, candidates)
    cut = fit_start(model, [y[-reads:]], window, h, season, held_out, candidates)
    assert whole.record["tail"] == cut.record["tail"] == tail_length(window, season, whole.record["model"]) < len(y)
    np.testing.assert_array_equal(whole.weight, cut.weight)
    np.testing.assert_array_equal(whole.bias, cut.bias)
    longer = fit_start(model, [y[-reads - 1:]], window, h, season, held_out, candidates)
    np.testing.assert_array_equal(longer.weight, whole.weight)  # a step more history: not read


def test_the_tail_decides_the_fit():
    """Were the history read, the early regime would move the map: the bound is what keeps it out."""
    window, h, season = 48, 12, 24
    y = ar2_drift(10_000)
    for model in ("ar", "ets"):
        tail = tail_length(window, season, model)
        bounded = fit_start(model, [y], window, h, season)
        early = fit_start(model, [y[:tail]], window, h, season)
        assert not np.allclose(bounded.weight, early.weight)


def test_a_panel_is_pooled_over_each_series_tail():
    window, h, season = 24, 6, 1
    tail = tail_length(window, season, "ar")
    series = [ar2_drift(9000, seed=3), ar2_drift(300, seed=4), ar2_drift(8500, seed=5)]
    whole = fit_start("ar", series, window, h, season)
    cut = fit_start("ar", [y[-tail:] for y in series], window, h, season)
    np.testing.assert_array_equal(whole.weight, cut.weight)
    assert whole.record["tail"] == tail and whole.record["series"] == 3


def test_a_forecaster_records_the_tail_its_start_read():
    y = pd.Series(ar2_drift(3000), index=pd.date_range("2020-01-01", periods=3000, freq="h"))
    model = tsrsa.DLinearForecaster(h=12, input_size=48, max_epochs=1, random_state=0).fit(y)
    assert model.start_["model"] in ("ar", "ets")
    assert model.start_["tail"] == tail_length(48, 24, model.start_["model"])


@pytest.mark.processes
def test_the_start_imports_neither_statsmodels_nor_scipy():
    """A fresh process pays about 2 s to import statsmodels; the start's fitters are numpy's."""
    code = """
import sys, json
import numpy as np
from tsrsa.start.fit import fit_start
t = np.arange(300)
y = 0.01 * t + np.sin(2 * np.pi * t / 12) + np.random.default_rng(0).standard_normal(300) * 0.2
start = fit_start("auto", [y[:-24]], 24, 12, 12, [y[-24:]], ("ar", "ets", "arima"))
print(json.dumps([start.record["model"], sorted({m.split(".")[0] for m in sys.modules} & {"statsmodels", "scipy"})]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    model, heavy = json.loads(out.stdout.strip().splitlines()[-1])
    assert model in ("ar", "ets", "arima") and heavy == []


# ---------------------------------------------------------------------- the fitters against statsmodels
@pytest.mark.parametrize("y", [np.random.default_rng(0).standard_normal(50),
                               np.random.default_rng(1).standard_normal(300).cumsum(),
                               seasonal_trend(144), np.sin(np.arange(2000) / 3)],
                         ids=["noise", "walk", "seasonal", "long-cycle"])
def test_kpss_is_statsmodels_kpss(y):
    from statsmodels.tsa.stattools import kpss

    with warnings.catch_warnings(action="ignore"):
        expected = kpss(y, regression="c", nlags="auto")[1]
    assert kpss_pvalue(y) == pytest.approx(expected, abs=1e-12)


def test_seasonal_strength_marks_a_season_and_not_noise():
    rng = np.random.default_rng(2)
    t = np.arange(144)
    assert seasonal_strength(rng.standard_normal(144), 12) < 0.64
    assert seasonal_strength(3 * np.sin(2 * np.pi * t / 12) + rng.standard_normal(144), 12) > 0.64
    assert seasonal_strength(rng.standard_normal(20), 12) == 0.0  # shorter than two seasons
    assert differencing(3 * np.sin(2 * np.pi * t / 12) + 0.05 * t + rng.standard_normal(144), 12) == (0, 1)  # (d, D)


@pytest.mark.parametrize("trend, damped, season", [(None, False, None), ("add", True, None), (None, False, "add"),
                                                   ("add", False, "add")])
def test_ets_fit_is_as_likely_as_statsmodels_fit(trend, damped, season):
    y = seasonal_trend(130, seed=4)
    form = EtsForm("add", trend, damped, season, 12 if season else 1)
    mine = fit_ets(y, [form])
    with warnings.catch_warnings(action="ignore"):
        theirs = form.model(y).fit(disp=False)
    assert mine.aic <= theirs.aic + 0.5  # the same likelihood and count; the optimum found as well or better
    with warnings.catch_warnings(action="ignore"):
        states = smoothed(mine, y, mine.initial)  # statsmodels' own recursion from the fitted initial state
    np.testing.assert_allclose(states[-1], mine.state, rtol=0, atol=1e-9)


def test_profile_residuals_are_the_recursion_from_the_least_squares_state():
    y = seasonal_trend(96, seed=6)
    form = EtsForm("add", "add", True, "add", 12)
    params = np.array([0.3, 0.05, 0.2, 0.9])
    free = np.ones((1, 14), dtype=bool)
    free[0, 2] = False
    residuals, state = profile_residuals(params[None], np.array([True]), 12, y, free)
    F, g, w = ets_matrices(form, params)
    x, errors = state[0].copy(), []
    for value in y:
        errors.append(value - w @ x)
        x = F @ x + g * errors[-1]
    np.testing.assert_allclose(residuals[0], errors, rtol=0, atol=1e-9)
    moves = np.random.default_rng(7).standard_normal((10, 14)) * 0.05
    moves[:, 2] = 0.0

    def squared(s):
        x, total = s.copy(), 0.0
        for value in y:
            e = value - w @ x
            total += e * e
            x = F @ x + g * e
        return total

    assert all(squared(state[0] + move) >= squared(state[0]) - 1e-9 for move in moves)  # the least-squares state


def test_series_fitted_together_are_fitted_as_alone():
    forms = candidate_forms("add", "auto", "auto", "auto", 12)
    Y = np.stack([seasonal_trend(120, seed=s) for s in (8, 9)])
    together = fit_ets_batch(Y, forms)
    for y, fit in zip(Y, together):
        alone = fit_ets(y, forms)
        assert fit.form == alone.form
        np.testing.assert_allclose(fit.params, alone.params, rtol=0, atol=1e-6)


def test_batched_least_squares_finds_each_problem_minimum():
    t = np.linspace(0, 4, 40)
    rates = np.array([0.3, 1.0, 2.5])
    data = np.exp(-rates[:, None] * t[None, :])

    def residuals(u, which):
        return np.exp(-np.exp(u[:, :1]) * t[None, :]) - data[which]

    u, sse = least_squares(residuals, np.zeros((3, 2)), np.array([[True, False]] * 3), iterations=60,
                           tolerance=1e-14)
    np.testing.assert_allclose(np.exp(u[:, 0]), rates, rtol=1e-4)
    assert (u[:, 1] == 0).all() and (sse < 1e-10).all()  # an unused coordinate stays where it started
