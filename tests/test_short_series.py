"""The short-series benchmark: the library's processes, classic series, split rule, cells, anchors
and scoring (``tsrsa.benchmarking.short_series`` and its neighbours), and the script's rows and
tables (``benchmarks/short_series.py``, ``short_series_tables.py``)."""
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tsrsa.benchmarking.classic import CLASSIC, read_classic
from tsrsa.benchmarking.folders import data_folder
from tsrsa.benchmarking.short_series import (
    LENGTHS, SIM_HORIZON, SIM_TEST, make_cell, reached_lengths, run_anchor, run_forecaster, score_windows,
    split_rule, window_forecasts,
)
from tsrsa.benchmarking.simulated import PROCESSES, simulate
from tsrsa.benchmarking.statistical_anchors import ArimaSpec, ets_forecasts, fit_ets

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import short_series  # noqa: E402  (the script of benchmarks/, importable with its tables module)
import short_series_tables  # noqa: E402

CLASSIC_DIR = data_folder() / "classic"
needs_classic = pytest.mark.skipif(not CLASSIC_DIR.is_dir(), reason="the classic series are not under TSRSA_DATA_DIR")


def test_the_processes_have_their_stated_roots():
    ar2 = PROCESSES["ar2_cycle"].roots()
    np.testing.assert_allclose(np.abs(ar2), 0.95)
    np.testing.assert_allclose(sorted(np.abs(np.angle(ar2))), [2 * np.pi / 12] * 2)
    sar = PROCESSES["seasonal_ar"].roots()
    moduli = np.sort(np.abs(sar))
    assert len(sar) == 25 and moduli[0] == pytest.approx(0.5)
    np.testing.assert_allclose(moduli[1:], 0.8 ** (1 / 24))
    np.testing.assert_allclose(sorted(PROCESSES["arma21"].roots().real), [0.5, 0.9])
    assert all(np.abs(p.roots()).max() < 1 for p in PROCESSES.values())


def test_a_long_simulated_path_gives_back_the_coefficients():
    from statsmodels.tsa.ar_model import AutoReg

    y = simulate(PROCESSES["ar2_cycle"], 5000, seed=0)
    fit = AutoReg(y, lags=2, trend="n").fit()
    np.testing.assert_allclose(fit.params, PROCESSES["ar2_cycle"].ar, atol=0.03)
    assert np.std(y) > 1  # unit noise, amplified by the cycle
    arma = PROCESSES["arma21"]
    assert not np.allclose(simulate(arma, 50, 1), simulate(arma, 50, 0))  # a path per seed
    np.testing.assert_array_equal(simulate(arma, 50, 3), simulate(arma, 50, 3))


@pytest.mark.parametrize("h, season", sorted({(SIM_HORIZON, p.season) for p in PROCESSES.values()}
                                            | {(c.h, c.season) for c in CLASSIC.values()}, key=str))
def test_the_split_rule_fits_every_length(h, season):
    for n in LENGTHS:
        s = split_rule(n, h, season)
        g = s.season if s.season and s.season <= 48 else 8
        assert s.val_size >= h + h // 2 and s.val_size >= n // 10  # at least h/2 + 1 validation windows
        assert s.input_size % g == 0 and g <= s.input_size <= 96
        assert s.train_windows >= 9 and s.input_size + s.h <= n - s.val_size
        assert s.season is None or n >= 2 * s.season


@pytest.mark.parametrize("n, h, season, sizes", [
    (200, 24, 24, (48, 36, 24)),  # v = max(36, 20); (200 - 36) / 3 = 54.7 -> two seasons of 24
    (1000, 24, 24, (96, 100, 24)),  # v = n // 10; 900 / 3 = 300, capped at 96
    (2000, 12, 36, (72, 200, 36)),  # the cap is the largest multiple of 36 up to 96
    (200, 12, None, (56, 20, None)),  # g = 8: 180 / 3 = 60 -> 56
    (200, 13, 52, (56, 20, 52)),  # v = max(ceil(19.5), 20); a season above 48 keeps g = 8
    (90, 12, 48, (24, 18, None)),  # 90 < 2 * 48: no season; 72 / 3 = 24
])
def test_the_split_rule_on_given_lengths(n, h, season, sizes):
    s = split_rule(n, h, season)
    assert (s.input_size, s.val_size, s.season) == sizes
    assert s.train_windows == n - s.val_size - s.input_size - h + 1


