"""Every epoch of a fit logged to MLflow (``pip install 'tsrsa[mlflow]'``).

:class:`MLflowLogger` is a callback of the neural forecasters' trainer (``trainer={"callbacks": [...]}``): after
each epoch it logs the epoch's ``train_loss``, ``val_loss`` (left out when the fit holds no validation part),
``learning_rate`` and ``seconds`` as MLflow metrics at ``step=epoch``, in one request per epoch::

    import mlflow
    from tsrsa import DLinearForecaster
    from tsrsa.integrations.mlflow import MLflowLogger

    with mlflow.start_run():
        logger = MLflowLogger()
        model = DLinearForecaster(h=4, input_size=16, val_size=4, trainer={"callbacks": [logger]})
        logger.log_params(model)
        model.fit(df)

Which run it logs into, decided at each epoch:

- ``run_id``: that run (an existing one, at ``tracking_uri`` or MLflow's current tracking URI);
- otherwise, when none of ``experiment_name``, ``run_name``, ``tracking_uri`` is given, the run
  active in this process (``mlflow.start_run()``), if there is one;
- otherwise a run of its own, started at the first epoch, in ``experiment_name`` (created when
  missing; by default MLFLOW_EXPERIMENT_NAME or MLFLOW_EXPERIMENT_ID, which recent MLflow's
  ``mlflow.set_experiment`` sets, else MLflow's Default).

The logger ends the run it started in ``close()``, or on leaving ``with MLflowLogger(...) as
logger:`` (FAILED when an exception leaves the block); a run left open stays RUNNING in the
tracking server. It never ends a run it did not start.

The logger starts its own run through ``MlflowClient``, so it never becomes this process' active
run, and ``mlflow.start_run()`` elsewhere is unaffected.

Where callbacks are called: in the process that calls ``fit``. With ``devices > 1`` the fit
spawns worker processes, which cannot call back, and the epochs are replayed to the callbacks when
training ends. Under ``torchrun`` every rank calls them; the logger logs on rank 0 alone.

A fit of several networks (``ensemble_size``) trains them one after another; each member's epochs
go under ``member<k>/`` after the prefix (``member0/train_loss``, ``member1/train_loss``, ...).

Every fit an estimator makes calls its callbacks, and the estimator's copies share the logger (its
deep copy is itself: ``clone``, ``tune``'s trials, ``cross_validate``'s refits, the calibration fit
of ``conformal_windows``), each fit counting epochs from 1. So several fits logged into one run
repeat steps; give each its own run, or tell them apart by ``prefix``.

The logger pickles (its MLflow client is made again after unpickling).
"""
from __future__ import annotations

import dataclasses
import math
import numbers
import os
import re
import threading
import time

INSTALL_HINT = "pip install 'tsrsa[mlflow]' (mlflow-skinny)"
#: the record's entries logged as metrics, in this order
METRICS = ("train_loss", "val_loss", "learning_rate", "seconds")
#: the characters MLflow allows in a metric or parameter name
NAME = re.compile(r"^[\w\-. /]*$")
#: parameters of an estimator that are no hyperparameter, left out by ``log_params``
NOT_LOGGED = ("callbacks",)
#: longest parameter value MLflow keeps when its own limit cannot be read (MLflow before 2.4)
PARAM_VALUE_LENGTH = 500
#: parameters per request (MLflow's limit)
PARAMS_PER_BATCH = 100
ENDED = ("FINISHED", "FAILED", "KILLED")


def require_mlflow():
    """The ``mlflow`` module, or ImportError naming the extra that installs it."""
    try:
        import mlflow
    except ImportError as error:
        raise ImportError(f"MLflowLogger logs to MLflow, which is not installed: {INSTALL_HINT}") from error
    return mlflow


def _optional_text(name: str, value, example: str) -> None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{name} must be a str or None, got {value!r} ({type(value).__name__}); "
                        f"e.g. {name}={example}")
    if value == "":
        raise ValueError(f"{name} is empty; give a name (e.g. {name}={example}) or leave it None")


