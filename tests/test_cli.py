"""The ``tsrsa`` command: fit, predict and benchmark on CSV files, help texts, and clean errors.

Commands run in-process through ``tsrsa.cli.main`` (it returns the exit status); one subprocess
checks ``python -m tsrsa --help`` and the light import. Everything is written under tmp_path.
"""
from __future__ import annotations

import configparser
import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tsrsa

from conftest import TINY_DLINEAR, make_panel, run_cli as run

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------- help and packaging
@pytest.mark.processes
def test_python_m_tsrsa_help_names_the_three_commands_and_import_stays_light():
    done = subprocess.run([sys.executable, "-m", "tsrsa", "--help"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    for command in ("fit", "predict", "benchmark"):
        assert command in done.stdout
    heavy = ("torch", "pandas", "optuna", "statsmodels", "matplotlib", "sklearn")
    probe = f"import sys, tsrsa.cli\nprint([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("command, says", [
    ("fit", "Fit a forecaster on the series of a CSV file"),
    ("predict", "Forecast with a model saved by 'tsrsa fit'"),
    ("benchmark", "Long-horizon benchmark (Time-Series-Library protocol"),
])
def test_each_command_has_help_that_says_what_it_does(capsys, command, says):
    status, out, _ = run(capsys, command, "--help")
    assert status == 0
    assert f"usage: tsrsa {command}" in out and says in " ".join(out.split())


def test_version_and_console_script_entry_point(capsys):
    status, out, _ = run(capsys, "--version")
    assert status == 0 and out.strip() == f"tsrsa {tsrsa.__version__}"
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    assert cfg["options.entry_points"]["console_scripts"].split() == ["tsrsa", "=", "tsrsa.cli:main"]


# ---------------------------------------------------------------------- fit and predict
def test_fit_then_predict_matches_the_python_api(tmp_path, capsys, long_csv):
    model_dir, forecast = tmp_path / "model", tmp_path / "forecast.csv"
    status, out, err = run(capsys, "fit", "--h", 6, "--input", long_csv, "--output", model_dir, *TINY_DLINEAR,
                           "-p", "kernel_size=5", "-p", "learning_rate=0.01")
    assert status == 0, err
    assert "DLinearForecaster fitted on 2 series" in out and err == ""
    model = tsrsa.load(model_dir)
    assert (model.h, model.input_size, model.kernel_size, model.learning_rate) == (6, 12, 5, 0.01)

    status, _, err = run(capsys, "predict", "--model-dir", model_dir, "--output", forecast)
    assert status == 0, err
    written = pd.read_csv(forecast, parse_dates=["ds"])
    expected = model.predict()
    assert list(written.columns) == ["unique_id", "ds", "yhat"] and len(written) == 12
    np.testing.assert_allclose(written["yhat"], expected["yhat"], rtol=1e-12)
    assert (written["ds"] == expected["ds"]).all()


def test_predict_from_new_data_to_stdout_with_a_shorter_horizon(tmp_path, capsys, long_csv):
    model_dir = tmp_path / "model"
    assert run(capsys, "fit", "--model", "SeasonalNaive", "--h", 6, "--input", long_csv, "--output", model_dir,
               "--quiet", "-p", "season_length=6")[:2] == (0, "")
    recent = make_panel(n_series=1, length=24, ids=["new"], start="2025-01-01")
    recent.to_csv(tmp_path / "recent.csv", index=False)
    status, out, err = run(capsys, "predict", "--model-dir", model_dir, "--input", tmp_path / "recent.csv",
                           "--h", 3)
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0] == "unique_id,ds,yhat" and len(lines) == 4 and lines[1].startswith("new,2025-01-02 00:00:00,")
    assert [float(line.split(",")[2]) for line in lines[1:]] == pytest.approx(recent["y"].iloc[-6:-3].tolist())


