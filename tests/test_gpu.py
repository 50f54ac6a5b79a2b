"""GPU fits: every forecaster and every sequence-mixing kind on CUDA, each precision near a CPU fit's
accuracy, the saved model loading on the CPU, streaming updates, and the data-parallel code on one GPU.

Every test here is marked ``gpu``; tests/conftest.py skips them where torch sees no CUDA device. The
layer-level checks of every kind on CUDA (float64 against the CPU, autocast against float32, the
recurrent form) are in tests/test_attention_kinds.py.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import os
import socket
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch

import tsrsa
from tsrsa import DLinearForecaster, LSTMForecaster, RSAForecaster, Trainer, TransformerForecaster
from tsrsa.nn import attention_kinds, get_attention

pytestmark = pytest.mark.gpu

H = 12
PATCHED = dict(h=H, input_size=48, patch_len=4, d_model=32)
MODELS = {
    "DLinear": lambda **kw: DLinearForecaster(h=H, input_size=48, **kw),
    "LSTM": lambda **kw: LSTMForecaster(h=H, input_size=48, hidden_size=32, **kw),
    "Transformer": lambda **kw: TransformerForecaster(**PATCHED, **kw),
    "RSA": lambda **kw: RSAForecaster(**PATCHED, **kw),
    # every other sequence-mixing kind, in the Transformer's slot
    **{f"Transformer-{kind}": functools.partial(TransformerForecaster, **PATCHED, attention=kind)
       for kind in attention_kinds() if kind not in ("softmax", "rsa")},
}
STREAMING_KINDS = [kind for kind in attention_kinds() if get_attention(kind).recurrent]


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


COMMON = dict(max_epochs=15, batch_size=64, random_state=0)


@functools.cache
def _cpu_mae(name: str) -> float:
    """The test MAE of the CPU fit, once per model (every precision compares with it)."""
    df = seasonal_panel()
    test = df.groupby("unique_id").tail(H)
    train = df.drop(test.index)
    return _mae(MODELS[name](trainer=Trainer(accelerator="cpu"), **COMMON).fit(train), train, test)


@pytest.mark.parametrize("precision", ["32", "bf16-mixed", "16-mixed"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_gpu_fit_matches_cpu_accuracy_and_loads_on_cpu(name, precision, tmp_path):
    df = seasonal_panel()
    test = df.groupby("unique_id").tail(H)
    train = df.drop(test.index)
    gpu = MODELS[name](trainer=Trainer(accelerator="gpu", precision=precision), **COMMON).fit(train)
    assert next(gpu.network_.parameters()).is_cuda
    mae_cpu, mae_gpu = _cpu_mae(name), _mae(gpu, train, test)
    assert mae_gpu <= 1.25 * mae_cpu + 0.05, (mae_cpu, mae_gpu)  # noise level 0.1, cycle amplitude 1
    gpu.save(tmp_path / "m")
    loaded = tsrsa.load(tmp_path / "m")
    assert all(p.device.type == "cpu" for p in loaded.network_.parameters())
    tolerance = 2e-3 if precision == "32" else 5e-2  # cuDNN may use TF32; mixed: reduced precision
    np.testing.assert_allclose(loaded.predict()["yhat"], gpu.predict()["yhat"], rtol=tolerance, atol=tolerance)


#: the distribution losses (tsrsa.nn.distributions), on every fixed-window network and the streaming one
DISTRIBUTION_LOSSES = ["normal", "student_t", "negative_binomial"]


@pytest.mark.parametrize("precision", ["32", "bf16-mixed", "16-mixed"])
@pytest.mark.parametrize("loss", DISTRIBUTION_LOSSES)
@pytest.mark.parametrize("name", ["DLinear", "LSTM", "Transformer", "RSA-stream"])
def test_gpu_distribution_losses_fit_sample_and_load_on_cpu(name, loss, precision, tmp_path):
    df = seasonal_panel()
    options = {}
    if loss == "negative_binomial":  # counts around the series' level
        df = df.assign(y=np.random.default_rng(1).poisson(df["y"].clip(lower=0)).astype(float))
        options["scaler"] = None
    make = (functools.partial(RSAForecaster, **PATCHED, stream=True) if name == "RSA-stream" else MODELS[name])
    gpu = make(trainer=Trainer(accelerator="gpu", precision=precision), loss=loss, quantiles=[0.1, 0.9], max_epochs=3,
               batch_size=64, random_state=0, **options).fit(df)
    assert next(gpu.network_.parameters()).is_cuda and np.isfinite(gpu.fit_history_["train_loss"]).all()
    fc = gpu.predict()
    assert np.isfinite(fc[["yhat", "yhat_q10", "yhat_q90"]].to_numpy()).all()
    assert (fc["yhat_q10"] <= fc["yhat_q90"]).all()
    paths = gpu.sample(50, random_state=0)
    assert len(paths) == 4 * 50 * H and np.isfinite(paths["yhat"]).all()
    gpu.save(tmp_path / "m")
    loaded = tsrsa.load(tmp_path / "m")
    assert all(p.device.type == "cpu" for p in loaded.network_.parameters())
    tolerance = 2e-3 if precision == "32" else 5e-2
    np.testing.assert_allclose(loaded.predict()["yhat"], fc["yhat"], rtol=tolerance, atol=tolerance)


@pytest.mark.skipif(torch.cuda.is_available() and torch.cuda.device_count() < 2, reason="needs 2 CUDA devices")
def test_two_gpus_train_like_one(tmp_path):
    """devices=2 spawns two nccl workers (the multi-GPU path of examples/data_parallel.py)."""
    df = seasonal_panel()
    params = dict(h=H, input_size=48, patch_len=4, d_model=32, dropout=0.0, max_epochs=2, batch_size=64,
                  random_state=0)
    two = TransformerForecaster(trainer=Trainer(accelerator="gpu", devices=2), **params).fit(df)
    params["trainer"] = Trainer(accelerator="gpu")
    one = TransformerForecaster(**params).fit(df)
    for (name, a), b in zip(two.network_.state_dict().items(), one.network_.state_dict().values()):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-4, msg=name)


@pytest.mark.parametrize("kind", STREAMING_KINDS)
def test_a_streaming_model_updates_on_cuda_as_it_recomputes_and_loads_on_the_cpu(kind, tmp_path):
    full = seasonal_panel(length=240)
    head = full.groupby("unique_id").head(200)
    new = full.drop(head.index).groupby("unique_id").head(23)  # five whole tokens and a partial patch
    model = TransformerForecaster(**PATCHED, attention=kind, stream=True, max_epochs=2, batch_size=64,
                                  random_state=0, trainer=Trainer(accelerator="gpu")).fit(head)
    assert next(model.network_.parameters()).is_cuda  # the state is carried on the CPU between calls
    assert all(v.device.type == "cpu" for group in model.memory_.groups for v in group.state.tensors().values())
    updated = copy.deepcopy(model).update(new)
    recomputed = model.predict(df=pd.concat([head, new]))
    np.testing.assert_allclose(updated.predict()["yhat"], recomputed["yhat"], rtol=1e-4, atol=1e-4)
    updated.save(tmp_path / "m")
    loaded = tsrsa.load(tmp_path / "m")
    assert all(p.device.type == "cpu" for p in loaded.network_.parameters())
    np.testing.assert_allclose(loaded.predict()["yhat"], updated.predict()["yhat"], rtol=1e-4, atol=1e-4)


# dropout off, so that the two fits differ only in the code they take
ONE_GPU = dict(**PATCHED, dropout=0.0, max_epochs=2, batch_size=64, val_size=H, trainer=Trainer(accelerator="gpu"),
               random_state=0)


def one_gpu(strategy: str) -> dict:
    """ONE_GPU with the trainer's ``strategy``."""
    return {**ONE_GPU, "trainer": dataclasses.replace(ONE_GPU["trainer"], strategy=strategy)}


