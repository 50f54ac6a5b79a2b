"""The long-horizon harness: TSLib's borders, training-row scaling, batched scoring, rows, CLI."""
from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from tsrsa import datasets
from tsrsa.benchmarking import COLUMNS, append_rows, borders, prepare, read_results, score_forecasts, score_model
from tsrsa.benchmarking.configs import ModelConfig
from tsrsa.benchmarking.protocol import fit_frame, training_start, validation_size
from tsrsa.benchmarking.results import replace_section
from tsrsa.benchmarking.runner import best_epoch, run_one

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------- splits
def _tslib_borders(name: str, n: int, L: int):
    """Time-Series-Library's data_loader.py, written out."""
    if name.startswith("ETTh"):
        return [0, 12 * 30 * 24 - L, 12 * 30 * 24 + 4 * 30 * 24 - L], \
               [12 * 30 * 24, 12 * 30 * 24 + 4 * 30 * 24, 12 * 30 * 24 + 8 * 30 * 24]
    if name.startswith("ETTm"):
        return [0, 12 * 30 * 24 * 4 - L, 12 * 30 * 24 * 4 + 4 * 30 * 24 * 4 - L], \
               [12 * 30 * 24 * 4, 12 * 30 * 24 * 4 + 4 * 30 * 24 * 4, 12 * 30 * 24 * 4 + 8 * 30 * 24 * 4]
    num_train, num_test = int(n * 0.7), int(n * 0.2)
    num_vali = n - num_train - num_test
    return [0, num_train - L, n - num_test - L], [num_train, num_train + num_vali, n]


@pytest.mark.parametrize("name,L", [("ETTh1", 96), ("ETTh2", 96), ("ETTm1", 96), ("ETTm2", 336), ("weather", 96),
                                    ("exchange_rate", 96), ("national_illness", 36)])
def test_borders_are_time_series_library_borders(name, L):
    entry = datasets.info(name)
    b = borders(name, entry.n_rows, L)
    border1s, border2s = _tslib_borders(name, entry.n_rows, L)
    assert list(b.border1s) == border1s and list(b.border2s) == border2s
    split = entry.split  # the registry's standard split agrees
    assert (b.train_end, b.val_size, b.test_end - b.val_end) == (split.train, split.val, split.test)


def test_named_borders():
    assert borders("ETTh1", 17420, 96).border2s == (8640, 11520, 14400)
    assert borders("ETTm1", 69680, 96).border1s == (0, 34464, 45984)
    assert borders("weather", 52696, 96).border2s == (36887, 42157, 52696)
    assert borders("national_illness", 966, 36).border1s == (0, 640, 737)
    with pytest.raises(ValueError, match="needs at least 14400"):
        borders("ETTh1", 1000, 96)


