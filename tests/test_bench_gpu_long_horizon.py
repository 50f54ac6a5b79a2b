"""benchmarks/run_gpu_long_horizon.sh rehearsed on the CPU: each part runs and writes rows of the results format,
from the data as it travels to a GPU machine (gzipped CSVs)."""
from __future__ import annotations

import csv
import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow  # four tiny ETTm1 fits and two at a look-back of 1,440 (~40 s)


def test_the_gpu_script_runs_its_parts_from_packed_data(tmp_path):
    data = os.environ.get("TSRSA_DATA_DIR")
    if not data or not (Path(data) / "ETTm1.csv").exists():
        pytest.skip("needs ETTm1.csv in $TSRSA_DATA_DIR")
    packed = tmp_path / "packed"
    packed.mkdir()
    with open(Path(data) / "ETTm1.csv", "rb") as source, gzip.open(packed / "ETTm1.csv.gz", "wb") as target:
        shutil.copyfileobj(source, target)
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "ACCELERATOR": "cpu", "PYTHON": sys.executable, "TSRSA_DATA_DIR": str(packed),
           "PARTS": "ETTm1:1,2::2:96 ETTm1:0:1440:1:96", "EXTRA": "--max-windows 16 --max-epochs 1"}
    done = subprocess.run(["bash", str(ROOT / "benchmarks" / "run_gpu_long_horizon.sh"), "300"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ETTm1:1,2::2:96: exit 0" in done.stdout and "ETTm1:0:1440:1:96: exit 0" in done.stdout, done.stdout
    with open(out / "ltsf_gpu_long.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    cells = {(r["model"], r["seed"], r["input_size"]) for r in rows}
    assert cells == {("RSAForecaster", "1", "96"), ("RSAForecaster", "2", "96"), ("TransformerForecaster", "1", "96"),
                     ("TransformerForecaster", "2", "96"), ("RSAForecaster", "0", "1440"),
                     ("TransformerForecaster", "0", "1440")}
    assert all(r["dataset"] == "ETTm1" and r["horizon"] == "96" and float(r["mse"]) > 0 for r in rows)  # the parts' horizons
    assert sorted(p.name for p in packed.iterdir()) == ["ETTm1.csv.gz"]  # unpacked elsewhere
    assert not (ROOT / "gpu-long").exists()  # everything went to $OUT
