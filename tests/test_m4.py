"""The M4 benchmark: the library's files, scores, Naive2 and references (``tsrsa.benchmarking.m4``,
``naive2``, ``m4_references``, ``m4_global``) and the script's rows and tables (``benchmarks/m4.py``)."""
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tsrsa.benchmarking import folders, m4_global, m4_references
from tsrsa.benchmarking.m4 import (
    FREQUENCIES, Frequency, M4Split, available, load_split, naive2_forecasts, owa, read_wide, scores,
    scores_with_owa,
)
from tsrsa.benchmarking.naive2 import acf, deseasonalise, is_seasonal, naive2, seasonal_indices

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import m4  # noqa: E402  (the script of benchmarks/)

TOY = Frequency("toy", h=2, m=1, input_size=2, period=1)


def test_smape_mase_and_owa_on_hand_computed_values():
    split = M4Split(TOY, {"a": np.array([1.0, 2.0, 4.0, 3.0, 5.0]), "b": np.array([10.0, 10.0, 12.0])},
                    {"a": np.array([6.0, 7.0]), "b": np.array([100.0, 200.0])})
    score = scores(split, np.array([[5.0, 9.0], [110.0, 180.0]]))
    # a: 200·(1/11 + 2/16)/2 = 21.591; b: 200·(10/210 + 20/380)/2 = 10.025
    assert score["smape"] == pytest.approx((100 * (1 / 11 + 2 / 16) + 100 * (10 / 210 + 20 / 380)) / 2)
    # a: MAE 1.5 over in-sample naive MAE (1 + 2 + 1 + 2)/4 = 1.5 -> 1; b: 15 over (0 + 2)/2 = 1 -> 15
    assert score["mase"] == pytest.approx((1.0 + 15.0) / 2)
    assert owa({"smape": 10.0, "mase": 1.0}, {"smape": 20.0, "mase": 4.0}) == pytest.approx(0.375)
    with pytest.raises(ValueError, match="shape"):
        scores(split, np.zeros((2, 3)))
    with pytest.raises(ValueError, match="finite"):
        scores(split, np.array([[5.0, np.nan], [110.0, 180.0]]))


def test_owa_is_taken_against_naive2_on_the_same_split():
    split = M4Split(TOY, {"a": np.array([1.0, 2.0, 4.0, 3.0, 5.0]), "b": np.array([10.0, 10.0, 12.0])},
                    {"a": np.array([6.0, 7.0]), "b": np.array([100.0, 200.0])})
    # m = 1: Naive2 is the last value, a: (5, 5), b: (12, 12)
    np.testing.assert_allclose(naive2_forecasts(split), [[5.0, 5.0], [12.0, 12.0]])
    assert scores_with_owa(split, naive2_forecasts(split))["owa"] == pytest.approx(1.0)
    # sMAPE a: 100·(1/11 + 2/12), b: 100·(88/112 + 188/212); MASE a: 1.5/1.5, b: 138/1
    n2 = {"smape": (100 * (1 / 11 + 2 / 12) + 100 * (88 / 112 + 188 / 212)) / 2, "mase": (1.0 + 138.0) / 2}
    got = scores_with_owa(split, np.array([[5.0, 9.0], [110.0, 180.0]]))
    assert got["owa"] == pytest.approx(0.5 * (got["smape"] / n2["smape"] + got["mase"] / n2["mase"]))


def test_acf_as_r_computes_it_and_the_season_test_tells_seasonal_from_not():
    # deviations (-1.5, -0.5, 0.5, 1.5), sum of squares 5: r1 = (0.75 - 0.25 + 0.75)/5, r2 = (-0.75 - 0.75)/5
    assert np.allclose(acf(np.array([1.0, 2.0, 3.0, 4.0]), 2), [0.25, -0.3])
    rng = np.random.default_rng(0)
    t = np.arange(24 * 20)
    seasonal = 100 + 10 * np.sin(2 * np.pi * t / 24) + rng.normal(0, 1, len(t))
    noise = 100 + rng.normal(0, 1, len(t))
    walk = 100 + np.cumsum(noise - 100)
    assert is_seasonal(seasonal, 24) and not is_seasonal(noise, 24)
    assert is_seasonal(walk, 24)  # as in M4: a trending series passes the lag-m test too
    assert not is_seasonal(seasonal[:71], 24)  # fewer than 3 seasons: never seasonal
    assert not is_seasonal(seasonal, 1)