# ---------------------------------------------------------------------- scaling
def _synthetic(T=200, C=3, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(T)[:, None]
    return 5 + 3 * np.sin(2 * np.pi * t / 12 + np.arange(C)) + 0.3 * rng.standard_normal((T, C)) + 0.01 * t


def test_scaling_is_fitted_on_the_training_rows_only():
    values = _synthetic()
    data = prepare("weather", values, ["a", "b", "c"], 12)  # 70/10/20: 140 training rows
    train = data.scaled[: data.borders.train_end]
    np.testing.assert_allclose(train.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(train.std(axis=0), 1, rtol=1e-12)  # population std, as sklearn
    np.testing.assert_allclose(data.mean, values[:140].mean(axis=0))
    changed = values.copy()
    changed[140:] *= 1000  # later rows never move the statistics
    other = prepare("weather", changed, ["a", "b", "c"], 12)
    np.testing.assert_allclose(other.mean, data.mean)
    np.testing.assert_allclose(other.std, data.std)
    np.testing.assert_allclose(other.scaled[:140], data.scaled[:140])


def test_fit_frame_rows_and_training_fraction():
    data = prepare("weather", _synthetic(), ["a", "b", "c"], 12)
    b = data.borders  # train 140, val 20, test 40
    h = 4
    assert training_start(data, h) == 0
    n = b.n_windows("train", h)  # 140 - 12 - 4 + 1
    start = training_start(data, h, train_fraction=0.5)
    assert b.train_end - start - 12 - h + 1 == int(np.ceil(0.5 * n))
    assert training_start(data, h, max_windows=3) == b.train_end - (3 + 12 + h - 1)
    assert validation_size(data, h) == 20 and validation_size(data, h, max_windows=2) == 5
    frame = fit_frame(data, 10, 160)
    assert list(frame.columns) == ["unique_id", "ds", "y"]
    assert frame["ds"].iloc[0] == 10 and frame["ds"].iloc[149] == 159 and len(frame) == 3 * 150
    np.testing.assert_allclose(frame.loc[frame["unique_id"] == "b", "y"], data.scaled[10:160, 1])
    with pytest.raises(ValueError, match="train_fraction"):
        training_start(data, h, train_fraction=0.0)


# ---------------------------------------------------------------------- scoring
def test_every_test_window_is_scored_once():
    data = prepare("weather", _synthetic(), ["a", "b", "c"], 12)
    h = 4
    seen = []

    def forecast(tails, loc, scale, horizon):
        seen.append(len(tails))
        return np.zeros((len(tails), horizon))

    score = score_forecasts(forecast, data, h, chunk=7)
    assert score.n_windows == 40 - h + 1  # stride 1, no dropped last batch
    assert sum(seen) == 3 * score.n_windows and max(seen) == 7
    test = data.scaled[data.borders.val_end :]
    expected = np.mean([np.mean(test[j : j + h] ** 2) for j in range(score.n_windows)])
    assert score.mse == pytest.approx(expected, rel=1e-12)


def test_the_validation_windows_are_scored_from_the_end_of_the_training_rows():
    data = prepare("weather", _synthetic(), ["a", "b", "c"], 12)
    h, b = 4, data.borders
    firsts = []

    def forecast(tails, loc, scale, horizon):
        firsts.append(tails[0].copy())
        return np.zeros((len(tails), horizon))

    score = score_forecasts(forecast, data, h, part="val")
    assert score.n_windows == b.n_windows("val", h) > 0
    np.testing.assert_array_equal(firsts[0], data.scaled[b.train_end - 12 : b.train_end, 0])
    val = data.scaled[b.train_end : b.val_end]
    expected = np.mean([np.mean(val[j : j + h] ** 2) for j in range(score.n_windows)])
    assert score.mse == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="part="):
        score_forecasts(forecast, data, h, part="train")


def _dlinear_config():
    return ModelConfig(name="DLinear", estimator="DLinearForecaster",
                       params={"kernel_size": 5, "max_epochs": 2, "batch_size": 16, "early_stopping_patience": 3})


@pytest.mark.parametrize("estimator", ["DLinear", "SeasonalNaive"])
def test_batched_scorer_equals_a_slow_loop_of_predict_calls(estimator):
    values = _synthetic()
    values[:, 1] = values[:, 1] * 10 + 50  # channels of different scales
    data = prepare("weather", values, ["a", "b", "c"], 12)
    h = 4
    if estimator == "DLinear":
        config = _dlinear_config()
    else:
        config = ModelConfig(name="SeasonalNaive", estimator="SeasonalNaiveForecaster",
                             datasets={"weather": {"season_length": 12}})
    from tsrsa.benchmarking.runner import build_estimator

    v = validation_size(data, h) if estimator == "DLinear" else 0
    model = build_estimator(config, data, h, seed=0, val_size=v, num_threads=1)
    model.fit(fit_frame(data, 0, data.borders.train_end + v))
    fast = score_model(model, data, h, chunk=5)
    sq, ab, n = 0.0, 0.0, 0
    b = data.borders
    for c, channel in enumerate(data.channels):
        for j in range(b.n_windows("test", h)):
            first = b.val_end + j - b.input_size
            window = pd.DataFrame({"unique_id": channel, "ds": np.arange(first, first + b.input_size),
                                   "y": data.scaled[first : first + b.input_size, c]})
            yhat = model.predict(df=window)["yhat"].to_numpy()
            err = yhat - data.scaled[b.val_end + j : b.val_end + j + h, c]
            sq, ab, n = sq + np.sum(err**2), ab + np.sum(np.abs(err)), n + h
    assert fast.mse == pytest.approx(sq / n, rel=1e-6)
    assert fast.mae == pytest.approx(ab / n, rel=1e-6)


# ---------------------------------------------------------------------- rows and files
def test_run_one_gives_a_complete_row(tmp_path):
    data = prepare("weather", _synthetic(), ["a", "b", "c"], 12)
    row = run_one(_dlinear_config(), data, 4, seed=1, num_threads=1, train_fraction=0.5)
    assert tuple(row) == COLUMNS
    assert row["model"] == "DLinearForecaster" and row["variant"] == "default" and row["seed"] == 1
    assert row["train_fraction"] == 0.5 and row["input_size"] == 12 and row["device"] == "cpu (1 thread)"
    assert np.isfinite(row["mse"]) and row["mse"] > 0
    path = tmp_path / "ltsf.csv"
    append_rows(path, [row])
    append_rows(path, [dict(row, mse=0.5)])  # a re-run of the same key replaces the earlier figure
    assert path.read_text().splitlines()[0] == ",".join(COLUMNS)
    df = read_results(path)
    assert len(df) == 1 and df["mse"].iloc[0] == 0.5
    with pytest.raises(ValueError, match="exactly the columns"):
        append_rows(path, [{"dataset": "x"}])


def test_a_file_from_before_the_last_columns_is_extended_and_read_with_them_missing(tmp_path):
    path = tmp_path / "ltsf.csv"
    first = COLUMNS[:12]
    old_row = "ETTh1,96,RSAForecaster,default,0,0.37,0.39,96,1.0,cpu (1 thread),500.0,3"
    path.write_text(",".join(first) + "\n" + old_row + "\n")
    row = dict(zip(first, ["ETTh1", 96, "RSAForecaster", "default", 1, 0.38, 0.4, 96, 1.0, "cpu (1 thread)", 400.0, 2]))
    append_rows(path, [dict(row, val_loss=0.61, params='{"h": 96}', val_mse=0.7, val_mae=0.5)])
    lines = path.read_text().splitlines()
    assert lines[0] == ",".join(COLUMNS) and lines[1] == old_row  # header extended, the old row untouched
    df = read_results(path)
    assert tuple(df.columns) == COLUMNS and len(df) == 2
    assert np.isnan(df["val_loss"].iloc[0]) and pd.isna(df["params"].iloc[0])
    assert df["val_loss"].iloc[1] == 0.61 and json.loads(df["params"].iloc[1]) == {"h": 96}
    assert np.isnan(df["val_mse"].iloc[0]) and df["val_mse"].iloc[1] == 0.7
    path.write_text("dataset,score\nETTh1,1\n")
    with pytest.raises(ValueError, match="has columns"):
        append_rows(path, [dict(row, val_loss=0.61, params="{}", val_mse=0.7, val_mae=0.5)])
    with pytest.raises(ValueError, match="has columns"):
        read_results(path)


def test_rows_of_another_file_are_written_with_its_own_columns(tmp_path):
    path = tmp_path / "speed.csv"
    append_rows(path, [{"kind": "rsa", "ms": 1.0 / 3}], columns=("kind", "ms"))
    append_rows(path, [{"kind": "linear", "ms": 2.0}], columns=("kind", "ms"))
    assert path.read_text().splitlines() == ["kind,ms", "rsa,0.333333", "linear,2.0"]
    with pytest.raises(ValueError, match="exactly the columns"):
        append_rows(path, [{"kind": "rsa"}], columns=("kind", "ms"))


def test_results_md_sections_leave_the_rest_alone(tmp_path):
    md = tmp_path / "RESULTS.md"
    md.write_text("# Results\n\nThroughput figures by someone else.\n")
    replace_section(md, "ltsf-results", "table one", title="LTSF")
    replace_section(md, "ltsf-results", "table two", title="LTSF")
    text = md.read_text()
    assert "Throughput figures by someone else." in text
    assert "table two" in text and "table one" not in text and text.count("## LTSF") == 1


def test_variant_names_are_the_options_they_set(tmp_path):
    import json

    from tsrsa.benchmarking.configs import format_value, load_config, parse_variant_name, variant_name

    assert variant_name({}) == "default"
    assert variant_name({"learning_rate": 0.001, "gate_init": 0.0}) == "gate_init=0,learning_rate=1e-3"
    assert [format_value(v) for v in (0.01, 1e-4, 0.05, 0.1, 0.3, -2.0, 0.0, 8, "paper", True, None)] == [
        "1e-2", "1e-4", "0.05", "0.1", "0.3", "-2", "0", "8", "paper", "true", "null"]
    assert parse_variant_name("gate_init=0,learning_rate=1e-3") == {"gate_init": "0", "learning_rate": "1e-3"}
    assert parse_variant_name("default") == {}
    with pytest.raises(ValueError, match="not option=value"):
        parse_variant_name("lr1e-3")
    configs = ROOT / "benchmarks" / "configs"
    for path in sorted(configs.glob("*.json")):
        config = load_config(path.stem, configs)  # raises where a name disagrees with its options
        assert all(config.variant_label(name) == name for name in config.variants)
    rsa = load_config("RSA", configs)
    earlier = "gate_init=-2,learning_rate=1e-4,loss=mse,lr_schedule=null,start=null"
    assert rsa.variant_label(earlier, {"max_epochs": 1}) == \
        "gate_init=-2,learning_rate=1e-4,loss=mse,lr_schedule=null,max_epochs=1,start=null"
    assert rsa.variant_label("default", {"max_epochs": 10}) == "default"  # the value params already has
    assert rsa.variant_label("default", {"learning_rate": 1e-3}) == "default"  # the estimator's own default
    same = {"estimator": "RSAForecaster", "params": {}, "variants": {"learning_rate=1e-3": {"learning_rate": 1e-3}}}
    (tmp_path / "Same.json").write_text(json.dumps(same))
    with pytest.raises(ValueError, match="must be 'default'"):  # a variant that changes nothing
        load_config("Same", tmp_path)
    bad = {"estimator": "RSAForecaster", "params": {"learning_rate": 1e-4},
           "variants": {"lr1e-3": {"learning_rate": 1e-3}}}
    (tmp_path / "Bad.json").write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="must be 'learning_rate=1e-3'"):
        load_config("Bad", tmp_path)


