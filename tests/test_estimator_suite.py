"""The shared estimator suite: every forecaster class proves the public contract here.

A new forecaster joins by adding one line to ``SUITE``. Each class is fitted once per module
(the ``fitted`` fixture); checks that need no training (bad input) fail before it starts.
"""
from __future__ import annotations

import contextlib
import io
import os
import random
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

import tsrsa
from tsrsa import LSTMForecaster, SeasonalNaiveForecaster, TransformerForecaster

from conftest import make_panel

H = 4

# one line per forecaster class: a factory of a small, fast configuration
SUITE = [
    pytest.param(lambda **kw: SeasonalNaiveForecaster(h=H, **kw), id="SeasonalNaive"),
    pytest.param(lambda **kw: LSTMForecaster(h=H, input_size=8, hidden_size=8, n_layers=1, max_epochs=2,
                                             batch_size=16, random_state=0, **kw), id="LSTM"),
    pytest.param(lambda **kw: TransformerForecaster(h=H, input_size=8, patch_len=4, d_model=8, n_heads=2,
                                                    n_layers=1, d_ff=16, max_epochs=2, batch_size=16,
                                                    random_state=0, **kw), id="Transformer"),
    pytest.param(lambda **kw: tsrsa.DLinearForecaster(h=H, input_size=8, kernel_size=5, max_epochs=2, batch_size=16,
                                                      random_state=0, **kw), id="DLinear"),
    pytest.param(lambda **kw: tsrsa.RSAForecaster(h=H, input_size=8, patch_len=2, d_model=8, n_heads=4, n_layers=1,
                                                  d_ff=16, max_epochs=2, batch_size=16, random_state=0, **kw),
                 id="RSA"),
    pytest.param(lambda **kw: TransformerForecaster(h=H, input_size=8, patch_len=4, d_model=8, n_heads=2, n_layers=1,
                                                    d_ff=16, stream=True, max_epochs=2, batch_size=16,
                                                    random_state=0, **kw), id="TransformerStream"),
    pytest.param(lambda **kw: tsrsa.RSAForecaster(h=H, input_size=8, patch_len=2, d_model=8, n_heads=4, n_layers=1,
                                                  d_ff=16, stream=True, max_epochs=2, batch_size=16, random_state=0,
                                                  **kw), id="RSAStream"),
    pytest.param(lambda **kw: tsrsa.ETSForecaster(h=H, season_length=6, initialization="heuristic", **kw), id="ETS"),
    pytest.param(lambda **kw: tsrsa.ARIMAForecaster(h=H, order=(2, 0, 1), seasonal_order=None, **kw), id="ARIMA"),
    pytest.param(lambda **kw: tsrsa.ThetaForecaster(h=H, season_length=6, **kw), id="Theta"),
]


def _rng_states():
    return torch.get_rng_state().clone(), np.random.get_state()[1].copy(), random.getstate()


@pytest.fixture(scope="module", params=SUITE)
def fitted(request, tmp_path_factory):
    """Fit each class once (and a second time for repeatability), recording side effects."""
    make = request.param
    train = make_panel()
    train_copy = train.copy(deep=True)
    model = make()
    params_before = model.get_params()
    workdir = tmp_path_factory.mktemp("cwd")
    out, err = io.StringIO(), io.StringIO()
    rng_before = _rng_states()
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            returned = model.fit(train)
            pred = model.predict()
    finally:
        os.chdir(cwd)
    rng_after = _rng_states()
    again = make().fit(train).predict()
    return {
        "make": make, "model": model, "returned": returned, "train": train, "train_copy": train_copy,
        "params_before": params_before, "pred": pred, "again": again, "stdout": out.getvalue(),
        "stderr": err.getvalue(), "warnings": [str(w.message) for w in caught],
        "files": sorted(os.listdir(workdir)), "rng": (rng_before, rng_after),
    }


