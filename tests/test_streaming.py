"""update(), the streaming configuration and its state: equalities, costs, errors, saving."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import tsrsa
from tsrsa import RSAForecaster, SeasonalNaiveForecaster, TransformerForecaster
from tsrsa.data.windows import training_windows
from tsrsa.nn import RunningNorm

from conftest import make_panel

SMALL = dict(h=4, input_size=8, d_model=8, n_heads=4, n_layers=1, d_ff=16, max_epochs=2, batch_size=16,
             random_state=0)


@pytest.fixture(scope="module")
def streaming():
    """A streaming RSA model fitted on the first 40 steps of three series, and the 20 that follow."""
    full = make_panel(length=60)
    head = full.groupby("unique_id").head(40)
    model = RSAForecaster(patch_len=4, stream=True, **SMALL).fit(head)
    return model, head, full


def parallel_forecast(model, frame, *, id_col="unique_id", target_col="y") -> np.ndarray:
    """What a fitted streaming model should forecast after each series of ``frame``, from the network's
    parallel form over the whole series (``forward_tokens`` from a fresh state), not from a stream:
    the values scaled as the model scales them, the last complete token's forecast read past the steps
    waiting in a partial patch (tsrsa.estimator.stream_state's docstring), in the data's units.
    Returns (n_series, h), the series in the model's order."""
    net, memory = model.network_.eval(), model.memory_
    P, h = net.patch_len, int(model.h)
    rows = []
    for j, sid in enumerate(memory.ids):
        y = frame.loc[frame[id_col] == sid, target_col].to_numpy(np.float64)
        whole, waiting = divmod(len(y), P)
        scaled = torch.tensor((y[: whole * P] - memory.loc[j]) / memory.scale[j], dtype=torch.float32)
        with torch.no_grad():
            tokens = net.forward_tokens(scaled[None])  # (1, c, h + P - 1, Q)
        rows.append(tokens[0, -1, waiting: waiting + h, 0].double().numpy() * memory.scale[j] + memory.loc[j])
    return np.stack(rows)


def _state_snapshot(model):
    memory = model.memory_
    return (memory.tails.copy(), list(memory.last), memory.forecast_steps.copy(), memory.pending.copy(),
            [(g.rows.copy(), g.steps, {k: v.clone() for k, v in g.state.tensors().items()}) for g in memory.groups])


def _same_snapshot(a, b):
    assert np.array_equal(a[0], b[0]) and a[1] == b[1] and np.array_equal(a[2], b[2], equal_nan=True)
    assert np.array_equal(a[3], b[3]) and len(a[4]) == len(b[4])
    for (rows_a, steps_a, state_a), (rows_b, steps_b, state_b) in zip(a[4], b[4]):
        assert np.array_equal(rows_a, rows_b) and steps_a == steps_b
        assert sorted(state_a) == sorted(state_b) and all(torch.equal(state_a[k], state_b[k]) for k in state_a)


# ---------------------------------------------------------------------- update(): errors
def _bad_updates():
    full = make_panel(length=50)
    new = full.groupby("unique_id").tail(10)  # steps 40..49 of every series
    s1 = new[new["unique_id"] == "s1"]
    return [
        ("gap", new.drop(index=s1.index[:2]), "series 's1': the new data starts at 2024-01-02 18:00:00 and leaves "
         r"a gap \(its last observation is 2024-01-02 15:00:00, so the next one is 2024-01-02 16:00:00\)"),
        ("overlap", full.groupby("unique_id").tail(11), "series 's0': the new data starts at 2024-01-02 15:00:00 "
         "and overlaps what the model has seen"),
        ("frequency", make_panel(length=5, freq="D", start="2024-01-03"), "frequency 'D', but the model was fitted "
         "on 'h'"),
        ("unseen id", pd.concat([new, make_panel(ids=["zz"], length=12)]), "series 'zz' was not seen in fit.*"
         "new_ids='add'"),
        ("nan", new.assign(y=np.where(new.index == s1.index[3], np.nan, new["y"])), "series 's1' has NaN"),
        ("missing column", new.drop(columns="y"), r"missing column\(s\) \['y'\]"),
    ]


BAD_UPDATES = _bad_updates()


@pytest.mark.parametrize("case", BAD_UPDATES, ids=[c[0] for c in BAD_UPDATES])
def test_a_bad_update_names_the_problem_and_changes_nothing(streaming, case):
    _, frame, message = case
    fixed = SeasonalNaiveForecaster(h=4, season_length=6).fit(make_panel(length=40))
    before_fixed = (fixed.memory_.tails.copy(), list(fixed.memory_.last))
    model = streaming[0]
    before = _state_snapshot(model)
    for target in (fixed, model):
        with pytest.raises(ValueError, match=message):
            target.update(frame)
    assert np.array_equal(fixed.memory_.tails, before_fixed[0]) and list(fixed.memory_.last) == before_fixed[1]
    _same_snapshot(_state_snapshot(model), before)
    with pytest.raises(ValueError, match="new_ids='ask' is not supported"):
        fixed.update(frame, new_ids="ask")


def test_new_ids_join_when_asked():
    full = make_panel(length=50)
    model = SeasonalNaiveForecaster(h=4, season_length=6).fit(full.groupby("unique_id").head(40))
    extra = make_panel(ids=["zz"], length=12)
    model.update(pd.concat([full.groupby("unique_id").tail(10), extra]), new_ids="add")
    fc = model.predict()
    assert list(fc["unique_id"].unique()) == ["s0", "s1", "s2", "zz"]
    expected = model.predict(df=pd.concat([full, extra]))
    pd.testing.assert_frame_equal(fc, expected)


# ---------------------------------------------------------------------- the streaming configuration
def test_update_streams_only_the_new_steps(streaming):
    model, head, full = streaming
    calls = []
    original = model.network_.stream_tokens

    def counting(x, state, covariates=None):
        calls.append(x.shape[1])
        return original(x, state, covariates)

    new = full.groupby("unique_id").nth(slice(40, 47))  # 7 steps per series
    copy = RSAForecaster(patch_len=4, stream=True, **SMALL)
    copy.__dict__.update({k: v for k, v in vars(model).items() if k.endswith("_")})
    copy.network_.stream_tokens = counting
    try:
        copy.update(new)
    finally:
        del copy.network_.stream_tokens
    assert calls == [7]  # one batch of three series, seven new steps each: the history is not read again
    expected = RSAForecaster(patch_len=4, stream=True, **SMALL)
    expected.__dict__.update({k: v for k, v in vars(model).items() if k.endswith("_")})
    np.testing.assert_allclose(copy.predict()["yhat"], expected.predict(df=full.groupby("unique_id").head(47))["yhat"],
                               rtol=1e-5, atol=1e-6)


def test_the_streamed_forecast_equals_the_parallel_form_over_the_whole_history(streaming):
    """A wrong streamed kernel would pass any comparison of update() with predict(df=...), which
    streams too; the parallel form over the whole history is the reference (the REM heads by P @ V,
    the softmax branch over every token)."""
    model, head, full = streaming
    copy = RSAForecaster(patch_len=4, stream=True, **SMALL)
    copy.__dict__.update({k: v for k, v in vars(model).items() if k.endswith("_")})
    copy.update(full.groupby("unique_id").nth(slice(40, 58)))  # 18 steps: 4 tokens and 2 waiting steps
    history = full.groupby("unique_id").head(58)
    expected = parallel_forecast(copy, history)
    got = copy.predict().groupby("unique_id", sort=False)["yhat"].apply(np.array)
    np.testing.assert_allclose(np.stack(got.loc[list(copy.memory_.ids)].to_list()), expected, rtol=1e-5, atol=1e-5)
    assert not np.allclose(parallel_forecast(copy, full.groupby("unique_id").head(56)), expected, atol=1e-3)


def test_between_token_completions_predict_shifts_the_last_tokens_forecast(streaming):
    model, head, full = streaming
    assert (model.memory_.pending == 0).all()  # 40 steps: ten whole tokens of 4
    stored = model.memory_.forecast_steps.copy()
    later = RSAForecaster(patch_len=4, stream=True, **SMALL)
    later.__dict__.update({k: v for k, v in vars(model).items() if k.endswith("_")})
    later.update(full.groupby("unique_id").nth([40]))  # one step: a partial patch
    assert (later.memory_.pending == 1).all()
    np.testing.assert_array_equal(later.memory_.forecast_steps, stored)  # no token completed
    first, after = model.predict(), later.predict()
    assert (after.groupby("unique_id")["ds"].min() == first.groupby("unique_id")["ds"].min()
            + pd.Timedelta(hours=1)).all()
    # the same token forecast, read one step further on
    y = stored[:, 1:5, 0] * model.memory_.scale[:, None] + model.memory_.loc[:, None]
    np.testing.assert_allclose(after["yhat"].to_numpy(), y.ravel(), rtol=1e-6)


def test_saved_state_continues_where_it_stopped(streaming, tmp_path):
    model, head, full = streaming
    first = RSAForecaster(patch_len=4, stream=True, **SMALL)
    first.__dict__.update({k: v for k, v in vars(model).items() if k.endswith("_")})
    first.update(full.groupby("unique_id").nth(slice(40, 45)))
    first.save(tmp_path / "m")
    loaded = tsrsa.load(tmp_path / "m")
    pd.testing.assert_frame_equal(loaded.predict(), first.predict())
    rest = full.groupby("unique_id").nth(slice(45, 60))
    np.testing.assert_allclose(loaded.update(rest).predict()["yhat"], first.update(rest).predict()["yhat"], rtol=1e-6)


def test_cross_validation_of_a_stream_scores_the_state_over_the_frame():
    df = make_panel(length=48)
    model = TransformerForecaster(patch_len=4, stream=True, **SMALL)
    cv = model.cross_validate(df, n_windows=3, step_size=3)
    fitted = TransformerForecaster(patch_len=4, stream=True, **SMALL).fit(df.groupby("unique_id").head(48 - 4 - 6))
    for cutoff, block in cv.groupby("cutoff"):
        history = df[df["ds"] <= cutoff]
        expected = fitted.predict(df=history)
        np.testing.assert_allclose(block.sort_values(["unique_id", "ds"])["yhat"], expected["yhat"], rtol=1e-5,
                                   atol=1e-6)


@pytest.mark.parametrize("params,message", [
    (dict(stream=True, causal=False), "every layer must be causal"),
    (dict(stream=True, input_size=10), "input_size=10 must be a multiple of patch_len=4"),
    (dict(stream=True, rem={"mask": "bidirectional"}), "causal=True needs rem_mask='causal'"),
    (dict(stream=True, rem={"max_lag": 3}), "max_lag=3 cuts the REMs to a finite window"),
    (dict(causal=True, rem={"mask": "bidirectional"}), "causal=True needs rem_mask='causal'"),
])
def test_settings_that_cannot_stream_are_refused(params, message):
    with pytest.raises(ValueError, match=message):
        RSAForecaster(**{**SMALL, "patch_len": 4, **params}).fit(make_panel())


def test_the_search_space_respects_the_streaming_configuration():
    optuna = pytest.importorskip("optuna")
    for estimator in (RSAForecaster(h=4, input_size=24, stream=True), TransformerForecaster(h=4, input_size=12,
                                                                                          attention="rsa", stream=True)):
        study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))  # one study per estimator
        for _ in range(10):
            params = type(estimator).search_space(study.ask(), estimator)
            options = params.get("attention_options", params)
            assert not {"rem_mask", "rem__mask"} & set(options) and estimator.input_size % params["patch_len"] == 0
            clone = estimator.clone().set_params(**params)
            clone.check_params()  # every sampled configuration streams
    free = RSAForecaster.search_space(optuna.create_study().ask(), RSAForecaster(h=4))
    assert "rem__mask" in free