def test_a_length_that_leaves_no_training_window_is_refused():
    # n = 100, h = 48, m = 48: v = 72, L = 48, and 100 - 72 - 48 - 48 + 1 < 1
    with pytest.raises(ValueError, match="no training window"):
        split_rule(100, 48, 48)


def test_a_simulated_cell_keeps_one_test_part_for_every_length_and_scores_every_window():
    short, long = make_cell("arma21", 200, 0, None), make_cell("arma21", 500, 0, None)
    assert len(short.y) == 200 + SIM_TEST and short.simulated and short.split.h == SIM_HORIZON
    np.testing.assert_array_equal(short.y[-SIM_TEST:], long.y[-SIM_TEST:])
    np.testing.assert_array_equal(short.y[:200], long.y[300:500])  # the same path, cut shorter
    # validation: v = 36 steps, windows of 24 -> 13 origins; test: 480 steps -> 457 origins
    np.testing.assert_array_equal(short.origins("val"), np.arange(164, 177))
    np.testing.assert_array_equal(short.origins("test"), np.arange(200, 657))
    z = short.z
    assert z[:200].mean() == pytest.approx(0.0) and z[:200].std() == pytest.approx(1.0)


def test_scoring_takes_the_targets_after_each_origin():
    z = np.arange(10.0)
    mse, mae = score_windows(np.zeros((2, 2)), z, np.array([3, 5]))  # targets (3, 4) and (5, 6)
    assert mse == pytest.approx((9 + 16 + 25 + 36) / 4) and mae == pytest.approx(4.5)


def test_a_fitted_seasonal_naive_is_scored_on_the_last_season_before_each_origin():
    cell = make_cell("seasonal_ar", 200, 1, None)
    result = run_forecaster("SeasonalNaive", cell, 0, {})
    z, origins = cell.z, cell.origins("test")
    lagged = z[origins[:, None] + np.arange(24)[None, :] - 24]  # (457, 24): one season earlier
    targets = z[origins[:, None] + np.arange(24)[None, :]]
    assert result["test"][0] == pytest.approx(np.mean((targets - lagged) ** 2))
    assert result["test"][1] == pytest.approx(np.mean(np.abs(targets - lagged)))
    assert result["params"]["season_length"] == 24 and result["best_epoch"] is None


def test_window_forecasts_use_the_models_own_input_before_each_origin():
    from tsrsa import SeasonalNaiveForecaster

    z = np.sin(np.arange(60) / 2.0)
    model = SeasonalNaiveForecaster(h=3, season_length=5).fit(pd.Series(z[:40]))
    got = window_forecasts(model, z, np.array([45, 52]), 3)
    np.testing.assert_allclose(got, [z[40:43], z[47:50]])


def test_arima_origin_forecasts_equal_statsmodels_forecast_at_each_origin():
    y = simulate(PROCESSES["arma21"], 300, 0)
    spec = ArimaSpec((1, 1, 1), trend="n")
    params = spec.fit(y[:200]).params
    origins = np.array([200, 251, 290])
    got = spec.forecasts(params, y, origins, 10)
    for row, t in zip(got, origins):
        np.testing.assert_allclose(row, spec.model(y[:t]).filter(params).forecast(10), atol=1e-10)


def test_ets_origin_forecasts_equal_statsmodels_forecast_at_each_origin():
    from statsmodels.tsa.statespace.exponential_smoothing import ExponentialSmoothing

    y = simulate(PROCESSES["arma21"], 260, 1) + 0.05 * np.arange(260)
    res, record = fit_ets(y[:200], None)
    assert record["seasonal"] is None and record["selection"] == "lowest AIC of 3 forms"
    origins = np.array([200, 230, 248])
    got = ets_forecasts(res, y, origins, 12)
    mod, init = res.model, np.asarray(res.initial_state, dtype=float).ravel()
    for row, t in zip(got, origins):  # the model run from its own initial states over y[:t], then forecast
        own = ExponentialSmoothing(y[:t], trend=mod.trend, damped_trend=mod.damped_trend, initialization_method="known",
                                   initial_level=init[0], initial_trend=init[1] if mod.trend else None)
        np.testing.assert_allclose(row, own.filter(res.params).forecast(12), atol=1e-8)


def test_the_true_parameters_anchor_runs_the_generating_model():
    cell = make_cell("arma21", 200, 0, None)
    result = run_anchor("TrueParams", cell)
    assert result["params"]["params"] == {"ar.L1": 1.4, "ar.L2": -0.45, "ma.L1": 0.6}
    assert result["params"]["fit"] == "none" and result["val_mse"] is None
    assert 0 < result["test"][0] < 1  # the optimal forecasts beat the training mean (MSE 1 on this scale)
    with pytest.raises(ValueError, match="unknown anchor"):
        run_anchor("Prophet", cell)


