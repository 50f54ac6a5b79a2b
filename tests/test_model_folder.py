"""Where a model may be saved, and saving all or nothing: new and empty folders, a saved model
replaced only with overwrite=True (wholly, no file of it left), a folder of other files never
written into, and a save that fails midway leaving the folder as it was and nothing behind."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

import tsrsa
from tsrsa import SeasonalNaiveForecaster, TransformerForecaster
from tsrsa.estimator import model_folder

from conftest import make_panel


@pytest.fixture(scope="module")
def models():
    train = make_panel(n_series=2, length=30)
    neural = TransformerForecaster(h=3, input_size=8, patch_len=4, d_model=4, n_heads=1, n_layers=1, d_ff=4,
                                   max_epochs=1, random_state=0).fit(train)
    naive = SeasonalNaiveForecaster(h=3, season_length=6).fit(train)
    return neural, naive


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _forecast(model) -> np.ndarray:
    return model.predict()["yhat"].to_numpy()


def _hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_a_new_folder_and_its_parents_are_created(models, tmp_path):
    neural, _ = models
    neural.save(tmp_path / "a" / "b" / "model")
    assert sorted(os.listdir(tmp_path / "a" / "b" / "model")) == ["arrays.npz", "config.json", "state.json",
                                                                  "weights.pt"]
    assert np.array_equal(_forecast(tsrsa.load(tmp_path / "a" / "b" / "model")), _forecast(neural))
    assert _hidden(tmp_path / "a" / "b") == []


def test_an_empty_folder_is_saved_into(models, tmp_path):
    _, naive = models
    (tmp_path / "empty").mkdir()
    naive.save(tmp_path / "empty")
    assert sorted(os.listdir(tmp_path / "empty")) == ["arrays.npz", "config.json", "state.json"]
    assert _hidden(tmp_path) == []


def test_a_folder_of_other_files_is_never_written_into(models, tmp_path):
    neural, _ = models
    before = _forecast(neural)
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    for overwrite in (False, True):
        with pytest.raises(ValueError, match=r"mine is a folder that is not empty \(notes.txt\) and holds no saved "
                                             r"tsrsa model; save to a new or empty folder"):
            neural.save(folder, overwrite=overwrite)
        assert _snapshot(folder) == {"notes.txt": b"mine"} and _hidden(tmp_path) == []
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="file is a file; save the model to a folder"):
        neural.save(tmp_path / "file")
    assert np.array_equal(_forecast(neural), before)


def test_a_saved_model_is_replaced_only_with_overwrite(models, tmp_path):
    neural, naive = models
    neural.save(tmp_path / "m")
    saved, before = _snapshot(tmp_path / "m"), _forecast(naive)
    with pytest.raises(ValueError, match="m already holds a saved tsrsa model; pass overwrite=True to replace it, "
                                         "or save to a new folder"):
        naive.save(tmp_path / "m")
    assert _snapshot(tmp_path / "m") == saved
    with pytest.raises(TypeError, match="overwrite must be True or False"):
        naive.save(tmp_path / "m", overwrite="yes")
    assert _snapshot(tmp_path / "m") == saved and np.array_equal(_forecast(naive), before)
    neural.save(tmp_path / "m", overwrite=True)  # the same model again: the same files
    assert _snapshot(tmp_path / "m").keys() == saved.keys()


def test_overwriting_a_neural_model_with_a_naive_one_leaves_no_weights(models, tmp_path):
    neural, naive = models
    neural.save(tmp_path / "m")
    naive.save(tmp_path / "m", overwrite=True)
    assert sorted(os.listdir(tmp_path / "m")) == ["arrays.npz", "config.json", "state.json"]
    loaded = tsrsa.load(tmp_path / "m")
    assert isinstance(loaded, SeasonalNaiveForecaster) and np.array_equal(_forecast(loaded), _forecast(naive))
    assert _hidden(tmp_path) == []


def test_overwrite_never_deletes_files_that_tsrsa_did_not_write(models, tmp_path):
    neural, naive = models
    neural.save(tmp_path / "m")
    (tmp_path / "m" / "notes.txt").write_text("mine")
    saved, before = _snapshot(tmp_path / "m"), _forecast(naive)
    with pytest.raises(ValueError, match=r"m holds a saved tsrsa model and other files \(notes.txt\); .* never "
                                         r"deletes files tsrsa did not write: move them out, or save to a new folder"):
        naive.save(tmp_path / "m", overwrite=True)
    assert _snapshot(tmp_path / "m") == saved and np.array_equal(_forecast(naive), before)


def test_a_save_that_fails_midway_leaves_the_old_model_and_nothing_else(models, tmp_path, monkeypatch):
    neural, naive = models
    naive.save(tmp_path / "m")
    saved = _snapshot(tmp_path / "m")
    before = _forecast(neural)

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", fail)  # the weights are written after state.json and arrays.npz
    with pytest.raises(OSError, match="disk full"):
        neural.save(tmp_path / "m", overwrite=True)
    assert _snapshot(tmp_path / "m") == saved and _hidden(tmp_path) == []
    with pytest.raises(OSError, match="disk full"):
        neural.save(tmp_path / "new" / "deeper" / "m")
    assert sorted(os.listdir(tmp_path)) == ["m"]  # the folders made for it are gone too
    monkeypatch.undo()
    assert np.array_equal(_forecast(neural), before)
    assert np.array_equal(_forecast(tsrsa.load(tmp_path / "m")), _forecast(naive))


def test_a_swap_that_fails_puts_the_old_model_back(models, tmp_path, monkeypatch):
    neural, naive = models
    naive.save(tmp_path / "m")
    saved = _snapshot(tmp_path / "m")
    rename = os.rename

    def refuse_the_new_folder(src, dst):
        if ".tsrsa-saving-" in str(src):
            raise PermissionError("refused")
        rename(src, dst)

    monkeypatch.setattr(model_folder.os, "rename", refuse_the_new_folder)
    before = _forecast(neural)
    with pytest.raises(PermissionError, match="refused"):
        neural.save(tmp_path / "m", overwrite=True)
    assert _snapshot(tmp_path / "m") == saved and _hidden(tmp_path) == []
    assert np.array_equal(_forecast(neural), before)


def test_check_destination_says_what_a_path_is(models, tmp_path):
    neural, _ = models
    (tmp_path / "empty").mkdir()
    neural.save(tmp_path / "model")
    assert model_folder.check_destination(tmp_path / "nothing") == model_folder.NEW
    assert model_folder.check_destination(tmp_path / "empty") == model_folder.EMPTY
    assert model_folder.check_destination(tmp_path / "model", overwrite=True) == model_folder.MODEL
    assert model_folder.holds_model(tmp_path / "model") and not model_folder.holds_model(tmp_path / "empty")
