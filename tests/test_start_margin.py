"""The margin by which a trained network must beat its statistical start on validation to replace it."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import tsrsa
from tsrsa.nn.losses import PointLoss, QuantileLoss
from tsrsa.training.start_margin import edge

from test_statistical_start import ar2  # the AR(2) cycle of the start's tests


def series(y: np.ndarray) -> pd.Series:
    return pd.Series(y, index=pd.date_range("2020-01-01", periods=len(y), freq="D"))


# ---------------------------------------------------------------------- the statistic, in float64
def test_edge_is_the_mean_difference_over_its_newey_west_error():
    rng = np.random.default_rng(0)
    start = rng.gamma(2.0, size=80)
    network = start - 0.1 + np.convolve(rng.standard_normal(85), np.ones(6) / 6, mode="valid")  # overlapping windows
    lag = 5
    d = network - start
    e, n = d - d.mean(), len(d)
    gamma = [e[k:] @ e[: n - k] / n for k in range(lag + 1)]
    variance = (gamma[0] + 2 * sum((1 - k / (lag + 1)) * gamma[k] for k in range(1, lag + 1))) / n  # Bartlett
    assert edge(network, start, lag) == pytest.approx(-d.mean() / np.sqrt(variance), rel=1e-12)
    assert edge(start, network, lag) == pytest.approx(-edge(network, start, lag), rel=1e-12)


def test_edge_of_equal_and_of_uniformly_better_losses():
    losses = np.linspace(1.0, 2.0, 30)
    assert edge(losses, losses, 3) == 0.0
    assert edge(losses - 0.5, losses, 3) == np.inf  # better in every window by the same amount
    assert edge(losses + 0.5, losses, 3) == -np.inf


@pytest.mark.parametrize("loss", [PointLoss("mse"), PointLoss("mae"), PointLoss("huber"),
                                  QuantileLoss([0.1, 0.5, 0.9])], ids=["mse", "mae", "huber", "quantile"])
def test_per_window_losses_average_to_the_loss(loss):
    generator = torch.Generator().manual_seed(0)
    q = 3 if isinstance(loss, QuantileLoss) else 1
    pred, target = torch.randn(7, 5, q, generator=generator) * 2, torch.randn(7, 5, generator=generator)
    per_window = loss.per_window(pred, target)
    assert per_window.shape == (7,)
    torch.testing.assert_close(per_window.mean(), loss(pred, target))
    torch.testing.assert_close(per_window[2], loss(pred[2:3], target[2:3]))


# ---------------------------------------------------------------------- in a fit
def fitted(margin: float, **options) -> tsrsa.DLinearForecaster:
    return tsrsa.DLinearForecaster(h=6, input_size=24, start={"kind": "ets", "margin": margin}, val_size=60,
                                   max_epochs=5, random_state=0,
                                   **options).fit(series(ar2()))


def test_the_network_replaces_the_start_only_beyond_the_margin():
    record = fitted(1e6)  # the start always, its edge recorded
    measured = record.start_["edge"]
    assert record.best_epoch_ == 0 and 0 < measured < 1e6
    replaced, kept = fitted(measured - 0.01), fitted(measured + 0.01)
    assert replaced.best_epoch_ >= 1 and kept.best_epoch_ == 0
    assert replaced.start_["edge"] == kept.start_["edge"] == measured
    pd.testing.assert_frame_equal(kept.predict(), record.predict())  # back at the start's weights
    assert not np.allclose(replaced.predict()["yhat"], kept.predict()["yhat"])
    untrained = tsrsa.DLinearForecaster(h=6, input_size=24, start={"kind": "ets", "margin": 0.0}, val_size=60,
                                        max_epochs=1, learning_rate=1e-12,
                                        random_state=0).fit(series(ar2()))
    np.testing.assert_allclose(kept.predict()["yhat"], untrained.predict()["yhat"], rtol=1e-5)


def test_margin_zero_keeps_the_best_epoch_and_tests_nothing():
    plain = fitted(0.0)
    assert plain.best_epoch_ >= 1 and "edge" not in plain.start_
    assert tsrsa.DLinearForecaster(h=6).resolved_start.margin == 0.0  # the default: the best epoch


def test_the_edge_is_saved_with_the_model(tmp_path):
    model = fitted(1e6)
    model.save(tmp_path / "model")
    assert tsrsa.load(tmp_path / "model").start_["edge"] == model.start_["edge"]


@pytest.mark.parametrize("value, error", [(-1.0, ValueError), (float("inf"), ValueError), ("2", TypeError)])
def test_start_margin_refusals_name_it(value, error):
    model = tsrsa.DLinearForecaster(h=6, input_size=24, start={"margin": value}, max_epochs=1)
    with pytest.raises(error, match="Start: margin"):
        model.fit(series(ar2(200)))
    assert not hasattr(model, "network_")
