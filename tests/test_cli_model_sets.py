"""The ``tsrsa`` command with model sets: ``--model Auto`` and ``--model Multi`` with ``-p models=...``.

Commands run in-process through ``tsrsa.cli.main``; everything is written under tmp_path.
"""
from __future__ import annotations

import pandas as pd
import pytest

import tsrsa

from conftest import make_panel, run_cli as run

pytestmark = pytest.mark.slow  # each test fits a set of models through the command line (2-3 s each)

H = 4


def test_multi_fits_the_named_models_and_forecasts_one_column_each(tmp_path, capsys, long_csv):
    model_dir, out = tmp_path / "many", tmp_path / "forecast.csv"
    status, said, err = run(capsys, "fit", "--model", "Multi", "--h", H, "--input", long_csv, "--output", model_dir,
                            "-p", 'models={"ets": "ETS", "naive": "seasonalnaive"}', "-p", "season_length=6")
    assert status == 0, err
    assert "MultiForecaster fitted on 2 series" in said
    assert run(capsys, "predict", "--model-dir", model_dir, "--output", out)[0] == 0
    forecast = pd.read_csv(out)
    df = make_panel(n_series=2, length=48)
    alone = tsrsa.MultiForecaster({"ets": tsrsa.ETSForecaster(h=H, season_length=6),
                                   "naive": tsrsa.SeasonalNaiveForecaster(h=H, season_length=6)}).fit(df).predict()
    assert list(forecast.columns) == ["unique_id", "ds", "ets", "naive"]
    pd.testing.assert_frame_equal(forecast[["ets", "naive"]], alone[["ets", "naive"]], check_exact=False)
    loaded = tsrsa.load(model_dir)
    assert isinstance(loaded, tsrsa.MultiForecaster) and loaded.models_["ets"].season_length == 6


def test_auto_with_named_candidates_equals_the_python_api(tmp_path, capsys, long_csv):
    model_dir, out = tmp_path / "auto", tmp_path / "forecast.csv"
    status, _, err = run(capsys, "fit", "--model", "Auto", "--h", H, "--input", long_csv, "--output", model_dir,
                         "-p", 'models=["SeasonalNaive", "Theta"]', "-p", "season_length=6", "-p", "combine=null",
                         "--quiet")
    assert status == 0, err
    assert run(capsys, "predict", "--model-dir", model_dir, "--output", out)[0] == 0
    df = make_panel(n_series=2, length=48)
    auto = tsrsa.AutoForecaster(h=H, season_length=6, combine=None, models=[
        tsrsa.SeasonalNaiveForecaster(h=H, season_length=6), tsrsa.ThetaForecaster(h=H, season_length=6)]).fit(df)
    pd.testing.assert_series_equal(pd.read_csv(out)["yhat"], auto.predict()["yhat"], check_exact=False)
    assert tsrsa.load(model_dir).choice_["kept"].tolist() == auto.choice_["kept"].tolist()


@pytest.mark.parametrize("param, says", [
    (None, "-p 'models="),
    ('models=["ETS", "Bogus"]', "unknown model 'Bogus'"),
    ('models=["ETS", "Auto"]', "itself a set of models"),
    ("models=3", "neither a list of model names nor a dict"),
    ('models=["ETS"]', "has no parameter 'damped'"),
])
def test_multi_without_or_with_bad_models_gives_one_line_and_status_2(tmp_path, capsys, long_csv, param, says):
    argv = ["fit", "--model", "Multi", "--h", H, "--input", long_csv, "--output", tmp_path / "m"]
    argv += [] if param is None else ["-p", param]
    if param == 'models=["ETS"]':
        argv += ["-p", "damped=true"]  # a member's own option is not the set's
    status, _, err = run(capsys, *argv)
    assert status == 2 and says in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "m").exists()