@needs_classic
def test_classic_series_are_regular_and_reach_the_lengths_their_size_allows():
    beer = read_classic("ausbeer", CLASSIC_DIR)
    assert len(beer) == 211 and beer.index.freqstr.startswith("Q") and beer.notna().all()
    assert reached_lengths("ausbeer", LENGTHS, CLASSIC_DIR) == [200]  # 200 + 11 test steps = 211
    assert reached_lengths("AirPassengers", LENGTHS, CLASSIC_DIR) == []  # 144 < 200 + 24
    assert reached_lengths("arma21", LENGTHS, None) == list(LENGTHS)
    cell = make_cell("ausbeer", 200, 2, CLASSIC_DIR)
    assert not cell.simulated and len(cell.y) == 211 and cell.split.season == 4 and cell.split.h == 8
    np.testing.assert_array_equal(cell.y, beer.to_numpy())


def test_a_row_records_every_parameter_explicitly(tmp_path):
    cell = make_cell("seasonal_ar", 200, 0, None)
    result = run_forecaster("RSA", cell, 0, {"max_epochs": 1, "d_model": 8, "d_ff": 16})
    row = short_series.make_row(cell, "RSA", "small", 0, result, "test machine")
    path = tmp_path / "rows.csv"
    short_series.append_row(path, row)
    back = short_series.read_rows(path).iloc[0]
    params = json.loads(back["params"])
    from tsrsa import RSAForecaster
    from tsrsa.estimator.trainer import flat_params

    # every option of a group one by one, as rows made before 0.15 (the trainer's) and 0.16 (the others') name them
    expected = set(flat_params(RSAForecaster(h=1).get_params(), RSAForecaster)) - {"verbose"}
    assert set(params) == expected  # defaults included: a later change of defaults relabels nothing
    assert params["gate_init"] == "auto" and params["rem_init"] == "data" and params["max_epochs"] == 1
    assert params["input_size"] == back["input_size"] == 48 and params["val_size"] == back["val_size"] == 36
    assert back["model"] == "RSAForecaster" and back["test_windows"] == 457 and np.isfinite(back["val_mse"])


#: a row at today's defaults (one network; a row without a key: one network, the network's forecast as trained)
TODAY = json.dumps({"ensemble_size": 1, "start_weight": "auto"})


def _rows():
    rows = []
    for n in (200, 500):
        for seed in (0, 1, 2):
            for model, mse in (("RSAForecaster", 0.5), ("TransformerForecaster", 0.4), ("ETS", 0.45),
                               ("true model", 0.3)):
                rows.append({"date": "2024-01-02T03:04:05", "dataset": "seasonal_ar", "train_length": n,
                             "horizon": 24, "input_size": 48, "val_size": 36, "model": model, "label": "default",
                             "seed": seed, "params": TODAY, "val_mse": 1.0, "test_mse": mse + 0.01 * seed,
                             "test_mae": 0.5, "test_windows": 457, "train_seconds": 1.0, "best_epoch": 3,
                             "machine": "test machine"})
    return pd.DataFrame(rows, columns=short_series.COLUMNS)


def test_tables_only_renders_the_section_and_the_plot(tmp_path):
    csv_path, md, png = tmp_path / "rows.csv", tmp_path / "RESULTS.md", tmp_path / "plot.png"
    _rows().to_csv(csv_path, index=False)
    md.write_text("# Benchmark results\n\nkept\n")
    short_series.main(["--tables-only", "--results", str(csv_path), "--results-md", str(md), "--plot", str(png)])
    text = md.read_text()
    assert "kept" in text and "<!-- BEGIN short-series -->" in text and png.stat().st_size > 0
    assert "| RSA | default | 0.510 ± 0.010 | 0.510 ± 0.010 | 3.0 | 1.0 |" in text
    assert "| 200 | 1.24 (0/3) |" in text  # RSA / Transformer, seeds where RSA is at or below
    assert "RSA / true model" in text and "1.65 (0/3)" in text
    assert "Options against the default" not in text  # no option was run


def test_the_protocol_says_which_budget_a_row_ran_by_its_parameters_not_its_date():
    assert "a row whose params column records 20 epochs with patience 5" in short_series_tables.INTRO
    assert not any(word in short_series_tables.INTRO for word in ("earlier", "since", "before"))


