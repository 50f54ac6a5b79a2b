"""The learned cycle (CycleNet's residual cycle): its equations in float64, the step numbers it reads its
phase from, and a forecaster fitted with it through every path that forecasts (predict, update,
predict(df=...), cross-validation, save/load) and its refusals."""
from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

import tsrsa
from tests.conftest import serve_without_torch
from tsrsa.data.frequency import Frequency
from tsrsa.nn.covariates import CovariateBatch
from tsrsa.nn.cycle import RecurrentCycle
from tsrsa.nn.dlinear import DLinearConfig, DLinearNetwork
from tsrsa.nn.lstm import LSTMConfig, LSTMNetwork


def paper_cycle(table: np.ndarray, series: np.ndarray, phase: np.ndarray, offset: int, length: int) -> np.ndarray:
    """c_i = Q_s[(p + offset + i) mod W], the mean row for s = -1, one value at a time."""
    W = table.shape[1]
    out = np.empty((len(series), length))
    for b, (s, p) in enumerate(zip(series, phase)):
        row = table.mean(axis=0) if s < 0 else table[s]
        for i in range(length):
            out[b, i] = row[(p + offset + i) % W]
    return out


def test_the_cycle_is_the_table_read_at_each_steps_phase_in_float64():
    rng = np.random.default_rng(0)
    cycle = RecurrentCycle(3, 7).double()
    with torch.no_grad():
        cycle.table.copy_(torch.from_numpy(rng.normal(size=(3, 7))))
    series, phase = np.array([0, 2, -1, 1]), np.array([0, 6, 3, 12345])
    where = torch.from_numpy(np.stack([series, phase], axis=1))
    for offset, length in ((0, 10), (10, 4), (3, 1)):
        got = cycle(where, offset, length).detach().numpy()
        np.testing.assert_allclose(got, paper_cycle(cycle.table.detach().numpy(), series, phase, offset, length),
                                   rtol=0, atol=1e-15)


def test_a_new_cycle_is_zero_and_refuses_a_period_below_two():
    assert torch.count_nonzero(RecurrentCycle(2, 24).table) == 0
    with pytest.raises(ValueError, match="period of 2 steps or more"):
        RecurrentCycle(2, 1)


def batch_of(x, series, phase):
    return CovariateBatch(x, None, None, None, None, torch.from_numpy(np.stack([series, phase], axis=1)))


def test_dlinear_forecasts_the_window_without_its_cycle_plus_the_cycle_ahead():
    """y = f(x - c[0:L]) + c[L:L+h] (Eq. 2-4 of the paper; DLinear reads the window unnormalised)."""
    torch.manual_seed(0)
    L, h, W = 12, 5, 4
    with_cycle = DLinearNetwork(DLinearConfig(input_size=L, h=h, kernel_size=3, cycle=(2, W))).double()
    plain = DLinearNetwork(DLinearConfig(input_size=L, h=h, kernel_size=3)).double()
    plain.load_state_dict({k: v for k, v in with_cycle.state_dict().items() if not k.startswith("cycle.")})
    rng = np.random.default_rng(1)
    with torch.no_grad():
        with_cycle.cycle.table.copy_(torch.from_numpy(rng.normal(size=(2, W))))
    x = torch.from_numpy(rng.normal(size=(3, L)))
    series, phase = np.array([1, 0, -1]), np.array([5, 2, 0])
    table = with_cycle.cycle.table.detach().numpy()
    c_in = torch.from_numpy(paper_cycle(table, series, phase, 0, L))
    c_out = paper_cycle(table, series, phase, L, h)
    expected = plain(x - c_in).detach().numpy()[..., 0] + c_out
    got = with_cycle(batch_of(x, series, phase)).detach().numpy()[..., 0]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


def test_a_revin_network_removes_and_adds_the_cycle_between_its_normalisation_and_its_inverse():
    """With RevIN (LSTM): y = denorm(f(norm(x) - c[0:L]) + c[L:L+h]), the cycle in normalised units, as
    CycleNet's reference applies it inside its instance normalisation."""
    torch.manual_seed(0)
    L, h, W = 8, 3, 5
    network = LSTMNetwork(LSTMConfig(input_size=L, h=h, hidden_size=8, n_layers=1, cycle=(1, W))).double().eval()
    rng = np.random.default_rng(2)
    with torch.no_grad():
        network.cycle.table.copy_(torch.from_numpy(rng.normal(size=(1, W))))
        network.revin.weight.fill_(1.3)
        network.revin.bias.fill_(0.2)
    x = torch.from_numpy(rng.normal(size=(2, L)) * 3 + 10)
    series, phase = np.array([0, -1]), np.array([4, 7])
    table = network.cycle.table.detach().numpy()
    c_in = torch.from_numpy(paper_cycle(table, series, phase, 0, L))
    c_out = torch.from_numpy(paper_cycle(table, series, phase, L, h))
    normalised, stats = network.revin.normalise(x)
    _, (h_n, _) = network.lstm((normalised - c_in)[:, :, None])  # f: one value per LSTM step
    f = network.head(h_n[-1])  # (B, h)
    expected = network.revin.denormalise((f + c_out)[..., None], stats)[..., 0]
    got = network(batch_of(x, series, phase))[..., 0]
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=0, atol=1e-12)