# ---------------------------------------------------------------------- the contract
def test_init_only_stores_arguments(fitted):
    model = fitted["make"]()
    params = model.get_params()
    assert {k: v for k, v in vars(model).items()} == params
    assert not [a for a in vars(model) if a.endswith("_")]


def test_get_set_params_and_clone(fitted):
    model = fitted["model"]
    copy = clone(model)
    assert type(copy) is type(model)
    assert copy.get_params() == model.get_params()
    assert not hasattr(copy, "memory_")  # clone is unfitted
    assert copy.set_params(fill="zero") is copy and copy.fill == "zero"
    assert model.fill is None  # the original is untouched
    with pytest.raises(ValueError, match="has no parameter 'nope'"):
        copy.set_params(nope=1)
    assert type(model).__name__ in repr(model)


def test_fit_returns_self_and_tidy_forecast(fitted):
    model, pred, train = fitted["model"], fitted["pred"], fitted["train"]
    assert fitted["returned"] is model
    assert list(pred.columns[:3]) == ["unique_id", "ds", "yhat"]
    assert len(pred) == train["unique_id"].nunique() * H
    assert pred["unique_id"].dtype == train["unique_id"].dtype
    assert np.isfinite(pred["yhat"]).all()
    last = train.groupby("unique_id")["ds"].max()
    first_fc = pred.groupby("unique_id")["ds"].min()
    pd.testing.assert_series_equal(first_fc, last + pd.Timedelta(hours=1), check_names=False)
    steps = pred.groupby("unique_id")["ds"].diff().dropna().unique()
    assert list(steps) == [pd.Timedelta(hours=1)]


def test_forecast_follows_the_level_of_each_series(fitted):
    pred, train = fitted["pred"], fitted["train"]
    level = train.groupby("unique_id")["y"].mean()
    fc_level = pred.groupby("unique_id")["yhat"].mean()
    # series levels are 10, 20, 30: each forecast must sit nearest its own series' level
    for sid in level.index:
        assert (fc_level[sid] - level).abs().idxmin() == sid


def test_predict_h_truncates_and_refuses_more(fitted):
    model, pred = fitted["model"], fitted["pred"]
    short = model.predict(h=2)
    expected = pred.groupby("unique_id").head(2).reset_index(drop=True)
    pd.testing.assert_frame_equal(short, expected)
    if model.forecasts_any_horizon:  # a statistical model's recursions run as far as asked
        longer = model.predict(h=H + 3)
        assert longer.groupby("unique_id").size().eq(H + 3).all()
        pd.testing.assert_frame_equal(longer.groupby("unique_id").head(H).reset_index(drop=True), pred)
    else:
        with pytest.raises(ValueError, match=f"above the horizon this model was trained for \\({H}\\)"):
            model.predict(h=H + 1)
    with pytest.raises(ValueError, match="h=0 must be >= 1"):
        model.predict(h=0)


def test_bounded_inference_batches_give_the_same_forecast(fitted):
    model = fitted["model"]
    if "trainer" not in model.get_params():
        pytest.skip("no batched inference")
    small = clone(model)
    small.__dict__.update({k: v for k, v in vars(model).items() if k.endswith("_")})
    small.set_params(trainer__inference_batch_size=1)
    np.testing.assert_allclose(small.predict()["yhat"], fitted["pred"]["yhat"], rtol=1e-6)


def test_predict_on_training_frame_equals_predict(fitted):
    pd.testing.assert_frame_equal(fitted["model"].predict(df=fitted["train"]), fitted["pred"])