def test_an_option_is_set_against_the_default_on_the_cells_both_ran(tmp_path):
    rows = _rows()
    now = json.dumps({"batch_size": 32, "max_epochs": "auto", "early_stopping_patience": "auto", "d_model": 64})
    rows["params"] = now
    rsa = rows[(rows["model"] == "RSAForecaster") & (rows["train_length"] == 200)]
    option = rsa.assign(label="d_model=32", val_mse=0.5 * rsa["val_mse"], test_mse=2.0 * rsa["test_mse"],
                        params=now.replace('"d_model": 64', '"d_model": 32'))
    # an option run at an earlier default, beside that default's own rows: set against those
    before = json.dumps({"batch_size": 64, "max_epochs": 20, "early_stopping_patience": 5, "d_model": 64})
    earlier = rsa.iloc[:1].assign(params=before, val_mse=4.0)
    option_then = rsa.iloc[:1].assign(label="n_layers=1", params=before.replace("}", ', "n_layers": 1}'),
                                      val_mse=2.0)
    text = short_series_tables.render(pd.concat([earlier, rows, option.iloc[:2], option_then], ignore_index=True))
    line = next(x for x in text.splitlines() if "`d_model=32`" in x)
    # validation halved and test doubled on seeds 0 and 1 at n = 200; the per-dataset tables keep the default only
    assert line == ("| RSA | `d_model=32` | batch_size 32, max_epochs auto, early_stopping_patience auto | 2 | 0.500 "
                    "| 100% | 2.000 | 0% | seasonal_ar 200 |")
    assert "| RSA | d_model=32 |" not in text
    then = next(x for x in text.splitlines() if "`n_layers=1`" in x)
    assert then.startswith("| RSA | `n_layers=1` | batch_size 64, max_epochs 20, early_stopping_patience 5 | 1 | "
                           "0.500 |")  # 2.0 against that default's 4.0, not against today's 1.0


def test_a_parameter_added_later_at_its_default_does_not_part_an_option_from_its_default():
    rows = _rows()
    rows["params"] = json.dumps({"batch_size": 32, "d_model": 64})  # rows from before `known_future` existed
    rsa = rows[(rows["model"] == "RSAForecaster") & (rows["train_length"] == 200)]
    today = {"batch_size": 32, "d_model": 64, "known_future": "readout"}  # its default, written out
    option = rsa.assign(label="gate_init=2.0", val_mse=0.5, params=json.dumps({**today, "gate_init": 2.0}))
    other = rsa.assign(label="known_future=tokens", val_mse=0.25,
                       params=json.dumps({**today, "known_future": "tokens"}))
    text = short_series_tables.render(pd.concat([rows, option, other], ignore_index=True))
    line = next(x for x in text.splitlines() if "`gate_init=2.0`" in x)
    assert "| 3 | 0.500 | 100% |" in line  # set against the three default rows of n = 200
    line = next(x for x in text.splitlines() if "`known_future=tokens`" in x)
    assert "| 3 | 0.250 | 100% |" in line
    away = rsa.assign(label="gate_init=2.0", params=json.dumps({**today, "gate_init": 2.0, "batch_size": 64}))
    text = short_series_tables.render(pd.concat([rows, away], ignore_index=True))
    assert "`gate_init=2.0`" not in text  # off the default in a parameter it does not name: no default to set against


