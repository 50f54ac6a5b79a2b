"""The training loop: early stopping, best-weight restore, NaN handling, schedules, seeding."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from tsrsa.data.windows import training_windows
from tsrsa.training import (
    TrainingConfig, WindowLoader, resolve_device, resolve_devices, resolve_seed, seeded, torch_threads,
    train_network,
)
from tsrsa.training.loop import make_optimizer, make_scheduler, parameter_groups

CPU = torch.device("cpu")


class Linear(nn.Module):
    def __init__(self, L=4, h=2):
        super().__init__()
        self.lin = nn.Linear(L, h)

    def forward(self, x):
        return self.lin(x)[..., None]  # (B, h, 1)


def loader(n=40, L=4, h=2, batch_size=8, shuffle=True):
    values = np.sin(np.arange(n, dtype=np.float32) / 3)
    windows = training_windows(values, np.array([0, n]), np.array([n]), L, h)
    return WindowLoader(windows, batch_size, shuffle=shuffle, device=CPU)


class ScriptedLoss(nn.Module):
    """MSE plus a scripted offset per epoch; records the weights at each validation pass."""

    def __init__(self, network, train_offsets, val_offsets):
        super().__init__()
        self.network, self.train_offsets, self.val_offsets = network, train_offsets, val_offsets
        self.epoch_train, self.epoch_val, self.weights_at_val = 0, 0, []
        self._last_grad = True

    def forward(self, pred, target):
        base = ((pred[..., 0] - target) ** 2).mean()
        if torch.is_grad_enabled():
            if not self._last_grad:
                self.epoch_train += 1
            self._last_grad = True
            return base + self.train_offsets[min(self.epoch_train, len(self.train_offsets) - 1)]
        if self._last_grad:
            self.weights_at_val.append(self.network.lin.weight.detach().clone())
            self.epoch_val += 1
        self._last_grad = False
        return base * 0 + self.val_offsets[self.epoch_val - 1]


def test_early_stopping_restores_the_best_epoch():
    torch.manual_seed(0)
    net = Linear()
    loss = ScriptedLoss(net, [0.0], [3.0, 2.0, 2.5, 2.6, 2.7, 2.8])
    config = TrainingConfig(max_epochs=6, early_stopping_patience=2, learning_rate=0.05)
    result = train_network(net, loss, loader(), loader(shuffle=False), config, device=CPU,
                           rng=np.random.default_rng(0))
    assert [r["val_loss"] for r in result.history] == pytest.approx([3.0, 2.0, 2.5, 2.6])
    assert result.stopped_early and result.best_epoch == 2
    torch.testing.assert_close(net.lin.weight, loss.weights_at_val[1])
    assert not net.training


@pytest.mark.parametrize("schedule, stop", [("onecycle", 6), (None, 4), ("cosine", 4), ("halving", 4)])
def test_patience_is_not_spent_while_the_one_cycle_rate_rises(schedule, stop):
    torch.manual_seed(0)
    net = Linear()
    loss = ScriptedLoss(net, [0.0], [1.0] + [2.0] * 9)  # the first epoch is the best, nothing after it
    config = TrainingConfig(max_epochs=10, early_stopping_patience=3, learning_rate=0.05, lr_schedule=schedule)
    result = train_network(net, loss, loader(), loader(shuffle=False), config, device=CPU,
                           rng=np.random.default_rng(0))
    # one-cycle over 10 epochs rises in the first ceil(0.3 * 10) = 3: epochs 2 and 3 spend no patience
    assert len(result.history) == stop and result.stopped_early and result.best_epoch == 1
    torch.testing.assert_close(net.lin.weight, loss.weights_at_val[0])


def test_warmup_epochs_are_the_rising_part_of_one_cycle_only():
    from tsrsa.training.budget import warmup_epochs

    assert [warmup_epochs(e, "onecycle") for e in (1, 10, 14, 100)] == \
        [1, 3, 5, 30]
    assert {warmup_epochs(10, s) for s in ("cosine", "halving", None)} == {0}


def test_nan_loss_raises_and_keeps_best_weights():
    torch.manual_seed(0)
    net = Linear()
    loss = ScriptedLoss(net, [0.0, 0.0, math.nan], [1.0, 0.5, 0.4])
    with pytest.raises(FloatingPointError, match="training loss became nan in epoch 3.*epoch 2") as info:
        train_network(net, loss, loader(), loader(shuffle=False), TrainingConfig(max_epochs=5), device=CPU,
                      rng=np.random.default_rng(0))
    assert len(info.value.training_result.history) == 2
    torch.testing.assert_close(net.lin.weight, loss.weights_at_val[1])


def test_epoch_callback_sees_each_record_and_can_stop_training():
    torch.manual_seed(0)
    net = Linear()
    seen = []

    def callback(record):
        seen.append(record)
        record["val_loss"] = -1.0  # a copy: the history keeps its own
        if record["epoch"] == 2:
            raise KeyboardInterrupt("stop")

    loss = ScriptedLoss(net, [0.0], [3.0, 2.0, 1.0, 0.5])
    with pytest.raises(KeyboardInterrupt):
        train_network(net, loss, loader(), loader(shuffle=False), TrainingConfig(max_epochs=4), device=CPU,
                      rng=np.random.default_rng(0), on_epoch_end=callback)
    assert [r["epoch"] for r in seen] == [1, 2] and loss.epoch_val == 2  # epochs 3 and 4 never ran
    assert set(seen[0]) == {"epoch", "train_loss", "val_loss", "learning_rate", "seconds"}
    result = train_network(net, loss, loader(), loader(shuffle=False), TrainingConfig(max_epochs=2), device=CPU,
                           rng=np.random.default_rng(0), on_epoch_end=lambda r: r.update(val_loss=-1.0))
    assert all(r["val_loss"] > 0 for r in result.history)


def test_without_validation_last_weights_are_kept():
    torch.manual_seed(0)
    net = Linear()
    result = train_network(net, _mse, loader(), None,
                           TrainingConfig(max_epochs=3, learning_rate=0.1), device=CPU,
                           rng=np.random.default_rng(0))
    assert result.best_epoch == 3 and len(result.history) == 3
    assert all(math.isnan(r["val_loss"]) for r in result.history)
    assert result.history[-1]["train_loss"] < result.history[0]["train_loss"]


def _mse(pred, target):
    return ((pred[..., 0] - target) ** 2).mean()


@pytest.mark.parametrize("schedule,check", [
    ("cosine", lambda lrs: lrs[-1] < 1e-4 and lrs[0] > lrs[-1]),
    ("onecycle", lambda lrs: max(lrs) > lrs[0] and lrs[-1] < lrs[0]),
    ("halving", lambda lrs: lrs == pytest.approx([0.01 * 0.5 ** k for k in range(1, 7)], rel=1e-12)),
    (None, lambda lrs: len(set(lrs)) == 1),
])
def test_learning_rate_schedules(schedule, check):
    net = Linear()
    result = train_network(net, _mse, loader(), None,
                           TrainingConfig(max_epochs=6, learning_rate=0.01, lr_schedule=schedule),
                           device=CPU, rng=np.random.default_rng(0))
    assert check([r["learning_rate"] for r in result.history])


class WithRecurrence(nn.Module):
    """A linear map plus two scalars that the module offers as a named parameter group."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 2)
        self.decay = nn.Parameter(torch.tensor([0.5, 0.25]))

    def parameter_groups(self):
        return {"recurrence": [self.decay]}

    def forward(self, x):
        return (self.lin(x) * self.decay.sum())[..., None]


