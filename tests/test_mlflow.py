"""MLflowLogger: every epoch of a fit logged to an MLflow run in a local store, read back and
compared with the model's ``fit_history_``; the run it starts, the active run, a given run; its
parameters; its pickles; and one test per refused argument."""
from __future__ import annotations

import copy
import math
import pickle
import sys

import pytest

from tsrsa import DLinearForecaster, Trainer
from tsrsa.integrations.mlflow import MLflowLogger

from conftest import make_panel

mlflow = pytest.importorskip("mlflow", reason="MLflow is an optional extra: pip install 'tsrsa[mlflow]'")
from mlflow.tracking import MlflowClient  # noqa: E402 - after the skip

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    """A local tracking store for the module, no server: MLflow's file store where this MLflow still
    opens one (MLflow 3 asks for MLFLOW_ALLOW_FILE_STORE), else SQLite, whose tables take seconds to
    create (once here)."""
    folder = tmp_path_factory.mktemp("mlflow")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
        uri = (folder / "runs").as_uri()
        try:
            MlflowClient(uri).search_experiments()
        except Exception:  # noqa: BLE001 - an MLflow without the file store: SQLite
            pytest.importorskip("sqlalchemy", reason="MLflow's SQLite store needs SQLAlchemy (the dev extra has it)")
            pytest.importorskip("alembic", reason="MLflow's SQLite store needs Alembic (the dev extra has it)")
            uri = f"sqlite:///{folder / 'mlflow.db'}"
            MlflowClient(uri).search_experiments()  # creates the tables
        yield uri


@pytest.fixture
def tracking(store, tmp_path, monkeypatch) -> str:
    """MLflow's current tracking URI set to the store, no run active, artifacts under tmp_path."""
    before = mlflow.get_tracking_uri()
    monkeypatch.chdir(tmp_path)
    for name in ("MLFLOW_EXPERIMENT_NAME", "MLFLOW_EXPERIMENT_ID", "MLFLOW_RUN_ID", "MLFLOW_TRACKING_URI"):
        monkeypatch.delenv(name, raising=False)
    mlflow.set_tracking_uri(store)
    yield store
    while mlflow.active_run() is not None:
        mlflow.end_run()
    mlflow.set_tracking_uri(before)


def fitted(logger, **params) -> DLinearForecaster:
    options = dict(h=4, input_size=16, max_epochs=3, val_size=4, random_state=0)
    trainer = {"num_threads": 1, "callbacks": [logger]}
    return DLinearForecaster(**{**options, **params}, trainer=trainer).fit(make_panel(n_series=2, length=40))


def history(store: str, run_id: str, key: str) -> list[tuple[int, float]]:
    return sorted((m.step, m.value) for m in MlflowClient(store).get_metric_history(run_id, key))


def assert_logged(store: str, run_id: str, model, prefix: str = "") -> None:
    records = model.fit_history_.to_dict(orient="records")
    assert len(records) == 3
    for key in ("train_loss", "val_loss", "learning_rate", "seconds"):
        logged = history(store, run_id, prefix + key)
        assert [step for step, _ in logged] == [r["epoch"] for r in records], key
        for (_, value), record in zip(logged, records):
            assert math.isclose(value, record[key], rel_tol=1e-9, abs_tol=1e-12), key


# ---------------------------------------------------------------------- which run
def test_a_run_of_its_own_holds_every_epoch_and_ends_on_close(tracking):
    with MLflowLogger(experiment_name="tsrsa-test", run_name="dlinear", tracking_uri=tracking) as logger:
        model = fitted(logger)
        run_id = logger.started_run_id
        assert run_id is not None and logger.last_run_id == run_id
        assert mlflow.active_run() is None  # started through the client, not made the active run
    assert logger.started_run_id is None
    assert_logged(tracking, run_id, model)
    run = MlflowClient(tracking).get_run(run_id)
    assert run.info.status == "FINISHED" and run.info.run_name == "dlinear"
    assert MlflowClient(tracking).get_experiment(run.info.experiment_id).name == "tsrsa-test"


def test_the_active_run_and_a_given_run_receive_the_epochs(tracking):
    with mlflow.start_run() as active:
        logger = MLflowLogger(prefix="dlinear/")
        model = fitted(logger)
    assert logger.started_run_id is None and logger.last_run_id == active.info.run_id
    assert_logged(tracking, active.info.run_id, model, prefix="dlinear/")
    given = MlflowClient(tracking).create_run("0")
    model = fitted(MLflowLogger(given.info.run_id))
    assert_logged(tracking, given.info.run_id, model)
    assert MlflowClient(tracking).get_run(given.info.run_id).info.status == "RUNNING"  # not the logger's to end