def test_predict_with_update_takes_in_new_rows_and_saves_the_state(tmp_path, capsys):
    full = make_panel(n_series=2, length=60)
    full.groupby("unique_id").head(44).to_csv(tmp_path / "train.csv", index=False)
    model_dir = tmp_path / "model"
    assert run(capsys, "fit", "--model", "Transformer", "--h", 4, "--input", tmp_path / "train.csv", "--output",
               model_dir, "--quiet", "--input-size", 8, "--max-epochs", 1, "--random-state", 0, "-p", "stream=True",
               "-p", "d_model=8", "-p", "n_heads=2")[0] == 0
    expected = tsrsa.load(model_dir).predict(df=full)
    for part in (full.groupby("unique_id").nth(slice(44, 50)), full.groupby("unique_id").nth(slice(50, 60))):
        part.to_csv(tmp_path / "new.csv", index=False)
        status, out, err = run(capsys, "predict", "--model-dir", model_dir, "--input", tmp_path / "new.csv", "--update")
        assert status == 0, err
    written = pd.read_csv(io.StringIO(out), parse_dates=["ds"])
    np.testing.assert_allclose(written["yhat"], expected["yhat"], rtol=1e-5, atol=1e-6)
    assert (written["ds"] == expected["ds"]).all()
    status, _, err = run(capsys, "predict", "--model-dir", model_dir, "--input", tmp_path / "new.csv", "--update")
    assert status == 2 and "overlaps what the model has seen" in err  # the saved model moved on
    status, _, err = run(capsys, "predict", "--model-dir", model_dir, "--update")
    assert status == 2 and "--update takes in the new observations of --input" in err


def test_wide_file_with_a_date_column_and_integer_time(tmp_path, capsys):
    t = np.arange(60)
    wide = pd.DataFrame({"date": pd.date_range("2024-01-01", periods=60, freq="h").strftime("%Y-%m-%d %H:%M:%S"),
                         "HUFL": np.sin(t / 3), "OT": np.cos(t / 3)})
    wide.to_csv(tmp_path / "wide.csv", index=False)
    status, _, err = run(capsys, "fit", "--h", 4, "--input", tmp_path / "wide.csv", "--time-col", "date",
                         "--output", tmp_path / "m", "--quiet", *TINY_DLINEAR)
    assert status == 0, err
    status, out, err = run(capsys, "predict", "--model-dir", tmp_path / "m")
    assert status == 0, err
    forecast = pd.read_csv(pd.io.common.StringIO(out))
    assert list(forecast.columns) == ["unique_id", "date", "yhat"]
    assert list(forecast["unique_id"].unique()) == ["HUFL", "OT"]
    assert forecast["date"].iloc[0] == "2024-01-03 12:00:00"

    pd.DataFrame({"step": t, "a": np.sin(t / 3)}).to_csv(tmp_path / "int.csv", index=False)
    status, _, err = run(capsys, "fit", "--model", "SeasonalNaive", "--h", 4, "--input", tmp_path / "int.csv",
                         "--time-col", "step", "--output", tmp_path / "m2", "-p", "season_length=5", "--quiet")
    assert status == 0, err
    status, out, _ = run(capsys, "predict", "--model-dir", tmp_path / "m2")
    assert out.splitlines()[1].startswith("a,60,")


def test_quantile_model_and_json_parameter_values(tmp_path, capsys, long_csv):
    status, _, err = run(capsys, "fit", "--model", "rsa", "--h", 4, "--input", long_csv, "--output", tmp_path / "m",
                         "--input-size", 8, "--max-epochs", 1, "--quiet", "-p", "patch_len=2", "-p", "d_model=8",
                         "-p", "loss=quantile", "-p", "quantiles=[0.1, 0.9]", "-p", "rem__init=paper",
                         "-p", "trainer__early_stopping_patience=None")
    assert status == 0, err
    model = tsrsa.load(tmp_path / "m")
    assert model.quantiles == [0.1, 0.9] and model.resolved_rem.init == "paper"
    assert model.resolved_trainer.early_stopping_patience is None
    status, out, _ = run(capsys, "predict", "--model-dir", tmp_path / "m")
    assert out.splitlines()[0] == "unique_id,ds,yhat,yhat_q10,yhat_q90"