class MLflowLogger:
    """A trainer's ``callbacks=[...]`` entry that logs every epoch's record to an MLflow run (module docstring).

    Parameters
    ----------
    run_id : str, optional
        Log into this existing run (``run.info.run_id``).
    experiment_name : str, optional
        Experiment of the run the logger starts (created when missing). Asks for a run of its own.
    run_name : str, optional
        Name of the run the logger starts. Asks for a run of its own.
    tracking_uri : str, optional
        Where the run lives (``"sqlite:///mlflow.db"``, ``"http://host:5000"``); default: MLflow's
        tracking URI when the logger first logs. Without ``run_id``, asks for a run of its own.
    prefix : str, default ""
        Put before every metric and parameter name (``"rsa/"`` logs ``rsa/val_loss``): several
        models in one run.

    Attributes
    ----------
    started_run_id : str or None
        The run the logger started and has not ended yet.
    last_run_id : str or None
        The run the last epoch (or ``log_params``) went to.
    """

    def __init__(self, run_id: str | None = None, *, experiment_name: str | None = None,
                 run_name: str | None = None, tracking_uri: str | None = None, prefix: str = ""):
        _optional_text("run_id", run_id, "run.info.run_id of an MLflow run")
        _optional_text("experiment_name", experiment_name, '"forecasting"')
        _optional_text("run_name", run_name, '"dlinear-h4"')
        _optional_text("tracking_uri", tracking_uri, '"sqlite:///mlflow.db" or "http://host:5000"')
        if run_id is not None and (experiment_name is not None or run_name is not None):
            given = "experiment_name" if experiment_name is not None else "run_name"
            raise ValueError(f"{given} names the run the logger starts, and run_id={run_id!r} asks it to log into "
                             f"an existing run, which has its experiment and name: give one or the other")
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a str put before every metric name (e.g. 'rsa/'), got "
                            f"{prefix!r} ({type(prefix).__name__})")
        if not NAME.match(prefix):
            raise ValueError(f"prefix={prefix!r} holds characters MLflow refuses in a metric name; use letters, "
                             f"digits and _ - . / or spaces (e.g. 'rsa/')")
        require_mlflow()
        self.run_id = run_id
        self.experiment_name = experiment_name
        self.run_name = run_name
        self.tracking_uri = tracking_uri
        self.prefix = prefix
        self.started_run_id: str | None = None
        self.last_run_id: str | None = None
        self._client = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ the callback
    def __call__(self, record: dict) -> None:
        """Log one epoch's record (a dict with ``epoch`` and the metrics, and ``member`` for a member of an
        ensemble) at ``step=epoch``."""
        if not isinstance(record, dict) or "epoch" not in record:
            raise TypeError(f"MLflowLogger is called with an epoch's record, a dict holding 'epoch' and "
                            f"{', '.join(METRICS)}; got {record!r}")
        if _other_rank():
            return
        from mlflow.entities import Metric

        step = int(record["epoch"])
        stamp = int(time.time() * 1000)
        name = self.prefix + (f"member{int(record['member'])}/" if record.get("member") is not None else "")
        metrics = [Metric(name + key, float(record[key]), stamp, step)
                   for key in METRICS if _finite(record.get(key))]
        if metrics:
            self._client_for_logging().log_batch(self._resolved_run(), metrics=metrics)

    def log_history(self, estimator) -> None:
        """Log every epoch of a fitted estimator's ``fit_history_`` (a fit made without the logger,
        or a loaded model's)."""
        history = getattr(estimator, "fit_history_", None)
        if history is None:
            raise ValueError(f"{type(estimator).__name__} has no fit_history_: log_history reads the epochs of a "
                             f"fitted neural forecaster; call fit first")
        records = history.to_dict(orient="records") if hasattr(history, "to_dict") else history
        for record in records:
            self(dict(record))

    def log_params(self, estimator) -> None:
        """Log ``estimator.get_params()`` (and its class as ``estimator``) as the run's parameters.

        Values are logged as their ``repr`` (strings as they are), cut to MLflow's longest parameter
        value; the trainer's ``callbacks`` are left out (``trainer`` is logged as ``Trainer(num_threads=1)``). MLflow refuses to change a parameter a run already holds:
        log one estimator's parameters per run (or per ``prefix``).
        """
        if not callable(getattr(estimator, "get_params", None)):
            raise TypeError(f"log_params reads estimator.get_params(); {type(estimator).__name__} has none: pass a "
                            f"tsrsa forecaster (or any scikit-learn style estimator)")
        if _other_rank():
            return
        from mlflow.entities import Param

        limit = _param_value_length()
        values = {"estimator": type(estimator).__name__}
        params = dict(estimator.get_params())
        if "trainer" in params and hasattr(estimator, "resolved_trainer"):  # its options, without the callbacks
            params["trainer"] = dataclasses.replace(estimator.resolved_trainer, callbacks=None)
        values.update({name: value if isinstance(value, str) else repr(value)
                       for name, value in sorted(params.items()) if name not in NOT_LOGGED})
        params = [Param(self.prefix + name, text if len(text) <= limit else text[: limit - 3] + "...")
                  for name, text in values.items()]
        client, run_id = self._client_for_logging(), self._resolved_run()
        for start in range(0, len(params), PARAMS_PER_BATCH):
            client.log_batch(run_id, params=params[start:start + PARAMS_PER_BATCH])

    # ------------------------------------------------------------------ the run it started
    def close(self, status: str = "FINISHED") -> None:
        """End the run the logger started, with ``status`` (FINISHED, FAILED or KILLED); nothing when it
        started none. A later epoch starts a new run."""
        if status not in ENDED:
            raise ValueError(f"status must be one of {', '.join(ENDED)}, got {status!r}")
        with self._lock:
            run_id, self.started_run_id = self.started_run_id, None
        if run_id is not None:
            self._client_for_logging().set_terminated(run_id, status=status)

    def __enter__(self) -> MLflowLogger:
        return self

    def __exit__(self, kind, error, trace) -> None:
        if kind is None:
            self.close("FINISHED")
        else:
            self.close("KILLED" if issubclass(kind, KeyboardInterrupt) else "FAILED")

    # ------------------------------------------------------------------ copies and pickles
    def __deepcopy__(self, memo) -> MLflowLogger:
        return self  # an estimator's copies log through the same logger (module docstring)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_client"] = None
        del state["_lock"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        given = {"run_id": self.run_id, "experiment_name": self.experiment_name, "run_name": self.run_name,
                 "tracking_uri": self.tracking_uri, "prefix": self.prefix or None}
        return f"MLflowLogger({', '.join(f'{k}={v!r}' for k, v in given.items() if v is not None)})"

    # ------------------------------------------------------------------ resolving the run
    def _client_for_logging(self):
        if self._client is None:
            mlflow = require_mlflow()
            self._client = mlflow.tracking.MlflowClient(tracking_uri=self.tracking_uri)
        return self._client

    def _resolved_run(self) -> str:
        """The run this epoch goes to (module docstring): ``run_id``, the active run, or its own."""
        mlflow = require_mlflow()
        own = self.experiment_name is not None or self.run_name is not None or self.tracking_uri is not None
        if self.run_id is not None:
            run_id = self.run_id
        elif not own and (active := mlflow.active_run()) is not None:
            run_id = active.info.run_id
        else:
            with self._lock:  # tune's threads may share the logger: one run started, not one each
                if self.started_run_id is None:
                    client = self._client_for_logging()
                    run = client.create_run(self._experiment_id(client), run_name=self.run_name)
                    self.started_run_id = run.info.run_id
                run_id = self.started_run_id
        self.last_run_id = run_id
        return run_id

    def _experiment_id(self, client) -> str:
        name = self.experiment_name or os.environ.get("MLFLOW_EXPERIMENT_NAME") or None
        if name is None:
            return os.environ.get("MLFLOW_EXPERIMENT_ID") or "0"  # MLflow's Default experiment
        experiment = client.get_experiment_by_name(name)
        if experiment is None:
            return client.create_experiment(name)
        if experiment.lifecycle_stage == "deleted":
            raise ValueError(f"the MLflow experiment {name!r} is deleted: restore it "
                             f"(MlflowClient().restore_experiment) or give another experiment_name")
        return experiment.experiment_id


def _finite(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def _other_rank() -> bool:
    """True in a process of a ``torchrun`` launch other than rank 0 (rank 0 alone logs)."""
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized() and dist.get_rank() != 0


def _param_value_length() -> int:
    try:
        from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH
    except ImportError:
        return PARAM_VALUE_LENGTH
    return int(MAX_PARAM_VAL_LENGTH)