def test_naive2_continues_a_multiplicative_season_and_is_naive_otherwise():
    pattern = np.array([0.8, 1.2, 0.9, 1.1])
    y = 100 * pattern[np.arange(42) % 4]  # ends on position 1 (42 = 10·4 + 2)
    assert np.allclose(seasonal_indices(y, 4), pattern)
    assert np.allclose(naive2(y, 4, 6), 100 * pattern[np.arange(42, 48) % 4])
    adjusted, future = deseasonalise(y, 4, 3)
    assert np.allclose(adjusted, 100) and np.allclose(future, pattern[[2, 3, 0]])
    flat = np.array([3.0, 5.0, 4.0, 6.0, 5.0])
    assert np.allclose(naive2(flat, 1, 3), [5.0, 5.0, 5.0])
    assert np.array_equal(deseasonalise(flat, 1, 2)[1], [1.0, 1.0])


def test_the_references_by_name():
    pattern = np.array([0.8, 1.2, 0.9, 1.1])
    history = {"s": 100 * pattern[np.arange(42) % 4], "t": np.arange(1.0, 21.0)}
    split = M4Split(Frequency("toy", h=6, m=4, input_size=8, period=4), history,
                    {k: np.ones(6) for k in history})
    fc, params, *_ = m4_references.run_statistical(split, "Naive2")
    np.testing.assert_allclose(fc[0], 100 * pattern[np.arange(42, 48) % 4])
    np.testing.assert_allclose(fc[1], 20.0)  # no season found in a straight line: the last value
    assert params["m"] == 4
    fc, params, *_ = m4_references.run_statistical(split, "SeasonalNaive")
    np.testing.assert_allclose(fc[1], [17.0, 18.0, 19.0, 20.0, 17.0, 18.0])  # the last season, repeated
    assert params["season_length"] == 4
    with pytest.raises(ValueError, match="unknown reference"):
        m4_references.run_statistical(split, "Prophet")


def test_the_seasonal_references_forecast_an_exact_season_exactly():
    pattern = np.array([0.8, 1.2, 0.9, 1.1])
    y = 100 * pattern[np.arange(48) % 4]
    expected = 100 * pattern[np.arange(48, 56) % 4]
    # adjusted, the series is a constant 100: Theta and the ETS forms forecast 100, re-seasonalised
    for method in (m4_references.theta, m4_references.ets_adjusted):
        fc, info = method(y, 4, 8)
        np.testing.assert_allclose(fc, expected, rtol=1e-3)
        assert info["seasonal"]


def test_naive_units_and_the_forecast_matrix_keep_the_split_order():
    split = M4Split(Frequency("toy", h=2, m=2, input_size=2, period=2),
                    {"b": np.array([1.0, 5.0, 3.0, 9.0]), "a": np.array([2.0, 2.0, 2.0])}, {})
    loc, scale = m4_global.naive_units(split)
    # b: mean 4.5, lag-2 errors |3 - 1|, |9 - 5| -> 3; a: a constant -> scale 0, replaced by 1
    np.testing.assert_allclose(loc, [4.5, 2.0])
    np.testing.assert_allclose(scale, [3.0, 1.0])
    frame = pd.DataFrame({"unique_id": ["a", "b", "a", "b", "a"], "ds": [1, 0, 0, 1, 2],
                          "yhat": [20.0, 10.0, 21.0, 11.0, 22.0]})
    np.testing.assert_array_equal(m4_global.forecast_matrix(frame, ["b", "a"], 2), [[10.0, 11.0], [21.0, 20.0]])


def test_a_global_model_forecasts_every_series_in_its_own_units():
    t = np.arange(40.0)
    history = {"big": 1000 + 10 * np.sin(t / 3), "small": 5 + np.sin(t[:30] / 3), "short": 50 + np.cos(t[:12])}
    freq = Frequency("toy", h=4, m=1, input_size=8, period=1)
    val = M4Split(freq, {k: v[:-4] for k, v in history.items()}, {k: v[-4:] for k, v in history.items()})
    test = M4Split(freq, history, {k: np.zeros(4) for k in history})
    params, _, extra, forecasts = m4_global.run_global_model(
        val, test, "DLinear", 0, {"max_epochs": 1}, num_threads=1, naive_scaling=True)
    assert extra["series_trained"] == 2  # "short" has 8 values, fewer than input 8 + h 4 + val_size 4
    assert params["scaler"] == "identity" and params["val_size"] == 4 and "benchmark_scaling" in params
    for name in ("validation", "test"):
        fc = forecasts[name][0]
        assert fc.shape == (3, 4) and np.isfinite(fc).all()
        assert (np.abs(fc[0] - 1000) < 100).all() and (np.abs(fc[1] - 5) < 10).all()  # back in each series' units