# ---------------------------------------------------------------------- errors: one line, status 2
def _bad_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    (tmp_path / "folder").mkdir()
    (tmp_path / "binary.csv").write_bytes(b"PK\x03\x04\x80\x81\xff\x00" * 50)
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "header.csv").write_text("unique_id,ds,y\n")
    (tmp_path / "no_y.csv").write_text("unique_id,ds\na,2024-01-01\n")
    (tmp_path / "no_time.csv").write_text("date,a,b\n2024-01-01,1,2\n")
    (tmp_path / "bad_time.csv").write_text("unique_id,ds,y\na,yesterday,1\na,today,2\n")
    (tmp_path / "float_time.csv").write_text("unique_id,ds,y\na,1.5,1\na,2.5,2\na,,3\n")
    (tmp_path / "text.csv").write_text("ds,a,b\n2024-01-01,1,x\n2024-01-02,2,y\n")
    (tmp_path / "short.csv").write_text("unique_id,ds,y\na,2024-01-01,1\na,2024-01-02,2\n")
    return {
        "missing": (tmp_path / "nope.csv", "does not exist"),
        "folder": (tmp_path / "folder", "is not a file"),
        "binary": (tmp_path / "binary.csv", "is not a readable CSV file"),
        "empty": (tmp_path / "empty.csv", "is empty"),
        "header only": (tmp_path / "header.csv", "has a header but no rows"),
        "no target": (tmp_path / "no_y.csv", "lacks ['y']"),
        "no time": (tmp_path / "no_time.csv", "--time-col date"),
        "bad time": (tmp_path / "bad_time.csv", "neither timestamps nor whole numbers"),
        "float time": (tmp_path / "float_time.csv", "holds numbers that are not whole"),
        "text in wide": (tmp_path / "text.csv", "['b'] hold text"),
        "too short": (tmp_path / "short.csv", "needs at least"),
    }


def test_bad_input_files_give_one_line_and_status_2(tmp_path, capsys):
    for name, (path, says) in _bad_files(tmp_path).items():
        status, out, err = run(capsys, "fit", "--model", "SeasonalNaive", "--h", 3, "--input", path,
                               "--output", tmp_path / "model", "-p", "season_length=5")
        assert status == 2, name
        assert err.startswith("tsrsa fit: error: ") and says in err, (name, err)
        assert err.count("\n") == 1 and "Traceback" not in err and out == "", name
        assert not (tmp_path / "model").exists(), name  # nothing written


@pytest.mark.parametrize("argv, says", [
    (["--model", "Prophet"], "unknown model 'Prophet'"),
    (["-p", "colour=red"], "has no parameter 'colour' (-p colour=...)"),
    (["-p", "h=3"], "has a flag of its own: use --h"),
    (["-p", "oops"], "is not key=value"),
    (["--model", "SeasonalNaive", "--max-epochs", "2"], "has no parameter 'max_epochs' (--max-epochs)"),
    (["-p", "dropout=2.0"], "dropout"),
    (["--fill", "mean"], "invalid choice: 'mean'"),
])
def test_bad_flags_are_named(tmp_path, capsys, long_csv, argv, says):
    status, _, err = run(capsys, "fit", "--h", 4, "--input", long_csv, "--output", tmp_path / "m", *argv)
    assert status == 2 and says in err and "Traceback" not in err
    assert not (tmp_path / "m").exists()


def test_predict_errors(tmp_path, capsys, long_csv):
    status, _, err = run(capsys, "predict", "--model-dir", tmp_path / "nowhere")
    assert status == 2 and "is not a directory holding a saved tsrsa model" in err
    model_dir = tmp_path / "m"
    run(capsys, "fit", "--model", "SeasonalNaive", "--h", 4, "--input", long_csv, "--output", model_dir, "--quiet")
    checks = [
        (["--h", "0"], "--h 0 must be >= 1"),
        (["--output", tmp_path / "no" / "f.csv"], "does not exist"),
        (["--output", tmp_path], "is a folder"),
        (["--input", tmp_path / "missing.csv"], "does not exist"),
    ]
    for extra, says in checks:
        status, out, err = run(capsys, "predict", "--model-dir", model_dir, *extra)
        assert status == 2 and says in err and out == "", (extra, err)
    (tmp_path / "renamed.csv").write_text("series,time,value\na,2024-01-01,1\n")
    status, _, err = run(capsys, "predict", "--model-dir", model_dir, "--input", tmp_path / "renamed.csv")
    assert status == 2 and "the model was fitted on columns id_col='unique_id'" in err