def test_predict_on_unseen_ids_and_other_layouts(fitted):
    model, train, pred = fitted["model"], fitted["train"], fitted["pred"]
    renamed = train.assign(unique_id=train["unique_id"].map({"s0": "new0", "s1": "new1", "s2": "new2"}))
    fc = model.predict(df=renamed)
    assert sorted(fc["unique_id"].unique()) == ["new0", "new1", "new2"]
    # val_size=0: a new id's scaling comes from its whole history, as in fitting
    np.testing.assert_allclose(fc["yhat"].to_numpy(), pred["yhat"].to_numpy(), rtol=1e-6)
    wide = train.pivot(index="ds", columns="unique_id", values="y")
    from_wide = model.predict(df=wide)
    np.testing.assert_allclose(from_wide["yhat"].to_numpy(), pred["yhat"].to_numpy(), rtol=1e-6)
    one = train[train["unique_id"] == "s1"].set_index("ds")["y"].rename("s1")
    from_series = model.predict(df=one)
    np.testing.assert_allclose(from_series["yhat"].to_numpy(),
                               pred.loc[pred["unique_id"] == "s1", "yhat"].to_numpy(), rtol=1e-6)


def test_update_equals_forecasting_from_the_whole_frame(fitted):
    make, train = fitted["make"], fitted["train"]
    head, tail = train.groupby("unique_id").head(33), train.groupby("unique_id").tail(7)
    model = make().fit(head)
    whole = model.predict(df=train)
    assert model.update(tail.iloc[:5]) is model  # a few steps of one series, then the rest
    model.update(tail.iloc[5:])
    got = model.predict()
    pd.testing.assert_frame_equal(got.drop(columns="yhat"), whole.drop(columns="yhat"))
    np.testing.assert_allclose(got["yhat"], whole["yhat"], rtol=1e-5, atol=1e-6)


def test_repeatable_and_global_random_state_untouched(fitted):
    pd.testing.assert_frame_equal(fitted["again"], fitted["pred"])
    (t0, n0, r0), (t1, n1, r1) = fitted["rng"]
    assert torch.equal(t0, t1)
    assert np.array_equal(n0, n1)
    assert r0 == r1


def test_different_seeds_differ_for_stochastic_models(fitted):
    model = fitted["model"]
    if not model.stochastic:
        pytest.skip("deterministic forecaster")
    other = clone(model).set_params(random_state=1).fit(fitted["train"]).predict()
    assert not np.allclose(other["yhat"], fitted["pred"]["yhat"])


def test_save_load_round_trip(fitted, tmp_path):
    model = fitted["model"]
    model.save(tmp_path / "model")
    loaded = tsrsa.load(tmp_path / "model")
    assert type(loaded) is type(model)
    assert loaded.get_params() == {k: (list(v) if isinstance(v, tuple) else v) for k, v in model.get_params().items()}
    pd.testing.assert_frame_equal(loaded.predict(), fitted["pred"])
    pd.testing.assert_frame_equal(loaded.predict(df=fitted["train"]), fitted["pred"])
    if hasattr(loaded, "network_"):
        assert all(p.device.type == "cpu" for p in loaded.network_.parameters())
        pd.testing.assert_frame_equal(loaded.fit_history_, model.fit_history_)


def test_inputs_and_arguments_not_mutated(fitted):
    pd.testing.assert_frame_equal(fitted["train"], fitted["train_copy"])
    assert fitted["model"].get_params() == fitted["params_before"]


def test_silent_at_verbose_zero(fitted):
    assert fitted["stdout"] == ""
    assert fitted["stderr"] == ""
    assert fitted["warnings"] == []
    assert fitted["files"] == []


