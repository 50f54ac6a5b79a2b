"""The ``tsrsa`` command's files: the --output folder (a saved model replaced only with --overwrite,
a folder of other files never written into), saved models that were edited or do not load here
(one line, a failing status), forecast files and updated models written all or nothing, and
``--new-ids`` for series that join with ``--update``. Everything is written under tmp_path."""
from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
import torch

import tsrsa

from conftest import TINY_DLINEAR, make_panel, run_cli as run

ROOT = Path(__file__).resolve().parents[1]


def test_output_folder_is_not_overwritten_unless_asked(tmp_path, capsys, long_csv):
    out = tmp_path / "m"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    argv = ["fit", "--model", "SeasonalNaive", "--h", 4, "--input", long_csv, "--output", out, "--quiet"]
    for extra in ([], ["--overwrite"]):  # a folder of other files is never written into
        status, _, err = run(capsys, *argv, *extra)
        assert status == 2 and "not empty (notes.txt) and holds no saved tsrsa model" in err, err
        assert "save to a new or empty folder" in err and err.count("\n") == 1
        assert sorted(os.listdir(out)) == ["notes.txt"] and sorted(os.listdir(tmp_path)) == ["m", "train.csv"]
    model = tmp_path / "model"
    assert run(capsys, "fit", "--h", 4, "--input", long_csv, "--output", model, "--quiet", *TINY_DLINEAR)[0] == 0
    argv = ["fit", "--model", "SeasonalNaive", "--h", 4, "--input", long_csv, "--output", model, "--quiet"]
    status, _, err = run(capsys, *argv)
    assert status == 2 and "already holds a saved tsrsa model; pass --overwrite to replace it" in err
    assert (model / "weights.pt").is_file()
    assert run(capsys, *argv, "--overwrite")[0] == 0  # replaced whole: the DLinear weights are gone
    assert sorted(os.listdir(model)) == ["arrays.npz", "config.json", "state.json"]
    assert type(tsrsa.load(model)).__name__ == "SeasonalNaiveForecaster"


def _edit_config(model_dir: Path, **params) -> None:
    config = json.loads((model_dir / "config.json").read_text())
    config["params"].update(params)
    (model_dir / "config.json").write_text(json.dumps(config, indent=1))


@pytest.mark.parametrize("source", ["fresh", "format_v3"])
def test_an_edited_model_gives_one_line_and_a_failing_status(tmp_path, capsys, long_csv, source):
    model_dir, forecast = tmp_path / "model", tmp_path / "forecast.csv"
    if source == "fresh":  # the checksum of config.json catches the edit
        status = run(capsys, "fit", "--h", 6, "--input", long_csv, "--output", model_dir, "--quiet", *TINY_DLINEAR)[0]
        assert status == 0
        _edit_config(model_dir, h=7)
        says = "config.json does not match the checksum recorded at saving"
    else:  # a format without that checksum: the parameters held against the saved network
        shutil.copytree(ROOT / "tests" / "fixtures" / "format_v3" / "transformer", model_dir)
        _edit_config(model_dir, h=7)
        says = "config.json does not match the model saved beside it: its parameters build a network with --h 7"
    for extra in ([], ["--input", long_csv, "--update"]):
        status, out, err = run(capsys, "predict", "--model-dir", model_dir, "--output", forecast, *extra)
        assert status == 2 and out == "" and says in err, err
        assert err.startswith("tsrsa predict: error: ") and err.count("\n") == 1 and "Traceback" not in err
        assert not forecast.exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_a_device_this_machine_lacks_gives_one_line(tmp_path, capsys, long_csv):
    run(capsys, "fit", "--h", 6, "--input", long_csv, "--output", tmp_path / "m", "--quiet", *TINY_DLINEAR)
    status, out, err = run(capsys, "predict", "--model-dir", tmp_path / "m", "--device", "cuda")
    assert status == 2 and out == "" and err.count("\n") == 1
    assert "device 'cuda' is not available here: torch.cuda.is_available() is False; load with --device cpu" in err


