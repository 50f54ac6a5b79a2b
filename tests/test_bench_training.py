"""The training-speed benchmark's bookkeeping: its table (the GPU's peak memory column, the machine its
rows record), its CSVs, which take new columns without losing old rows, and the sections of the
import-time and memory parts."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_training  # noqa: E402  (a script of benchmarks/)
import training_footprint  # noqa: E402
import training_speed  # noqa: E402


def _rows(peak=None) -> pd.DataFrame:
    rows = pd.DataFrame([
        {"dataset": "ETTm1", "library": "tsrsa", "model": "LSTMForecaster", "parameters": 100, "windows": 1000,
         "seconds": 0.5, "windows_per_s": 2000.0, "pair": "LSTM", "device": "test GPU", "machine": "test host"},
        {"dataset": "ETTm1", "library": "pytorch-forecasting", "model": "RecurrentNetwork", "parameters": 90,
         "windows": 1000, "seconds": 4.0, "windows_per_s": 250.0, "pair": "LSTM", "device": "test GPU",
         "machine": "test host"},
    ])
    return rows if peak is None else rows.assign(peak_gpu_mb=peak)


def test_the_speed_table_shows_peak_gpu_memory_and_the_machine_of_its_rows():
    text = training_speed.speed_section(_rows(peak=[80.4, 30.0]), "cmd")
    assert "| tsrsa | `LSTMForecaster` | 100 | 2,000 | 8.0× |  |  | 80 |" in text.splitlines()
    assert "test host" in text and "NF_ENV" not in text  # no neuralforecast row, no word of its environment


def test_a_cpu_speed_table_has_no_gpu_column():
    lines = training_speed.speed_section(_rows(peak=[math.nan, math.nan]), "cmd").splitlines()
    assert "| tsrsa | `LSTMForecaster` | 100 | 2,000 | 8.0× |  |  |" in lines


def test_rows_with_a_new_column_are_appended_to_the_old_ones(tmp_path, monkeypatch):
    monkeypatch.setattr(bench_training, "machine", lambda: "test host")
    path = tmp_path / "speed.csv"
    bench_training.append_csv(path, _rows().drop(columns="machine"))
    bench_training.append_csv(path, _rows(peak=[1.0, 2.0]).drop(columns="machine"))
    got = pd.read_csv(path)
    assert len(got) == 4 and got["peak_gpu_mb"].isna().sum() == 2 and list(got["peak_gpu_mb"].dropna()) == [1.0, 2.0]


def test_gpu_peak_off_a_gpu_returns_the_result_and_no_figure():
    result, peak = training_speed.gpu_peak("cpu", lambda: 7)
    assert result == 7 and math.isnan(peak)


def test_a_patch_speed_run_replaces_its_own_rows_and_keeps_the_others(tmp_path):
    path = tmp_path / "patch.csv"
    old = pd.DataFrame({"model": ["RSAForecaster"] * 2, "patch_len": [1, 8], "windows_per_s": [10.0, 80.0],
                        "device": "cpu"})
    old.to_csv(path, index=False)
    new = pd.DataFrame({"model": ["RSAForecaster"], "patch_len": [8], "windows_per_s": [90.0], "device": "cpu"})
    table = bench_training.write_patch_speed(new, path)
    assert table.equals(pd.read_csv(path))
    assert sorted(zip(table["patch_len"], table["windows_per_s"])) == [(1, 10.0), (8, 90.0)]


def test_the_import_section_states_the_ratios_to_its_targets():
    table = pd.DataFrame({"statement": ["import tsrsa", "import torch, pandas", "import pytorch_forecasting"],
                          "seconds": [0.5, 2.0, 4.0]})
    lines = training_footprint.imports_section(table, "cmd").splitlines()
    assert "| `import tsrsa` | 0.50 | 0.25 | 0.12 |" in lines and "Command: `cmd`" in lines


def test_the_memory_probe_runs_in_a_fresh_process_of_the_script():
    assert training_footprint.PROBE == Path(bench_training.__file__).resolve()