def test_auto_is_fitted_once_on_the_validation_histories_and_forecasts_both_splits():
    import tsrsa

    t = np.arange(60.0)
    history = {"up": 10 + 0.5 * t + np.sin(t), "season": 20 + 5 * np.sin(2 * np.pi * t / 4), "flat": 7 + 0 * t}
    freq = Frequency("toy", h=4, m=4, input_size=8, period=4)
    val = M4Split(freq, {k: v[:-4] for k, v in history.items()}, {k: v[-4:] for k, v in history.items()})
    test = M4Split(freq, history, {k: np.zeros(4) for k in history})
    models = [("naive", tsrsa.SeasonalNaiveForecaster(h=4, season_length=4)), ("theta", tsrsa.ThetaForecaster(h=4))]
    params, _, extra, forecasts = m4_global.run_model_set(val, test, "Auto", 0, {"models": models}, num_threads=1)
    assert params["season_length"] == 4 and params["h"] == 4 and set(params["models"]) <= {"naive", "theta"}
    assert sum(json.loads(extra["history"]).values()) == 3  # every series kept something
    for name, split in (("validation", val), ("test", test)):
        fc = forecasts[name][0]
        assert fc.shape == (3, 4) and np.isfinite(fc).all()
        expected = m4_global.forecast_matrix(tsrsa.SeasonalNaiveForecaster(h=4, season_length=4).fit(
            split.frame()).predict(), split.ids, 4)
        np.testing.assert_allclose(fc[1], expected[1], rtol=0.2)  # an exact season: both candidates repeat it


def test_the_data_folder_is_the_given_one_then_the_variable_then_the_fallback(tmp_path, monkeypatch):
    monkeypatch.setenv("TSRSA_DATA_DIR", str(tmp_path / "env"))
    assert folders.data_folder(tmp_path / "given", tmp_path / "fb") == tmp_path / "given"
    assert folders.data_folder(None, tmp_path / "fb") == tmp_path / "env"
    monkeypatch.delenv("TSRSA_DATA_DIR")
    assert folders.data_folder(None, tmp_path / "fb") == tmp_path / "fb"
    assert folders.data_folder() == folders.cache_dir()


def _write_m4(folder: Path, lengths: dict, h: int, name: str) -> None:
    """An M4-shaped pair of files: V1 the id, values padded on the right with NaN."""
    rng = np.random.default_rng(1)
    width = max(lengths.values())
    train = pd.DataFrame(np.nan, index=range(len(lengths)), columns=[f"V{i}" for i in range(1, width + 2)])
    test = pd.DataFrame(np.nan, index=range(len(lengths)), columns=[f"V{i}" for i in range(1, h + 2)])
    train = train.astype(object)
    test = test.astype(object)
    for row, (sid, n) in enumerate(lengths.items()):
        train.iloc[row, 0], test.iloc[row, 0] = sid, sid
        train.iloc[row, 1: n + 1] = 50 + rng.random(n)
        test.iloc[row, 1:] = 50 + rng.random(h)
    folder.mkdir(parents=True, exist_ok=True)
    train.to_csv(folder / f"{name}-train.csv", index=False)
    test.to_csv(folder / f"{name}-test.csv", index=False)


@pytest.fixture
def m4_dir(tmp_path):
    _write_m4(tmp_path / "m4", {"H1": 60, "H2": 75}, 48, "Hourly")
    _write_m4(tmp_path / "m4", {"W1": 20, "W2": 30, "W3": 17}, 13, "Weekly")
    return tmp_path


def test_loader_reads_ragged_rows_into_histories_and_a_long_frame(m4_dir):
    test = load_split("Weekly", "test", m4_dir)
    assert test.ids == ["W1", "W2", "W3"] and [len(test.history[s]) for s in test.ids] == [20, 30, 17]
    assert test.actuals().shape == (3, 13)
    val = load_split("Weekly", "validation", m4_dir)
    assert [len(val.history[s]) for s in val.ids] == [7, 17, 4]
    assert np.array_equal(val.future["W2"], test.history["W2"][-13:])
    frame = val.frame()
    assert list(frame.columns) == ["unique_id", "ds", "y"] and frame["ds"].dtype == np.int64
    assert list(frame.loc[frame["unique_id"] == "W3", "ds"]) == [0, 1, 2, 3]
    assert available(m4_dir) and not available(m4_dir / "nowhere")
    with pytest.raises(ValueError, match="'validation' or 'test'"):
        load_split("Weekly", "train", m4_dir)


def test_a_value_missing_inside_a_series_is_an_error(tmp_path):
    path = tmp_path / "bad.csv"
    pd.DataFrame({"V1": ["X1"], "V2": [1.0], "V3": [np.nan], "V4": [2.0]}).to_csv(path, index=False)
    with pytest.raises(ValueError, match="X1"):
        read_wide(path)


@pytest.mark.skipif(not available(), reason="the M4 files are not under TSRSA_DATA_DIR/m4")
@pytest.mark.parametrize("name, published", [("Hourly", (18.383, 2.395)), ("Weekly", (9.161, 2.777))])
def test_naive2_reproduces_the_competitions_published_figures(name, published):
    split = load_split(name, "test")
    assert len(split.ids) == {"Hourly": 414, "Weekly": 359}[name] and split.actuals().shape[1] == FREQUENCIES[name].h
    score = scores(split, naive2_forecasts(split))
    assert (round(score["smape"], 3), round(score["mase"], 3)) == published