def test_a_forecast_file_is_written_all_or_nothing(tmp_path, capsys, long_csv, monkeypatch):
    model_dir, forecast = tmp_path / "model", tmp_path / "forecast.csv"
    run(capsys, "fit", "--model", "SeasonalNaive", "--h", 4, "--input", long_csv, "--output", model_dir, "--quiet")
    forecast.write_text("the forecast of yesterday\n")
    real = pd.DataFrame.to_csv

    def half_then_fail(frame, path=None, **kwargs):  # a file begun, then the disk is full
        if not isinstance(path, (str, os.PathLike)):
            return real(frame, path, **kwargs)
        Path(path).write_text("unique_id,ds,yhat\ns0,")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", half_then_fail)
    status, _, err = run(capsys, "predict", "--model-dir", model_dir, "--output", forecast)
    assert status == 1 and "No space left on device" in err and err.count("\n") == 1
    assert forecast.read_text() == "the forecast of yesterday\n"
    assert sorted(os.listdir(tmp_path)) == ["forecast.csv", "model", "train.csv"]


def test_update_saves_the_model_and_the_forecast_together(tmp_path, capsys, monkeypatch):
    full = make_panel(n_series=2, length=60)
    full.groupby("unique_id").head(48).to_csv(tmp_path / "train.csv", index=False)
    full.groupby("unique_id").nth(slice(48, 52)).to_csv(tmp_path / "new.csv", index=False)
    model_dir, forecast = tmp_path / "model", tmp_path / "forecast.csv"
    run(capsys, "fit", "--h", 4, "--input", tmp_path / "train.csv", "--output", model_dir, "--quiet", *TINY_DLINEAR)
    saved = {p.name: p.read_bytes() for p in model_dir.iterdir()}

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", fail)
    status, _, err = run(capsys, "predict", "--model-dir", model_dir, "--input", tmp_path / "new.csv", "--update",
                         "--output", forecast)
    assert status == 1 and "No space left on device" in err
    assert {p.name: p.read_bytes() for p in model_dir.iterdir()} == saved  # the model did not move on
    assert sorted(os.listdir(tmp_path)) == ["model", "new.csv", "train.csv"]  # and no forecast was written
    monkeypatch.undo()
    monkeypatch.setattr(pd.DataFrame, "to_csv", fail)  # the forecast cannot be written: the model stays as it was
    status, _, err = run(capsys, "predict", "--model-dir", model_dir, "--input", tmp_path / "new.csv", "--update",
                         "--output", forecast)
    assert status == 1 and {p.name: p.read_bytes() for p in model_dir.iterdir()} == saved
    assert sorted(os.listdir(tmp_path)) == ["model", "new.csv", "train.csv"]
    monkeypatch.undo()
    status, _, err = run(capsys, "predict", "--model-dir", model_dir, "--input", tmp_path / "new.csv", "--update",
                         "--output", forecast)
    assert status == 0, err
    assert pd.read_csv(forecast)["ds"].min() == "2024-01-03 04:00:00"
    assert sorted(os.listdir(tmp_path)) == ["forecast.csv", "model", "new.csv", "train.csv"]


def test_update_with_unseen_ids_names_the_flag_that_takes_them_in(tmp_path, capsys):
    full = make_panel(n_series=2, length=60)
    full.groupby("unique_id").head(48).to_csv(tmp_path / "train.csv", index=False)
    newcomer = make_panel(n_series=1, length=30, ids=["s9"], seed=1)
    newcomer.to_csv(tmp_path / "newcomer.csv", index=False)
    model_dir = tmp_path / "model"
    run(capsys, "fit", "--h", 4, "--input", tmp_path / "train.csv", "--output", model_dir, "--quiet", *TINY_DLINEAR)
    saved = {p.name: p.read_bytes() for p in model_dir.iterdir()}
    argv = ["predict", "--model-dir", model_dir, "--input", tmp_path / "newcomer.csv"]
    status, _, err = run(capsys, *argv, "--update")
    assert status == 2 and "series 's9' was not seen in fit" in err and "pass --new-ids add" in err
    assert "new_ids=" not in err and {p.name: p.read_bytes() for p in model_dir.iterdir()} == saved
    status, _, err = run(capsys, *argv, "--new-ids", "add")
    assert status == 2 and "--new-ids says what --update does" in err
    status, out, err = run(capsys, *argv, "--update", "--new-ids", "add")
    assert status == 0, err
    assert sorted(pd.read_csv(io.StringIO(out))["unique_id"].unique()) == ["s0", "s1", "s9"]
    assert list(tsrsa.load(model_dir).memory_.ids) == ["s0", "s1", "s9"]