def test_a_network_called_with_bare_windows_reads_no_cycle():
    network = DLinearNetwork(DLinearConfig(input_size=6, h=2, kernel_size=3, cycle=(1, 3)))
    with torch.no_grad():
        network.cycle.table.fill_(5.0)
    x = torch.randn(2, 6)
    plain = DLinearNetwork(DLinearConfig(input_size=6, h=2, kernel_size=3))
    plain.load_state_dict({k: v for k, v in network.state_dict().items() if not k.startswith("cycle.")})
    torch.testing.assert_close(network(x), plain(x))


# ---------------------------------------------------------------------- step numbers
@pytest.mark.parametrize("alias, start", [("h", "2016-07-01 05:00"), ("15min", "2019-03-31 23:45"),
                                          ("D", "1999-12-30"), ("W-SUN", "2020-01-05"), ("MS", "1998-11-01"),
                                          ("QS-FEB", "2001-02-01"), ("YS", "1990-01-01"), ("B", "2016-11-03"),
                                          ("ME", "2003-01-31")])
def test_consecutive_steps_have_consecutive_numbers_and_a_timestamp_always_the_same(alias, start):
    freq = Frequency(alias)
    times = pd.date_range(start, periods=40, freq=alias)
    numbers = freq.ordinals(times)
    np.testing.assert_array_equal(np.diff(numbers), np.ones(39))
    np.testing.assert_array_equal(freq.ordinals(times[17:23]), numbers[17:23])  # read alone: the same numbers


def test_step_numbers_of_fixed_steps_count_from_1970_and_integer_time_by_its_step():
    assert Frequency("h").ordinals(pd.DatetimeIndex(["1970-01-02 03:00"]))[0] == 27
    assert Frequency("D").ordinals(pd.DatetimeIndex(["1969-12-31"]))[0] == -1
    np.testing.assert_array_equal(Frequency(None, 3).ordinals([0, 3, 6, 9]), [0, 1, 2, 3])
    np.testing.assert_array_equal(Frequency("MS").ordinals(pd.DatetimeIndex(["2000-01-01", "2000-12-01"])) % 12,
                                  [0, 11])


def test_business_days_before_1900_are_refused():
    with pytest.raises(ValueError, match="before 1900"):
        Frequency("B").ordinals(pd.DatetimeIndex(["1899-12-29"]))


# ---------------------------------------------------------------------- the forecaster
def daily_panel(n_series=3, length=240, start="2024-01-01", seed=0):
    rng = np.random.default_rng(seed)
    frames = []
    for k in range(n_series):
        t = np.arange(length)
        y = 5 + k + 2 * np.sin(2 * np.pi * (t + 3 * k) / 24) + 0.1 * rng.standard_normal(length)
        frames.append(pd.DataFrame({"unique_id": f"s{k}", "ds": pd.date_range(start, periods=length, freq="h"),
                                    "y": y}))
    return pd.concat(frames, ignore_index=True)


@pytest.fixture(scope="module")
def cycled():
    df = daily_panel()
    model = tsrsa.DLinearForecaster(h=6, input_size=24, max_epochs=3, random_state=0,
                                    covariates={"cycle": "auto"}).fit(df)
    return model, df


def test_auto_takes_the_period_the_seasonal_estimate_finds_and_the_table_learns(cycled):
    model, df = cycled
    assert model.cycle_["period"] == 24
    assert model.network_.config.cycle == (3, 24)
    assert float(model.network_.cycle.table.detach().abs().max()) > 0  # trained away from zero


