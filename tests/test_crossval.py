"""Rolling-origin cross-validation: layout, no leakage past a cutoff, refits, batched scoring."""
from __future__ import annotations

import numpy as np
import pytest

import tsrsa
from tsrsa import LSTMForecaster, SeasonalNaiveForecaster

from conftest import make_panel


def test_layout_and_values_of_the_seasonal_naive():
    df = make_panel(n_series=2, length=40)
    model = SeasonalNaiveForecaster(h=4, season_length=6)
    cv = model.cross_validate(df, n_windows=3, step_size=2)
    assert list(cv.columns) == ["unique_id", "ds", "cutoff", "step", "y", "yhat"]
    assert len(cv) == 2 * 3 * 4 and not hasattr(model, "memory_")  # the estimator is left as it was
    s0 = df[df["unique_id"] == "s0"].reset_index(drop=True)
    for k, cutoff in enumerate([40 - 4 - 1 - 4, 40 - 4 - 1 - 2, 40 - 4 - 1]):
        rows = cv[(cv["unique_id"] == "s0") & (cv["cutoff"] == s0.loc[cutoff, "ds"])]
        assert rows["step"].tolist() == [1, 2, 3, 4]
        assert rows["ds"].tolist() == s0.loc[cutoff + 1 : cutoff + 4, "ds"].tolist()
        np.testing.assert_allclose(rows["y"], s0.loc[cutoff + 1 : cutoff + 4, "y"])
        np.testing.assert_allclose(rows["yhat"], s0.loc[cutoff - 5 : cutoff - 2, "y"])  # one season back


def test_user_column_names_and_integer_time():
    df = make_panel(n_series=2, length=30)
    df = df.assign(ds=df.groupby("unique_id").cumcount()).rename(columns={"unique_id": "id", "ds": "t", "y": "v"})
    cv = SeasonalNaiveForecaster(h=3, season_length=5, id_col="id", time_col="t", target_col="v").cross_validate(
        df, n_windows=2)
    assert list(cv.columns) == ["id", "t", "cutoff", "step", "v", "yhat"]
    assert sorted(cv["cutoff"].unique()) == [23, 26]


@pytest.mark.parametrize("refit", [False, True, 2])
def test_no_leakage_past_each_cutoff(refit):
    df = make_panel(n_series=2, length=60)
    model = LSTMForecaster(h=4, input_size=8, hidden_size=8, n_layers=1, max_epochs=1, random_state=0)
    cv = model.cross_validate(df, n_windows=3, refit=refit)
    last_cutoff = cv["cutoff"].max()
    changed = df.copy()
    changed.loc[changed["ds"] > last_cutoff, "y"] += 100.0  # the future of the last cutoff only
    cv2 = model.cross_validate(changed, n_windows=3, refit=refit)
    np.testing.assert_allclose(cv2["yhat"], cv["yhat"])
    assert not np.allclose(cv2["y"], cv["y"])


def test_without_refit_one_model_scores_every_cutoff_like_predict():
    df = make_panel(n_series=3, length=60)
    model = LSTMForecaster(h=4, input_size=8, hidden_size=8, n_layers=1, max_epochs=1, random_state=0)
    cv = model.cross_validate(df, n_windows=2, step_size=3)
    earliest = cv["cutoff"].min()
    fitted = model.clone().fit(df[df["ds"] <= earliest])
    later = cv[cv["cutoff"] == cv["cutoff"].max()]
    expected = fitted.predict(df=df[df["ds"] <= cv["cutoff"].max()])
    np.testing.assert_allclose(later["yhat"].to_numpy(), expected["yhat"].to_numpy(), rtol=1e-6)


def test_quantile_columns_and_evaluate():
    df = make_panel(n_series=2, length=50)
    model = LSTMForecaster(h=4, input_size=8, hidden_size=8, n_layers=1, max_epochs=1, loss="quantile",
                           quantiles=[0.1, 0.9], random_state=0)
    cv = model.cross_validate(df, n_windows=2)
    assert {"yhat", "yhat_q10", "yhat_q90"} <= set(cv.columns)
    assert (cv["yhat_q10"] <= cv["yhat"]).all() and (cv["yhat"] <= cv["yhat_q90"]).all()
    by_step = tsrsa.evaluate(cv, ["mae", "pinball"], by="step")
    assert by_step["step"].tolist() == [1, 2, 3, 4] and (by_step["pinball"] > 0).all()


@pytest.mark.parametrize("name", ["LSTMForecaster", "TransformerForecaster", "RSAForecaster", "DLinearForecaster"])
def test_quantiles_never_cross_on_every_neural_forecaster(name):
    cls = getattr(tsrsa, name)
    small = {"DLinearForecaster": {}, "LSTMForecaster": {"hidden_size": 8, "n_layers": 1, "patch_len": 2}}.get(
        name, {"d_model": 8, "n_heads": 4, "n_layers": 1, "d_ff": 8, "patch_len": 2})
    # one epoch at a high learning rate: the raw outputs are far from ordered
    model = cls(h=4, input_size=8, loss="quantile", quantiles=[0.9, 0.25, 0.1], max_epochs=1, batch_size=64, learning_rate=0.5,
                random_state=0, **small).fit(make_panel(n_series=2, length=40))
    raw = model._network_forecast(model.memory_.tails, model.memory_.loc, model.memory_.scale)
    forecast = model.predict()
    columns = ["yhat_q10", "yhat_q25", "yhat", "yhat_q90"]
    assert [c for c in forecast.columns if c.startswith("yhat")] == ["yhat", "yhat_q10", "yhat_q25", "yhat_q90"]
    ordered = forecast[columns].to_numpy()
    assert (np.diff(ordered, axis=1) >= 0).all()
    np.testing.assert_allclose(ordered, np.sort(raw.reshape(-1, 4), axis=1), rtol=1e-5)
    assert (np.diff(raw.reshape(-1, 4), axis=1) < 0).any()  # the raw outputs did cross


def test_errors():
    df = make_panel(n_series=2, length=20)
    with pytest.raises(ValueError, match="cross_validate needs at least 30"):
        SeasonalNaiveForecaster(h=4, season_length=6).cross_validate(df, n_windows=6)
    with pytest.raises(ValueError, match="n_windows=0"):
        SeasonalNaiveForecaster(h=4, season_length=6).cross_validate(df, n_windows=0)
    with pytest.raises(TypeError, match="refit"):
        SeasonalNaiveForecaster(h=4, season_length=6).cross_validate(df, refit="yes")
