"""tsrsa.tune: search, pruning, persistence across calls and processes, crash recovery."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

optuna = pytest.importorskip("optuna")

import tsrsa  # noqa: E402
from tsrsa import LSTMForecaster, SeasonalNaiveForecaster  # noqa: E402

from conftest import make_panel  # noqa: E402

HERE = Path(__file__).resolve().parent


def test_search_leaves_the_estimator_and_inputs_alone():
    df = make_panel(length=60)
    before = df.copy()
    model = SeasonalNaiveForecaster(h=4)
    space = {"season_length": [2, 6, 9]}
    result = tsrsa.tune(model, df, n_trials=6, search_space=space, random_state=0)
    assert result.best_params == {"season_length": 6}  # the series' period
    assert result.best_estimator.season_length == 6 and hasattr(result.best_estimator, "memory_")
    assert vars(model) == {**SeasonalNaiveForecaster(h=4).get_params()}  # not fitted, nothing added
    pd.testing.assert_frame_equal(df, before)
    assert space == {"season_length": [2, 6, 9]}
    cv = SeasonalNaiveForecaster(h=4, season_length=6).cross_validate(df, n_windows=1)
    assert result.best_score == pytest.approx(tsrsa.evaluate(cv, ["mse"])["mse"][0])


def test_callable_space_default_space_and_errors():
    df = make_panel(length=60)
    result = tsrsa.tune(SeasonalNaiveForecaster(h=4), df, n_trials=3, refit=False, random_state=0,
                        search_space=lambda trial: {"season_length": trial.suggest_int("season_length", 5, 7)})
    assert 5 <= result.best_params["season_length"] <= 7 and not hasattr(result.best_estimator, "memory_")
    default = tsrsa.tune(SeasonalNaiveForecaster(h=4), df, n_trials=2, refit=False, random_state=0)
    assert "season_length" in default.best_params
    with pytest.raises(ValueError, match="does not have"):
        tsrsa.tune(SeasonalNaiveForecaster(h=4), df, search_space={"hidden_size": [8]})
    with pytest.raises(ValueError, match="metric='r2'"):
        tsrsa.tune(SeasonalNaiveForecaster(h=4), df, metric="r2")
    with pytest.raises(TypeError, match="tsrsa forecaster"):
        tsrsa.tune(object(), df)


@pytest.mark.parametrize("cls", [tsrsa.ETSForecaster, tsrsa.ARIMAForecaster, tsrsa.ThetaForecaster])
def test_a_forecaster_without_a_default_space_is_refused_before_any_fit(cls, monkeypatch):
    import tsrsa.tuning

    fits = []
    monkeypatch.setattr(tsrsa.tuning, "cross_validate_panel", lambda *a, **k: fits.append(1))
    with pytest.raises(ValueError, match=f"{cls.__name__} has no default search space.*search_space="):
        tsrsa.tune(cls(h=4, season_length=6), make_panel(length=60), n_trials=3)
    assert not fits


def test_a_statistical_forecaster_given_a_space_is_searched():
    result = tsrsa.tune(tsrsa.ThetaForecaster(h=4), make_panel(length=60), n_trials=4, refit=False, random_state=0,
                        search_space={"season_length": [2, 6]})
    scores = {t.params["season_length"]: t.value for t in result.study.trials}
    assert set(scores) == {2, 6} and scores[2] != scores[6]


class PruneAllButFirst(optuna.pruners.BasePruner):
    """Prunes every trial but the first at its first reported epoch."""

    def prune(self, study, trial) -> bool:
        return trial.number > 0 and bool(trial.intermediate_values)


def test_pruning_on_the_validation_loss():
    df = make_panel(length=60)
    model = LSTMForecaster(h=4, input_size=8, hidden_size=8, n_layers=1, max_epochs=3, val_size=8,
                           random_state=0)
    space = {"learning_rate": [1e-3, 3e-3, 1e-2]}
    result = tsrsa.tune(model, df, n_trials=3, search_space=space, pruner=PruneAllButFirst(), refit=False,
                        random_state=0)
    states = [t.state for t in result.study.trials]
    assert states[0] == optuna.trial.TrialState.COMPLETE
    assert states[1:] == [optuna.trial.TrialState.PRUNED] * 2
    assert list(result.study.trials[0].intermediate_values) == [1, 2, 3]  # one report per epoch


def test_a_study_resumes_across_calls(tmp_path):
    storage = f"sqlite:///{tmp_path / 'tune.db'}"
    df = make_panel(length=60)
    space = {"season_length": [2, 3, 4, 5, 6, 7, 8]}
    tsrsa.tune(SeasonalNaiveForecaster(h=4), df, n_trials=3, storage=storage, study_name="s", search_space=space,
               refit=False)
    second = tsrsa.tune(SeasonalNaiveForecaster(h=4), df, n_trials=2, storage=storage, study_name="s",
                        search_space=space, refit=False)
    assert len(second.study.trials) == 5


@pytest.mark.processes
def test_two_worker_processes_share_one_study(tmp_path):
    journal = str(tmp_path / "tune.journal")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1"}
    workers = [subprocess.Popen([sys.executable, str(HERE / "tune_worker.py"), journal, "shared", "2"], env=env)
               for _ in range(2)]
    assert [w.wait(timeout=120) for w in workers] == [0, 0]
    study = optuna.load_study(study_name="shared",
                              storage=optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(journal)))
    assert len(study.trials) == 4
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials)


@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning",
                            "ignore:Heartbeat of storage is supposed to be used")
def test_a_crashed_trial_is_failed_by_heartbeat_and_retried(tmp_path):
    url = f"sqlite:///{tmp_path / 'crash.db'}"
    storage = optuna.storages.RDBStorage(
        url, heartbeat_interval=1, grace_period=2,
        heartbeat_stale_trial_callback=optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry=1))
    study = optuna.create_study(storage=storage, study_name="crash")
    crashed = study.ask({"season_length": optuna.distributions.CategoricalDistribution([6])})
    storage.record_heartbeat(crashed._trial_id)  # a worker that beat once, then died
    import time

    time.sleep(3)
    result = tsrsa.tune(SeasonalNaiveForecaster(h=4), make_panel(length=60), n_trials=1, storage=storage,
                        study_name="crash", search_space={"season_length": [6]}, refit=False)
    states = [t.state for t in result.study.trials]
    assert states[0] == optuna.trial.TrialState.FAIL  # failed by the missed heartbeat
    assert optuna.trial.TrialState.COMPLETE in states[1:]
    retried = [t for t in result.study.trials[1:] if t.system_attrs.get("failed_trial") == crashed.number]
    assert retried, "the stale trial was re-queued"


def test_verbose_shows_a_progress_bar(capfd):
    tsrsa.tune(SeasonalNaiveForecaster(h=4), make_panel(length=60), n_trials=2, refit=False, verbose=1,
               search_space={"season_length": [6]})
    out, err = capfd.readouterr()
    assert "2/2" in out + err  # the bar's count of finished trials


def test_silent_and_optuna_verbosity_restored(capfd):
    before = optuna.logging.get_verbosity()
    tsrsa.tune(SeasonalNaiveForecaster(h=4), make_panel(length=60), n_trials=2, refit=False,
               search_space={"season_length": [6]})
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    assert optuna.logging.get_verbosity() == before
    assert np.isfinite(before)


def test_a_trial_whose_start_was_kept_says_so_and_a_flat_study_warns_why():
    df = make_panel(n_series=2, length=80)
    # validation keeps the statistical start unless an epoch beats it by a margin no epoch reaches
    model = tsrsa.DLinearForecaster(h=4, input_size=12, val_size=8, max_epochs=2, start={"kind": "ar", "margin": 1e9},
                                    random_state=0)
    with pytest.warns(UserWarning, match="no training epoch beat the statistical start"):
        result = tsrsa.tune(model, df, n_trials=3, refit=False, random_state=0,
                            search_space={"learning_rate": [1e-4, 1e-3, 1e-2]})
    assert {t.user_attrs["forecast"] for t in result.study.trials} == {"statistical start"}
    trained = model.clone().set_params(start__margin=0.0, val_size=0)  # the network as trained: the search shows
    searched = tsrsa.tune(trained, df, n_trials=3, refit=False, random_state=0,
                          search_space={"learning_rate": [1e-4, 1e-3, 1e-2]})
    assert {t.user_attrs["forecast"] for t in searched.study.trials} == {"model"}
    assert len({t.value for t in searched.study.trials}) > 1


def test_a_search_over_what_the_forecast_does_not_read_warns():
    df = make_panel(length=60)
    with pytest.warns(UserWarning, match="do not change the forecast"):
        tsrsa.tune(SeasonalNaiveForecaster(h=4, season_length=6), df, n_trials=3, refit=False, random_state=0,
                   search_space={"fill": [None, "ffill", "zero"]})  # the frame has no gaps to fill
