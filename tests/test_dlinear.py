"""DLinear: the moving-average decomposition and the two linear maps, checked by hand."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from conftest import make_panel
from tsrsa.nn import DLinearConfig, DLinearNetwork, MovingAverage


def _moving_average_by_hand(x: np.ndarray, k: int) -> np.ndarray:
    front, back = (k - 1) // 2, k - 1 - (k - 1) // 2
    padded = np.concatenate([np.repeat(x[:1], front), x, np.repeat(x[-1:], back)])
    return np.array([padded[i : i + k].mean() for i in range(len(x))])


@pytest.mark.parametrize("k", [1, 3, 4, 25])
def test_moving_average_pads_with_the_edge_values(k):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 20))
    got = MovingAverage(k)(torch.tensor(x)).numpy()
    assert got.shape == x.shape
    for row, out in zip(x, got):
        np.testing.assert_allclose(out, _moving_average_by_hand(row, k), rtol=1e-12, atol=1e-12)


def test_moving_average_keeps_a_constant_and_a_line_inside():
    x = torch.full((2, 10), 3.0)
    torch.testing.assert_close(MovingAverage(5)(x), x)
    line = torch.arange(10.0)[None, :]
    trend = MovingAverage(3)(line)
    torch.testing.assert_close(trend[:, 1:-1], line[:, 1:-1])  # exact away from the padded ends
    assert trend[0, 0] == pytest.approx(1 / 3)  # (0 + 0 + 1) / 3: the first value repeated


def test_trend_plus_remainder_is_the_input():
    net = DLinearNetwork(DLinearConfig(input_size=24, h=6, kernel_size=7))
    x = torch.randn(5, 24)
    trend, remainder = net.decompose(x)
    torch.testing.assert_close(trend + remainder, x)
    torch.testing.assert_close(trend, MovingAverage(7)(x))


def test_output_is_the_sum_of_the_two_linear_maps():
    torch.manual_seed(0)
    config = DLinearConfig(input_size=16, h=4, kernel_size=5, n_outputs=2)
    net = DLinearNetwork(config)
    with torch.no_grad():  # distinct random weights, so that swapping the maps would show
        for p in net.parameters():
            p.normal_()
    x = torch.randn(3, 16, dtype=torch.float64)
    net = net.double()
    x_np = x.numpy()
    trend = np.stack([_moving_average_by_hand(row, 5) for row in x_np])
    remainder = x_np - trend
    Wt, bt = net.trend_map.weight.detach().numpy(), net.trend_map.bias.detach().numpy()
    Wr, br = net.remainder_map.weight.detach().numpy(), net.remainder_map.bias.detach().numpy()
    expected = (trend @ Wt.T + bt) + (remainder @ Wr.T + br)  # (B, h * Q)
    got = net(x).detach().numpy()
    assert got.shape == (3, 4, 2)
    np.testing.assert_allclose(got.reshape(3, 8), expected, rtol=1e-10)


def test_initial_weights_average_the_window():
    net = DLinearNetwork(DLinearConfig(input_size=12, h=3))
    for linear in (net.trend_map, net.remainder_map):
        torch.testing.assert_close(linear.weight, torch.full((3, 12), 1 / 12))


def test_forecaster_is_channel_independent_and_exported():
    import tsrsa
    from tsrsa import DLinearForecaster
    from tsrsa.forecasters import FORECASTERS

    assert DLinearForecaster in FORECASTERS and tsrsa.DLinearForecaster is DLinearForecaster
    model = DLinearForecaster(h=3, input_size=12, kernel_size=5)
    assert "patch_len" not in model.get_params()
    with pytest.raises(ValueError, match="kernel_size=0 must be >= 1"):
        DLinearForecaster(h=3, input_size=12, kernel_size=0).fit(make_panel())
    # one set of weights for every series: the parameter count does not grow with the series
    net = DLinearNetwork(DLinearConfig(input_size=12, h=3))
    assert sum(p.numel() for p in net.parameters()) == 2 * (12 * 3 + 3)
