"""Shared fixtures: tiny panels and the benchmark data directory."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets"
if SHARED_DATA.is_dir() and "TSRSA_DATA_DIR" not in os.environ:
    os.environ["TSRSA_DATA_DIR"] = str(SHARED_DATA)

try:  # the fuzz tests' profiles: "ci" (make test: a fixed seed, bounded examples) or TSRSA_FUZZ=long
    from hypothesis import settings

    settings.register_profile("ci", derandomize=True, database=None, deadline=None, max_examples=40)
    settings.register_profile("long", database=None, deadline=None, max_examples=2000)
    settings.load_profile(os.environ.get("TSRSA_FUZZ", "ci"))
except ImportError:  # pragma: no cover - hypothesis comes with the dev extra
    pass

if os.environ.get("PYTEST_XDIST_WORKER"):  # `make test` runs files on one worker per core
    import torch

    torch.set_num_threads(1)  # one thread each, so the workers do not share cores


def make_panel(n_series: int = 3, length: int = 40, freq: str = "h", seed: int = 0, ids=None,
               start="2024-01-01") -> pd.DataFrame:
    """A small long frame of seasonal series with different levels and scales."""
    rng = np.random.default_rng(seed)
    ids = ids if ids is not None else [f"s{i}" for i in range(n_series)]
    frames = []
    for k, sid in enumerate(ids):
        t = np.arange(length)
        y = 10 * (k + 1) + (k + 1) * np.sin(2 * np.pi * t / 6) + 0.1 * rng.standard_normal(length)
        frames.append(pd.DataFrame({
            "unique_id": sid,
            "ds": pd.date_range(start, periods=length, freq=freq),
            "y": y,
        }))
    return pd.concat(frames, ignore_index=True)


@pytest.fixture
def small_budget(monkeypatch):
    """The automatic budget at a scale a test affords: a few optimiser steps instead of ~2,000 (the same rule,
    the same code path)."""
    from tsrsa.training import budget

    monkeypatch.setattr(budget, "TARGET_STEPS", 4)
    monkeypatch.setattr(budget, "MIN_EPOCHS", 1)
    monkeypatch.setattr(budget, "MAX_EPOCHS", 2)
    monkeypatch.setattr(budget, "EPOCH_STEPS", 2)


@pytest.fixture
def panel_df() -> pd.DataFrame:
    return make_panel()


#: the command line's smallest fit: DLinear on a 12-step input for one epoch
TINY_DLINEAR = ["--model", "DLinear", "--input-size", "12", "--max-epochs", "1", "--random-state", "0"]


@pytest.fixture
def long_csv(tmp_path) -> Path:
    """Two series of 48 hourly steps as a long CSV file."""
    path = tmp_path / "train.csv"
    make_panel(n_series=2, length=48).to_csv(path, index=False)
    return path


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    """The ``tsrsa`` command's exit status, standard output and standard error for ``argv``."""
    from tsrsa.cli import main

    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


#: what a script run by :func:`serve_without_torch` begins with: importing torch raises in it
NO_TORCH = """
import sys

class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch is not installed here")

sys.meta_path.insert(0, NoTorch())
import pandas as pd
import tsrsa

served = tsrsa.load_onnx(sys.argv[1], threads=1)
"""


def serve_without_torch(folder: Path, lines: str, *argv) -> subprocess.CompletedProcess:
    """Run ``lines`` (``served`` is ``tsrsa.load_onnx(argv[0])``) in a fresh interpreter where importing torch
    fails, and check that nothing imported torch."""
    script = folder / "serve.py"
    script.write_text(NO_TORCH + textwrap.dedent(lines) + '\nassert not [name for name in sys.modules if name == "torch" '
                      'or name.startswith("torch.")]\n')
    return subprocess.run([sys.executable, str(script), *map(str, argv)], capture_output=True, text=True, timeout=120)


def has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:  # pragma: no cover
        return False


def pytest_collection_modifyitems(config, items):
    if has_cuda():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