def test_a_named_group_takes_its_own_rate_without_weight_decay():
    net = WithRecurrence()
    assert len(parameter_groups(net, TrainingConfig())) == 1  # no options of their own: one group
    with pytest.raises(ValueError, match="does not offer"):
        parameter_groups(net, TrainingConfig(group_options={"gates": {"lr": 0.1}}))
    config = TrainingConfig(learning_rate=1e-3, weight_decay=0.1,
                            group_options={"recurrence": {"lr": 0.05, "weight_decay": 0.0}})
    groups = parameter_groups(net, config)
    assert [len(g["params"]) for g in groups] == [2, 1] and groups[1]["params"][0] is net.decay
    optimizer = make_optimizer(net, config)
    before = {name: p.detach().clone() for name, p in net.named_parameters()}
    x = torch.randn(8, 4)
    _mse(net(x), torch.randn(8, 2)).backward()
    optimizer.step()
    # AdamW's first step moves each weight by its group's rate (times the sign of its gradient),
    # after decoupled decay of lr * weight_decay * w, which the recurrence group does not have
    torch.testing.assert_close((net.decay - before["decay"]).abs(), torch.full((2,), 0.05), rtol=1e-4, atol=0)
    decayed = before["lin.weight"] * (1 - 1e-3 * 0.1)
    torch.testing.assert_close((net.lin.weight - decayed).abs(), torch.full((2, 4), 1e-3), rtol=1e-3, atol=0)


def test_onecycle_peaks_each_group_at_its_own_rate():
    config = TrainingConfig(max_epochs=2, learning_rate=0.01, group_options={"recurrence": {"lr": 0.1}},
                            lr_schedule="onecycle")
    optimizer = make_optimizer(WithRecurrence(), config)
    scheduler = make_scheduler(optimizer, config, steps_per_epoch=10)
    rates = []
    for _ in range(20):
        rates.append([group["lr"] for group in optimizer.param_groups])
        optimizer.step()
        scheduler.step()
    peaks = np.max(rates, axis=0)
    np.testing.assert_allclose(peaks, [0.01, 0.1], rtol=0.05)  # each group's own peak
    np.testing.assert_allclose(np.array(rates)[:, 1] / np.array(rates)[:, 0], 10.0)  # one shape, scaled


