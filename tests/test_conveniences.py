"""fitted(), make_future_frame() and fine_tune(): the conveniences users of the peers expect.

Tiny models (one or two epochs): these check what the calls return and refuse, not accuracy.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.exceptions import NotFittedError

import tsrsa
from tsrsa import DLinearForecaster, LSTMForecaster, TransformerForecaster

from conftest import make_panel

H = 4
TINY = dict(h=H, input_size=8, max_epochs=1, batch_size=32, random_state=0)


def renamed(df):
    return df.rename(columns={"unique_id": "item", "ds": "t", "y": "sales"})


@pytest.fixture(scope="module")
def dlinear():
    return DLinearForecaster(kernel_size=3, loss="quantile", id_col="item", time_col="t", target_col="sales",
                             **TINY).fit(renamed(make_panel()))


# ---------------------------------------------------------------------- fitted
def test_fitted_rows_columns_and_residuals(dlinear):
    df = renamed(make_panel())
    out = dlinear.fitted()
    assert list(out.columns) == ["item", "t", "sales", "yhat", "residual", "yhat_q10", "yhat_q90"]
    lengths = df.groupby("item").size()
    assert len(out) == int((lengths - 8).sum())  # the first input_size steps have no fitted value
    first = out.groupby("item")["t"].min()
    pd.testing.assert_series_equal(first, df.groupby("item")["t"].nth(8).set_axis(first.index), check_names=False)
    merged = out.merge(df, on=["item", "t"], suffixes=("", "_actual"))
    np.testing.assert_array_equal(merged["sales"], merged["sales_actual"])
    np.testing.assert_allclose(out["residual"], out["sales"] - out["yhat"])
    assert out["item"].dtype == df["item"].dtype


@pytest.mark.parametrize("step", [1, 3])
def test_fitted_value_is_the_forecast_made_step_steps_before(dlinear, step):
    df = renamed(make_panel())
    out = dlinear.fitted(step=step)
    assert len(out) == 3 * (40 - 8 - step + 1)
    series = df[df["item"] == "s2"]
    for cut in (7, 20, 40 - step - 1):  # the first, a middle and the last origin
        forecast = dlinear.predict(df=series.iloc[: cut + 1])
        at = forecast["t"].iloc[step - 1]
        row = out[(out["item"] == "s2") & (out["t"] == at)]
        np.testing.assert_allclose(row["yhat"].to_numpy(), forecast["yhat"].iloc[step - 1], rtol=1e-6)


def test_fitted_on_other_frames_and_after_loading(dlinear, tmp_path):
    df = renamed(make_panel())
    new = df.assign(item=df["item"].map({"s0": "x", "s1": "y", "s2": "z"}))
    other = dlinear.fitted(df=new)
    assert sorted(other["item"].unique()) == ["x", "y", "z"]
    np.testing.assert_allclose(other["yhat"], dlinear.fitted()["yhat"], rtol=1e-6)  # same data, own statistics
    dlinear.save(tmp_path / "m")
    loaded = tsrsa.load(tmp_path / "m")
    with pytest.raises(ValueError, match=r"holds no training data.*fitted\(df=\.\.\.\)"):
        loaded.fitted()
    pd.testing.assert_frame_equal(loaded.fitted(df=df), dlinear.fitted())


def test_fitted_refusals(dlinear):
    with pytest.raises(ValueError, match="step=5 is above the horizon"):
        dlinear.fitted(step=5)
    with pytest.raises(ValueError, match="step=0 must be >= 1"):
        dlinear.fitted(step=0)
    with pytest.raises(TypeError, match="step must be an int"):
        dlinear.fitted(step=1.5)
    with pytest.raises(NotFittedError):
        DLinearForecaster(h=H).fitted()


# ---------------------------------------------------------------------- make_future_frame
def driven(length=60):
    rng = np.random.default_rng(0)
    df = make_panel(n_series=2, length=length)
    return df.assign(promo=(rng.random(len(df)) < 0.3).astype(float))


@pytest.mark.parametrize("known_future", ["readout", "tokens"])
def test_future_frame_is_what_predict_reads(known_future):
    df = driven()
    model = TransformerForecaster(d_model=8, n_heads=2, n_layers=1, d_ff=8, patch_len=4,
                                  covariates={"future": ["promo"], "calendar": ["hour_of_day"]},
                                  known_future=known_future, **TINY).fit(df)
    frame = model.make_future_frame(2)
    rows = H if known_future == "tokens" else 2  # decoder tokens read the whole trained horizon
    assert list(frame.columns) == ["unique_id", "ds", "promo"] and frame["promo"].isna().all()
    assert len(frame) == 2 * rows
    last = df.groupby("unique_id")["ds"].max()
    assert (frame.groupby("unique_id")["ds"].min() == last + pd.Timedelta(hours=1)).all()
    with pytest.raises(ValueError, match="future_df's covariate 'promo' is missing"):
        model.predict(2, future_df=frame)
    filled = frame.assign(promo=1.0)
    by_hand = frame[["unique_id", "ds"]].assign(promo=1.0)
    pd.testing.assert_frame_equal(model.predict(2, future_df=filled), model.predict(2, future_df=by_hand))
    other = df.assign(unique_id="n" + df["unique_id"])
    assert set(model.make_future_frame(df=other)["unique_id"]) == {"ns0", "ns1"}


def test_future_frame_without_future_covariates(dlinear):
    frame = dlinear.make_future_frame()
    assert list(frame.columns) == ["item", "t"] and len(frame) == 3 * H
    pd.testing.assert_frame_equal(frame, dlinear.predict()[["item", "t"]])
    with pytest.raises(ValueError, match="above the horizon"):
        dlinear.make_future_frame(H + 1)


# ---------------------------------------------------------------------- fine_tune
def test_fine_tune_continues_from_the_weights_and_keeps_what_it_documents():
    df = make_panel(length=60)
    head, tail = df.groupby("unique_id").head(40), df.groupby("unique_id").tail(24)
    model = LSTMForecaster(hidden_size=4, n_layers=1, **TINY).fit(head)
    params, loc, scale = model.get_params(), model.memory_.loc.copy(), model.memory_.scale.copy()
    weights = {k: v.clone() for k, v in model.network_.state_dict().items()}
    before = tail.copy()
    new = tail.assign(unique_id=tail["unique_id"].replace({"s2": "fresh"}))
    assert model.fine_tune(new, max_epochs=2, learning_rate=1e-2) is model
    pd.testing.assert_frame_equal(tail, before)
    assert model.get_params() == params
    assert len(model.fit_history_) == 2 and model.max_epochs_ == 2
    where = model.memory_.ids.get_indexer(["s0", "s1", "fresh"])
    assert (where >= 0).all() and len(model.memory_.ids) == 3
    np.testing.assert_array_equal(model.memory_.loc[where[:2]], loc[:2])  # known series keep their statistics
    np.testing.assert_array_equal(model.memory_.scale[where[:2]], scale[:2])
    assert model.memory_.loc[where[2]] != loc[2]  # a new id gets its own
    assert any(not torch.equal(weights[k], v) for k, v in model.network_.state_dict().items())
    assert model.predict()["ds"].min() == tail["ds"].max() + pd.Timedelta(hours=1)
    # one epoch at learning rate 0 changes nothing: training starts from the fitted weights
    frozen = LSTMForecaster(hidden_size=4, n_layers=1, weight_decay=0.0, **TINY).fit(head)
    expected = frozen.predict(df=tail)
    frozen.fine_tune(tail, max_epochs=1, learning_rate=1e-30)
    np.testing.assert_allclose(frozen.predict()["yhat"], expected["yhat"], rtol=1e-6)


def test_fine_tune_refusals_change_nothing():
    df = make_panel()
    with pytest.raises(NotFittedError, match=r"not fitted yet: call fit\(df\) first"):
        LSTMForecaster(**TINY).fine_tune(df)
    model = LSTMForecaster(hidden_size=4, n_layers=1, **TINY).fit(df)
    before, state = model.predict(), dict(vars(model))
    for kwargs, error, message in [
        (dict(max_epochs=0), ValueError, "max_epochs=0 must be >= 1"),
        (dict(learning_rate=-1.0), ValueError, "learning_rate=-1.0 must be > 0"),
    ]:
        with pytest.raises(error, match=message):
            model.fine_tune(df, **kwargs)
    with pytest.raises(ValueError, match="series 's0' has 5 observations but needs at least 12"):
        model.fine_tune(df.groupby("unique_id").tail(5))
    with pytest.raises(ValueError, match="frequency 'D', but the model was fitted on 'h'"):
        model.fine_tune(make_panel(freq="D"))
    assert dict(vars(model)).keys() == state.keys() and all(vars(model)[k] is v for k, v in state.items())
    pd.testing.assert_frame_equal(model.predict(), before)
