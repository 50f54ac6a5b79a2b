"""GPU fits: each precision reaches a CPU fit's accuracy, and the saved model loads on the CPU.

Every test here is marked ``gpu``; tests/conftest.py skips them where torch sees no CUDA device.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import tsrsa
from tsrsa import LSTMForecaster, RSAForecaster, TransformerForecaster

pytestmark = pytest.mark.gpu

H = 12
MODELS = {
    "LSTM": lambda **kw: LSTMForecaster(h=H, input_size=48, hidden_size=32, **kw),
    "Transformer": lambda **kw: TransformerForecaster(h=H, input_size=48, patch_len=4, d_model=32, **kw),
    "RSA": lambda **kw: RSAForecaster(h=H, input_size=48, patch_len=4, d_model=32, **kw),
}


def seasonal_panel(n_series: int = 4, length: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    t = np.arange(length)
    return pd.concat([pd.DataFrame({
        "unique_id": f"s{i}", "ds": pd.date_range("2024-01-01", periods=length, freq="h"),
        "y": 5 * (i + 1) + np.sin(2 * np.pi * t / 24 + i) + 0.1 * rng.standard_normal(length),
    }) for i in range(n_series)], ignore_index=True)


def _mae(model, train, test) -> float:
    fc = model.predict().merge(test, on=["unique_id", "ds"])
    return float((fc["yhat"] - fc["y"]).abs().mean())


@pytest.mark.parametrize("precision", ["32", "bf16-mixed", "16-mixed"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_gpu_fit_matches_cpu_accuracy_and_loads_on_cpu(name, precision, tmp_path):
    df = seasonal_panel()
    test = df.groupby("unique_id").tail(H)
    train = df.drop(test.index)
    common = dict(max_epochs=15, batch_size=64, random_state=0)
    cpu = MODELS[name](accelerator="cpu", **common).fit(train)
    gpu = MODELS[name](accelerator="gpu", precision=precision, **common).fit(train)
    assert next(gpu.network_.parameters()).is_cuda
    mae_cpu, mae_gpu = _mae(cpu, train, test), _mae(gpu, train, test)
    assert mae_gpu <= 1.25 * mae_cpu + 0.05, (mae_cpu, mae_gpu)  # noise level 0.1, cycle amplitude 1
    gpu.save(tmp_path / "m")
    loaded = tsrsa.load(tmp_path / "m")
    assert all(p.device.type == "cpu" for p in loaded.network_.parameters())
    tolerance = 2e-3 if precision == "32" else 5e-2  # cuDNN may use TF32; mixed: reduced precision
    np.testing.assert_allclose(loaded.predict()["yhat"], gpu.predict()["yhat"], rtol=tolerance, atol=tolerance)


@pytest.mark.skipif(torch.cuda.is_available() and torch.cuda.device_count() < 2, reason="needs 2 CUDA devices")
def test_two_gpus_train_like_one(tmp_path):
    """devices=2 spawns two nccl workers (the multi-GPU path of examples/data_parallel.py)."""
    df = seasonal_panel()
    params = dict(h=H, input_size=48, patch_len=4, d_model=32, dropout=0.0, max_epochs=2, batch_size=64,
                  accelerator="gpu", random_state=0)
    two = TransformerForecaster(devices=2, **params).fit(df)
    one = TransformerForecaster(**params).fit(df)
    for (name, a), b in zip(two.network_.state_dict().items(), one.network_.state_dict().values()):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-4, msg=name)