def test_runs_summary_links_the_log_and_counts_per_machine():
    from tsrsa.benchmarking.results import runs_summary

    runs = [{"date": "2026-01-02T03:04:05", "machine": "cpu A", "command": "x", "rows": 2},
            {"date": "2026-01-05T00:00:00", "machine": "cpu A", "command": "y", "rows": 1, "wall_seconds": 3.0},
            {"date": "2026-01-03T00:00:00", "machine": "gpu B", "command": "z", "rows": 4}]
    text = runs_summary(runs, "results/ltsf_runs.jsonl")
    assert "[`results/ltsf_runs.jsonl`](results/ltsf_runs.jsonl)" in text
    assert "3 commands, 2026-01-02 to 2026-01-05" in text
    assert "| cpu A | 2026-01-02 to 2026-01-05 | 2 | 3 |" in text and "| gpu B | 2026-01-03 | 1 | 4 |" in text
    assert runs_summary([], "x") == ""


def _write_tiny_ili(folder: Path, n=160) -> None:
    values = _synthetic(T=n, C=2)
    frame = pd.DataFrame({"date": pd.date_range("2002-01-01", periods=n, freq="7D").strftime("%Y-%m-%d %H:%M:%S"),
                          "A": values[:, 0], "OT": values[:, 1]})
    frame.to_csv(folder / "national_illness.csv", index=False)


