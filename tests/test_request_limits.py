"""Requests whose size one number sets are estimated before anything is built and refused above the limit
(8 GiB, or ``TSRSA_MAX_REQUEST_BYTES``): ``sample(n)``, ``predict(level=...)`` over many levels,
``make_future_frame`` and ``cross_validate(n_windows=...)``; and a level written as a fraction is refused
with the hint that levels are percentages."""
from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from tsrsa import DLinearForecaster, SeasonalNaiveForecaster
from tsrsa.data.limits import DEFAULT_MAX_REQUEST_BYTES, MAX_REQUEST_ENV, request_limit

from conftest import make_panel

LIMIT = rf"above the limit of 64 KiB for one request: .*raise the limit with the environment variable {MAX_REQUEST_ENV}"


@pytest.fixture(scope="module")
def naive():
    train = make_panel(n_series=2, length=60)
    return SeasonalNaiveForecaster(h=4, season_length=6, conformal_windows=10).fit(train), train


@pytest.fixture(scope="module")
def normal():
    return DLinearForecaster(h=3, input_size=6, loss="normal", max_epochs=1, start=None,
                             random_state=0).fit(make_panel(n_series=2, length=30))


@pytest.fixture
def small_limit(monkeypatch):
    monkeypatch.setenv(MAX_REQUEST_ENV, "64KiB")


def test_the_limit_is_8_gib_unless_the_environment_says_otherwise(monkeypatch):
    monkeypatch.delenv(MAX_REQUEST_ENV, raising=False)
    assert request_limit() == DEFAULT_MAX_REQUEST_BYTES == 8 * 2 ** 30
    for text, limit in (("64GiB", 64 * 2 ** 30), ("500MB", 500 * 10 ** 6), ("2e10", 2 * 10 ** 10), ("4096", 4096),
                        ("0", None), ("none", None)):
        monkeypatch.setenv(MAX_REQUEST_ENV, text)
        assert request_limit() == limit, text
    monkeypatch.setenv(MAX_REQUEST_ENV, "lots")
    with pytest.raises(ValueError, match=rf"the environment variable {MAX_REQUEST_ENV}='lots' is not a size"):
        request_limit()


def test_a_billion_sample_paths_are_refused_at_once(normal, monkeypatch):
    monkeypatch.delenv(MAX_REQUEST_ENV, raising=False)
    before = normal.predict()
    began = time.perf_counter()
    with pytest.raises(ValueError, match=r"sample\(n=1000000000\) would build 6,000,000,000 rows \(2 series x 3 steps "
                                         r"x 1000000000 paths\), about .* GiB in memory, above the limit of 8 GiB for "
                                         r"one request: draw fewer paths"):
        normal.sample(10 ** 9)
    assert time.perf_counter() - began < 5
    pd.testing.assert_frame_equal(normal.predict(), before)


def test_sample_under_a_lower_limit(normal, small_limit):
    assert len(normal.sample(20, random_state=0)) == 2 * 20 * 3  # 120 rows: well under 64 KiB
    with pytest.raises(ValueError, match=r"sample\(n=1000\) would build 6,000 rows .*" + LIMIT):
        normal.sample(1000, random_state=0)
    with pytest.raises(ValueError, match=r"sample\(n=1000\) would build"):
        normal.sample(1000, df=make_panel(n_series=2, length=30), random_state=0)


def test_many_levels_are_refused_before_any_interval_is_built(naive, small_limit):
    model, _ = naive
    before = model.predict()
    assert list(model.predict(level=[80]).columns) == ["unique_id", "ds", "yhat", "yhat_lo_80", "yhat_hi_80"]
    levels = list(np.linspace(10, 80, 200))
    with pytest.raises(ValueError, match=r"level= with 200 levels would build 400 interval columns of 8 rows.*"
                                         + LIMIT):
        model.predict(level=levels)
    with pytest.raises(ValueError, match=r"level= with 200 levels would build"):
        model.predict(df=make_panel(n_series=2, length=60), level=levels)
    pd.testing.assert_frame_equal(model.predict(), before)


def test_a_future_frame_over_the_limit_is_refused(small_limit):
    y = pd.Series(np.arange(20.0), index=pd.RangeIndex(20))
    model = SeasonalNaiveForecaster(h=5000, season_length=2).fit(y)
    assert len(model.make_future_frame(h=10)) == 10
    with pytest.raises(ValueError, match=r"make_future_frame\(h=5000\) would build 5,000 rows \(1 series x 5000 "
                                         r"steps\).*" + LIMIT):
        model.make_future_frame()


def test_cross_validation_over_the_limit_is_refused_before_any_fit(naive, small_limit):
    model, train = naive
    params = model.get_params()
    assert len(model.cross_validate(train, n_windows=2)) == 2 * 2 * 4
    with pytest.raises(ValueError, match=r"cross_validate\(n_windows=40\) would build 320 rows \(2 series x 40 "
                                         r"windows x h=4 steps\).*"
                                         + LIMIT.replace("request: ", "request: lower n_windows")):
        model.cross_validate(train, n_windows=40, step_size=1)
    assert model.get_params() == params


def test_a_level_written_as_a_fraction_is_refused_with_a_hint(naive):
    model, train = naive
    for call in (lambda: model.predict(level=[0.8]), lambda: model.cross_validate(train, n_windows=1, level=[0.95])):
        with pytest.raises(ValueError, match=r"level 0.(8|95) would give a 0.(8|95) % interval: levels are "
                                             r"percentages, not fractions; write level=\[(80|95)\] for (80|95) %"):
            call()
