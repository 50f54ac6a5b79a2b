"""Hyperparameter search with Optuna over any tsrsa forecaster.

Each trial clones the estimator with the trial's parameters and scores it by rolling-origin
cross-validation on the last ``n_windows`` windows of every series; neural trials report their
per-epoch validation loss (their own ``val_size`` split inside the training part) so that a
pruner can stop them early. Only Optuna's core API is used (``trial.report``,
``trial.should_prune``). Optuna is imported only when ``tune`` or ``database_storage`` runs.

Studies live in memory by default. With a database URL (``"sqlite:///tune.db"``, or
PostgreSQL/MySQL URLs such as ``"postgresql+psycopg://user:password@host:5432/db"``, whose driver
comes with ``pip install 'tsrsa[postgres]'``) or a journal file (``"tune.journal"``, or any
``optuna.storages`` object) a study outlives the process: a second call with the same
``study_name`` adds to its trials, and several workers -- processes on one machine, or on many
machines sharing one PostgreSQL/MySQL server -- fill one study together. With a URL, trials left
RUNNING by a crashed worker are failed after a missed heartbeat (``HEARTBEAT_INTERVAL``,
``GRACE_PERIOD``) and retried; :func:`database_storage` builds a storage with other settings.
"""
from __future__ import annotations

import contextlib
import logging
import os
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from tsrsa.estimator.base import BaseForecaster
from tsrsa.estimator.crossval import cross_validate_panel
from tsrsa.estimator.params import check_int
from tsrsa.estimator.protocol import Estimator
from tsrsa.metrics import METRICS, evaluate

#: heartbeat settings of database storages given as a URL (seconds)
HEARTBEAT_INTERVAL, GRACE_PERIOD, MAX_RETRY = 60, 180, 3


@dataclass
class TuneResult:
    """The outcome of :func:`tune`."""

    study: Any  # optuna.Study
    best_params: dict
    best_estimator: BaseForecaster

    @property
    def best_score(self) -> float:
        return float(self.study.best_value)


def _optuna():
    try:
        with warnings.catch_warnings():  # e.g. tqdm's notice about ipywidgets in a notebook
            warnings.simplefilter("ignore")
            import optuna
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("tuning needs optuna: pip install 'tsrsa[tune]'") from err
    return optuna


def _storage(optuna, storage):
    """An Optuna storage from a URL, a journal file path or a storage object (None: memory)."""
    if storage is None or isinstance(storage, optuna.storages.BaseStorage):
        return storage
    if not isinstance(storage, (str, os.PathLike)):
        raise TypeError(f"storage must be None, a database URL, a journal file path or an optuna.storages object "
                        f"(such as tsrsa.tuning.database_storage(url)); got {type(storage).__name__}")
    storage = os.fspath(storage)
    if "://" in storage:
        return database_storage(storage)
    return optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(storage))