def test_cli_smoke_on_a_tiny_synthetic_file(tmp_path):
    from tsrsa.benchmarking.cli import main

    _write_tiny_ili(tmp_path)
    out = tmp_path / "bench"
    args = ["--dataset", "national_illness", "--models", "DLinear,SeasonalNaive", "--horizons", "4",
            "--input-size", "12", "--seeds", "0,1", "--max-epochs", "1", "--num-threads", "1",
            "--data-dir", str(tmp_path), "--results", str(out / "results" / "ltsf.csv"), "--quiet"]
    rows = main(args, root=ROOT / "benchmarks")
    assert [(r["model"], r["seed"]) for r in rows] == [("DLinearForecaster", 0), ("DLinearForecaster", 1),
                                                      ("SeasonalNaiveForecaster", 0)]
    assert rows[0]["variant"] == "max_epochs=1"  # named by the option it changes
    assert rows[2]["variant"] == "default"  # the seasonal naive has no max_epochs: it runs its default
    df = pd.read_csv(out / "results" / "ltsf.csv")
    assert tuple(df.columns) == COLUMNS and len(df) == 3
    params = json.loads(df["params"].iloc[0])  # every argument explicit, not only the variant's
    assert params["max_epochs"] == 1 and params["random_state"] == 0 and params["h"] == 4 and "learning_rate" in params
    assert np.isfinite(df["val_loss"].iloc[0]) and np.isnan(df["val_loss"].iloc[2])  # the naive has no validation
    text = (out / "RESULTS.md").read_text()
    assert "### national_illness, input 12" in text
    assert "**DLinear** (`DLinearForecaster`" in text  # the configuration behind the rows
    assert "Run log: [`results/ltsf_runs.jsonl`](results/ltsf_runs.jsonl)" in text  # linked, not copied
    assert "--dataset national_illness" not in text.split("Run log:", 1)[1]
    (out / "RESULTS.md").write_text("# Results\n")
    assert main(["--tables-only", "--results", str(out / "results" / "ltsf.csv")], root=ROOT / "benchmarks") == []
    assert "### national_illness, input 12" in (out / "RESULTS.md").read_text()


