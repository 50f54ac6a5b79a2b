"""The fit plan: every automatic value decided once, at the start of ``fit``, kept as ``plan_``, read by what
follows, saved and read back; ``plan(df)`` before a fit; the docs' table generated from the rules."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tsrsa
from tsrsa.data.frequency import Frequency, look_back_seasons
from tsrsa.estimator import plan as plan_module
from tsrsa.estimator.plan import FitPlan

ROOT = Path(__file__).resolve().parents[1]
QUICK = dict(max_epochs=2, random_state=0)


def monthly(n: int = 120, ids=("a",)) -> pd.DataFrame:
    t = np.arange(n)
    return pd.concat([pd.DataFrame({"unique_id": uid, "ds": pd.date_range("2001-01-01", periods=n, freq="MS"),
                                    "y": 50 + 5 * k + np.sin(2 * np.pi * t / 12) + 0.01 * t})
                      for k, uid in enumerate(ids)], ignore_index=True)


def test_the_docs_table_is_the_rules_table():
    page = (ROOT / "docs" / "fit_plan.md").read_text()
    table = re.search(r"<!-- rules:[^\n]*-->\n(.*?)\n<!-- end of rules -->", page, re.S).group(1)
    assert table == plan_module.rules_table()
    documented = {row[0] for row in plan_module.RULES}
    assert {"max_epochs", "ensemble_size", "start", "start.weight", "rem.gate_init", "readout_tokens",
            "trainer.num_threads"} <= documented


def test_plan_before_a_fit_is_the_plan_the_fit_follows_and_changes_nothing():
    df = monthly()
    model = tsrsa.RSAForecaster(h=6, **QUICK)
    before = model.get_params()
    ahead = model.plan(df)
    assert not hasattr(model, "plan_") and model.get_params() == before
    assert ahead.estimated_seconds is not None and ahead.estimated_seconds > 0
    model.fit(df)
    fitted = model.plan_
    assert fitted.start == model.start_["model"] and fitted.start in fitted.start_candidates
    assert dataclasses.replace(fitted, start=None) == dataclasses.replace(ahead, estimated_seconds=None)
    assert (model.max_epochs_, model.ensemble_size_) == (fitted.epochs, fitted.members)


def test_the_rules_read_the_data_summary_in_one_place():
    one = tsrsa.RSAForecaster(h=6, **QUICK).plan(monthly())
    assert one.gate_init == 0.0  # a budget of its own: the layer's even mix
    auto = tsrsa.RSAForecaster(h=6).plan(monthly())
    assert auto.gate_init == plan_module.SINGLE_SERIES_GATE and auto.start_weight == plan_module.SHORT_START_WEIGHT
    assert auto.start_candidates == plan_module.SHORT_START_CANDIDATES and auto.members == 1
    panel = tsrsa.RSAForecaster(h=6).plan(monthly(ids=("a", "b")))
    assert panel.gate_init == 0.0 and panel.start_candidates == plan_module.START_CANDIDATES
    assert tsrsa.DLinearForecaster(h=6, start=None).plan(monthly()).start_candidates == ()
    assert tsrsa.DLinearForecaster(h=6, loss="normal").plan(monthly()).start_candidates == ()
    assert tsrsa.DLinearForecaster(h=6, trainer={"num_threads": 2}).plan(monthly()).threads == 2
    cpu = tsrsa.DLinearForecaster(h=6).plan(monthly())
    assert cpu.threads == plan_module.CPU_THREADS and cpu.device == "cpu" and cpu.reason("num_threads")


def test_the_fit_reads_the_plan_and_load_rebuilds_from_it(tmp_path, monkeypatch):
    from tsrsa.training import budget

    for name, value in (("TARGET_STEPS", 4), ("MIN_EPOCHS", 1), ("MAX_EPOCHS", 2)):
        monkeypatch.setattr(budget, name, value)  # the automatic budget at a test's scale
    df = monthly()
    model = tsrsa.RSAForecaster(h=6, random_state=0).fit(df)
    assert model.plan_.gate_init == plan_module.SINGLE_SERIES_GATE
    assert model.explain()["gate"].iloc[0] != 0.5  # the network was built with the plan's gate
    monkeypatch.setattr(plan_module, "SINGLE_SERIES_GATE", -3.0)  # a rule changed after the fit...
    model.save(tmp_path / "m")
    loaded = tsrsa.load(tmp_path / "m")  # ...does not change what the saved fit decided
    assert loaded.plan_ == model.plan_
    pd.testing.assert_frame_equal(loaded.predict(), model.predict())


def test_a_saved_plan_that_is_not_one_is_refused_naming_the_file(tmp_path):
    with pytest.raises(ValueError, match="unknown entries"):
        FitPlan.from_json({"epochs": 1, "bogus": 2})
    with pytest.raises(ValueError, match="members"):
        FitPlan.from_json({"epochs": 1, "batches_per_epoch": None, "patience": None, "steps": 1, "members": 0})


def test_verbose_prints_the_plan_in_a_few_lines(capsys):
    tsrsa.DLinearForecaster(h=6, max_epochs=1, trainer={"verbose": 1}, random_state=0).fit(monthly())
    err = capsys.readouterr().err
    assert "fit plan" in err and "training: 1 network(s)" in err and "start: candidates" in err
    silent = tsrsa.DLinearForecaster(h=6, max_epochs=1, random_state=0)
    silent.fit(monthly())
    assert capsys.readouterr() == ("", "")


def test_a_short_series_gets_a_shorter_look_back_saved_with_the_plan(tmp_path):
    h = 6
    long_enough = tsrsa.DLinearForecaster(h=h, **QUICK).fit(monthly(n=3 * h + plan_module.MIN_TRAINING_WINDOWS - 1))
    assert long_enough.resolved_input_size == long_enough.plan_.input_size == 2 * h
    n = 2 * h + 3  # two horizons and a horizon do not fit: the rule leaves four windows
    short = tsrsa.DLinearForecaster(h=h, **QUICK).fit(monthly(n=n))
    expected = n - h - (plan_module.MIN_TRAINING_WINDOWS - 1)
    assert short.resolved_input_size == short.plan_.input_size == expected
    assert short.n_train_windows_ == plan_module.MIN_TRAINING_WINDOWS
    assert "fewer than 4 training windows" in short.plan_.reason("input_size")
    assert short.get_params()["input_size"] is None  # the parameter is left as the user gave it
    short.save(tmp_path / "m")
    loaded = tsrsa.load(tmp_path / "m")
    assert loaded.resolved_input_size == expected
    pd.testing.assert_frame_equal(loaded.predict(), short.predict())
    refit = short.fit(monthly(n=120))  # a refit decides afresh
    assert refit.resolved_input_size == 2 * h
    assert tsrsa.DLinearForecaster(h=h, input_size=2 * h, **QUICK).plan(monthly(n=120)).reason("input_size") is None


def weekly(n: int, dated: bool = True) -> pd.DataFrame:
    t = np.arange(n)
    ds = pd.date_range("2001-01-07", periods=n, freq="W") if dated else t
    return pd.DataFrame({"unique_id": "w", "ds": ds, "y": 20 + 3 * np.sin(2 * np.pi * t / 52) + 0.01 * t})


def test_the_default_look_back_holds_at_least_one_season():
    rule = plan_module.default_input_size
    assert rule(13, 1, 1000, 52) == (52, 7, "52: one season (52 steps, more than two horizons)")
    assert rule(13, 1, 1000, 1) == (26, 7, "26: two horizons")
    assert rule(48, 4, 1000, 24)[0] == 96  # a season shorter than two horizons changes nothing
    assert rule(13, 1, 60, 52)[0] == 60 - 13 - (plan_module.MIN_TRAINING_WINDOWS - 1)  # the shortest series caps it
    # as a user gets it: weekly dates read a season of 52 weeks; integer time has none
    model = tsrsa.DLinearForecaster(h=4, **QUICK)
    assert model.plan(weekly(300)).input_size == 52
    assert model.fit(weekly(300)).input_size_ == 52 and "one season" in model.plan_.reason("input_size")
    assert model.predict()["yhat"].notna().all()
    assert model.plan_.data.season == 52 and model.get_params()["input_size"] is None
    assert tsrsa.DLinearForecaster(h=4, **QUICK).fit(weekly(300, dated=False)).input_size_ == 8  # integer time
    assert tsrsa.DLinearForecaster(h=4, input_size=8, **QUICK).fit(weekly(300)).input_size_ == 8  # as given
    assert tsrsa.DLinearForecaster(h=3, **QUICK).fit(monthly(n=60)).input_size_ == 12


def hourly(n: int, ids=("a",)) -> pd.DataFrame:
    t = np.arange(n)
    return pd.concat([pd.DataFrame({"unique_id": uid, "ds": pd.date_range("2020-01-06", periods=n, freq="h"),
                                    "y": 10 + k + np.sin(2 * np.pi * t / 24) + 0.5 * (t % 168 >= 120)})
                      for k, uid in enumerate(ids)], ignore_index=True)


def test_sub_daily_data_hold_the_week_where_the_shortest_series_has_a_window_per_step_of_it():
    assert look_back_seasons(Frequency("h")) == (168, 24)
    assert look_back_seasons(Frequency("2h")) == (84, 12) and look_back_seasons(Frequency("5h")) == (1,)
    assert look_back_seasons(Frequency("30min")) == (48,) and look_back_seasons(Frequency("15min")) == (96,)
    assert look_back_seasons(Frequency("D")) == (7,) and look_back_seasons(Frequency("W-SUN")) == (52,)
    assert look_back_seasons(Frequency("s")) == (60,) and look_back_seasons(Frequency(None, 1)) == (1,)
    rule = plan_module.default_input_size
    assert rule(24, 1, 1000, (168, 24)) == (168, 12, "168: one season (168 steps, more than two horizons)")
    needed = 168 + 24 - 1 + 168  # as many training windows (shortest - 168 - 24 + 1) as the look-back has steps
    assert rule(24, 1, needed, (168, 24))[0] == 168
    look_back, _, why = rule(24, 1, needed - 1, (168, 24))  # one short of it: two horizons and the day
    assert look_back == 48 and why == (f"48: two horizons; not the longer season of 168 steps: it needs {needed} "
                                       f"training steps in the shortest series, which has {needed - 1}")
    assert rule(96, 1, 1000, (168, 24))[0] == 192  # two horizons already hold the week
    assert rule(1, 4, 60, (168, 24))[0] == 24  # the day where the week leaves too few windows
    assert rule(48, 1, 428, (336, 48))[0] == 96 and rule(48, 1, 900, (336, 48))[0] == 336  # any longer season
    # as a user gets it: hourly dates plan and fit the week, a panel with a short series the day
    model = tsrsa.DLinearForecaster(h=24, **QUICK)
    assert model.plan(hourly(600)).input_size == 168
    fitted = model.fit(hourly(600, ids=("a", "b")))
    assert fitted.input_size_ == 168 and fitted.plan_.data.cycle == 168 and fitted.plan_.data.season == 24
    assert "one season (168 steps" in fitted.plan_.reason("input_size") and "week 168" in fitted.plan_.describe()
    assert fitted.get_params()["input_size"] is None and fitted.predict()["yhat"].notna().all()
    short = pd.concat([hourly(600), hourly(300, ids=("b",))], ignore_index=True)
    day = tsrsa.DLinearForecaster(h=24, **QUICK).fit(short)
    assert day.input_size_ == 48 and "not the longer season of 168 steps" in day.plan_.reason("input_size")
    integer = hourly(600).assign(ds=np.arange(600))
    assert tsrsa.DLinearForecaster(h=24, **QUICK).fit(integer).input_size_ == 48  # no season on integer time


def test_a_series_too_short_for_the_least_look_back_is_refused_naming_it():
    h = 6
    least = -(-h // 2)
    with pytest.raises(ValueError, match=r"needs at least 12 .*input_size=None: a look-back of at least 3"):
        tsrsa.DLinearForecaster(h=h, **QUICK).fit(monthly(n=least + h + plan_module.MIN_TRAINING_WINDOWS - 2))
    with pytest.raises(ValueError, match=r"input_size=12 \+ h=6"):
        tsrsa.DLinearForecaster(h=h, input_size=12, **QUICK).fit(monthly(n=17))


def test_a_plan_saved_before_the_week_reads_back_without_one():
    fitted = tsrsa.DLinearForecaster(h=24, **QUICK).fit(hourly(600))
    saved = fitted.plan_.to_json()
    assert saved["data"]["cycle"] == 168 and FitPlan.from_json(saved) == fitted.plan_
    del saved["data"]["cycle"]  # as 0.18.2 wrote it
    older = FitPlan.from_json(saved)
    assert older.data.cycle is None and "(season 24)" in older.describe() and "week" not in older.describe()


def test_a_plan_saved_without_a_look_back_keeps_two_horizons():
    plan = FitPlan.from_json({"epochs": 1, "batches_per_epoch": None, "patience": None, "steps": 1, "members": 1})
    assert plan.input_size is None
    model = tsrsa.DLinearForecaster(h=6)
    model.adopt_plan({"plan": plan.to_json()})
    assert model.resolved_input_size == 12