def test_the_forecast_reads_the_same_phase_on_every_path(cycled, tmp_path):
    model, df = cycled
    history, last = df.groupby("unique_id").head(200), df.groupby("unique_id").tail(40)
    fitted = model.predict()
    pd.testing.assert_frame_equal(model.predict(df=df), fitted)
    # the fitted state's forecasts after given positions (cross-validation's and scoring's) and predict(df=...)
    panel = model.to_panel(df, fitted=True)
    after = model.forecast_cutoffs(panel, np.array([[200, 233]] * 3), 6)["yhat"]  # (2 * 3, 6) window-major
    for k, n in enumerate((201, 234)):
        before = model.predict(df=df.groupby("unique_id").head(n))["yhat"].to_numpy().reshape(3, 6)
        np.testing.assert_allclose(after[3 * k:3 * k + 3], before, rtol=1e-6)
    # update: a model fitted on the first 200 steps, given the rest, forecasts as predict(df=the whole frame)
    early = tsrsa.DLinearForecaster(h=6, input_size=24, max_epochs=2, random_state=0,
                                    covariates={"cycle": 24}).fit(history)
    expected = early.predict(df=df)
    np.testing.assert_allclose(early.update(last).predict()["yhat"], expected["yhat"], rtol=1e-6)
    model.save(tmp_path / "m")
    pd.testing.assert_frame_equal(tsrsa.load(tmp_path / "m").predict(), fitted)


def test_the_phase_matters_and_a_new_series_reads_the_mean_row(cycled):
    model, df = cycled
    one = df[df["unique_id"] == "s0"]
    shifted = one.assign(ds=one["ds"] + pd.Timedelta(hours=6))  # the same values six hours later: other phases
    assert not np.allclose(model.predict(df=one)["yhat"], model.predict(df=shifted)["yhat"])
    new = one.assign(unique_id="new")
    table = model.network_.cycle.table.detach()
    with torch.no_grad():  # with every row equal to the mean row, a new series forecasts as s0
        saved = table.clone()
        model.network_.cycle.table.copy_(table.mean(dim=0, keepdim=True).expand_as(table))
        try:
            np.testing.assert_allclose(model.predict(df=new)["yhat"], model.predict(df=one)["yhat"], rtol=1e-6)
        finally:
            model.network_.cycle.table.copy_(saved)


def test_the_default_carries_no_cycle(small_budget):
    model = tsrsa.DLinearForecaster(h=6).fit(daily_panel(n_series=1, length=120))
    assert model.cycle_ is None and model.network_.cycle is None and model.network_.config.cycle is None


@pytest.mark.parametrize("params, match", [
    ({"covariates": {"cycle": 24}, "stream": True}, "needs fixed windows"),
    ({"covariates": {"cycle": 24}, "loss": "normal"}, "point or quantile forecast"),
    ({"covariates": {"cycle": "weekly"}}, "is not supported"),
    ({"covariates": {"cycle": 1}}, ">= 2"),
    ({"covariates": {"cycle": 500}}, "longer than the shortest training part"),
])
def test_refusals_name_the_fix(params, match):
    df = daily_panel(n_series=1, length=200)
    cls = tsrsa.RSAForecaster if "stream" in params else tsrsa.DLinearForecaster
    model = cls(h=6, input_size=24, max_epochs=1, **params)
    with pytest.raises(ValueError, match=match):
        model.fit(df)
    assert not hasattr(model, "network_")  # a rejected fit changes no state


@pytest.mark.slow  # a torch.onnx export
def test_the_served_model_reads_the_same_phases(cycled, tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    model, df = cycled
    model.to_onnx(tmp_path / "m.onnx")
    served = tsrsa.load_onnx(tmp_path / "m.onnx")
    np.testing.assert_allclose(served.predict()["yhat"], model.predict()["yhat"], rtol=1e-5, atol=1e-6)
    other = df[df["unique_id"] == "s1"].assign(unique_id="new")  # a new series: the mean row
    np.testing.assert_allclose(served.predict(df=other)["yhat"], model.predict(df=other)["yhat"], rtol=1e-5,
                               atol=1e-6)
    with pytest.raises(ValueError, match=r"reads the covariate inputs \['cycle'\]"):
        served.forecast_arrays(model.memory_.tails, model.memory_.loc, model.memory_.scale)
    last = df.groupby("unique_id").tail(30).assign(ds=lambda f: f["ds"] + pd.Timedelta(hours=30))
    last.to_pickle(tmp_path / "next.pkl")  # the next 30 steps of each series (shifted copies: real values)
    done = serve_without_torch(tmp_path, """
        served.update(pd.read_pickle(sys.argv[2])).predict().to_pickle(sys.argv[3])
        """, tmp_path / "m.onnx", tmp_path / "next.pkl", tmp_path / "after.pkl")
    assert done.returncode == 0, done.stderr
    updated = copy.deepcopy(model).update(last)
    np.testing.assert_allclose(pd.read_pickle(tmp_path / "after.pkl")["yhat"], updated.predict()["yhat"],
                               rtol=1e-5, atol=1e-6)


def test_dataclass_configs_default_to_no_cycle():
    for config in (DLinearConfig(), LSTMConfig()):
        assert dataclasses.asdict(config)["cycle"] is None