@pytest.mark.processes
def test_jobs_run_side_by_side_and_give_the_rows_of_a_sequential_run(tmp_path):
    import json

    from tsrsa.benchmarking.cli import main

    _write_tiny_ili(tmp_path)
    common = ["--dataset", "national_illness", "--models", "DLinear,SeasonalNaive", "--horizons", "4,6",
              "--input-size", "12", "--seeds", "0,1", "--max-epochs", "1", "--data-dir", str(tmp_path), "--quiet"]
    one = main([*common, "--num-threads", "1", "--results", str(tmp_path / "one" / "results" / "ltsf.csv")],
               root=ROOT / "benchmarks")
    two = main([*common, "--jobs", "2", "--results", str(tmp_path / "two" / "results" / "ltsf.csv")],
               root=ROOT / "benchmarks")
    key = ["model", "horizon", "seed"]
    one, two = pd.DataFrame(one).sort_values(key), pd.DataFrame(two).sort_values(key)
    assert len(two) == 6 and list(one[key].itertuples(index=False)) == list(two[key].itertuples(index=False))
    np.testing.assert_allclose(two["mse"], one["mse"], rtol=1e-5)  # same seeds, same fits, in other processes
    threads = max(1, os.cpu_count() // 2)  # 2 jobs on the CPU: the cores shared out
    assert set(two["device"]) == {f"cpu ({threads} thread{'s' if threads > 1 else ''})", "cpu"}
    assert len(read_results(tmp_path / "two" / "results" / "ltsf.csv")) == 6
    log = [json.loads(line) for line in (tmp_path / "two" / "results" / "ltsf_runs.jsonl").read_text().splitlines()]
    assert len(log) == 1 and log[0]["rows"] == 6 and log[0]["wall_seconds"] > 0 and "--jobs 2" in log[0]["command"]


def test_jobs_must_be_positive_and_data_sets_known(tmp_path, capsys):
    from tsrsa.benchmarking.cli import main

    for bad in (["--dataset", "ETTh1", "--jobs", "0"], ["--dataset", "ETTh9"]):
        with pytest.raises(SystemExit):
            main([*bad, "--models", "DLinear", "--results", str(tmp_path / "r.csv")], root=ROOT / "benchmarks")
    err = capsys.readouterr().err
    assert "--jobs must be at least 1" in err and "unknown data set 'ETTh9'" in err
    assert not (tmp_path / "r.csv").exists()


def test_cli_smoke_on_etth1(tmp_path):
    if not os.environ.get("TSRSA_DATA_DIR") or not (Path(os.environ["TSRSA_DATA_DIR"]) / "ETTh1.csv").is_file():
        pytest.skip("needs ETTh1.csv in $TSRSA_DATA_DIR")
    from tsrsa.benchmarking.cli import main

    args = ["--dataset", "ETTh1", "--models", "DLinear", "--horizons", "96", "--max-windows", "16",
            "--max-epochs", "1", "--num-threads", "1", "--config-dir", str(ROOT / "benchmarks" / "configs"), "--quiet"]
    rows = main(args, root=tmp_path)  # a --max-windows run writes nothing unless told where
    assert len(rows) == 1 and rows[0]["dataset"] == "ETTh1" and np.isfinite(rows[0]["mse"])
    assert not list(tmp_path.iterdir())


def test_best_epoch_is_the_epoch_whose_weights_were_kept():
    def model(val):
        history = pd.DataFrame({"epoch": [1, 2, 3, 4], "train_loss": [4.0, 3.0, 2.0, 1.0], "val_loss": val})
        return SimpleNamespace(fit_history_=history)

    assert best_epoch(model([0.9, 0.5, 0.7, 0.8])) == 2  # lowest validation loss
    assert best_epoch(model([np.nan] * 4)) == 4  # no validation: the last weights are kept
    assert best_epoch(SimpleNamespace()) is None  # a model that does not train


def test_trainer_kwargs_spells_the_trainer_as_the_class_takes_it():
    import tsrsa
    from tsrsa.benchmarking.compat import TRAINER_OPTIONS, trainer_kwargs
    from tsrsa.estimator.trainer import FIELDS

    assert TRAINER_OPTIONS == FIELDS  # the helper imports no tsrsa (it runs beside earlier releases): kept in step

    class Before015:  # a neural forecaster of tsrsa 0.14: the options are its own arguments
        def __init__(self, h, num_threads=None, verbose=0):
            pass

    flat = {"h": 3, "num_threads": 1, "verbose": 0}
    assert trainer_kwargs(Before015, flat) == flat
    assert trainer_kwargs(tsrsa.DLinearForecaster, flat) == {"h": 3, "trainer": {"num_threads": 1, "verbose": 0}}
    assert trainer_kwargs(tsrsa.DLinearForecaster, {"num_threads": 1, "trainer": tsrsa.Trainer(verbose=1)}) == \
        {"trainer": tsrsa.Trainer(num_threads=1, verbose=1)}
    assert trainer_kwargs(tsrsa.ETSForecaster, {"h": 3, "verbose": 1}) == {"h": 3, "verbose": 1}  # its own verbose