# ---------------------------------------------------------------------- benchmark
def test_benchmark_checks_its_arguments_before_running(tmp_path, capsys, monkeypatch):
    status, _, err = run(capsys, "benchmark", "--models", "DLinear")
    assert status == 2 and "tsrsa benchmark: error: --dataset and --models are required" in err
    monkeypatch.chdir(tmp_path)  # no benchmarks/configs here
    status, _, err = run(capsys, "benchmark", "--dataset", "ETTh1", "--models", "DLinear")
    assert status == 2 and "no model configurations at benchmarks/configs" in err


def test_benchmark_delegates_to_the_harness(tmp_path, capsys, monkeypatch):
    from tsrsa.benchmarking import cli as harness

    calls = []
    monkeypatch.setattr(harness, "main", lambda argv, root: calls.append((argv, root)) or [])
    monkeypatch.chdir(ROOT)
    argv = ["--dataset", "ETTh1", "--models", "DLinear", "--horizons", "96", "--max-windows", "8"]
    assert run(capsys, "benchmark", *argv)[0] == 0
    assert calls == [(argv, Path("benchmarks"))]


def test_benchmark_smoke_run_on_etth1(tmp_path, capsys):
    data = os.environ.get("TSRSA_DATA_DIR")
    if not data or not (Path(data) / "ETTh1.csv").is_file():
        pytest.skip("needs ETTh1.csv in $TSRSA_DATA_DIR")
    results = tmp_path / "results" / "ltsf.csv"
    status, out, err = run(capsys, "benchmark", "--dataset", "ETTh1", "--models", "DLinear", "--horizons", 96,
                           "--max-windows", 16, "--max-epochs", 1, "--num-threads", 1,
                           "--config-dir", ROOT / "benchmarks" / "configs", "--results", results,
                           "--results-md", tmp_path / "RESULTS.md")
    assert status == 0, err
    assert "ETTh1 H96 DLinearForecaster [max_epochs=1] seed 0: mse" in out
    rows = pd.read_csv(results)
    assert len(rows) == 1 and rows["model"].iloc[0] == "DLinearForecaster"
    assert "### ETTh1, input 96" in (tmp_path / "RESULTS.md").read_text()


def test_known_future_covariates_from_a_future_file(tmp_path, capsys):
    frame = make_panel(n_series=2, length=54)
    frame["promo"] = (np.arange(len(frame)) % 5 == 0).astype(float)
    history = frame.groupby("unique_id").head(48)
    future = frame.groupby("unique_id").tail(6).drop(columns=["y"])
    history.to_csv(tmp_path / "train.csv", index=False)
    future.to_csv(tmp_path / "future.csv", index=False)
    model_dir, forecast = tmp_path / "model", tmp_path / "forecast.csv"
    status, _, err = run(capsys, "fit", "--h", 6, "--input", tmp_path / "train.csv", "--output", model_dir,
                         *TINY_DLINEAR, "-p", 'covariates={"future": ["promo"]}', "--quiet")
    assert status == 0, err
    status, _, err = run(capsys, "predict", "--model-dir", model_dir, "--output", forecast)
    assert status == 2 and "pass --future with their values" in err
    status, _, err = run(capsys, "predict", "--model-dir", model_dir, "--future", tmp_path / "future.csv",
                         "--output", forecast)
    assert status == 0, err
    expected = tsrsa.load(model_dir).predict(future_df=future)
    np.testing.assert_allclose(pd.read_csv(forecast)["yhat"], expected["yhat"], rtol=1e-12)