def test_not_fitted_errors(fitted, tmp_path):
    model = fitted["make"]()
    with pytest.raises(NotFittedError, match="not fitted yet"):
        model.predict()
    with pytest.raises(NotFittedError):
        model.save(tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_plot_returns_figure(fitted):
    from matplotlib.figure import Figure

    fig = fitted["model"].plot(max_series=2)
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 2
    fig2 = fitted["model"].plot(fitted["train"], ids=["s2"])
    assert len(fig2.axes) == 1 and fig2.axes[0].get_title(loc="left") == "s2"


def test_fitted_values_are_the_forecasts_made_before(fitted):
    model, train, out = fitted["model"], fitted["train"], fitted["model"].fitted(step=2)
    assert len(out) == int((train.groupby("unique_id").size() - model.memory_.tails.shape[1] - 1).sum())
    forecast = model.predict(df=train[train["unique_id"] == "s1"].iloc[:-5])  # the origin 5 steps before the end
    row = out[(out["unique_id"] == "s1") & (out["ds"] == forecast["ds"].iloc[1])].iloc[0]
    np.testing.assert_allclose([row["yhat"], row["residual"]], [forecast["yhat"].iloc[1], row["y"] - row["yhat"]],
                               rtol=1e-5)


def test_neural_attributes(fitted):
    model = fitted["model"]
    if not hasattr(model, "network_"):
        pytest.skip("no network")
    assert isinstance(model.network_, torch.nn.Module)
    history = model.fit_history_
    assert list(history.columns) == ["epoch", "train_loss", "val_loss", "learning_rate", "seconds"]
    assert history["epoch"].tolist() == list(range(1, model.max_epochs + 1))
    assert np.isfinite(history["train_loss"]).all()


# ---------------------------------------------------------------------- bad input at fit
def _with(df, **changes):
    out = df.copy()
    for (row, col), value in changes.items():
        out.loc[row, col] = value
    return out


def _bad_frames():
    base = make_panel()
    s1 = base.index[base["unique_id"] == "s1"]
    t5 = str(base.loc[s1[5], "ds"])
    return [
        ("none", None, TypeError, "expected a pandas DataFrame"),
        ("list", [1.0, 2.0], TypeError, "got list"),
        ("empty", base.iloc[:0], ValueError, "empty"),
        ("no target", base.drop(columns="y"), ValueError, r"missing column\(s\) \['y'\]"),
        ("text target", base.assign(y=base["y"].astype(str)), TypeError, "'y' must be numeric"),
        ("nan", base.assign(y=np.where(base.index == s1[5], np.nan, base["y"])), ValueError,
         f"series 's1' has NaN in the target at {t5}.*fill="),
        ("inf", base.assign(y=np.where(base.index == s1[5], np.inf, base["y"])), ValueError,
         f"series 's1' has an infinite value at {t5}"),
        ("duplicate", pd.concat([base, base.loc[[s1[5]]]]), ValueError,
         f"series 's1' has duplicate timestamps at {t5}"),
        ("gap", base.drop(index=s1[5]), ValueError, "series 's1' has a gap of 1 missing step.*fill="),
        ("off grid", base.assign(ds=base["ds"].where(base.index != s1[5], base.loc[s1[5], "ds"] + pd.Timedelta(minutes=30))),
         ValueError, "series 's1' has a timestamp off the 'h' grid"),
        ("mixed", pd.concat([base[base["unique_id"] != "s2"],
                             make_panel(ids=["s2"], freq="D")]), ValueError, "mixed frequencies"),
        ("too short", pd.concat([base, make_panel(ids=["tiny"], length=3)]), ValueError,
         "series 'tiny' has 3 observations but needs at least"),
        ("text time", base.assign(ds=base["ds"].astype(str)), TypeError, "datetimes or integers.*pd.to_datetime"),
        ("time no id", base[base["unique_id"] == "s0"].drop(columns="unique_id"), ValueError,
         r"no id column 'unique_id'.*set_index\('ds'\)"),
    ]


BAD_FRAMES = _bad_frames()


@pytest.mark.parametrize("make", SUITE)
@pytest.mark.parametrize("case", BAD_FRAMES, ids=[c[0] for c in BAD_FRAMES])
def test_bad_frames_rejected_at_fit(make, case):
    _, frame, error, message = case
    with pytest.raises(error, match=message):
        make().fit(frame)


BAD_PARAMS = [
    ("h", 0, ValueError, "h=0 must be >= 1"),
    ("h", 2.5, TypeError, "h must be an int"),
    ("input_size", 0, ValueError, "input_size=0 must be >= 1"),
    ("batch_size", 0, ValueError, "batch_size=0 must be >= 1"),
    ("max_epochs", 0, ValueError, "max_epochs=0 must be >= 1"),
    ("learning_rate", -1e-3, ValueError, "learning_rate=-0.001 must be > 0"),
    ("loss", "mape", ValueError, "loss='mape' is not supported"),
    ("scaler", "zscore", ValueError, "scaler='zscore' is not supported"),
    ("fill", "bfill", ValueError, "fill='bfill' is not supported"),
    ("freq", "fortnightly", ValueError, "not a pandas offset alias"),
    ("val_size", 2, ValueError, "val_size=2 must be 0"),
    ("season_length", 0, ValueError, "season_length=0 must be >= 1"),
    ("trainer", {"accelerator": "tpu"}, ValueError, "accelerator='tpu' is not supported"),
    ("trainer", {"precision": "8"}, ValueError, "precision='8' is not supported"),
    ("trainer", {"num_threads": 0}, ValueError, "num_threads=0 must be >= 1"),
    ("trainer", "cpu", TypeError, "trainer must be None, a tsrsa.Trainer or a dict of its options"),
    ("random_state", -1, ValueError, "random_state=-1"),
    ("lr_schedule", "linear", ValueError, "lr_schedule='linear' is not supported"),
    ("conformal_windows", 0, ValueError, "conformal_windows=0 must be >= 1"),
    ("conformal_windows", 2.5, TypeError, "conformal_windows must be None or an int"),
]


# each class is checked on the arguments it has
BAD_PARAM_CASES = [
    pytest.param(entry.values[0], case, id=f"{entry.id}-{case[0]}={case[1]!r}")
    for entry in SUITE for case in BAD_PARAMS if case[0] in entry.values[0]().get_params()
]


@pytest.mark.parametrize("make,case", BAD_PARAM_CASES)
def test_bad_params_rejected_at_fit(make, case):
    name, value, error, message = case
    model = make().set_params(**{name: value})
    with pytest.raises(error, match=message):
        model.fit(make_panel())


def test_quantiles_validated():
    base = dict(h=H, input_size=8, max_epochs=1)
    with pytest.raises(ValueError, match="outside \\(0, 1\\)"):
        LSTMForecaster(loss="quantile", quantiles=[0.1, 1.2], **base).fit(make_panel())
    with pytest.raises(ValueError, match="need loss='quantile'"):
        LSTMForecaster(quantiles=[0.1, 0.9], **base).fit(make_panel())


# ---------------------------------------------------------------------- bad input at predict
def test_bad_input_at_predict(fitted):
    model, train = fitted["model"], fitted["train"]
    with pytest.raises(ValueError, match=r"missing column\(s\) \['y'\]"):
        model.predict(df=train.drop(columns="y"))
    short = train.groupby("unique_id").tail(2)
    with pytest.raises(ValueError, match="series 's0' has 2 observations but needs at least"):
        model.predict(df=short)
    daily = make_panel(freq="D")
    with pytest.raises(ValueError, match="frequency 'D', but the model was fitted on 'h'"):
        model.predict(df=daily)
    integer = train.assign(ds=train.groupby("unique_id").cumcount())
    with pytest.raises(TypeError, match="fitted on time of datetimes"):
        model.predict(df=integer)


def test_verbose_one_shows_one_progress_bar(fitted, capsys):
    model = fitted["model"]
    if not hasattr(model, "network_"):
        pytest.skip("no training loop")
    clone(model).set_params(trainer={"verbose": 1}).fit(fitted["train"])
    err = capsys.readouterr().err
    assert type(model).__name__ in err
    assert err.count(f"{type(model).__name__} (") >= 1  # the line names the model, then its windows
    assert "windows/epoch" in err and "epoch 1/" in err and "step" in err