# ---------------------------------------------------------------------- pieces
def test_running_norm_follows_its_recurrence_elementwise():
    norm = RunningNorm(span=9).double()
    x = torch.randn(2, 12, dtype=torch.float64)
    m0, q0 = torch.tensor([0.3, -0.2], dtype=torch.float64), torch.tensor([1.5, 0.8], dtype=torch.float64)
    m, q = norm.statistics(x, m0, q0)
    a = 2 / 10
    mm, qq = m0.clone(), q0.clone()
    for t in range(12):
        mm = (1 - a) * mm + a * x[:, t]
        qq = (1 - a) * qq + a * x[:, t] ** 2
        torch.testing.assert_close(m[:, t], mm, rtol=0, atol=1e-12)
        torch.testing.assert_close(q[:, t], qq, rtol=0, atol=1e-12)


def test_token_targets_are_the_steps_after_each_token():
    values = np.arange(100, dtype=np.float32)
    windows = training_windows(values, np.array([0, 100]), np.array([100]), 8, 5, target_stride=4)
    x, y = windows.batch(np.array([3]))
    np.testing.assert_array_equal(x[0], np.arange(3, 11))
    np.testing.assert_array_equal(y[0], [np.arange(7, 12), np.arange(11, 16)])  # after steps 6 and 10
