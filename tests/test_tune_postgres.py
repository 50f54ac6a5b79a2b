"""tsrsa.tune on a study shared through a real PostgreSQL server started for this file.

Skipped only where the server's binaries (initdb, pg_ctl, postgres) or the psycopg driver are
missing; any other failure of the server is an error.
"""
from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

optuna = pytest.importorskip("optuna")

import tsrsa  # noqa: E402
from tsrsa.tuning import database_storage  # noqa: E402
from optuna.distributions import FloatDistribution  # noqa: E402
from optuna.storages import RetryHeartbeatStaleTrialCallback  # noqa: E402
from optuna.trial import TrialState  # noqa: E402

from conftest import make_panel  # noqa: E402
from postgres_server import postgres_server, server_binaries  # noqa: E402
from tune_worker import SEASONS, heartbeat_storage  # noqa: E402

HERE = Path(__file__).resolve().parent
WORKER_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
              "OMP_NUM_THREADS": "1"}
HEARTBEAT = pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning",
                                       "ignore:Heartbeat of storage is supposed to be used")


@pytest.fixture(scope="module")
def postgres_url():
    """``postgresql+psycopg://...`` of a server that lives as long as this file's tests."""
    binaries = server_binaries()
    if binaries is None:
        pytest.skip("no PostgreSQL server: initdb, pg_ctl and postgres are neither on PATH nor in "
                    "/usr/lib/postgresql/*/bin (apt-get install postgresql)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("the PostgreSQL driver is missing: pip install 'tsrsa[postgres]' (psycopg 3)")
    with postgres_server(binaries) as url:
        yield url


def worker(url: str, study: str, n_trials: int, *options: str, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(HERE / "tune_worker.py"), url, study, str(n_trials), *options],
                            env=WORKER_ENV, **popen)


def numbers_in_server(url: str, study: str) -> list[int]:
    """The numbers of ``study``'s trials, one per row of the server's own table (not through Optuna)."""
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as connection:
        rows = connection.execute("SELECT number FROM trials JOIN studies USING (study_id) WHERE study_name = %s "
                                  "ORDER BY number", (study,)).fetchall()
    return [number for (number,) in rows]


@pytest.mark.processes
def test_two_worker_processes_record_every_trial_once(postgres_url):
    workers = [worker(postgres_url, "shared", 3) for _ in range(2)]
    assert [w.wait(timeout=120) for w in workers] == [0, 0]
    trials = optuna.load_study(study_name="shared", storage=postgres_url).trials
    assert sorted(t.number for t in trials) == list(range(6))  # numbered 0..5, none twice
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 6
    assert all(t.params["season_length"] in SEASONS and t.value >= 0 for t in trials)
    assert numbers_in_server(postgres_url, "shared") == list(range(6))  # one row each


def read_line(process: subprocess.Popen, timeout: float) -> str:
    """The next line of ``process``'s standard output ('' when it printed none within ``timeout``)."""
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    return process.stdout.readline() if ready else ""


@pytest.mark.processes
@HEARTBEAT
def test_a_killed_workers_trial_is_failed_by_heartbeat_and_retried(postgres_url):
    interval = 1  # seconds between beats; a trial is stale after 2 * interval without one
    hung = worker(postgres_url, "killed", 1, "--heartbeat", str(interval), "--hang", stdout=subprocess.PIPE,
                  text=True)
    try:
        assert read_line(hung, timeout=120) == "running 0\n", "the worker never started its trial"
        storage = heartbeat_storage(postgres_url, interval)
        assert optuna.load_study(study_name="killed", storage=storage).trials[0].state == TrialState.RUNNING
    finally:
        hung.send_signal(signal.SIGKILL)
        hung.wait(timeout=60)
        hung.stdout.close()
    assert hung.returncode == -signal.SIGKILL
    killed_at = time.monotonic()
    # Optuna calls a trial stale by the server's clock: let its grace period pass in full
    time.sleep(max(0.0, killed_at + 2 * interval + 0.5 - time.monotonic()))
    before = optuna.load_study(study_name="killed", storage=storage).trials
    assert [t.state for t in before] == [TrialState.RUNNING]  # nobody has failed it: the next worker will

    result = tsrsa.tune(tsrsa.SeasonalNaiveForecaster(h=4), make_panel(length=60), n_trials=2, storage=storage,
                        study_name="killed", search_space={"season_length": SEASONS}, refit=False)
    trials = result.study.trials
    assert len(trials) == 3  # the killed trial, its retry, one new trial
    assert trials[0].state == TrialState.FAIL
    retried = [t for t in trials if RetryHeartbeatStaleTrialCallback.retried_trial_number(t) == 0]
    assert [t.number for t in retried] == [1]  # the next worker's first trial, queued once
    assert retried[0].state == TrialState.COMPLETE and retried[0].params == trials[0].params
    assert trials[2].state == TrialState.COMPLETE and RetryHeartbeatStaleTrialCallback.retried_trial_number(
        trials[2]) is None
    assert numbers_in_server(postgres_url, "killed") == [0, 1, 2]


def seeded_search(storage, study_name: str):
    """Eleven DLinear trials from one sequential worker: TPE's ten random starts, then its first pick."""
    model = tsrsa.DLinearForecaster(h=4, input_size=8, max_epochs=1, random_state=0)
    space = {"learning_rate": FloatDistribution(1e-4, 1e-1, log=True), "kernel_size": [3, 5, 7]}
    return tsrsa.tune(model, make_panel(n_series=2, length=40), n_trials=11, search_space=space, storage=storage,
                      study_name=study_name, random_state=0, refit=False)


@pytest.mark.processes
def test_a_seeded_worker_finds_on_postgres_what_it_finds_in_a_journal(postgres_url, tmp_path):
    journal = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(tmp_path / "j.log")))
    on_journal = seeded_search(journal, "seeded").study.trials
    on_postgres = seeded_search(postgres_url, "seeded").study.trials
    record = [(t.number, t.state, t.params, t.value) for t in on_postgres]
    assert record == [(t.number, t.state, t.params, t.value) for t in on_journal]
    assert [t.state for t in on_postgres] == [TrialState.COMPLETE] * 11
    assert len({t.params["learning_rate"] for t in on_postgres}) == 11  # drawn, not one value over and over
    assert numbers_in_server(postgres_url, "seeded") == list(range(11))


def test_storage_arguments_name_the_fix(monkeypatch):
    model, df = tsrsa.SeasonalNaiveForecaster(h=4), make_panel(length=60)
    with pytest.raises(TypeError, match="storage must be None, a database URL"):
        tsrsa.tune(model, df, n_trials=1, storage=42)
    with pytest.raises(TypeError, match="url must be a database URL"):
        database_storage("tune.journal")
    with pytest.raises(ValueError, match="grace_period=10 must exceed heartbeat_interval=10"):
        database_storage("sqlite://", heartbeat_interval=10, grace_period=10)
    with pytest.raises(ValueError, match="max_retry=-1 must be >= 0"):
        database_storage("sqlite://", max_retry=-1)
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if the driver were not installed
    with pytest.raises(ImportError, match=r"pip install 'tsrsa\[postgres\]'") as raised:
        tsrsa.tune(model, df, n_trials=1, storage="postgresql+psycopg://tuner:secret@127.0.0.1:1/none")
    assert "secret" not in str(raised.value)  # the URL's password is not echoed
