"""Checkpoints on disk: a fit cut short resumes where it stopped, to the weights of an uninterrupted fit."""
from __future__ import annotations

import dataclasses

import pytest
import torch

import tsrsa
from tests.conftest import make_panel
from tsrsa import Trainer
from tsrsa.training.checkpoint import FILE


def small(**kwargs):
    options = dict(h=4, input_size=16, d_model=16, d_ff=32, n_layers=1, max_epochs=4, batch_size=16, val_size=4,
                   lr_schedule="onecycle", random_state=0)
    trainer = kwargs.pop("trainer", None)  # early stopping off, whatever else the trainer says
    if isinstance(trainer, Trainer):
        trainer = dataclasses.replace(trainer, early_stopping_patience=None)
    else:
        trainer = {**(trainer or {}), "early_stopping_patience": None}
    return tsrsa.TransformerForecaster(**{**options, **kwargs}, trainer=trainer)


class Stop(KeyboardInterrupt):
    """An interrupt after a given epoch (what a killed job or a ^C does)."""


def stop_after(epoch: int):
    def hook(record: dict) -> None:
        if record["epoch"] == epoch:
            raise Stop()
    return hook


def test_an_interrupted_fit_resumes_to_the_weights_of_an_uninterrupted_one(tmp_path):
    df = make_panel(n_series=3, length=120)
    whole = small().fit(df)
    cut = small(trainer=Trainer(checkpoint_dir=tmp_path, callbacks=[stop_after(2)]))
    with pytest.raises(Stop):
        cut.fit(df)
    assert not hasattr(cut, "network_")  # the interrupted fit left the estimator as it was
    assert (tmp_path / FILE).exists()
    seen = []
    resumed = small(trainer=Trainer(checkpoint_dir=tmp_path, callbacks=[seen.append])).fit(df)
    assert [r["epoch"] for r in seen] == [3, 4]  # epochs 1-2 came from the checkpoint
    for (name, a), (_, b) in zip(whole.network_.state_dict().items(), resumed.network_.state_dict().items()):
        assert torch.equal(a, b), name
    keep = ["epoch", "train_loss", "val_loss", "learning_rate"]
    assert whole.fit_history_[keep].equals(resumed.fit_history_[keep])
    assert not (tmp_path / FILE).exists()  # finished: nothing left to resume


def test_a_checkpoint_of_another_fit_is_refused_and_changes_nothing(tmp_path):
    df = make_panel(n_series=3, length=120)
    with pytest.raises(Stop):
        small(trainer=Trainer(checkpoint_dir=tmp_path, callbacks=[stop_after(1)])).fit(df)
    other = small(trainer=Trainer(checkpoint_dir=tmp_path), learning_rate=1e-2)
    with pytest.raises(ValueError, match="another fit"):
        other.fit(df)
    assert not hasattr(other, "network_") and (tmp_path / FILE).exists()
    with pytest.raises(ValueError, match="another fit"):
        small(trainer=Trainer(checkpoint_dir=tmp_path)).fit(make_panel(n_series=3, length=121))  # other data
    (tmp_path / FILE).write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="not a readable training checkpoint"):
        small(trainer=Trainer(checkpoint_dir=tmp_path)).fit(df)


def test_callbacks_see_every_epoch_and_nothing_is_written_without_a_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    records = []
    small(max_epochs=3, trainer=Trainer(callbacks=[records.append])).fit(make_panel(n_series=2, length=80))
    assert [r["epoch"] for r in records] == [1, 2, 3] and set(records[0]) >= {"train_loss", "val_loss"}
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("options, error, match", [
    (dict(checkpoint_dir=5), TypeError, "checkpoint_dir must be a folder"),
    (dict(callbacks="log"), TypeError, "callbacks must be a list of callables"),
    (dict(callbacks=[1]), TypeError, "callbacks must be a list of callables"),
    (dict(checkpoint_dir="ckpt", devices=2), ValueError, "one process"),
])
def test_checkpoint_arguments_are_checked(options, error, match):
    with pytest.raises(error, match=match):
        small(trainer=options).check_params()  # a dict of the trainer's options, checked at fit


def test_a_file_is_not_a_checkpoint_folder(tmp_path):
    path = tmp_path / "file"
    path.write_text("x")
    with pytest.raises(ValueError, match="is a file"):
        small(trainer={"checkpoint_dir": path}).check_params()


def test_a_calibrated_fit_keeps_the_calibration_fit_apart(tmp_path):
    df = make_panel(n_series=3, length=160)
    with pytest.raises(Stop):  # the calibration fit done, the final fit cut after its first epoch
        small(trainer=Trainer(checkpoint_dir=tmp_path, callbacks=[stop_after_fits(2, 1)]), conformal_windows=5,
              max_epochs=2).fit(df)
    assert (tmp_path / FILE).exists() and not (tmp_path / "calibration" / FILE).exists()
    resumed = small(trainer=Trainer(checkpoint_dir=tmp_path), conformal_windows=5, max_epochs=2).fit(df)
    whole = small(conformal_windows=5, max_epochs=2).fit(df)
    assert resumed.predict(level=[80]).equals(whole.predict(level=[80]))


def stop_after_fits(fit: int, epoch: int):
    """An interrupt after ``epoch`` of the ``fit``-th fit the callbacks see."""
    seen = {"fits": 0}

    def hook(record: dict) -> None:
        seen["fits"] += record["epoch"] == 1
        if seen["fits"] == fit and record["epoch"] == epoch:
            raise Stop()
    return hook


def test_a_saved_model_keeps_no_callbacks_and_the_folder_as_text(tmp_path):
    model = small(max_epochs=1, trainer=Trainer(callbacks=[print], checkpoint_dir=tmp_path / "ckpt"))
    model.fit(make_panel(n_series=2, length=80))
    model.save(tmp_path / "model")
    loaded = tsrsa.load(tmp_path / "model")
    assert loaded.resolved_trainer.callbacks is None
    assert loaded.resolved_trainer.checkpoint_dir == str(tmp_path / "ckpt")
    assert loaded.predict().equals(model.predict())
