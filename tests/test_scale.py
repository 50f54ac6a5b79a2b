"""Many series in bounded memory: 10,000 series x 1,000 steps.

Materialised, the training windows of this panel (input 96, horizon 24) would take 4.1 GB as
float32. Lazy windows, training batches gathered one at a time, and validation and prediction
in batches of ``inference_batch_size`` keep the process within a few hundred MB of the data
itself. The whole fit-and-predict figure is in benchmarks/RESULTS.md (bench_training.py
--only memory); here the data side is checked at full size, in about a second.
"""
from __future__ import annotations

import itertools
import os
import tracemalloc

import numpy as np
import pandas as pd
import pytest
import torch

from tsrsa import TransformerForecaster
from tsrsa.data.windows import training_windows, validation_windows
from tsrsa.nn.losses import make_loss
from tsrsa.training import WindowLoader, evaluate_loss, torch_threads

S, T, L, H = 10_000, 1_000, 96, 24
MiB = 2**20
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss() -> int:
    """Resident bytes of this process now (Linux)."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * PAGE


@pytest.fixture(scope="module")
def panel():
    rng = np.random.default_rng(0)
    values = (np.sin(np.arange(T) / 8)[None, :] + 0.1 * rng.standard_normal((S, T))).astype(np.float32)
    offsets = np.arange(S + 1, dtype=np.int64) * T
    return values.ravel(), offsets  # (S * T,) float32: 40 MB


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads the resident size from /proc")
def test_windows_of_10000_series_stay_lazy(panel):
    values, offsets = panel
    fit_lengths = np.full(S, T - H)
    tracemalloc.start()
    before = rss()
    train = WindowLoader(training_windows(values, offsets, fit_lengths, L, H), 8192, shuffle=True,
                         device=torch.device("cpu"))
    val = WindowLoader(validation_windows(values, offsets, fit_lengths, L, H), 1024, shuffle=False,
                       device=torch.device("cpu"))
    assert train.n_windows == S * (T - H - L - H + 1) and val.n_windows == S
    grown = 0
    with torch_threads(1):
        for x, y in itertools.islice(train.iterate(np.random.default_rng(0)), 50):  # 409,600 windows
            assert x.shape == (8192, L) and y.shape == (8192, H)
            grown = max(grown, rss() - before)
        network = torch.nn.Sequential(torch.nn.Linear(L, H), torch.nn.Unflatten(1, (H, 1)))
        evaluate_loss(network, make_loss("mse", None), val, torch.device("cpu"))
        grown = max(grown, rss() - before)
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    materialised = train.n_windows * (L + H) * 4  # 4.1 GB
    # an epoch's order and start positions (8.6M int32 each, 34 MB) and a batch, never the windows
    assert traced_peak < 200 * MiB, traced_peak / MiB
    assert grown < 300 * MiB, (grown / MiB, materialised / MiB)


def test_prediction_for_10000_series_runs_in_bounded_batches(panel):
    values, _ = panel
    model = TransformerForecaster(h=H, input_size=L, patch_len=24, d_model=8, n_heads=1, n_layers=1, d_ff=8,
                                  max_epochs=1, random_state=0,
                                  trainer={"num_threads": 1, "accelerator": "cpu", "inference_batch_size": 500})
    model.fit(pd.Series(values[:T].astype(np.float64)))  # a quick fit on one series
    tails = values.reshape(S, T)[:, -L:].astype(np.float64)  # (S, L): the last window of each series
    calls = []
    forward = model.network_.forward
    model.network_.forward = lambda x: calls.append(len(x)) or forward(x)
    out = model.forecast_windows(tails, np.zeros(S), np.ones(S), H)["yhat"]
    assert out.shape == (S, H) and np.isfinite(out).all()
    assert max(calls) == 500 and sum(calls) == S
