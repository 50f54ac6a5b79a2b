"""Covariates: the three kinds, calendar features, validation, and everything else still working with them."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import clone

import tsrsa
from tsrsa import DLinearForecaster, LSTMForecaster, RSAForecaster, TransformerForecaster
from tsrsa.nn.covariates import CovariateBatch, CovariateInput

SMALL = dict(input_size=24, d_model=8, n_heads=2, n_layers=1, d_ff=16, max_epochs=3, random_state=0)


def driven(n_series: int = 2, length: int = 240, seed: int = 0) -> pd.DataFrame:
    """Series driven by a 0/1 offer known in advance: y jumps by 3 when it is on."""
    rng = np.random.default_rng(seed)
    frames = []
    for k in range(n_series):
        promo = (rng.random(length) < 0.25).astype(float)
        t = np.arange(length)
        y = 0.3 * np.sin(2 * np.pi * t / 12) + 3.0 * promo + 0.05 * rng.standard_normal(length)
        frames.append(pd.DataFrame({
            "unique_id": f"s{k}", "ds": pd.date_range("2024-01-01", periods=length, freq="h"), "y": y + k,
            "promo": promo, "load": np.cos(t / 5.0) + k, "region": "north" if k == 0 else "south",
            "kind": np.where(t % 3 == 0, "a", "b"),
        }))
    return pd.concat(frames, ignore_index=True)


def split(df: pd.DataFrame, h: int):
    history = df.groupby("unique_id").head(len(df) // df["unique_id"].nunique() - h)
    future = df.groupby("unique_id").tail(h)
    return history.reset_index(drop=True), future.reset_index(drop=True)


@pytest.fixture(scope="module")
def data():
    return split(driven(), 12)


@pytest.fixture(scope="module")
def fitted(data):
    history, _ = data
    model = TransformerForecaster(h=12, covariates={"past": ["load", "kind"], "future": ["promo"],
                                                    "static": ["region", "unique_id"], "calendar": "auto"},
                                  **SMALL)
    return model.fit(history)


# ---------------------------------------------------------------------- what a covariate buys
@pytest.mark.parametrize("cls,stream", [(TransformerForecaster, False), (DLinearForecaster, False),
                                        (LSTMForecaster, False), (RSAForecaster, False), (RSAForecaster, True)])
def test_a_known_future_driver_is_read_and_moves_the_forecast(cls, stream, data):
    history, future = data
    kw = dict(h=12, input_size=24, max_epochs=8, random_state=0, learning_rate=3e-3, loss="mse", lr_schedule=None,
              start=None)  # what the network reads from the driver, with no statistical forecast beside it
    if cls in (TransformerForecaster, RSAForecaster):
        kw.update(d_model=16, n_heads=4, n_layers=1, d_ff=32, stream=stream)
    without = cls(**kw).fit(history[["unique_id", "ds", "y"]])
    model = cls(covariates={"future": ["promo"]}, **kw).fit(history)
    truth = future["y"].to_numpy()
    err_without = np.mean((without.predict()["yhat"].to_numpy() - truth) ** 2)
    err_with = np.mean((model.predict(future_df=future)["yhat"].to_numpy() - truth) ** 2)
    assert err_with < 0.2 * err_without
    on = model.predict(future_df=future.assign(promo=1.0))["yhat"].to_numpy()
    off = model.predict(future_df=future.assign(promo=0.0))["yhat"].to_numpy()
    assert 2.5 < np.mean(on - off) < 3.5  # the true effect is 3


def test_horizon_step_j_reads_the_covariates_of_step_j_only():
    torch.manual_seed(0)
    layer = CovariateInput({"n_past": 2, "n_future": 3, "n_static": 1, "cardinalities": [4]}, d_model=8,
                           patch_len=4, h=5, n_outputs=2)
    future = torch.randn(3, 5, 3)
    batch = CovariateBatch(torch.randn(3, 12), torch.randn(3, 12, 2), future, torch.randn(3, 1),
                           torch.tensor([[0], [1], [3]]))
    context = torch.randn(3, 8)
    base = layer.forecast(batch, context)
    moved = future.clone()
    moved[:, 2] += 1.0
    changed = layer.forecast(batch._replace(future=moved), context)
    differs = (changed - base).abs().amax(dim=(0, 2))  # (h,)
    assert differs[2] > 0 and torch.all(differs[[0, 1, 3, 4]] == 0)
    assert layer.tokens(batch).shape == (3, 3, 8)  # three tokens of four steps


def test_fewer_steps_need_fewer_future_rows(fitted, data):
    _, future = data
    full = fitted.predict(future_df=future)
    first = future.groupby("unique_id").head(4)
    short = fitted.predict(4, future_df=first)
    np.testing.assert_allclose(short["yhat"], full.groupby("unique_id").head(4)["yhat"], rtol=1e-6)


# ---------------------------------------------------------------------- the estimator contract
def test_covariates_are_parameters(fitted):
    params = fitted.get_params()
    assert params["covariates"]["past"] == ["load", "kind"] and params["covariates"]["calendar"] == "auto"
    copy = clone(fitted)
    assert copy.get_params()["covariates"]["future"] == ["promo"] and not hasattr(copy, "memory_")
    assert "covariates" in RSAForecaster(h=1).get_params()


def test_encoding_is_fitted_on_the_training_part_only(data):
    history, _ = data
    model = DLinearForecaster(h=12, input_size=24, max_epochs=1, val_size=24, covariates={"past": ["load"]},
                              start=None, random_state=0).fit(history)  # the encoding alone
    fit_part = history.groupby("unique_id").head(len(history) // 2 - 24)["load"]
    mean, spread = model.covariates_.numeric["load"]
    assert mean == pytest.approx(fit_part.mean()) and spread == pytest.approx(fit_part.std(ddof=0))


def test_layout_of_the_fitted_encoding(fitted):
    encoder = fitted.covariates_
    # hourly: hour of day, day of week, day of month, week and month of year, as sin/cos pairs
    assert encoder.calendar == [f"{n}_{p}" for n in ("hour_of_day", "day_of_week", "day_of_month", "week_of_year",
                                                      "month_of_year") for p in ("sin", "cos")]
    assert encoder.categories["kind"] == ["a", "b"] and encoder.categories["region"] == ["north", "south"]
    shape = fitted.network_.config.covariates
    assert shape == {"n_past": 1 + 2 + 1 + 10, "n_future": 1 + 10, "n_static": 0, "cardinalities": [3, 3],
                     "window_norm": [0, 3], "future_tokens": False}  # load and promo: the numeric channels


def test_nothing_the_user_passes_is_mutated(data):
    history, future = data
    before, future_before = history.copy(), future.copy()
    model = DLinearForecaster(h=12, input_size=24, max_epochs=1, covariates={"future": ["promo"], "past": ["kind"]},
                              random_state=0).fit(history)
    model.predict(future_df=future)
    model.update(future)
    pd.testing.assert_frame_equal(history, before)
    pd.testing.assert_frame_equal(future, future_before)


# ---------------------------------------------------------------------- validation
def test_declared_columns_must_exist(data):
    history, _ = data
    with pytest.raises(ValueError, match=r"missing the declared covariate column\(s\) \['price'\]"):
        DLinearForecaster(h=12, input_size=24, covariates={"past": ["price"]}).fit(history)


def test_a_covariate_must_be_numeric_or_categorical(data):
    history, _ = data
    with pytest.raises(TypeError, match="covariate 'when' has dtype datetime64"):
        DLinearForecaster(h=12, input_size=24, covariates={"past": ["when"]}).fit(history.assign(when=history["ds"]))


@pytest.mark.parametrize("params,match", [
    (dict(covariates={"past": ["load"], "future": ["load"]}), "declared in both"),
    (dict(covariates={"past": ["y"]}), "the target column"),
    (dict(covariates={"future": ["unique_id"]}), "only be a static covariate"),
    (dict(covariates={"calendar": "daily"}), "calendar='daily' must be"),
    (dict(covariates={"calendar": ["hour"]}), "unknown feature"),
    (dict(covariates={"unknown_categories": "drop"}), "unknown_categories='drop'"),
    (dict(covariates={"past": 5}), "must be a column name or a list"),
])
def test_bad_declarations_are_refused_at_fit(data, params, match):
    history, _ = data
    with pytest.raises((ValueError, TypeError), match=match):
        DLinearForecaster(h=12, input_size=24, **params).fit(history)


def test_nan_in_a_covariate_names_the_series_and_time_or_is_filled(data):
    history, _ = data
    holed = history.copy()
    holed.loc[5, "load"] = np.nan
    with pytest.raises(ValueError, match=r"covariate 'load' of series 's0' is missing .* at 2024-01-01 05:00:00"):
        DLinearForecaster(h=12, input_size=24, covariates={"past": ["load"]}).fit(holed)
    model = DLinearForecaster(h=12, input_size=24, covariates={"past": ["load"]}, fill="ffill", max_epochs=1).fit(holed)
    assert np.isfinite(model.predict()["yhat"]).all()


def test_a_missing_row_is_filled_in_the_covariates_too(data):
    history, _ = data
    gap = history.drop(index=[7]).reset_index(drop=True)
    with pytest.raises(ValueError, match="gap of 1 missing step"):
        DLinearForecaster(h=12, input_size=24, covariates={"past": ["load", "kind"]}).fit(gap)
    model = DLinearForecaster(h=12, input_size=24, covariates={"past": ["load", "kind"]}, fill="interpolate",
                              max_epochs=1).fit(gap)
    assert np.isfinite(model.predict()["yhat"]).all()


def test_future_df_must_cover_the_next_steps_and_may_hold_more(fitted, data):
    _, future = data
    with pytest.raises(ValueError, match=r"future_df has no row for \('s1', 2024-01-10 23:00:00\)"):
        fitted.predict(future_df=future.drop(index=[len(future) - 1]))
    extra = pd.concat([future, future.assign(ds=future["ds"] + pd.Timedelta(days=30))], ignore_index=True)
    extra = extra.sample(frac=1.0, random_state=0)  # any order
    pd.testing.assert_frame_equal(fitted.predict(future_df=extra), fitted.predict(future_df=future))
    with pytest.raises(ValueError, match=r"pass future_df= with their values for the next 12 step"):
        fitted.predict()
    with pytest.raises(ValueError, match="future_df is missing column"):
        fitted.predict(future_df=future.drop(columns=["promo"]))


def test_future_df_for_a_model_without_future_covariates_is_refused(data):
    history, future = data
    model = DLinearForecaster(h=12, input_size=24, max_epochs=1).fit(history)
    with pytest.raises(ValueError, match="declares no future covariates"):
        model.predict(future_df=future)


def test_a_static_value_must_not_change_within_a_series(data):
    history, _ = data
    changing = history.copy()
    changing.loc[3, "region"] = "east"
    with pytest.raises(ValueError, match=r"static covariate 'region' changes within series 's0' \('north', then 'east'\)"):
        DLinearForecaster(h=12, input_size=24, covariates={"static": ["region"]}).fit(changing)


def test_an_unseen_category_is_an_error_or_the_unknown_bucket(data):
    history, future = data
    new = history[history.unique_id == "s0"].assign(unique_id="s9", region="west")
    strict = DLinearForecaster(h=12, input_size=24, covariates={"static": ["region"]}, max_epochs=1,
                               random_state=0).fit(history)
    with pytest.raises(ValueError, match="covariate 'region' holds 'west', a category not seen in fit"):
        strict.predict(df=new)
    lenient = clone(strict).set_params(covariates__unknown_categories="unknown").fit(history)
    forecast = lenient.predict(df=new)
    assert list(forecast["unique_id"].unique()) == ["s9"] and np.isfinite(forecast["yhat"]).all()
    with pytest.raises(ValueError, match="covariate 'kind' holds 'c'"):
        DLinearForecaster(h=12, input_size=24, covariates={"future": ["kind"]}, max_epochs=1).fit(history) \
            .predict(future_df=future.assign(kind="c"))


def test_covariates_need_a_long_frame(data):
    history, _ = data
    wide = history.pivot(index="ds", columns="unique_id", values="y")
    with pytest.raises(ValueError, match="read from a long frame"):
        DLinearForecaster(h=12, input_size=24, covariates={"past": ["load"]}).fit(wide)


@pytest.fixture(scope="module")
def streaming(data):
    history, _ = data
    model = RSAForecaster(h=12, stream=True, covariates={"past": ["load", "kind"], "future": ["promo"],
                                                         "static": ["region"], "calendar": ["hour_of_day"]},
                          **{**SMALL, "n_heads": 4, "d_model": 16, "patch_len": 4})
    return model.fit(history)


def test_streaming_state_carries_the_covariates_through_update(streaming, data):
    history, future = data
    model = clone(streaming).fit(history)
    full = driven(length=260)
    new = full.groupby("unique_id").nth(list(range(228, 234)))  # six steps: a token and a partial patch
    after = full.groupby("unique_id").nth(list(range(234, 246)))
    model.update(new)
    assert set(model.memory_.pending) == {2}
    for group in model.memory_.groups:  # the partial patch's covariates wait in the typed state
        assert group.state.pending_covariates.shape[:2] == (len(group.rows), 2)
    updated = model.predict(future_df=after)
    direct = model.predict(df=pd.concat([history, new]), future_df=after)  # streamed from the first step
    np.testing.assert_allclose(updated["yhat"], direct["yhat"], rtol=1e-4, atol=1e-5)
    moved = model.predict(future_df=after.assign(promo=1.0 - after["promo"]))
    assert not np.allclose(moved["yhat"], updated["yhat"])


def test_streaming_forecasts_at_cutoffs_match_predict(streaming, data):
    history, future = data
    frame = pd.concat([history, future]).sort_values(["unique_id", "ds"]).reset_index(drop=True)
    panel = streaming.to_panel(frame, fitted=True)
    ends = np.array([[len(history) // 2 - 1 - 2], [len(history) // 2 - 1 - 2]])  # a partial patch of 2 steps
    at_cutoff = streaming.forecast_cutoffs(panel, ends, 12)["yhat"].ravel()
    short = history.groupby("unique_id").head(len(history) // 2 - 2)
    ahead = frame.groupby("unique_id").nth(list(range(len(history) // 2 - 2, len(history) // 2 + 10)))
    direct = streaming.predict(df=short, future_df=ahead)
    np.testing.assert_allclose(at_cutoff, direct["yhat"].to_numpy(), rtol=1e-4, atol=1e-5)


def test_streaming_with_covariates_saves_and_loads(streaming, data, tmp_path):
    _, future = data
    streaming.save(tmp_path / "stream")
    loaded = tsrsa.load(tmp_path / "stream")
    pd.testing.assert_frame_equal(loaded.predict(future_df=future), streaming.predict(future_df=future))


def test_calendar_needs_datetimes(data):
    history, _ = data
    integer = history.assign(ds=history.groupby("unique_id").cumcount())
    with pytest.raises(ValueError, match="calendar and holiday features need datetime timestamps"):
        DLinearForecaster(h=12, input_size=24, covariates={"calendar": "auto"}).fit(integer)


# ---------------------------------------------------------------------- everything else keeps working
def test_update_carries_the_covariates_like_a_refit_window(fitted, data):
    history, future = data
    model = clone(fitted)
    model.fit(history)
    before = {k: v.copy() for k, v in vars(model.memory_).items() if isinstance(v, np.ndarray)}
    with pytest.raises(ValueError, match="missing the declared covariate"):
        model.update(future.drop(columns=["load"]))
    for k, v in before.items():  # a rejected update changes nothing
        np.testing.assert_array_equal(getattr(model.memory_, k), v)
    model.update(future)
    after = driven(length=252).groupby("unique_id").tail(12)  # the 12 steps after the update
    direct = model.predict(df=pd.concat([history, future]), future_df=after)
    updated = model.predict(future_df=after)
    np.testing.assert_allclose(updated["yhat"], direct["yhat"], rtol=1e-5)


def test_forecasts_at_cutoffs_read_future_covariates_from_the_frame(fitted, data):
    history, future = data
    frame = pd.concat([history, future]).sort_values(["unique_id", "ds"]).reset_index(drop=True)
    panel = fitted.to_panel(frame, fitted=True)
    at_end = fitted.forecast_cutoffs(panel, np.full((2, 1), len(history) // 2 - 1), 12)["yhat"]  # (2, 12)
    direct = fitted.predict(df=history, future_df=future)
    np.testing.assert_allclose(at_end.ravel(), direct["yhat"].to_numpy(), rtol=1e-5)
    cv = fitted.cross_validate(frame, n_windows=2, step_size=12)
    assert len(cv) == 2 * 2 * 12 and np.isfinite(cv["yhat"]).all()


def test_save_and_load_keep_the_encoding(fitted, data, tmp_path):
    _, future = data
    fitted.save(tmp_path / "model")
    loaded = tsrsa.load(tmp_path / "model")
    pd.testing.assert_frame_equal(loaded.predict(future_df=future), fitted.predict(future_df=future))
    assert loaded.covariates_.categories == fitted.covariates_.categories


def test_quantiles_with_covariates(data):
    history, future = data
    model = DLinearForecaster(h=12, input_size=24, loss="quantile", quantiles=[0.1, 0.9], max_epochs=2,
                              covariates={"future": ["promo"], "static": ["unique_id"]}, random_state=0)
    forecast = model.fit(history).predict(future_df=future)
    assert (forecast["yhat_q10"] <= forecast["yhat"]).all() and (forecast["yhat"] <= forecast["yhat_q90"]).all()


def test_new_series_in_update_bring_their_covariates(fitted, data):
    history, future = data
    model = clone(fitted).set_params(covariates__unknown_categories="unknown").fit(history)
    newcomer = pd.concat([history, future])
    newcomer = newcomer[newcomer.unique_id == "s1"].assign(unique_id="s7")
    model.update(newcomer.iloc[:-12], new_ids="add")
    assert "s7" in list(model.memory_.ids)
    assert model.memory_.covariates.shape == (3, 24, fitted.covariates_.n_time)


@pytest.mark.parametrize("known_future", ["readout", "tokens"])
@pytest.mark.parametrize("kind", tsrsa.nn.attention_kinds())
def test_every_kind_of_the_slot_reads_covariates(kind, known_future, data):
    history, future = data
    model = TransformerForecaster(h=12, attention=kind,
                                  covariates={"past": ["load"], "future": ["promo"], "static": ["region"]},
                                  known_future=known_future,
                                  **{**SMALL, "n_heads": 4, "d_model": 16, "max_epochs": 1})
    forecast = model.fit(history).predict(future_df=future)
    moved = model.predict(future_df=future.assign(promo=1.0 - future["promo"]))
    assert np.isfinite(forecast["yhat"]).all() and not np.allclose(forecast["yhat"], moved["yhat"])


def test_decoder_tokens_read_the_whole_horizon(data):
    history, future = data
    model = TransformerForecaster(h=12, covariates={"future": ["promo"]}, known_future="tokens", **SMALL).fit(history)
    assert model.network_.config.covariates["future_tokens"] and model.network_.covariates.n_future_tokens == 3
    with pytest.raises(ValueError, match="needs the known-future covariates of the next 12 step"):
        model.predict(4, future_df=future.groupby("unique_id").head(4))
    full = model.predict(future_df=future)
    np.testing.assert_allclose(model.predict(4, future_df=future)["yhat"], full.groupby("unique_id").head(4)["yhat"])
    late = future.copy()
    late.loc[late.groupby("unique_id").tail(1).index, "promo"] = 1.0 - late["promo"]  # the last step's value only
    changed = model.predict(future_df=late)["yhat"].to_numpy().reshape(2, 12)
    assert not np.allclose(changed[:, 0], full["yhat"].to_numpy().reshape(2, 12)[:, 0])  # every step reads it
    with pytest.raises(ValueError, match="known_future='tokens' puts the horizon"):
        TransformerForecaster(h=12, stream=True, covariates={"future": ["promo"]}, known_future="tokens",
                              **SMALL).fit(history)
    with pytest.raises(ValueError, match="known_future"):
        TransformerForecaster(h=12, known_future="decoder", **SMALL).fit(history)


def test_tuning_cross_validates_with_the_covariates(data):
    history, _ = data
    model = DLinearForecaster(h=12, input_size=24, max_epochs=1, covariates={"future": ["promo"], "static": ["region"]},
                              random_state=0)
    result = tsrsa.tune(model, history, n_trials=1, n_windows=2)
    assert np.isfinite(result.best_score) and result.best_estimator.get_params()["covariates"]["future"] == ["promo"]



def test_window_normalised_covariates_ignore_a_level_shift_of_a_driver(data):
    history, _ = data
    shifted = history.assign(load=history["load"] + 5.0)  # the driver moves to a level fit never saw
    common = dict(h=12, input_size=24, max_epochs=2, random_state=0)
    window = DLinearForecaster(covariates={"past": ["load"]}, **common).fit(history)
    fit = DLinearForecaster(covariates={"norm": "fit", "past": ["load"]}, **common).fit(history)
    assert window.network_.config.covariates["window_norm"] == [0] and fit.network_.config.covariates["window_norm"] == []
    np.testing.assert_allclose(window.predict(df=shifted)["yhat"], window.predict()["yhat"], rtol=1e-4, atol=1e-4)
    assert not np.allclose(fit.predict(df=shifted)["yhat"], fit.predict()["yhat"], rtol=1e-3)
    with pytest.raises(ValueError, match=r"covariates' norm='window' \(formerly covariate_norm='window'\) "
                                         r"normalises each window"):
        TransformerForecaster(h=12, stream=True, covariates={"norm": "window", "past": ["load"]}, **SMALL).fit(history)
    with pytest.raises(ValueError, match="norm='global'"):
        DLinearForecaster(covariates={"norm": "global", "past": ["load"]}, **common).fit(history)
