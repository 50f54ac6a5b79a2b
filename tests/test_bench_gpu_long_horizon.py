"""benchmarks/run_gpu_long_horizon.sh rehearsed on the CPU: both parts run and write rows of the results format."""
from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow  # four tiny ETTm1 fits and two at a look-back of 1,440 (~40 s)


def test_the_gpu_script_writes_the_seed_and_look_back_rows(tmp_path):
    data = os.environ.get("TSRSA_DATA_DIR")
    if not data or not (Path(data) / "ETTm1.csv").exists():
        pytest.skip("needs ETTm1.csv in $TSRSA_DATA_DIR")
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "ACCELERATOR": "cpu", "PYTHON": sys.executable,
           "EXTRA": "--max-windows 16 --max-epochs 1 --horizons 96"}
    done = subprocess.run(["bash", str(ROOT / "benchmarks" / "run_gpu_long_horizon.sh"), "300", "2"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "seeds 1-2: exit 0" in done.stdout and "look-back 1440: exit 0" in done.stdout, done.stdout
    with open(out / "ltsf_gpu_long.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    cells = {(r["model"], r["seed"], r["input_size"]) for r in rows}
    assert cells == {("RSAForecaster", "1", "96"), ("RSAForecaster", "2", "96"), ("TransformerForecaster", "1", "96"),
                     ("TransformerForecaster", "2", "96"), ("RSAForecaster", "0", "1440"),
                     ("TransformerForecaster", "0", "1440")}
    assert all(r["dataset"] == "ETTm1" and r["horizon"] == "96" and float(r["mse"]) > 0 for r in rows)
    assert not (ROOT / "gpu-long").exists()  # everything went to $OUT
