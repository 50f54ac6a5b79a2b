"""Smoke tests of the scripts in examples/: each runs on its small budget, in-process.

Every script in examples/ is listed in COVERED with the test that runs it, so a new example
without a smoke test fails here. The GPU example is run where CUDA is present and must skip
cleanly where it is not.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from conftest import has_cuda

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

#: script -> the test that runs it
COVERED = {
    "co2_demo.py": "tests/test_package.py::test_demo_runs_end_to_end",
    "data_parallel.py": "tests/test_distributed.py::test_example_spawns_two_cpu_workers",
    "quickstart.py": "test_quickstart_example",
    "inside_rsa.py": "test_inside_rsa_example",
    "benchmark_figures.py": "test_benchmark_figures_example",
    "tuning.py": "test_tuning_example",
    "gpu_training.py": "test_gpu_example_skips_without_cuda, test_gpu_example_on_a_gpu",
    "convert_to_recurrent.py": "test_convert_to_recurrent_example",
    "ray_train.py": "tests/test_ray_launch.py::test_two_ray_workers_take_the_steps_of_one (TSRSA_SLOW_TESTS=1)",
}


def example(name: str):
    """Import examples/<name>.py as a module (it runs nothing at import)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_example_has_a_smoke_test():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(COVERED)
    for path in EXAMPLES.glob("*.py"):
        text = path.read_text()
        assert text.startswith('"""') and 'if __name__ == "__main__":' in text, path.name


def test_quickstart_example(tmp_path, capsys):
    out = example("quickstart").main(["--budget", "small", "--num-threads", "1", "--output-dir", str(tmp_path)])
    printed = capsys.readouterr().out
    assert list(out["scores"].index) == ["RSA", "SeasonalNaive"] and (out["scores"]["mae"] > 0).all()
    assert out["cv"]["cutoff"].nunique() == 3 and "same forecast" in printed
    assert (tmp_path / "forecast.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "model" / "config.json").is_file()


def test_convert_to_recurrent_example(capsys):
    module = example("convert_to_recurrent")
    out = module.main(["--budget", "small", "--num-threads", "1"])
    table, softmax, converted = out["table"], out["original"], out["converted"]
    assert list(table.index) == ["softmax", "t2r"] and (table["mae"] > 0).all()
    assert "finetuning epochs" in capsys.readouterr().out
    later = module.series(24 * 7 * 10 + 8).iloc[-8:]
    before = {name: module.state_numbers(m) for name, m in (("softmax", softmax), ("t2r", converted))}
    softmax.update(later), converted.update(later)  # 8 steps: two more tokens of 4
    assert module.state_numbers(converted) == before["t2r"]  # T2R's state has a fixed size
    assert module.state_numbers(softmax) > before["softmax"]  # softmax keeps every key and value


def test_inside_rsa_example(tmp_path, capsys):
    out = example("inside_rsa").main(["--budget", "small", "--num-threads", "1", "--output-dir", str(tmp_path)])
    assert out["error"] < 1e-9  # the RSA layer built from the RNN's eigenvalues is the RNN
    table = out["table"]
    assert set(table["rem_type"]) == {"regular", "cyclic_cos", "cyclic_sin"}
    assert table["started from"].str.contains("period 52").any()  # the yearly cycle of weekly CO2
    assert np.allclose(table.loc[table["rem_type"] == "cyclic_cos", "period at start"], 52.0)
    assert {p.name for p in tmp_path.iterdir()} == {"rem_kinds.png", "learned_rems.png"}
    assert "rounding error" in capsys.readouterr().out


def test_benchmark_figures_example(tmp_path, capsys):
    table = example("benchmark_figures").main(["--output-dir", str(tmp_path)])
    assert "DLinear" in table.columns and "DLinear (published)" in table.columns
    assert ("ETTh1", 96) in table.index
    assert (tmp_path / "ETTh1.png").is_file()
    assert "published: iTransformer" in capsys.readouterr().out


def test_tuning_example(tmp_path, capsys):
    journal = tmp_path / "study.journal"
    argv = ["--budget", "small", "--n-trials", "2", "--num-threads", "1", "--storage", str(journal)]
    example("tuning").main(argv)
    result = example("tuning").main([*argv, "--n-trials", "1", "--output-dir", str(tmp_path / "plots")])
    assert len(result.study.trials) == 3  # the second run resumed the study in the journal
    assert set(result.best_params) == {"d_model", "patch_len", "learning_rate", "rem__gate_init"}
    assert {p.name for p in (tmp_path / "plots").iterdir()} == {"history.png", "importances.png"}
    assert "3 trials in the study" in capsys.readouterr().out


@pytest.mark.skipif(has_cuda(), reason="CUDA present: the example runs instead (test_gpu_example_on_a_gpu)")
def test_gpu_example_skips_without_cuda(capsys):
    assert example("gpu_training").main(["--budget", "small"]) is None
    assert "skipped: torch sees no CUDA device" in capsys.readouterr().out


@pytest.mark.gpu
def test_gpu_example_on_a_gpu(capsys):
    out = example("gpu_training").main(["--budget", "small"])
    assert out["model"].resolved_trainer.precision in ("bf16-mixed", "16-mixed")
    assert out["gap"] <= 0.05 * (1 + out["size"])  # the CPU reload forecasts as the GPU did
    assert "CPU reload" in capsys.readouterr().out