def database_storage(url: str, *, heartbeat_interval: int = HEARTBEAT_INTERVAL, grace_period: int = GRACE_PERIOD,
                     max_retry: int | None = MAX_RETRY):
    """An Optuna database storage whose trials beat, so that a dead worker's trial is retried.

    ``tune(storage=url)`` uses it with the default settings; pass its result as ``storage=`` for
    others. Workers that open a new database at the same moment race to create Optuna's tables
    (SQLAlchemy checks, then creates): the loser fails on a duplicate once the winner has
    committed, and this finds the tables on its next attempt.

    Parameters
    ----------
    url : str
        A SQLAlchemy URL: ``"postgresql+psycopg://user:password@host:port/db"`` (driver:
        ``pip install 'tsrsa[postgres]'``), ``"mysql+pymysql://..."`` or ``"sqlite:///tune.db"``.
    heartbeat_interval : int, default 60
        Seconds between the beats of a running trial.
    grace_period : int, default 180
        Seconds without a beat after which the next trial started by any worker fails the trial.
    max_retry : int or None, default 3
        How many times a failed trial is queued again with its parameters (None: always).

    Returns
    -------
    optuna.storages.RDBStorage
    """
    optuna = _optuna()
    from sqlalchemy.exc import IntegrityError, ProgrammingError

    if not isinstance(url, str) or "://" not in url:
        raise TypeError(f"url must be a database URL such as 'postgresql+psycopg://user@host:5432/db', got {url!r}")
    check_int("heartbeat_interval", heartbeat_interval)
    check_int("grace_period", grace_period)
    check_int("max_retry", max_retry, minimum=0, allow_none=True)
    if grace_period <= heartbeat_interval:
        raise ValueError(f"grace_period={grace_period} must exceed heartbeat_interval={heartbeat_interval}, "
                         "or a live trial is failed between two beats; use e.g. 3 * heartbeat_interval")
    for attempt in range(3):
        try:
            with warnings.catch_warnings():  # the heartbeat options are experimental in Optuna
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return optuna.storages.RDBStorage(
                    url, heartbeat_interval=heartbeat_interval, grace_period=grace_period,
                    heartbeat_stale_trial_callback=optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry))
        except ImportError as err:  # the driver; the URL may hold a password: name only its scheme
            scheme = url.split("://", 1)[0]
            if not scheme.startswith("postgres"):
                raise
            raise ImportError(f"a {scheme}:// storage needs a PostgreSQL driver: pip install 'tsrsa[postgres]' "
                              "(psycopg 3) and write the URL as postgresql+psycopg://user:password@host:port/db"
                              ) from err
        except (IntegrityError, ProgrammingError):
            if attempt == 2:
                raise


def _suggest(trial, name: str, spec):
    """One parameter from a search-space entry: an optuna distribution or a list of choices."""
    optuna = _optuna()
    dist = optuna.distributions
    if isinstance(spec, dist.FloatDistribution):
        return trial.suggest_float(name, spec.low, spec.high, log=spec.log, step=spec.step)
    if isinstance(spec, dist.IntDistribution):
        return trial.suggest_int(name, spec.low, spec.high, log=spec.log, step=spec.step)
    if isinstance(spec, dist.CategoricalDistribution):
        return trial.suggest_categorical(name, spec.choices)
    if isinstance(spec, (list, tuple)) and len(spec) > 0:
        return trial.suggest_categorical(name, list(spec))
    raise TypeError(
        f"search_space[{name!r}] must be an optuna distribution or a non-empty list of choices, got {spec!r}"
    )


def _space(estimator, search_space) -> Callable:
    if search_space is None:  # the class's default space, which may depend on the estimator's settings
        return lambda trial: type(estimator).search_space(trial, estimator)
    if callable(search_space):
        return search_space
    if isinstance(search_space, dict):
        nested = {f"{group}__{field}" for group, kind in estimator.option_groups.items()
                  for field in kind.field_names()}
        unknown = set(search_space) - set(estimator.get_params()) - nested
        if unknown:
            raise ValueError(f"search_space names parameters {sorted(unknown)} that "
                             f"{type(estimator).__name__} does not have")
        return lambda trial: {name: _suggest(trial, name, spec) for name, spec in search_space.items()}
    raise TypeError(f"search_space must be None, a dict or a callable trial -> dict; got {type(search_space).__name__}")


@contextlib.contextmanager
def _quiet_optuna(optuna, verbose: int):
    """Silence Optuna's log and warnings at verbose=0 (a failed trial is reported by ``tune`` itself
    when no trial completes); restore its verbosity afterwards."""
    before = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity({0: logging.ERROR, 1: logging.WARNING}.get(verbose, logging.INFO))
    try:
        with warnings.catch_warnings():
            if not verbose:
                warnings.simplefilter("ignore")
            yield
    finally:
        optuna.logging.set_verbosity(before)


