"""benchmarks/short_series.py: the simulated processes, the split rule, the rows and the tables."""
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import short_series  # noqa: E402  (a script of benchmarks/, importable with its helper module)
import short_series_data as ssd  # noqa: E402


def test_the_processes_have_their_stated_roots():
    ar2 = ssd.PROCESSES["ar2_cycle"].roots()
    np.testing.assert_allclose(np.abs(ar2), 0.95)
    np.testing.assert_allclose(sorted(np.abs(np.angle(ar2))), [2 * np.pi / 12] * 2)
    sar = ssd.PROCESSES["seasonal_ar"].roots()
    moduli = np.sort(np.abs(sar))
    assert len(sar) == 25 and moduli[0] == pytest.approx(0.5)
    np.testing.assert_allclose(moduli[1:], 0.8 ** (1 / 24))
    np.testing.assert_allclose(sorted(ssd.PROCESSES["arma21"].roots().real), [0.5, 0.9])
    assert all(np.abs(p.roots()).max() < 1 for p in ssd.PROCESSES.values())


def test_a_long_simulated_path_gives_back_the_coefficients():
    from statsmodels.tsa.ar_model import AutoReg

    y = ssd.simulate(ssd.PROCESSES["ar2_cycle"], 5000, seed=0)
    fit = AutoReg(y, lags=2, trend="n").fit()
    np.testing.assert_allclose(fit.params, ssd.PROCESSES["ar2_cycle"].ar, atol=0.03)
    assert np.std(y) > 1  # unit noise, amplified by the cycle
    arma = ssd.PROCESSES["arma21"]
    assert not np.allclose(ssd.simulate(arma, 50, 1), ssd.simulate(arma, 50, 0))  # a path per seed
    np.testing.assert_array_equal(ssd.simulate(arma, 50, 3), ssd.simulate(arma, 50, 3))


@pytest.mark.parametrize("h, season", sorted({(ssd.SIM_HORIZON, p.season) for p in ssd.PROCESSES.values()}
                                            | {(c.h, c.season) for c in ssd.CLASSIC.values()}, key=str))
def test_the_split_rule_fits_every_length(h, season):
    for n in ssd.LENGTHS:
        s = ssd.split_rule(n, h, season)
        g = s.season if s.season and s.season <= 48 else 8
        assert s.val_size >= h + h // 2 and s.val_size >= n // 10  # at least h/2 + 1 validation windows
        assert s.input_size % g == 0 and g <= s.input_size <= 96
        assert s.train_windows >= 9 and s.input_size + s.h <= n - s.val_size
        assert s.season is None or n >= 2 * s.season
    assert ssd.split_rule(200, 24, 24).input_size == 48 and ssd.split_rule(2000, 24, 24).input_size == 96


def test_origin_forecasts_equal_a_refilter_at_each_origin():
    y = ssd.simulate(ssd.PROCESSES["arma21"], 300, 0)
    spec = ssd.ArimaSpec((1, 1, 1), trend="n")
    params = spec.fit(y[:200]).params
    origins = np.array([200, 251, 290])
    got = spec.forecasts(params, y, origins, 10)
    for row, t in zip(got, origins):
        np.testing.assert_allclose(row, spec.model(y[:t]).filter(params).forecast(10), atol=1e-10)


def test_a_row_records_every_parameter_explicitly(tmp_path):
    cell = ssd.make_cell("seasonal_ar", 200, 0, None)
    result = short_series.run_tsrsa("RSA", cell, 0, {"max_epochs": 1, "d_model": 8, "d_ff": 16})
    row = short_series.make_row(cell, "RSA", "small", 0, result, "test machine")
    path = tmp_path / "rows.csv"
    short_series.append_row(path, row)
    back = short_series.read_rows(path).iloc[0]
    params = json.loads(back["params"])
    from tsrsa import RSAForecaster

    expected = set(RSAForecaster._get_param_names()) - {"verbose"}
    assert set(params) == expected  # defaults included: a later change of defaults relabels nothing
    assert params["gate_init"] == 0.0 and params["rem_init"] == "data" and params["max_epochs"] == 1
    assert params["input_size"] == back["input_size"] == 48 and params["val_size"] == back["val_size"] == 36
    assert back["model"] == "RSAForecaster" and back["test_windows"] == 457 and np.isfinite(back["val_mse"])


def _rows():
    rows = []
    for n in (200, 500):
        for seed in (0, 1, 2):
            for model, mse in (("RSAForecaster", 0.5), ("TransformerForecaster", 0.4), ("ETS", 0.45),
                               ("true model", 0.3)):
                rows.append({"date": "2024-01-02T03:04:05", "dataset": "seasonal_ar", "train_length": n,
                             "horizon": 24, "input_size": 48, "val_size": 36, "model": model, "label": "default",
                             "seed": seed, "params": "{}", "val_mse": 1.0, "test_mse": mse + 0.01 * seed,
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
    text = short_series.render(pd.concat([earlier, rows, option.iloc[:2], option_then], ignore_index=True))
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
    text = short_series.render(pd.concat([rows, option, other], ignore_index=True))
    line = next(x for x in text.splitlines() if "`gate_init=2.0`" in x)
    assert "| 3 | 0.500 | 100% |" in line  # set against the three default rows of n = 200
    line = next(x for x in text.splitlines() if "`known_future=tokens`" in x)
    assert "| 3 | 0.250 | 100% |" in line
    away = rsa.assign(label="gate_init=2.0", params=json.dumps({**today, "gate_init": 2.0, "batch_size": 64}))
    text = short_series.render(pd.concat([rows, away], ignore_index=True))
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
