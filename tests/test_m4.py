"""The M4 benchmark's pieces (benchmarks/m4.py, m4_data.py): metrics, Naive2, loader and tables."""
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import m4  # noqa: E402  (a script of benchmarks/, importable beside m4_data)
import m4_data  # noqa: E402


def _split(history, future, name="Weekly"):
    return m4_data.Split(m4_data.FREQUENCIES[name], history, future)


def test_smape_mase_and_owa_on_hand_computed_values():
    split = _split({"a": np.array([1.0, 2.0, 4.0, 3.0, 5.0]), "b": np.array([10.0, 10.0, 12.0])},
                   {"a": np.array([6.0, 7.0]), "b": np.array([100.0, 200.0])})
    split.frequency = m4_data.Frequency("toy", h=2, m=1, input_size=2, period=1)
    score = m4_data.scores(split, np.array([[5.0, 9.0], [110.0, 180.0]]))
    # a: 200·(1/11 + 2/16)/2 = 21.591; b: 200·(10/210 + 20/380)/2 = 10.025
    assert score["smape"] == pytest.approx((100 * (1 / 11 + 2 / 16) + 100 * (10 / 210 + 20 / 380)) / 2)
    # a: MAE 1.5 over in-sample naive MAE (1 + 2 + 1 + 2)/4 = 1.5 -> 1; b: 15 over (0 + 2)/2 = 1 -> 15
    assert score["mase"] == pytest.approx((1.0 + 15.0) / 2)
    assert m4_data.owa({"smape": 10.0, "mase": 1.0}, {"smape": 20.0, "mase": 4.0}) == pytest.approx(0.375)
    with pytest.raises(ValueError, match="shape"):
        m4_data.scores(split, np.zeros((2, 3)))


def test_acf_as_r_computes_it_and_the_season_test_tells_seasonal_from_not():
    # deviations (-1.5, -0.5, 0.5, 1.5), sum of squares 5: r1 = (0.75 - 0.25 + 0.75)/5, r2 = (-0.75 - 0.75)/5
    assert np.allclose(m4_data.acf(np.array([1.0, 2.0, 3.0, 4.0]), 2), [0.25, -0.3])
    rng = np.random.default_rng(0)
    t = np.arange(24 * 20)
    seasonal = 100 + 10 * np.sin(2 * np.pi * t / 24) + rng.normal(0, 1, len(t))
    noise = 100 + rng.normal(0, 1, len(t))
    walk = 100 + np.cumsum(noise - 100)
    assert m4_data.is_seasonal(seasonal, 24) and not m4_data.is_seasonal(noise, 24)
    assert m4_data.is_seasonal(walk, 24)  # as in M4: a trending series passes the lag-m test too
    assert not m4_data.is_seasonal(seasonal[:71], 24)  # fewer than 3 seasons: never seasonal
    assert not m4_data.is_seasonal(seasonal, 1)


def test_naive2_continues_a_multiplicative_season_and_is_naive_otherwise():
    pattern = np.array([0.8, 1.2, 0.9, 1.1])
    y = 100 * pattern[np.arange(42) % 4]  # ends on position 1 (42 = 10·4 + 2)
    assert np.allclose(m4_data.seasonal_indices(y, 4), pattern)
    assert np.allclose(m4_data.naive2(y, 4, 6), 100 * pattern[np.arange(42, 48) % 4])
    flat = np.array([3.0, 5.0, 4.0, 6.0, 5.0])
    assert np.allclose(m4_data.naive2(flat, 1, 3), [5.0, 5.0, 5.0])


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
    test = m4_data.load_split("Weekly", "test", m4_dir)
    assert test.ids == ["W1", "W2", "W3"] and [len(test.history[s]) for s in test.ids] == [20, 30, 17]
    assert test.actuals().shape == (3, 13)
    val = m4_data.load_split("Weekly", "validation", m4_dir)
    assert [len(val.history[s]) for s in val.ids] == [7, 17, 4]
    assert np.array_equal(val.future["W2"], test.history["W2"][-13:])
    frame = val.frame()
    assert list(frame.columns) == ["unique_id", "ds", "y"] and frame["ds"].dtype == np.int64
    assert list(frame.loc[frame["unique_id"] == "W3", "ds"]) == [0, 1, 2, 3]
    assert m4_data.available(m4_dir) and not m4_data.available(m4_dir / "nowhere")


def test_a_value_missing_inside_a_series_is_an_error(tmp_path):
    path = tmp_path / "bad.csv"
    pd.DataFrame({"V1": ["X1"], "V2": [1.0], "V3": [np.nan], "V4": [2.0]}).to_csv(path, index=False)
    with pytest.raises(ValueError, match="X1"):
        m4_data.read_wide(path)


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
    today = dict(_row("RSA", "test", 11.0, 1.0), params='{"h": 48, "batch_size": 32, "max_epochs": 10}')
    named = dict(_row("RSA", "test", 10.0, 0.9, label="batch_size=64"), params='{"h": 48, "batch_size": 64}')
    validation = [dict(_row("RSA", "validation", 13.0, 1.2), params=today["params"], owa=0.6),
                  dict(_row("RSA", "validation", 12.0, 1.0, label="batch_size=64"), params=named["params"], owa=0.4),
                  dict(_row("RSA", "validation", 9.0, 0.5, label="lr=1"), owa=0.3)]  # no test: not chosen
    for row in (earlier, today, named, *validation):
        m4.append(row, path)
    assert m4.earlier_defaults("RSA", "default", earlier["params"]) == "batch_size=64"
    assert m4.earlier_defaults("RSA", "default", today["params"]) == ""  # max_epochs is the protocol's
    assert m4.earlier_defaults("RSA", "batch_size=64", named["params"]) == ""  # the label names it
    assert m4.earlier_defaults("NHITS", "default", '{"batch_size": 64}') == ""  # not a tsrsa model
    assert len(m4.read_rows(path)) == 6  # the run at today's defaults does not replace the earlier one
    assert m4.main(["--tables-only", "--results", str(path)]) == 0
    out = capsys.readouterr().out
    assert "| RSA | default | 1 | 13.000 | 1.200 | 0.600 | 11.000 | 1.000 |" in out
    assert "| RSA | default (ran at batch_size=64) | 1 |  |  |  | 12.000 | 1.100 |" in out
    assert "| RSA | batch_size=64 | 1 | 12.000 | 1.000 | 0.400 | 10.000 | 0.900 |" in out
    assert "Gap of RSA (batch_size=64: the lowest validation OWA of its rows with a test) to the winner on the test: " \
        "sMAPE +0.672, MASE +0.007" in out