def tune(estimator, df, *, n_trials: int | None = 20, timeout: float | None = None, search_space=None,
         metric: str = "mse", n_windows: int = 1, storage=None, study_name: str | None = None,
         n_jobs: int = 1, pruner=None, refit: bool = True, random_state: int | None = None,
         verbose: int = 0) -> TuneResult:
    """Search ``estimator``'s hyperparameters with Optuna; the estimator itself is left untouched.

    Parameters
    ----------
    estimator : tsrsa forecaster
        The starting point; every trial works on a clone.
    df : DataFrame or Series
        The data (long, wide or Series), validated once.
    n_trials : int, default 20
        Trials to run in this call (None: until ``timeout``).
    timeout : float, optional
        Seconds after which no new trial starts.
    search_space : dict or callable, optional
        Default: the class's ``search_space(trial)``; a forecaster without one (ETS, ARIMA, Theta: their fits
        choose their own forms) needs it given. A dict maps parameter names (an option of a
        group by its nested name, ``"rem__n_cyclic"``) to Optuna distributions or lists of choices;
        a callable takes a trial and returns a dict of parameters.
    metric : {"mse", "mae", "rmse", "smape", "pinball"}, default "mse"
        Cross-validation score to minimise ("pinball" needs ``loss="quantile"``).
    n_windows : int, default 1
        Cross-validation windows per series (the last ones).
    storage : str, path or optuna storage, optional
        None: in memory. A database URL (sqlite, PostgreSQL as
        ``"postgresql+psycopg://user:password@host:port/db"`` with ``pip install 'tsrsa[postgres]'``,
        MySQL) or a journal file path: the study persists and can be shared by several workers,
        on several machines through one PostgreSQL/MySQL server (see the module docstring). A URL
        gets a heartbeat: a trial whose worker died is failed after ``GRACE_PERIOD`` seconds
        without a beat and queued again (at most ``MAX_RETRY`` times) by the next worker's next
        trial. Any ``optuna.storages`` object is used as it is: ``database_storage(url,
        heartbeat_interval=10, grace_period=30)`` for other heartbeat settings, an
        ``optuna.storages.RDBStorage`` or ``JournalStorage`` of your own.
    study_name : str, optional
        Name of the study; with a storage, an existing study of this name is continued.
    n_jobs : int, default 1
        Trials run in parallel threads of this process.
    pruner : optuna pruner, optional
        Default: ``MedianPruner(n_startup_trials=5, n_warmup_steps=2)`` on the per-epoch
        validation loss (needs ``val_size > 0``; without it nothing is pruned).
    refit : bool, default True
        Fit ``best_estimator`` on all of ``df``.
    random_state : int, optional
        Seed of the sampler (TPE).
    verbose : int, default 0
        0 silent; 1 a progress bar; 2 also Optuna's log.

    Returns
    -------
    TuneResult
        ``study``, ``best_params``, ``best_estimator`` (a clone with the best parameters) and
        ``best_score``.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import tsrsa
    >>> y = pd.Series(np.sin(np.arange(120) / 3), index=pd.date_range("2024-01-01", periods=120, freq="h"))
    >>> result = tsrsa.tune(tsrsa.SeasonalNaiveForecaster(h=6), y, n_trials=3, random_state=0,
    ...                     search_space={"season_length": [6, 19, 24]})
    >>> result.best_params
    {'season_length': 19}
    """
    optuna = _optuna()
    if not isinstance(estimator, BaseForecaster):
        raise TypeError(f"tune needs a tsrsa forecaster, got {type(estimator).__name__}")
    if metric not in METRICS or metric == "mase":
        raise ValueError(f"metric={metric!r} is not supported; use one of {[m for m in METRICS if m != 'mase']}")
    check_int("n_trials", n_trials, allow_none=True)
    check_int("n_windows", n_windows)
    check_int("n_jobs", n_jobs, minimum=-1)
    estimator.check_params()
    trainer = getattr(estimator, "resolved_trainer", None)
    if trainer is not None and trainer.checkpoint_dir is not None:
        raise ValueError("tune fits many trials, each its own model: a trainer's checkpoint_dir would be shared by all "
                         "of them; tune without it (a study resumes through its storage=), and set it on the final fit")
    if search_space is None and type(estimator).search_space.__func__ is Estimator.search_space.__func__:
        raise ValueError(f"{type(estimator).__name__} has no default search space: its fit chooses what it "
                         f"estimates itself, so every trial would fit the same model; pass search_space= with the "
                         f"parameters to compare, e.g. search_space={{'season_length': [7, 12]}}")
    space = _space(estimator, search_space)
    spec = estimator.frame_spec
    panel = estimator.to_panel(df)
    failures: list[BaseException] = []  # why trials of this call failed, in order

    def objective(trial) -> float:
        try:
            return score(trial)
        except optuna.TrialPruned:
            raise
        except (ValueError, FloatingPointError) as error:
            failures.append(error)
            raise

    def score(trial) -> float:
        params = space(trial)
        model = estimator.clone().set_params(**params)
        options = {}
        if getattr(model, "val_size", 0):  # a validation split: prune on its per-epoch loss
            def report(record: dict) -> None:
                value = record.get("val_loss")
                if value is not None and np.isfinite(value):
                    trial.report(float(value), int(record["epoch"]))
                    if trial.should_prune():
                        raise optuna.TrialPruned(f"pruned after epoch {record['epoch']}")

            options["epoch_callback"] = report
        fitted = []
        cv = cross_validate_panel(model, panel, n_windows=n_windows, fitted=fitted, **options)
        score = evaluate(cv, [metric], target_col=spec.target_col, id_col=spec.id_col)[metric].iloc[0]
        trial.set_user_attr("forecast", "statistical start" if fitted and all(map(start_kept, fitted)) else "model")
        return float(score)

    with _quiet_optuna(optuna, verbose):  # a URL's heartbeat settings warn that they are experimental
        study = optuna.create_study(
            storage=_storage(optuna, storage), study_name=study_name, direction="minimize",
            sampler=optuna.samplers.TPESampler(seed=random_state),
            pruner=pruner if pruner is not None else optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=2),
            load_if_exists=True,
        )
        first_trial = len(study.get_trials(deepcopy=False))  # this call's trials come after those stored
        study.optimize(objective, n_trials=n_trials, timeout=timeout, n_jobs=n_jobs,
                       catch=(ValueError, FloatingPointError), show_progress_bar=verbose >= 1)
        complete = optuna.trial.TrialState.COMPLETE
        if failures and not any(t.state == complete for t in study.get_trials(deepcopy=False)):
            first = failures[0]
            raise type(first)(f"every trial failed ({len(failures)} of them); the first with: {first}") from first
        flat = flat_study(study, first_trial)
        best_params = dict(study.best_params)
        best = estimator.clone().set_params(**best_params)
        if refit:
            best.fit_panel(panel)
    if flat is not None:  # after Optuna's quiet block, which silences warnings at verbose=0
        warnings.warn(flat, UserWarning, stacklevel=2)
    return TuneResult(study=study, best_params=best_params, best_estimator=best)