def test_the_script_skips_cleanly_without_data_or_neuralforecast(m4_dir, tmp_path, capsys):
    assert m4.main(["--data-dir", str(tmp_path / "nowhere"), "--results", str(tmp_path / "r.csv")]) == 0
    assert "not found" in capsys.readouterr().out
    assert m4.main(["--models", "NHITS", "--data-dir", str(m4_dir), "--results", str(tmp_path / "r.csv")]) == 0
    assert "neuralforecast not installed" in capsys.readouterr().out


def _row(model, split, smape, mase, seed=0, label="default", frequency="Hourly"):
    return {"date": "2026-01-01", "frequency": frequency, "model": model, "label": label, "seed": seed,
            "split": split, "smape": smape, "mase": mase, "owa": 0.5, "fit_seconds": 10.0,
            "predict_seconds": 1.0, "epochs": 3, "best_epoch": 2, "series_trained": 414,
            "machine": "test machine", "params": '{"h": 48}', "history": ""}


def test_tables_only_renders_validation_and_test_per_model(tmp_path, capsys):
    path = tmp_path / "m4.csv"
    for row in [_row("RSA", "validation", 14.0, 1.3), _row("RSA", "test", 12.0, 1.1),
                _row("RSA", "test", 99.0, 9.9, seed=1), _row("RSA", "test", 13.0, 1.2, seed=1),  # a re-run replaces
                _row("SeasonalNaive", "test", 13.912, 1.193), _row("RSA", "validation", 15.0, 1.4, label="lr=1e-4"),
                _row("Naive2", "test", 9.161, 2.777, frequency="Weekly")]:
        m4.append(row, path)
    assert m4.main(["--tables-only", "--results", str(path)]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("| ")]
    assert lines[1].startswith("| SeasonalNaive | default | 1 |")  # references first
    assert "| RSA | default | 2 | 14.000 | 1.300 | 0.500 | 12.500 ± 0.707 | 1.150 ± 0.071 | 0.500 ± 0.000 | 11 |" in out
    assert "| RSA | lr=1e-4 | 1 | 15.000 | 1.400 | 0.500 |  |" in out
    assert "| winner (Smyl, ES-RNN), published | | | | | | 9.328 | 0.893 | 0.440 | |" in out
    assert "**Weekly**" in out and "not quoted" in out


def test_a_row_made_at_an_earlier_default_keeps_what_it_ran(tmp_path, capsys):
    path = tmp_path / "m4.csv"
    earlier = dict(_row("RSA", "test", 12.0, 1.1), params='{"h": 48, "batch_size": 64, "max_epochs": 10}')
    today = dict(_row("RSA", "test", 11.0, 1.0), params='{"h": 48, "batch_size": 32, "max_epochs": "auto"}')
    named = dict(_row("RSA", "test", 10.0, 0.9, label="batch_size=64"), params='{"h": 48, "batch_size": 64}')
    validation = [dict(_row("RSA", "validation", 13.0, 1.2), params=today["params"], owa=0.6),
                  dict(_row("RSA", "validation", 12.0, 1.0, label="batch_size=64"), params=named["params"], owa=0.4),
                  dict(_row("RSA", "validation", 9.0, 0.5, label="lr=1"), owa=0.3)]  # no test: not chosen
    for row in (earlier, today, named, *validation):
        m4.append(row, path)
    assert m4.earlier_defaults("RSA", "default", earlier["params"]) == "batch_size=64,max_epochs=10"
    assert m4.earlier_defaults("RSA", "default", today["params"]) == ""  # the budget is the library's
    assert m4.earlier_defaults("RSA", "batch_size=64", named["params"]) == ""  # the label names it
    assert m4.earlier_defaults("NHITS", "default", '{"batch_size": 64}') == ""  # not a tsrsa model
    assert len(m4.read_rows(path)) == 6  # the run at today's defaults does not replace the earlier one
    assert m4.main(["--tables-only", "--results", str(path)]) == 0
    out = capsys.readouterr().out
    assert "| RSA | default | 1 | 13.000 | 1.200 | 0.600 | 11.000 | 1.000 |" in out
    assert "| RSA | default (ran at batch_size=64,max_epochs=10) | 1 |  |  |  | 12.000 | 1.100 |" in out
    assert "| RSA | batch_size=64 | 1 | 12.000 | 1.000 | 0.400 | 10.000 | 0.900 |" in out
    assert "Gap of RSA (batch_size=64: the lowest validation OWA of its rows with a test) to the winner on the test: " \
        "sMAPE +0.672, MASE +0.007" in out