def test_an_ensembles_members_log_under_their_own_names(tracking):
    logger = MLflowLogger(run_name="members")
    model = fitted(logger, ensemble_size=2)
    logger.close()
    for k in (0, 1):
        member = model.fit_history_[model.fit_history_["member"] == k]
        assert history(tracking, logger.last_run_id, f"member{k}/val_loss") == list(zip(member["epoch"],
                                                                                         member["val_loss"]))
    assert history(tracking, logger.last_run_id, "val_loss") == []


def test_a_fit_without_validation_logs_no_val_loss(tracking):
    logger = MLflowLogger(run_name="no-validation")
    model = fitted(logger, val_size=0, max_epochs=2)
    logger.close()
    assert history(tracking, logger.last_run_id, "val_loss") == []
    assert [step for step, _ in history(tracking, logger.last_run_id, "train_loss")] == [1, 2]
    assert model.fit_history_["val_loss"].isna().all()


def test_log_history_and_log_params(tracking):
    logger = MLflowLogger(run_name="afterwards")
    model = DLinearForecaster(h=4, input_size=16, max_epochs=3, val_size=4, random_state=0,
                              trainer={"num_threads": 1, "callbacks": [lambda record: None]})
    model.fit(make_panel(n_series=2, length=40))
    logger.log_history(model)
    logger.log_params(model)
    logger.close("KILLED")
    assert_logged(tracking, logger.last_run_id, model)
    run = MlflowClient(tracking).get_run(logger.last_run_id)
    assert run.info.status == "KILLED"
    assert run.data.params["estimator"] == "DLinearForecaster"
    assert run.data.params["h"] == "4" and run.data.params["val_size"] == "4"
    assert "callbacks" not in run.data.params
    assert run.data.params["trainer"] == "Trainer(num_threads=1)"  # its options, without the callbacks


def test_copies_share_the_logger_and_it_pickles(tracking):
    logger = MLflowLogger(run_name="shared")
    assert copy.deepcopy(logger) is logger
    model = DLinearForecaster(h=4, trainer={"callbacks": [logger]})
    assert model.clone().resolved_trainer.callbacks[0] is logger
    assert model.clone().set_params(trainer=Trainer(callbacks=[logger])).clone().resolved_trainer.callbacks[0] is logger
    logger({"epoch": 1, "train_loss": 0.5, "val_loss": float("nan"), "learning_rate": 1e-3, "seconds": 0.1})
    again = pickle.loads(pickle.dumps(logger))
    assert again.started_run_id == logger.started_run_id and again is not logger
    again({"epoch": 2, "train_loss": 0.25, "val_loss": 0.3, "learning_rate": 1e-3, "seconds": 0.1})
    again.close()
    assert history(tracking, logger.started_run_id, "train_loss") == [(1, 0.5), (2, 0.25)]
    assert history(tracking, logger.started_run_id, "val_loss") == [(2, 0.3)]
    assert repr(logger) == "MLflowLogger(run_name='shared')"


# ---------------------------------------------------------------------- refused arguments
@pytest.mark.parametrize("name", ["run_id", "experiment_name", "run_name", "tracking_uri"])
def test_a_name_that_is_not_a_string_is_refused(name):
    with pytest.raises(TypeError, match=f"{name} must be a str or None"):
        MLflowLogger(**{name: 3})


def test_an_empty_name_is_refused():
    with pytest.raises(ValueError, match="run_name is empty; give a name"):
        MLflowLogger(run_name="")


def test_run_id_with_the_name_of_a_run_to_start_is_refused():
    with pytest.raises(ValueError, match="run_name names the run the logger starts.*give one or the other"):
        MLflowLogger("abc123", run_name="mine")


def test_run_id_with_an_experiment_name_is_refused():
    with pytest.raises(ValueError, match="experiment_name names the run the logger starts"):
        MLflowLogger("abc123", experiment_name="forecasting")


def test_a_prefix_that_is_not_a_string_is_refused():
    with pytest.raises(TypeError, match="prefix must be a str"):
        MLflowLogger(prefix=1)


def test_a_prefix_mlflow_refuses_is_refused():
    with pytest.raises(ValueError, match="characters MLflow refuses"):
        MLflowLogger(prefix="rsa:")


def test_a_call_without_an_epoch_record_is_refused():
    with pytest.raises(TypeError, match="called with an epoch's record"):
        MLflowLogger()([0.5])


def test_log_params_of_something_without_get_params_is_refused():
    with pytest.raises(TypeError, match="log_params reads estimator.get_params"):
        MLflowLogger().log_params(object())


def test_log_history_of_an_unfitted_model_is_refused():
    with pytest.raises(ValueError, match="has no fit_history_.*call fit first"):
        MLflowLogger().log_history(DLinearForecaster(h=4))


def test_an_unknown_status_is_refused():
    with pytest.raises(ValueError, match="status must be one of FINISHED, FAILED, KILLED"):
        MLflowLogger().close("DONE")


def test_without_mlflow_the_logger_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "mlflow", None)  # an import of mlflow now fails
    with pytest.raises(ImportError, match=r"pip install 'tsrsa\[mlflow\]'"):
        MLflowLogger()