def start_kept(model) -> bool:
    """Whether a fitted model forecasts with its statistical start alone: a neural forecaster whose validation
    kept the starting weights (``best_epoch_`` 0, of every member), its network's training discarded."""
    epochs = vars(model).get("best_epoch_")
    if epochs is None:
        return False
    return all(epoch == 0 for epoch in (epochs if isinstance(epochs, list) else [epochs]))


def flat_study(study, first: int = 0) -> str | None:
    """What ``tune`` warns, saying why, when every finished trial of this call (trials ``first`` on) scored
    the same (the parameters searched did not reach the forecast); None otherwise."""
    import optuna

    done = [t for t in study.get_trials(deepcopy=False)[first:] if t.state == optuna.trial.TrialState.COMPLETE]
    values = np.array([t.value for t in done], dtype=float)
    if len(values) < 2 or not np.allclose(values, values[0], rtol=1e-9, atol=0.0):
        return None
    kept = sum(t.user_attrs.get("forecast") == "statistical start" for t in done)
    if kept == len(done):
        why = ("in every trial no training epoch beat the statistical start on the validation windows, so each "
               "forecast was the start's and the parameters searched never reached it (each trial's "
               "user_attrs['forecast'] says 'statistical start'): search with start=None, with val_size=0 (the "
               "network is then kept as trained), or over start_margin")
    else:
        why = ("the parameters searched do not change the forecast: widen the search space, or search "
               "parameters this forecaster reads")
    return f"every one of the {len(done)} trials scored {values[0]:.6g}; {why}"