def test_bf16_mixed_precision_on_cpu():
    net = Linear()
    result = train_network(net, _mse, loader(), None, TrainingConfig(max_epochs=2, precision="bf16-mixed"),
                           device=CPU, rng=np.random.default_rng(0))
    assert all(math.isfinite(r["train_loss"]) for r in result.history)


def test_seeded_is_repeatable_and_restores_global_state():
    before = torch.get_rng_state().clone()
    with seeded(7) as rng:
        a = (torch.randn(3), rng.permutation(10))
    with seeded(7) as rng:
        b = (torch.randn(3), rng.permutation(10))
    assert torch.equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert torch.equal(torch.get_rng_state(), before)
    assert resolve_seed(5) == 5 and resolve_seed(None) != resolve_seed(None)
    with pytest.raises(TypeError):
        resolve_seed("seed")


def test_threads_are_restored():
    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_device_resolution():
    assert resolve_device("cpu") == CPU
    assert resolve_device("auto").type in ("cpu", "cuda")
    assert resolve_devices("cpu", 2) == [CPU, CPU]
    with pytest.raises(ValueError, match="names no device"):
        resolve_device("cpu", 0)
    with pytest.raises(ValueError, match="distinct non-negative"):
        resolve_device("cpu", [0, 0])
    with pytest.raises(ValueError, match="accelerator='tpu'"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA device"):
            resolve_device("gpu")


def test_loader_covers_every_window_once():
    data = loader(n=30, batch_size=7)
    seen = np.concatenate([x[:, 0].numpy() for x, _ in data.iterate(np.random.default_rng(1))])
    assert len(data) == math.ceil(data.n_windows / 7)
    np.testing.assert_allclose(np.sort(seen), np.sort(np.sin(np.arange(data.n_windows, dtype=np.float32) / 3)))


@pytest.mark.parametrize("precision", ["bf16-mixed", "16-mixed"])
def test_lstm_trains_in_mixed_precision_on_cpu(precision):
    """oneDNN has no reduced-precision LSTM on most CPUs: the recurrence runs in float32."""
    from tsrsa import LSTMForecaster

    from conftest import make_panel

    model = LSTMForecaster(h=4, input_size=8, hidden_size=8, n_layers=1, max_epochs=1, random_state=0,
                           trainer={"precision": precision, "accelerator": "cpu", "num_threads": 1}).fit(make_panel())
    assert np.isfinite(model.predict()["yhat"]).all()


def test_compile_trains_through_torch_compile_and_keeps_a_plain_network(monkeypatch, tmp_path):
    import tsrsa
    from tsrsa import TransformerForecaster

    from conftest import make_panel

    calls = []
    original = torch.compile

    def spy(module, **kwargs):
        calls.append((type(module).__name__, kwargs))
        return original(module, **kwargs)

    params = dict(h=4, input_size=8, patch_len=2, d_model=8, n_heads=2, n_layers=1, d_ff=16, dropout=0.0,
                  max_epochs=2, batch_size=16, random_state=3)
    df = make_panel(length=48)
    plain = TransformerForecaster(**params, trainer={"accelerator": "cpu", "num_threads": 1}).fit(df)
    monkeypatch.setattr(torch, "compile", spy)
    compiled = TransformerForecaster(**params, trainer={"accelerator": "cpu", "num_threads": 1, "compile": "eager"}
                                     ).fit(df)  # dynamo's tracing, no code generation
    assert calls == [("ForecastingTransformer", {"backend": "eager"})]
    assert type(compiled.network_).__name__ == "ForecastingTransformer"  # predictions run the plain network
    for name, value in plain.network_.state_dict().items():
        torch.testing.assert_close(compiled.network_.state_dict()[name], value, rtol=0, atol=1e-6, msg=name)
    compiled.save(tmp_path / "m")
    np.testing.assert_allclose(tsrsa.load(tmp_path / "m").predict()["yhat"], plain.predict()["yhat"], rtol=1e-5)


@pytest.mark.parametrize("value,error,match", [
    (1, TypeError, "compile must be True, False or the name"), ("no_backend", ValueError, "names no torch.compile"),
])
def test_compile_is_checked(value, error, match):
    from tsrsa import LSTMForecaster

    from conftest import make_panel

    model = LSTMForecaster(h=4, input_size=8, trainer={"compile": value})
    with pytest.raises(error, match=match):
        model.fit(make_panel())
    assert not hasattr(model, "network_")
