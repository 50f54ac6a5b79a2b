"""The command line's messages name its flags (``--fill ffill``, ``--level 80``, ``-p season_length=12``),
never the Python arguments behind them (``fill='ffill'``), and suggest parameters of the model asked for."""
from __future__ import annotations

import numpy as np
import pandas as pd

from tsrsa.cli.messages import as_flags

from conftest import make_panel, run_cli

PARAMS = {"fill", "freq", "season_length", "conformal_windows", "seasonal_order", "input_size", "patch_len"}


def test_python_arguments_become_flags_of_the_command():
    fit = as_flags("pass fill='ffill', 'interpolate' or 'zero' to fill them; or season_length=m, "
                   "seasonal_order=(1, 1, 0), patch_len <= input_size", "fit", PARAMS)
    assert fit == ("pass --fill ffill, interpolate or zero to fill them; or -p season_length=m, "
                   "-p seasonal_order=[1,1,0], patch_len <= --input-size")
    predict = as_flags("e.g. level=[80, 95]; load with device='cpu'; pass new_ids='add'; refit with "
                       "conformal_windows=10", "predict", PARAMS)
    assert predict == ("e.g. --level 80 95; load with --device cpu; pass --new-ids add; refit with "
                       "-p conformal_windows=10 (-p conformal_windows: a flag of tsrsa fit, which fitted the model)")
    untouched = "set TSRSA_MAX_REQUEST_BYTES=64GiB, e.g. df.drop_duplicates([id, time]); colour=red"
    assert as_flags(untouched, "fit", PARAMS) == untouched


def test_a_gap_is_fixed_with_the_fill_flag(tmp_path, capsys):
    rows = make_panel(n_series=2, length=30).drop(index=[5, 6])
    rows.to_csv(tmp_path / "gappy.csv", index=False)
    status, out, err = run_cli(capsys, "fit", "--model", "SeasonalNaive", "--h", 3, "--input", tmp_path / "gappy.csv",
                               "--output", tmp_path / "m")
    assert status == 2 and out == "" and err.count("\n") == 1
    assert "has a gap of 2 missing step(s)" in err and "pass --fill ffill, interpolate or zero to fill them" in err
    assert "fill=" not in err


def test_weekly_data_with_a_daily_freq_gets_the_weekly_flag(tmp_path, capsys):
    weekly = pd.DataFrame({"unique_id": "a", "ds": pd.date_range("2024-01-07", periods=30, freq="W-SUN"),
                           "y": np.arange(30.0)})
    weekly.to_csv(tmp_path / "weekly.csv", index=False)
    status, out, err = run_cli(capsys, "fit", "--model", "SeasonalNaive", "--h", 3, "--input", tmp_path / "weekly.csv",
                               "--output", tmp_path / "m", "--freq", "D")
    assert status == 2 and "the data are spaced by 'W-SUN', not 'D': pass --freq W-SUN, or leave --freq out" in err
    assert "freq=" not in err and "fill=" not in err


def test_a_fractional_level_is_refused_with_the_percentage_flag(tmp_path, capsys, long_csv):
    assert run_cli(capsys, "fit", "--model", "SeasonalNaive", "--h", 3, "--input", long_csv, "--output", tmp_path / "m",
                   "-p", "season_length=6", "-p", "conformal_windows=4", "--quiet")[0] == 0
    status, out, err = run_cli(capsys, "predict", "--model-dir", tmp_path / "m", "--level", "0.8")
    assert status == 2 and out == ""
    assert "levels are percentages, not fractions; write --level 80 for 80 %" in err


def test_a_misspelt_parameter_gets_a_parameter_of_the_same_model_and_kind(tmp_path, capsys, long_csv):
    status, _, err = run_cli(capsys, "fit", "--model", "RSA", "--h", 3, "--input", long_csv, "--output",
                             tmp_path / "m", "-p", "n_layer=2")
    assert status == 2
    assert "RSAForecaster has no parameter 'n_layer' (-p n_layer=...); did you mean -p n_layers=..." in err
    status, _, err = run_cli(capsys, "fit", "--model", "DLinear", "--h", 3, "--input", long_csv, "--output",
                             tmp_path / "m", "-p", "d_model=16")
    assert status == 2
    assert "DLinearForecaster has no parameter 'd_model' (-p d_model=...); its parameters are: h," in err
    assert "did you mean" not in err  # a size is not offered a column name (id_col)
