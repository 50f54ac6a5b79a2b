"""input_size="auto": the look-back chosen on the validation windows among 96, 192, 336 and 720 steps."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tsrsa
from tsrsa.estimator.lookback import LOOKBACKS, PROBE_SHARE, candidates, probe_epochs
from tsrsa.estimator.plan import MIN_TRAINING_WINDOWS
from tsrsa.training import budget


def test_candidates_leave_the_shortest_series_its_training_windows():
    h = 24
    for shortest in (100, 96 + h + MIN_TRAINING_WINDOWS - 1, 500, 2000):
        found = candidates(h, shortest)
        assert found == [L for L in LOOKBACKS if shortest - L - h + 1 >= MIN_TRAINING_WINDOWS]


def test_the_probes_together_cost_the_stated_share():
    assert probe_epochs("auto", 4) == max(1, int(budget.MIN_EPOCHS * PROBE_SHARE / 4))
    assert probe_epochs(40, 4) == int(40 * PROBE_SHARE / 4)
    assert probe_epochs(1, 4) == 1


def repeating_panel(period: int, length: int, n_series: int = 2, seed: int = 0) -> pd.DataFrame:
    """Series repeating one random shape of ``period`` steps, with a little noise: a look-back shorter than
    the period cannot see what comes next, a longer one can copy it."""
    rng = np.random.default_rng(seed)
    frames = []
    for k in range(n_series):
        shape = np.cumsum(rng.normal(size=period))
        shape -= np.linspace(shape[0], shape[-1], period)  # ends meet: no jump where it repeats
        y = np.tile(shape, length // period + 1)[:length] + 0.05 * rng.normal(size=length)
        frames.append(pd.DataFrame({"unique_id": f"s{k}", "ds": np.arange(length), "y": y}))
    return pd.concat(frames, ignore_index=True)


def test_auto_keeps_a_look_back_that_sees_the_last_repetition():
    df = repeating_panel(period=300, length=1400)
    model = tsrsa.DLinearForecaster(h=24, input_size="auto", max_epochs=24, random_state=0, start=None,
                                    learning_rate=1e-2).fit(df)
    assert model.input_size_ >= 336
    reason = model.plan_.reason("input_size")
    assert reason.startswith(f"'auto': {model.input_size_}, the lowest validation loss of 96 (")
    assert model.network_.config.input_size == model.input_size_
    assert model.val_size == 0 and model.plan_.data.val_windows == 0  # the fit itself trains on every step


def test_the_probes_leave_no_trace_the_fit_is_the_one_at_the_chosen_look_back():
    df = repeating_panel(period=100, length=700)
    chosen = tsrsa.DLinearForecaster(h=24, input_size="auto", max_epochs=4, random_state=0).fit(df)
    assert "the lowest validation loss of 96 (" in chosen.plan_.reason("input_size")  # probes ran
    given = tsrsa.DLinearForecaster(h=24, input_size=chosen.input_size_, max_epochs=4, random_state=0).fit(df)
    pd.testing.assert_frame_equal(chosen.predict(), given.predict())
    assert chosen.fit_history_.drop(columns="seconds").equals(given.fit_history_.drop(columns="seconds"))


def test_auto_on_short_series_takes_the_default_rule_and_says_why(small_budget, tmp_path):
    df = repeating_panel(period=12, length=100, n_series=1)
    model = tsrsa.DLinearForecaster(h=6, input_size="auto").fit(df)
    default = tsrsa.DLinearForecaster(h=6).fit(df)
    assert model.input_size_ == default.input_size_
    assert "none of [96, 192, 336, 720] leaves the shortest series" in model.plan_.reason("input_size")
    model.save(tmp_path / "m")
    loaded = tsrsa.load(tmp_path / "m")
    assert loaded.input_size == "auto" and loaded.resolved_input_size == model.input_size_
    pd.testing.assert_frame_equal(loaded.predict(), model.predict())


def test_one_candidate_is_taken_without_a_probe(small_budget):
    df = repeating_panel(period=12, length=96 + 6 + 6 + MIN_TRAINING_WINDOWS + 10, n_series=1)
    model = tsrsa.DLinearForecaster(h=6, input_size="auto", val_size=6).fit(df)
    assert model.input_size_ == 96
    assert model.plan_.reason("input_size") == ("'auto': 96, the only one of [96, 192, 336, 720] the shortest series "
                                                "holds")


@pytest.mark.parametrize("value, error", [("long", ValueError), (1.5, TypeError), (0, ValueError)])
def test_other_values_are_refused_by_name(value, error):
    with pytest.raises(error, match="input_size"):
        tsrsa.DLinearForecaster(h=6, input_size=value).fit(repeating_panel(12, 200, 1))