@pytest.mark.parametrize("argv, message", [
    (["--models", "RSA", "--params", "{bad"], "not valid JSON"),
    (["--models", "RSA", "--params", "[1]"], "JSON object"),
    (["--models", "LSTM", "--params", '{"gate_init": -2}'], "no parameter"),
    (["--models", "Prophet"], "unknown model"),
    (["--lengths", "two"], "integers"),
    (["--datasets", "seasonal_ar", "--lengths", "30", "--models", "SeasonalNaive"], "no training window"),
])
def test_bad_command_lines_end_with_one_clear_line(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        short_series.main(argv + ["--results", "/nonexistent/rows.csv"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_the_tables_show_todays_defaults_whatever_the_label_and_an_earlier_default_apart():
    rows = _rows()
    rsa = rows["model"] == "RSAForecaster"
    # RSA's rows at today's defaults were run under an option's label, the "default" ones at another budget
    now = rows[rsa].assign(label="loss=mae,lr_schedule=onecycle", test_mse=0.2,
                           params=json.dumps({"loss": "mae", "lr_schedule": "onecycle", "h": 24, "num_threads": 1,
                                              "ensemble_size": 1, "start_weight": "auto"}))
    rows.loc[rsa, "params"] = json.dumps({"loss": "mse", "lr_schedule": None})  # made before either choice
    text = short_series_tables.render(pd.concat([rows, now], ignore_index=True))
    assert "| RSA | default | 0.200 ± 0.000 | 0.200 ± 0.000 | 3.0 | 1.0 |" in text
    assert ("| RSA | default (ran at loss=mse,lr_schedule=None,start_weight=0.0) | 0.510 ± 0.010 | "
            "0.510 ± 0.010 |") in text
    assert "`loss=mae" not in text
    assert "| 200 | 0.49 (3/3) |" in text  # the ratios read today's default: 0.2 against the twin's 0.41
    assert "| Transformer | default |" in text  # the other models' rows at their defaults stay


def test_a_run_at_what_auto_gives_a_short_fit_is_todays_default():
    rows = _rows()
    rsa = rows["model"] == "RSAForecaster"
    ran = {"h": 24, "num_threads": 1, "max_epochs": "auto", "ensemble_size": 1, "start_weight": "auto"}
    now = rows[rsa].assign(label="gate_init=-2", test_mse=0.2, params=json.dumps({**ran, "gate_init": -2}))
    rows.loc[rsa, "params"] = json.dumps({**ran, "gate_init": 0.0})  # the gate's earlier start, 0 in every fit
    text = short_series_tables.render(pd.concat([rows, now], ignore_index=True))
    assert "| RSA | default | 0.200 ± 0.000 | 0.200 ± 0.000 | 3.0 | 1.0 |" in text
    assert "| RSA | default (ran at gate_init=0.0) | 0.510 ± 0.010 |" in text
    assert "`gate_init=-2" not in text
    drawn = short_series_tables.plotted_rows(pd.concat([rows, now], ignore_index=True))
    assert set(drawn[drawn["model"] == "RSAForecaster"]["test_mse"]) == {0.2}  # the plot draws today's too


@pytest.mark.slow  # AutoForecaster's seven default candidates, chosen twice, and its test windows (~1-2 min)
def test_autoforecaster_forecasts_each_test_window_from_the_choice_made_on_the_training_part():
    import tsrsa
    from tsrsa.benchmarking.short_series import run_auto

    cell = make_cell("seasonal_ar", 200, 0, None)
    result = run_auto(cell, seed=0)
    origins, s = cell.origins("test"), cell.split
    assert result["yhat"].shape == (len(origins), s.h) and np.isfinite(result["yhat"]).all()
    assert result["test"] == score_windows(result["yhat"], cell.z, origins)
    assert result["val_mse"] is None and result["params"]["random_state"] == 0
    frame = pd.DataFrame({"unique_id": cell.dataset, "ds": cell.index[: cell.n], "y": cell.z[: cell.n]})
    auto = tsrsa.AutoForecaster(h=s.h, season_length=s.season or 1, random_state=0).fit(frame)
    # the first window starts after the training part: the forecast of the choice made on it alone
    np.testing.assert_allclose(result["yhat"][0], auto.predict()["yhat"].to_numpy(), rtol=1e-5, atol=1e-6)
    assert not np.allclose(result["yhat"][1], result["yhat"][0])  # later windows read the newer values


def test_the_auto_table_sets_autoforecaster_against_rsa_the_best_single_model_and_the_anchor():
    from short_series_tables import auto_table

    def row(model, seed, mse, dataset="co2", n=200):
        return {"dataset": dataset, "train_length": n, "model": model, "label": "default", "seed": seed,
                "test_mse": mse}

    rows = pd.DataFrame([row("AutoForecaster", 0, 0.5), row("RSAForecaster", 0, 0.4), row("RSAForecaster", 1, 0.6),
                         row("LSTMForecaster", 0, 0.45), row("ETS", 0, 0.25), row("ARIMA", 0, 0.3),
                         row("RSAForecaster", 0, 0.1, dataset="taxi")])  # no AutoForecaster there: no line
    lines = auto_table(rows).splitlines()
    assert len(lines) == 3
    assert lines[2] == "| co2 | 200 | 0.5000 | 0.5000 | ETS 0.2500 | 0.2500 | 1.00 | 2.00 |"  # RSA: 0.4, 0.6
    assert auto_table(rows[rows["model"] != "AutoForecaster"]) == ""