def test_ddp_spawn_on_one_gpu_runs_nccl_ddp_and_takes_the_steps_of_a_plain_fit():
    df = seasonal_panel()
    plain = TransformerForecaster(**ONE_GPU).fit(df)
    spawned = TransformerForecaster(**one_gpu("ddp_spawn")).fit(df)  # a worker, nccl, DDP
    assert next(spawned.network_.parameters()).is_cuda
    for name, value in plain.network_.state_dict().items():
        torch.testing.assert_close(spawned.network_.state_dict()[name].cpu(), value.cpu(), rtol=0, atol=1e-5, msg=name)
    np.testing.assert_allclose(spawned.fit_history_["val_loss"], plain.fit_history_["val_loss"], rtol=1e-5)


TORCHRUN_SCRIPT = """
import sys, torch
sys.path.insert(0, {tests!r})
from test_gpu import one_gpu, seasonal_panel
from tsrsa import TransformerForecaster
model = TransformerForecaster(**one_gpu("ddp")).fit(seasonal_panel())
torch.save({{"state": model.network_.state_dict(), "backend": torch.distributed.get_backend(),
            "world": torch.distributed.get_world_size()}}, "rank0.pt")
"""


def test_a_torchrun_launch_of_one_gpu_joins_with_nccl_and_takes_the_steps_of_a_plain_fit(tmp_path):
    script = tmp_path / "launch.py"
    script.write_text(TORCHRUN_SCRIPT.format(tests=os.path.dirname(os.path.abspath(__file__))))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=1",
                          f"--master-port={port}", str(script)], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    outcome = torch.load(tmp_path / "rank0.pt", weights_only=True)
    assert (outcome["backend"], outcome["world"]) == ("nccl", 1)
    plain = TransformerForecaster(**ONE_GPU).fit(seasonal_panel())
    for name, value in plain.network_.state_dict().items():
        torch.testing.assert_close(outcome["state"][name].cpu(), value.cpu(), rtol=0, atol=1e-5, msg=name)


@pytest.mark.parametrize("name", ["RSA", "Transformer"])
def test_compiled_training_on_cuda_follows_eager_training(name):
    df = seasonal_panel()
    params = dict(dropout=0.0, max_epochs=3, batch_size=64, random_state=0)
    eager = MODELS[name](**params, trainer=Trainer(accelerator="gpu")).fit(df)
    compiled = MODELS[name](**params, trainer=Trainer(accelerator="gpu", compile=True)).fit(df)  # inductor: generated kernels
    assert type(compiled.network_) is type(eager.network_)
    np.testing.assert_allclose(compiled.predict()["yhat"], eager.predict()["yhat"], rtol=1e-2, atol=1e-2)
