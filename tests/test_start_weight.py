"""``start_weight``: a trained network's forecast combined with its statistical start's."""
from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

import tsrsa
from tsrsa.estimator.plan import SHORT_START_WEIGHT as AUTO_START_WEIGHT, SHORT_WINDOWS as AUTO_WINDOWS
from tsrsa.nn import zero_outputs


def frame(n: int = 240, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = np.sign(np.sin(np.arange(n) / 4)) + 0.05 * rng.standard_normal(n)  # a square wave: the start misses its edges
    return pd.DataFrame({"unique_id": "a", "ds": pd.date_range("2020-01-01", periods=n, freq="h"), "y": y})


#: a fit that trains away from its start: no validation, so the last epoch's weights are kept
TRAINED = dict(h=6, input_size=24, val_size=0, max_epochs=3, random_state=0, trainer={"num_threads": 1})


def forecasts(model) -> np.ndarray:
    return model.predict()["yhat"].to_numpy()


@pytest.mark.parametrize("cls, options", [
    (tsrsa.DLinearForecaster, {"ensemble_size": 2}),
    (tsrsa.TransformerForecaster, {"d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32}),
    (tsrsa.LSTMForecaster, {"hidden_size": 8, "n_layers": 1, "covariates": {"past": ["x"]}}),
])
@pytest.mark.parametrize("weight", [0.25, 1.0])
def test_the_forecast_is_the_weighted_mean_of_the_start_and_the_trained_network(cls, options, weight):
    df = frame()
    if "covariates" in options:
        df = df.assign(x=np.cos(np.arange(len(df)) / 7))
    network = cls(**TRAINED, **options, start={"weight": 0.0}).fit(df)
    blended = cls(**TRAINED, **options, start={"weight": weight}).fit(df)
    alone = copy.deepcopy(network)  # the network's output layers at zero: its start
    zero_outputs(alone.network_)
    trained, start = forecasts(network), forecasts(alone)
    assert np.abs(trained - start).max() > 1e-3  # the network did move away from its start
    np.testing.assert_allclose(forecasts(blended), weight * start + (1 - weight) * trained, atol=1e-5)
    assert blended.start_["start_weight"] == weight and network.start_["start_weight"] == 0.0


def test_auto_weighs_the_start_on_a_short_series_at_the_automatic_budget_only():
    df = frame(160)
    short = tsrsa.DLinearForecaster(h=6, input_size=24, val_size=12, random_state=0, trainer={"num_threads": 1},
                                    ensemble_size=1).fit(df)
    assert short.n_train_windows_ < AUTO_WINDOWS
    assert short.start_["start_weight"] == AUTO_START_WEIGHT
    budget = tsrsa.DLinearForecaster(**TRAINED).fit(df)  # a number of epochs: the network as trained
    assert budget.start_["start_weight"] == 0.0
    quantile = tsrsa.DLinearForecaster(h=6, input_size=24, val_size=12, random_state=0, trainer={"num_threads": 1},
                                       ensemble_size=1, loss="quantile").fit(df)
    assert quantile.start_["start_weight"] == 0.0  # its levels' spread lives in the correction


def test_auto_on_many_windows_keeps_the_network(monkeypatch):
    monkeypatch.setattr("tsrsa.estimator.plan.SHORT_WINDOWS", 50)  # what a long series would have
    model = tsrsa.DLinearForecaster(h=6, input_size=24, val_size=12, random_state=0, trainer={"num_threads": 1},
                                    ensemble_size=1).fit(frame(160))
    assert model.n_train_windows_ >= 50 and model.start_["start_weight"] == 0.0


def test_without_a_start_nothing_is_weighed():
    model = tsrsa.DLinearForecaster(**TRAINED, start={"kind": None, "weight": 0.5}).fit(frame())
    assert model.start_ is None


def test_save_load_and_fine_tune_keep_the_combination(tmp_path):
    df = frame()
    model = tsrsa.DLinearForecaster(**TRAINED, start={"weight": 0.5}).fit(df)
    model.save(tmp_path / "m")
    loaded = tsrsa.load(tmp_path / "m")
    np.testing.assert_allclose(forecasts(loaded), forecasts(model), atol=1e-6)
    assert loaded.start_["start_weight"] == 0.5
    tuned = copy.deepcopy(model).fine_tune(df, max_epochs=1, learning_rate=1e-12)  # steps too small to move
    np.testing.assert_allclose(forecasts(tuned), forecasts(model), atol=1e-6)  # not weighed a second time
    assert tuned.start_["start_weight"] == 0.5


@pytest.mark.parametrize("value, error, match", [
    ("half", ValueError, 'use "auto" or a number in \\[0, 1\\]'),
    (1.5, ValueError, "<= 1.0"),
    (-0.1, ValueError, ">= 0.0"),
    (True, TypeError, "must be a number"),
    (float("nan"), ValueError, "finite"),
])
def test_bad_weights_are_refused_before_anything_is_fitted(value, error, match):
    model = tsrsa.DLinearForecaster(**TRAINED, start={"weight": value})
    with pytest.raises(error, match=match):
        model.fit(frame())
    assert not hasattr(model, "network_") and model.start["weight"] is value


def test_a_quantile_head_refuses_a_weight():
    model = tsrsa.DLinearForecaster(**TRAINED, loss="quantile", start={"weight": 0.3})
    with pytest.raises(ValueError, match=r"start=Start\(weight=0\)"):
        model.fit(frame())
    assert not hasattr(model, "network_")
