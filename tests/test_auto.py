"""AutoForecaster: the choice on validation windows, what is kept, failures, saving."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import tsrsa
from tsrsa import (
    AutoForecaster, DLinearForecaster, ETSForecaster, LSTMForecaster, SeasonalNaiveForecaster, ThetaForecaster,
)

H, W = 4, 2


def monthly(n_series: int = 3, length: int = 40, seed: int = 0, negative: bool = False) -> pd.DataFrame:
    """Series of differing nature (a season, a trend, noise), so that candidates win on different series;
    with ``negative`` the last one is below zero (a multiplicative ETS cannot fit it)."""
    rng = np.random.default_rng(seed)
    t = np.arange(length)
    frames = []
    for k in range(n_series):
        level = -10.0 if negative and k == n_series - 1 else 10.0 + k
        y = level + (2 - k) * np.sin(2 * np.pi * t / 12) + 0.1 * k * t + rng.normal(0, 0.3 + 0.2 * k, length)
        frames.append(pd.DataFrame({"unique_id": f"s{k}", "ds": pd.date_range("2020-01-01", periods=length, freq="MS"),
                                    "y": y}))
    return pd.concat(frames, ignore_index=True)


def candidates():
    return {"Naive": SeasonalNaiveForecaster(h=H),
            "ETS": ETSForecaster(h=H, trend=None, seasonal="add", initialization="heuristic"),
            "Theta": ThetaForecaster(h=H)}


def test_the_choice_is_the_argmin_of_its_table_and_forecasts_are_the_chosen_models():
    df = monthly()
    given = df.copy()
    models = candidates()
    before = {name: m.get_params() for name, m in models.items()}
    auto = AutoForecaster(h=H, models=models, n_windows=W, combine=None, margin=None).fit(df)
    pd.testing.assert_frame_equal(df, given)
    table = auto.choice_
    names = list(models)
    assert list(table.columns) == ["unique_id", *names, "kept", "basis", "failed"]
    assert (table["basis"] == "series").all()
    best = [names[i] for i in np.argmin(table[names].to_numpy(), axis=1)]
    assert table["kept"].tolist() == best
    out = auto.predict()
    for sid, name in zip(table["unique_id"], best):  # bit for bit the chosen model fitted alone
        alone = models[name].clone().fit(df).predict()
        np.testing.assert_array_equal(out.loc[out.unique_id == sid, "yhat"].to_numpy(),
                                      alone.loc[alone.unique_id == sid, "yhat"].to_numpy())
    assert {name: m.get_params() for name, m in models.items()} == before
    assert not any(hasattr(m, "memory_") for m in models.values())


def test_validation_errors_are_mase_of_each_candidates_own_cross_validation():
    df = monthly()
    models = candidates()
    auto = AutoForecaster(h=H, models=models, n_windows=W, combine=None).fit(df)
    for sid in ["s0", "s2"]:
        y = df.loc[df.unique_id == sid, "y"].to_numpy()
        inside = y[: len(y) - H - (W - 1) * H]
        scale = np.mean(np.abs(inside[12:] - inside[:-12]))
        for name, model in models.items():
            cv = model.cross_validate(df, n_windows=W, step_size=H)
            cv = cv[cv.unique_id == sid]
            mase = np.mean(np.abs(cv.y - cv.yhat)) / scale
            got = auto.choice_.set_index("unique_id").loc[sid, name]
            assert got == pytest.approx(mase, rel=1e-12)


def test_a_failing_candidate_is_skipped_where_it_fails_and_recorded():
    df = monthly(negative=True)
    models = {**candidates(), "ETSmul": ETSForecaster(h=H, error="mul", trend=None, seasonal="mul")}
    auto = AutoForecaster(h=H, models=models, n_windows=W, combine=None).fit(df)
    table = auto.choice_.set_index("unique_id")
    assert np.isnan(table.loc["s2", "ETSmul"]) and table.loc["s2", "failed"] == "ETSmul"
    assert np.isfinite(table.loc[["s0", "s1"], "ETSmul"]).all()
    assert "ETSmul" not in table.loc["s2", "kept"]
    failures = auto.failures_
    assert failures[["unique_id", "candidate", "stage"]].values.tolist() == [["s2", "ETSmul", "validation"]]
    assert "value" in failures.loc[0, "error"]
    assert np.isfinite(auto.predict()["yhat"]).all()


def test_a_candidate_failing_everywhere_is_recorded_for_every_series():
    df = monthly()
    models = {**candidates(), "Long": ETSForecaster(h=H, season_length=30, seasonal="add")}  # needs 60 values
    auto = AutoForecaster(h=H, models=models, n_windows=W, combine=None).fit(df)
    assert auto.choice_["Long"].isna().all()
    assert sorted(auto.failures_.unique_id) == ["s0", "s1", "s2"]
    assert "Long" not in auto.models_


def test_a_series_too_short_to_validate_takes_the_panels_best():
    df = monthly()
    short = df[df.unique_id == "s1"].head(17).assign(unique_id="short")  # no candidate validates 17 + the block
    auto = AutoForecaster(h=H, models=candidates(), n_windows=W, combine=None, margin=None).fit(
        pd.concat([df, short], ignore_index=True))
    table = auto.choice_.set_index("unique_id")
    assert table.loc["short", "basis"] == "panel" and (table.drop(index="short")["basis"] == "series").all()
    assert auto.n_windows_ == W  # the other series hold both windows: the short one is not validated on fewer
    assert np.isnan(table.loc["short", "ETS"])
    failures = auto.failures_
    mine = failures[(failures.unique_id == "short") & (failures.candidate == "ETS")]
    assert "too short" in mine["error"].iloc[0]

    def fits(model):
        try:
            model.clone().fit(short)
        except ValueError:
            return False
        return True

    ranking = table.drop(index="short")[list(candidates())].mean().sort_values().index
    expected = next(name for name in ranking if fits(candidates()[name]))
    assert table.loc["short", "kept"] == expected
    if expected != ranking[0]:  # the panel's best could not be fitted on it: recorded as a failed refit
        assert ("short", ranking[0], "refit") in set(map(tuple, auto.failures_[["unique_id", "candidate", "stage"]]
                                                          .to_numpy()))
    assert np.isfinite(auto.predict().yhat).all()


def test_combinations_weight_the_best_k():
    df = monthly()
    models = candidates()
    mean = AutoForecaster(h=H, models=models, combine="mean", top_k=2, n_windows=W, margin=None).fit(df)
    weighted = AutoForecaster(h=H, models=models, combine="weighted", top_k=2, n_windows=W, margin=None).fit(df)
    errors = mean.choice_[list(models)].to_numpy()
    fits = {name: model.clone().fit(df).predict() for name, model in models.items()}
    for i, sid in enumerate(mean.choice_.unique_id):
        order = np.argsort(errors[i])[:2]
        np.testing.assert_allclose(mean.weights_.iloc[i].to_numpy()[order], [0.5, 0.5])
        inverse = 1 / errors[i][order]
        np.testing.assert_allclose(weighted.weights_.iloc[i].to_numpy()[order], inverse / inverse.sum())
        alone = [fits[list(models)[c]] for c in order]
        expected = sum(0.5 * f.loc[f.unique_id == sid, "yhat"].to_numpy() for f in alone)
        out = mean.predict()
        np.testing.assert_allclose(out.loc[out.unique_id == sid, "yhat"].to_numpy(), expected, rtol=1e-12)


def test_panel_choice_keeps_one_candidate_for_every_series():
    auto = AutoForecaster(h=H, models=candidates(), choose="panel", n_windows=W, combine=None).fit(monthly())
    table = auto.choice_
    assert table["kept"].nunique() == 1
    names = list(candidates())
    assert table["kept"].iloc[0] == names[int(np.argmin(table[names].mean().to_numpy()))]


def test_intervals_new_history_and_update():
    df = monthly()
    auto = AutoForecaster(h=H, models=candidates(), n_windows=3).fit(df)
    out = auto.predict(level=[80])
    assert list(out.columns) == ["unique_id", "ds", "yhat", "yhat_lo_80", "yhat_hi_80"]
    assert (out.yhat_lo_80 <= out.yhat).all() and (out.yhat <= out.yhat_hi_80).all()
    # predict(df=train) is predict(); an unseen id takes the panel's best
    pd.testing.assert_frame_equal(auto.predict(df=df), auto.predict())
    other = df[df.unique_id == "s1"].assign(unique_id="new")
    fresh = auto.predict(df=other)
    assert fresh.unique_id.unique().tolist() == ["new"] and np.isfinite(fresh.yhat).all()
    new = pd.DataFrame({"unique_id": "s0", "ds": pd.date_range("2023-05-01", periods=3, freq="MS"),
                        "y": [10.0, 11.0, 12.0]})
    after = auto.update(new).predict()
    assert after.loc[after.unique_id == "s0", "ds"].iloc[0] == pd.Timestamp("2023-08-01")
    with pytest.raises(ValueError):
        auto.update(new)  # no longer continues s0; nothing changes
    pd.testing.assert_frame_equal(auto.predict(), after)
    with pytest.raises(ValueError, match="new_ids"):
        auto.update(other)
    added = auto.update(other, new_ids="add").predict(level=[80])
    assert added.unique_id.unique().tolist() == ["s0", "s1", "s2", "new"]
    np.testing.assert_array_equal(added.loc[added.unique_id == "new", "yhat"].to_numpy(), fresh["yhat"].to_numpy())


def test_too_few_windows_for_a_level_names_the_windows_that_suffice():
    one = monthly(n_series=1)
    auto = AutoForecaster(h=H, models=candidates(), n_windows=W).fit(one)
    with pytest.raises(ValueError, match="n_windows=4 or more") as refused:  # 80 % needs four errors a step
        auto.predict(level=[80])
    windows = int(str(refused.value).split("n_windows=")[1].split()[0])
    out = auto.set_params(n_windows=windows).fit(one).predict(level=[80])
    assert (out.yhat_lo_80 < out.yhat).all() and (out.yhat < out.yhat_hi_80).all()


def test_save_load_round_trip_and_an_edited_file_is_refused(tmp_path):
    df = monthly(negative=True)
    models = {**candidates(), "ETSmul": ETSForecaster(h=H, error="mul", trend=None, seasonal="mul")}
    auto = AutoForecaster(h=H, models=models, combine="mean", n_windows=W).fit(df)
    path = tmp_path / "auto"
    auto.save(path)
    loaded = tsrsa.load(path)
    pd.testing.assert_frame_equal(loaded.predict(level=[80]), auto.predict(level=[80]))
    with pytest.raises(ValueError, match="n_windows=[0-9]+ or more"):
        auto.predict(level=[95])
    pd.testing.assert_frame_equal(loaded.choice_, auto.choice_)
    pd.testing.assert_frame_equal(loaded.failures_, auto.failures_)
    assert [(name, m.get_params()) for name, m in loaded.models] == [(n, m.get_params()) for n, m in models.items()]
    state = path / "state.json"
    data = json.loads(state.read_text())
    data["weights"][0] = data["weights"][1]
    state.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="state.json"):
        tsrsa.load(path)


def test_cross_validate_refits_the_choice_at_each_cutoff():
    df = monthly()
    auto = AutoForecaster(h=H, models=candidates(), n_windows=W, combine=None)
    cv = auto.cross_validate(df, n_windows=2)
    own = SeasonalNaiveForecaster(h=H).cross_validate(df, n_windows=2)
    pd.testing.assert_frame_equal(cv.drop(columns="yhat"), own.drop(columns="yhat"))
    assert not hasattr(auto, "models_")
    head = df.groupby("unique_id").head(len(df) // 3 - 2 * H)
    first = AutoForecaster(h=H, models=candidates(), n_windows=W, combine=None).fit(head).predict()
    np.testing.assert_array_equal(cv[cv.cutoff == cv.cutoff.min()]["yhat"].to_numpy(), first["yhat"].to_numpy())


def test_neural_candidates_are_repeatable_with_random_state(small_budget):
    df = monthly(n_series=2, length=36)
    models = [SeasonalNaiveForecaster(h=H), DLinearForecaster(h=H, input_size=8)]
    a = AutoForecaster(h=H, models=models, random_state=3, n_windows=W).fit(df)
    b = AutoForecaster(h=H, models=models, random_state=3, n_windows=W).fit(df)
    pd.testing.assert_frame_equal(a.predict(), b.predict())
    pd.testing.assert_frame_equal(a.choice_, b.choice_)
    assert models[1].random_state is None  # the candidate passed in is left as it was


def test_default_candidates_and_bad_input():
    assert AutoForecaster(h=H).combine == "auto" and AutoForecaster(h=H).choose == "series"
    assert AutoForecaster(h=H).margin == 2.0 and AutoForecaster(h=H).n_windows == 2
    names = [name for name, _ in AutoForecaster(h=H).candidate_models()]
    assert names == ["SeasonalNaive", "ETS", "ARIMA", "Theta", "RSA", "Transformer", "DLinear"]
    df = monthly()
    with pytest.raises(ValueError, match="combine"):
        AutoForecaster(h=H, models=candidates(), combine="max").fit(df)
    with pytest.raises(ValueError, match="h=6"):
        AutoForecaster(h=H, models=[ETSForecaster(h=6)]).fit(df)
    with pytest.raises(ValueError, match="more than one model"):
        AutoForecaster(h=H, models=[ETSForecaster(h=H), ETSForecaster(h=H, trend=None)]).fit(df)
    assert AutoForecaster(h=H, models=candidates(), n_windows=20).fit(df).n_windows_ < 20  # at most, not exactly
    with pytest.raises(ValueError, match="no candidate could forecast"):
        AutoForecaster(h=H, models=[ETSForecaster(h=H, season_length=30, seasonal="add")], n_windows=W).fit(df)
    with pytest.raises(ValueError, match="above the horizon"):
        AutoForecaster(h=H, models=candidates(), n_windows=W).fit(df).predict(H + 1)


def test_command_line_fits_and_forecasts_with_auto(tmp_path, small_budget, long_csv, capsys):
    from tsrsa.cli import main

    model_dir = tmp_path / "auto"
    assert main(["fit", "--model", "Auto", "--h", "4", "--input", str(long_csv), "--output", str(model_dir),
                 "--random-state", "0", "--quiet"]) == 0
    out = tmp_path / "forecast.csv"
    assert main(["predict", "--model-dir", str(model_dir), "--output", str(out)]) == 0
    forecast = pd.read_csv(out)
    assert list(forecast.columns) == ["unique_id", "ds", "yhat"] and len(forecast) == 2 * 4
    loaded = tsrsa.load(model_dir)
    kept = {name for names in loaded.choice_["kept"] for name in names.split("+")}
    assert isinstance(loaded, AutoForecaster) and kept == set(loaded.models_)


def test_cross_validate_without_refit_keeps_the_first_choice_and_runs_it_over_newer_history():
    df = monthly()
    auto = AutoForecaster(h=H, models=candidates(), n_windows=W)
    fixed = auto.cross_validate(df, n_windows=3, refit=False)
    every = auto.cross_validate(df, n_windows=3, refit=True)
    pd.testing.assert_frame_equal(fixed.drop(columns="yhat"), every.drop(columns="yhat"))
    cutoffs = sorted(fixed["cutoff"].unique())
    first = fixed["cutoff"] == cutoffs[0]
    np.testing.assert_allclose(fixed.loc[first, "yhat"], every.loc[first, "yhat"])
    # a later window: the model chosen at the first cutoff, forecasting from the history up to its own cutoff
    chosen = AutoForecaster(h=H, models=candidates(), n_windows=W).fit(df[df["ds"] <= cutoffs[0]])
    later = chosen.predict(df=df[df["ds"] <= cutoffs[2]])
    np.testing.assert_allclose(fixed.loc[fixed["cutoff"] == cutoffs[2], "yhat"], later["yhat"])
    assert not np.allclose(fixed.loc[fixed["cutoff"] == cutoffs[2], "yhat"],
                           fixed.loc[fixed["cutoff"] == cutoffs[0], "yhat"])
    # refit=2: a new choice at the third cutoff, as refit=True makes it there
    two = auto.cross_validate(df, n_windows=3, refit=2)
    last = two["cutoff"] == cutoffs[2]
    np.testing.assert_allclose(two.loc[last, "yhat"], every.loc[last, "yhat"])
    np.testing.assert_allclose(two.loc[two["cutoff"] == cutoffs[1], "yhat"],
                               fixed.loc[fixed["cutoff"] == cutoffs[1], "yhat"])
    assert not hasattr(auto, "models_")


def test_cross_validate_with_level_gives_each_windows_intervals_and_bad_refit_is_refused():
    df = monthly(n_series=6)
    auto = AutoForecaster(h=H, models=candidates(), n_windows=3)
    cv = auto.cross_validate(df, n_windows=2, level=[80])
    assert {"yhat_lo_80", "yhat_hi_80"} <= set(cv.columns)
    assert (cv["yhat_lo_80"] <= cv["yhat"]).all() and (cv["yhat"] <= cv["yhat_hi_80"]).all()
    first = cv["cutoff"] == cv["cutoff"].min()
    alone = AutoForecaster(h=H, models=candidates(), n_windows=3).fit(df[df["ds"] <= cv["cutoff"].min()])
    np.testing.assert_allclose(cv.loc[first, "yhat_hi_80"], alone.predict(level=[80])["yhat_hi_80"])
    with pytest.raises(TypeError, match="refit"):
        auto.cross_validate(df, n_windows=2, refit="always")
    with pytest.raises(ValueError, match="refit"):
        auto.cross_validate(df, n_windows=2, refit=-1)
    with pytest.raises(ValueError, match="level"):
        auto.cross_validate(df, n_windows=2, level=[150])


def test_within_noise_keeps_a_series_own_best_only_when_it_is_clearly_better():
    from tsrsa.estimator.model_choice import within_noise

    rng = np.random.default_rng(0)
    steps = np.ones((3, 2, 2, 6))  # (S, C, W, h); candidate 0 is the panel's best (mean 1 against about 1.1)
    steps[:, 1] = 2.0
    steps[0, 1] = 0.4  # series 0: candidate 1 better on every step
    steps[1, 1] = 1.0 + rng.normal(0, 2.0, (2, 6))  # series 1: better or worse by chance
    steps[1, 1] -= steps[1, 1].mean() - 0.95  # its mean just below the panel's best there
    errors = steps.mean(axis=(2, 3))
    assert errors[1, 1] < errors[1, 0]  # its own ranking prefers candidate 1
    # series 2's own best is the panel's: nothing to fall back from, it keeps its own ranking
    np.testing.assert_array_equal(within_noise(steps, errors, z=1.0), [False, True, False])
    # a margin of 0 keeps every own best that is better at all
    np.testing.assert_array_equal(within_noise(steps, errors, z=0.0), [False, False, False])
    assert not within_noise(steps[2:], errors[2:], z=1e6).any()  # a panel of one series: its own best is the panel's
    steps[0, 0] = np.nan  # the panel's best without an error on a series: its own ranking
    assert not within_noise(steps, np.where(np.isfinite(steps).all(axis=(2, 3)), steps.mean(axis=(2, 3)), np.nan))[0]


def test_margin_sends_series_without_a_clear_winner_to_the_panels_best():
    df = monthly(n_series=4)
    models = candidates()
    own = AutoForecaster(h=H, models=models, n_windows=W, combine=None, margin=None).fit(df)
    wide = AutoForecaster(h=H, models=models, n_windows=W, combine=None, margin=1e6).fit(df)
    table = own.choice_[list(models)]
    panel_best = table.mean().idxmin()
    assert (wide.choice_["kept"] == panel_best).all()
    # the series whose own best is another candidate fall back to the panel; the others' own best is its best
    np.testing.assert_array_equal(wide.choice_["basis"] == "panel", table.idxmin(axis=1) != panel_best)
    assert (own.choice_["kept"] == table.idxmin(axis=1)).all()  # margin=None: each series' own argmin
    assert (own.choice_["kept"] != panel_best).any()  # so the margin changed something here
    pd.testing.assert_frame_equal(wide.choice_[list(models)], table)  # the errors themselves are the same
    none = AutoForecaster(h=H, models=models, n_windows=W, combine=None, margin=0.0).fit(df)
    assert (none.choice_["kept"] == own.choice_["kept"]).all()
    with pytest.raises(TypeError, match="margin"):
        AutoForecaster(h=H, models=models, margin="wide").fit(df)
    with pytest.raises(ValueError, match="margin"):
        AutoForecaster(h=H, models=models, margin=-1.0).fit(df)


def test_told_apart_is_the_paired_mean_against_its_standard_error():
    from tsrsa.estimator.model_choice import told_apart

    d = np.array([0.3, -0.1, 0.5, 0.2, np.nan, 0.4])  # the NaN is left out
    finite = d[np.isfinite(d)]
    t = finite.mean() / (finite.std(ddof=1) / np.sqrt(finite.size))  # float64, by hand
    assert told_apart(d, z=t - 1e-9) and not told_apart(d, z=t + 1e-9)
    assert not told_apart(-d, z=0.0)  # the other candidate better: never told apart as worse
    assert not told_apart(np.array([5.0]), z=0.0)  # one difference: no standard error


def test_a_candidate_joins_the_best_only_where_validation_cannot_tell_them_apart():
    from tsrsa.estimator.model_choice import choice_weights, panel_weights

    rng = np.random.default_rng(1)
    S, W_, h = 40, 2, 6
    steps = np.empty((S, 3, W_, h))
    steps[:, 0] = 1.0 + rng.normal(0, 0.3, (S, W_, h))  # the panel's best
    steps[:, 1] = steps[:, 0] + 0.8  # worse on every step of every series: told apart
    steps[:, 2] = 1.0 + rng.normal(0, 0.3, (S, W_, h))  # as good as the best, by chance either side
    errors = steps.mean(axis=(2, 3))
    ids, names = [f"s{i}" for i in range(S)], ["best", "worse", "twin"]
    gated = choice_weights(errors, ids, names, by="panel", combine="mean", top_k=2, step_errors=steps, margin=2.0)
    order = np.argsort(np.nanmean(errors, axis=0))
    assert set(order[:2]) == {0, 2}  # the twin and the best lead the panel, in some order
    assert (gated[:, [0, 2]] == 0.5).all()  # cannot be told apart: combined
    steps[:, 2] = steps[:, 0] + 0.5 + rng.normal(0, 0.05, (S, W_, h))  # worse on every series, still second
    errors = steps.mean(axis=(2, 3))
    gated = choice_weights(errors, ids, names, by="panel", combine="mean", top_k=2, step_errors=steps, margin=2.0)
    ungated = choice_weights(errors, ids, names, by="panel", combine="mean", top_k=2)
    assert (gated[:, 0] == 1.0).all() and (ungated[:, 0] == 0.5).all()
    np.testing.assert_array_equal(panel_weights(errors, np.ones(3, bool), combine="mean", margin=2.0), [1, 0, 0])
    np.testing.assert_array_equal(panel_weights(errors, np.ones(3, bool), combine="mean"), [0.5, 0, 0.5])
    # a series ranked by its own errors compares its own steps: two steps, a clear gap and a noisy one
    own = choice_weights(errors[:2], ids[:2], names, combine="mean", step_errors=steps[:2], margin=2.0)
    assert (own[:, 0] == 1.0).all()
    noisy = steps[:2].copy()
    noisy[:, 2] = noisy[:, 0] + np.array([1.0, -1.0] * (W_ * h // 2)).reshape(W_, h) + 0.01
    noisy_errors = noisy.mean(axis=(2, 3))
    own = choice_weights(noisy_errors, ids[:2], names, combine="mean", step_errors=noisy, margin=2.0)
    assert (own[:, [0, 2]] == 0.5).all()
    with pytest.raises(ValueError, match="step_errors"):
        choice_weights(errors, ids, names, combine="mean", margin=2.0)


def test_the_default_does_not_dilute_a_candidate_that_validation_shows_to_be_better():
    rng = np.random.default_rng(2)
    t = np.arange(48)
    df = pd.concat([pd.DataFrame({"unique_id": f"s{k}", "ds": pd.date_range("2020-01-01", periods=48, freq="MS"),
                                  "y": 20 + 5 * np.sin(2 * np.pi * (t + k) / 12) + rng.normal(0, 0.2, 48)})
                    for k in range(4)], ignore_index=True)  # a strong yearly season: the yearly naive is better
    models = {"yearly": SeasonalNaiveForecaster(h=H, season_length=12),
              "last": SeasonalNaiveForecaster(h=H, season_length=1)}
    default = AutoForecaster(h=H, models=models, n_windows=W).fit(df)  # combine="auto" keeps the gate here
    assert default.rule_ == "gate" and (default.choice_["kept"] == "yearly").all()
    assert (default.weights_[["yearly"]].to_numpy() == 1.0).all()
    out, alone = default.predict(), models["yearly"].clone().fit(df).predict()
    np.testing.assert_array_equal(out["yhat"].to_numpy(), alone["yhat"].to_numpy())
    pairs = AutoForecaster(h=H, models=models, n_windows=W, margin=None).fit(df)  # the rule before 0.17
    assert (pairs.choice_["kept"] == "yearly+last").all()


def test_one_series_combines_only_what_its_own_validation_cannot_tell_from_its_best():
    rng = np.random.default_rng(3)
    t = np.arange(60)
    df = pd.DataFrame({"unique_id": "only", "ds": pd.date_range("2020-01-01", periods=60, freq="MS"),
                       "y": 20 + 5 * np.sin(2 * np.pi * t / 12) + rng.normal(0, 0.2, 60)})
    models = {"yearly": SeasonalNaiveForecaster(h=H, season_length=12),
              "last": SeasonalNaiveForecaster(h=H, season_length=1),
              "two": SeasonalNaiveForecaster(h=H, season_length=2)}
    default = AutoForecaster(h=H, models=models, n_windows=W).fit(df)  # as a user with one series gets it
    assert default.choice_.loc[0, "kept"] == "yearly" and default.choice_.loc[0, "basis"] == "series"
    assert default.rule_ == "gate" and default.rules_["last_window_mase"].isna().all()  # one series: no comparison
    np.testing.assert_array_equal(default.weights_.to_numpy(), [[1.0, 0.0, 0.0]])
    alone = models["yearly"].clone().fit(df).predict()
    np.testing.assert_array_equal(default.predict()["yhat"].to_numpy(), alone["yhat"].to_numpy())


def test_the_default_combines_every_candidate_the_gate_lets_in():
    rng = np.random.default_rng(5)
    df = pd.concat([pd.DataFrame({"unique_id": f"s{k}", "ds": pd.date_range("2020-01-01", periods=40, freq="MS"),
                                  "y": 10 + rng.normal(0, 1, 40)}) for k in range(4)], ignore_index=True)
    models = {f"lag{m}": SeasonalNaiveForecaster(h=H, season_length=m) for m in (1, 2, 3)}  # alike on noise
    default = AutoForecaster(h=H, models=models, n_windows=W).fit(df)  # the gate (combine="auto" keeps it here)
    two = AutoForecaster(h=H, models=models, n_windows=W, combine="mean", top_k=2).fit(df)  # before 0.19.1
    assert default.top_k is None and default.rule_ == "gate"
    counts, pair_counts = (default.weights_ > 0).sum(axis=1), (two.weights_ > 0).sum(axis=1)
    assert (counts == 3).any() and (pair_counts <= 2).all()
    assert ((default.weights_ > 0) | ~(two.weights_ > 0)).all().all()  # what the best two keep, all keep
    fits = {name: model.clone().fit(df).predict() for name, model in models.items()}
    out = default.predict()
    for sid, row in default.weights_.iterrows():
        want = sum(w * fits[name].loc[fits[name].unique_id == sid, "yhat"].to_numpy() for name, w in row.items())
        np.testing.assert_allclose(out.loc[out.unique_id == sid, "yhat"].to_numpy(), want, rtol=1e-12)
        assert np.allclose(row[row > 0], 1 / (row > 0).sum())  # the plain mean of what is kept


def test_the_basis_of_each_series_survives_saving(tmp_path):
    df = monthly(n_series=4)
    auto = AutoForecaster(h=H, models=candidates(), n_windows=W, combine=None, margin=1.0).fit(df)
    auto.save(tmp_path / "auto")
    loaded = tsrsa.load(tmp_path / "auto")
    pd.testing.assert_frame_equal(loaded.choice_, auto.choice_)
    assert loaded.margin == 1.0


def test_plot_draws_each_series_history_and_its_forecast_with_intervals():
    pytest.importorskip("matplotlib")
    df = monthly()
    auto = AutoForecaster(h=H, models=candidates(), n_windows=W).fit(df)
    forecast = auto.predict(level=[80])
    fig = auto.plot(level=[80], history=10)  # the history the heaviest candidate of each series remembers
    assert [ax.get_title(loc="left") for ax in fig.axes] == ["s0", "s1", "s2"]
    for ax, sid in zip(fig.axes, ["s0", "s1", "s2"]):
        history, line = ax.lines[0], ax.lines[-1]
        np.testing.assert_allclose(history.get_ydata(), df.loc[df.unique_id == sid, "y"].to_numpy()[-10:])
        np.testing.assert_allclose(line.get_ydata(), forecast.loc[forecast.unique_id == sid, "yhat"].to_numpy())
        assert len(ax.collections) == 1  # the 80 % band
    newer = df.groupby("unique_id").head(36)  # from other history: drawn and forecast from it
    fig = auto.plot(newer, ids=["s1"], history=5)
    np.testing.assert_allclose(fig.axes[0].lines[0].get_ydata(), newer.loc[newer.unique_id == "s1", "y"].to_numpy()[-5:])
    np.testing.assert_allclose(fig.axes[0].lines[-1].get_ydata(),
                               auto.predict(df=newer).query("unique_id == 's1'")["yhat"].to_numpy())
    with pytest.raises(ValueError, match="not among"):
        auto.plot(ids=["nowhere"])


def test_one_short_series_leaves_a_network_to_the_others_instead_of_shortening_its_look_back(tmp_path):
    rng = np.random.default_rng(5)

    def weekly(lengths):
        parts = []
        for k, n in enumerate(lengths):
            t = np.arange(n)
            parts.append(pd.DataFrame({"unique_id": f"w{k}", "ds": pd.date_range("2001-01-07", periods=n, freq="W"),
                                       "y": 30 + 4 * np.sin(2 * np.pi * t / 52) + rng.normal(0, 0.3, n)}))
        return pd.concat(parts, ignore_index=True)

    def auto():
        return AutoForecaster(h=4, combine=None, random_state=0, models=[
            ("net", DLinearForecaster(h=4, max_epochs=1)), ("naive", SeasonalNaiveForecaster(h=4, season_length=1))])

    mixed = weekly([150, 150, 150, 40])  # the year's look-back holds on three of four series
    alone = DLinearForecaster(h=4, max_epochs=1, random_state=0).fit(mixed)
    assert alone.input_size_ == 40 - 4 - 3  # alone, the short series shortens the look-back for all
    given = mixed.copy()
    fitted = auto().fit(mixed)
    pd.testing.assert_frame_equal(mixed, given)
    assert fitted.models_["net"].input_size_ == 52  # the default rule's whole look-back: two horizons, a year
    choice = fitted.choice_.set_index("unique_id")
    assert np.isnan(choice.loc["w3", "net"]) and choice.loc["w3", "kept"] == "naive"
    assert np.isfinite(choice.loc[["w0", "w1", "w2"], "net"]).all()
    assert "input_size=52" in fitted.failures_.query("unique_id == 'w3'")["error"].iloc[0]
    assert fitted.predict()["yhat"].notna().all() and len(fitted.predict()) == 4 * 4
    fitted.save(tmp_path / "a")
    pd.testing.assert_frame_equal(tsrsa.load(tmp_path / "a").predict(), fitted.predict())
    mostly_short = auto().fit(weekly([150, 40, 40]))  # most series cannot hold it: the rule shortens as alone
    assert mostly_short.models_["net"].input_size_ == 40 - 4 - 3 and mostly_short.models_["net"].input_size is None


def candidates_for(h):
    return {"Naive": SeasonalNaiveForecaster(h=h, season_length=12), "ETS": ETSForecaster(h=h, season_length=12),
            "Theta": ThetaForecaster(h=h, season_length=12)}


def test_a_series_too_short_for_two_windows_is_validated_on_one(tmp_path, small_budget):
    """One series of 40 months at h 18, at the defaults: two windows (36 steps) leave 4 for fitting, where no
    candidate fits; one window leaves 22, where the statistical candidates validate (the networks need 30)."""
    t = np.arange(40)
    y = 100 + 0.8 * t + 12 * np.sin(2 * np.pi * t / 12) + np.random.default_rng(2).normal(0, 1, 40)
    df = pd.DataFrame({"unique_id": "only", "ds": pd.date_range("2010-01-01", periods=40, freq="MS"), "y": y})
    auto = AutoForecaster(h=18, random_state=0).fit(df)
    assert auto.n_windows == 2 and auto.n_windows_ == 1
    table = auto.choice_.set_index("unique_id")
    validated = [name for name in auto.names_ if np.isfinite(table.loc["only", name])]
    assert validated == ["SeasonalNaive", "ETS", "ARIMA", "Theta"]
    ets = ETSForecaster(h=18, season_length=12).cross_validate(df, n_windows=1, step_size=18, refit=False)
    scale = np.mean(np.abs(y[12:22] - y[:10]))  # the seasonal naive's in-sample error before the window
    np.testing.assert_allclose(table.loc["only", "ETS"], np.mean(np.abs(ets["y"] - ets["yhat"])) / scale)
    assert "validation block 18 more" in auto.failures_.query("candidate == 'RSA'")["error"].iloc[0]
    out = auto.predict()
    assert len(out) == 18 and np.isfinite(out["yhat"]).all()
    auto.save(tmp_path / "auto")
    back = tsrsa.load(tmp_path / "auto")
    assert back.n_windows_ == 1
    pd.testing.assert_frame_equal(back.predict(), out)
    assert not auto.unranked_ and auto.choice_["basis"].iloc[0] == "series"


def test_where_no_series_ranks_two_candidates_the_statistical_ones_that_fit_are_averaged(tmp_path):
    """26 months at h 18: one window leaves 8 months, where no candidate is validated (two windows refused the
    series); the statistical ones that fit the 26 months are averaged, and a network that fits them too is
    not kept (a network is kept only where validated)."""
    t = np.arange(26)
    y = 100 + 0.8 * t + 12 * np.sin(2 * np.pi * t / 12) + np.random.default_rng(3).normal(0, 1, 26)
    df = pd.DataFrame({"unique_id": "only", "ds": pd.date_range("2010-01-01", periods=26, freq="MS"), "y": y})
    models = {**candidates_for(18), "net": DLinearForecaster(h=18, input_size=4, max_epochs=1)}
    auto = AutoForecaster(h=18, models=models, random_state=0).fit(df)
    assert auto.n_windows_ == 1 and auto.unranked_
    choice = auto.choice_.iloc[0]
    assert choice["basis"] == "unranked" and choice["kept"] == "Naive+ETS+Theta"
    assert np.isnan(choice[list(models)].to_numpy(dtype=float)).all()
    models["net"].clone().fit(df)  # the network fits the 26 months, but unvalidated it is not kept
    alone = np.mean([models[name].clone().fit(df).predict()["yhat"].to_numpy() for name in ("Naive", "ETS", "Theta")],
                    axis=0)
    np.testing.assert_allclose(auto.predict()["yhat"].to_numpy(), alone, rtol=1e-12)
    with pytest.raises(ValueError, match="no forecast this fit keeps was validated"):
        auto.predict(level=[80])
    auto.save(tmp_path / "auto")
    back = tsrsa.load(tmp_path / "auto")
    assert back.unranked_ and back.choice_["basis"].iloc[0] == "unranked"
    pd.testing.assert_frame_equal(back.predict(), auto.predict())
    other = df.assign(unique_id="new")  # an unseen id takes the same mean
    np.testing.assert_allclose(auto.predict(df=other)["yhat"].to_numpy(), alone, rtol=1e-12)
    two = AutoForecaster(h=18, models=candidates_for(18)).fit(pd.concat([df, df.assign(unique_id="b")]))
    assert two.unranked_ and (two.choice_["kept"] == "Naive+ETS+Theta").all()
    with pytest.raises(ValueError, match="no candidate could forecast"):  # 9 months: none of them validates or fits
        AutoForecaster(h=18, models={"ETS": ETSForecaster(h=18, season_length=12)}).fit(df.head(9))


def test_a_series_no_candidate_fits_is_refused_with_each_candidates_reason():
    df = monthly()
    short = df[df["unique_id"] == "s0"].head(8).assign(unique_id="short")  # 8 months: below every minimum
    panel = pd.concat([df, short], ignore_index=True)
    models = {"Seasonal": SeasonalNaiveForecaster(h=H, season_length=12), "Theta": ThetaForecaster(h=H)}
    auto = AutoForecaster(h=H, models=models, n_windows=W)
    with pytest.raises(ValueError, match="no candidate could forecast") as refused:
        auto.fit(panel)
    message = str(refused.value)
    assert "'short'" in message and "drop the series" in message
    for name, need in (("Seasonal", 12), ("Theta", 10)):  # each candidate's own minimum, from its refit
        assert f"{name}: too short to fit: " in message and f"needs {need} observations" in message
    assert not hasattr(auto, "choice_")  # a refused fit leaves no fitted state
    assert auto.fit(df).choice_["unique_id"].tolist() == ["s0", "s1", "s2"]  # without it the panel fits


def test_one_candidate_keeps_its_windows_and_ranks_where_validated():
    df = monthly()
    auto = AutoForecaster(h=H, models=[ThetaForecaster(h=H)], n_windows=W).fit(df)
    assert auto.n_windows_ == W and not auto.unranked_ and (auto.choice_["basis"] == "series").all()
    assert np.isfinite(auto.predict(level=[50])["yhat_lo_50"]).all()  # validated: intervals calibrate


def two_cycles(n_series: int = 24, length: int = 48, seed: int = 0) -> pd.DataFrame:
    """Cycles of 2 and 3 steps: the naive forecasts of lag 2 and 3 each miss one of them, their mean half of each."""
    rng = np.random.default_rng(seed)
    t = np.arange(length)
    frames = []
    for k in range(n_series):
        a2, a3 = rng.uniform(1, 2, 2)
        y = 10 + a2 * (-1.0) ** t + a3 * np.cos(2 * np.pi * t / 3 + rng.uniform(0, 6)) + rng.normal(0, 0.3, length)
        frames.append(pd.DataFrame({"unique_id": f"s{k:02d}", "ds": t, "y": y}))
    return pd.concat(frames, ignore_index=True)


def test_the_last_window_keeps_the_rule_that_beats_the_gate_there(tmp_path):
    df, h = two_cycles(), 6
    models = {f"lag{m}": SeasonalNaiveForecaster(h=h, season_length=m) for m in (1, 2, 3, 5)}
    auto = AutoForecaster(h=h, season_length=1, models=models).fit(df)  # the default: combine="auto"
    # each rule as a user would fit it on the frame without the last window, validated on the window before it
    # (a naive forecast made at a cutoff is the one refit=False makes there): its MASE on the last window
    head = df[df.groupby("unique_id").cumcount(ascending=False) >= h]
    actual = df.groupby("unique_id").tail(h)["y"].to_numpy().reshape(-1, h)
    scale = head.groupby("unique_id")["y"].apply(lambda y: np.mean(np.abs(np.diff(y.to_numpy()[:-h])))).to_numpy()
    rules = {"gate": {"margin": 2.0}, "best 2": {"top_k": 2, "margin": None}, "best 3": {"top_k": 3, "margin": None},
             "best 4": {"top_k": 4, "margin": None}}
    mase = {}
    for name, params in rules.items():
        rule = AutoForecaster(h=h, season_length=1, models=models, n_windows=1, combine="mean", **params).fit(head)
        mase[name] = np.mean(np.abs(rule.predict()["yhat"].to_numpy().reshape(-1, h) - actual), axis=1) / scale
    table = auto.rules_.set_index("rule")
    for name in rules:
        assert table.loc[name, "last_window_mase"] == pytest.approx(mase[name].mean(), rel=1e-12)
        d = mase["gate"] - mase[name]
        want = 0.0 if name == "gate" else d.mean() / (d.std(ddof=1) / np.sqrt(len(d)))
        assert table.loc[name, "beats_gate_by"] == pytest.approx(want, rel=1e-9, abs=1e-12)
    from scipy.stats import norm, t

    needed = t.ppf(norm.cdf(2.0), df=df["unique_id"].nunique() - 1)  # the margin as Student's t over 24 series
    assert table["needed"].to_numpy() == pytest.approx(needed, rel=1e-12) and 2.0 < needed < 2.2
    beating = table[table["beats_gate_by"] > needed]
    assert len(beating) and auto.rule_ == beating["last_window_mase"].idxmin() != "gate"
    assert table["kept"].sum() == 1 and table.loc[auto.rule_, "kept"]
    # the weights, and so the forecasts, are those of that rule on both windows
    same = AutoForecaster(h=h, season_length=1, models=models, combine="mean", **rules[auto.rule_]).fit(df)
    np.testing.assert_array_equal(auto.weights_.to_numpy(), same.weights_.to_numpy())
    np.testing.assert_allclose(auto.predict()["yhat"].to_numpy(), same.predict()["yhat"].to_numpy(), rtol=1e-12)
    gate = AutoForecaster(h=h, season_length=1, models=models, combine="mean").fit(df)
    assert not np.array_equal(gate.weights_.to_numpy(), auto.weights_.to_numpy())
    auto.save(tmp_path / "auto")
    loaded = tsrsa.load(tmp_path / "auto")
    assert loaded.rule_ == auto.rule_
    pd.testing.assert_frame_equal(loaded.rules_, auto.rules_)
    # two series: the same lead over the gate is no longer enough (the margin as Student's t with one degree)
    few = AutoForecaster(h=h, season_length=1, models=models).fit(df[df["unique_id"].isin(["s01", "s02"])])
    assert few.rules_["needed"].iloc[0] == pytest.approx(t.ppf(norm.cdf(2.0), df=1), rel=1e-12)
    assert few.rule_ == "gate" and (few.rules_["beats_gate_by"].iloc[1:] > 2.0).any()
    # an explicit combine, a panel ranking or no margin compare no rule; one window keeps the gate, unscored
    for params in ({"combine": "mean"}, {"choose": "panel"}, {"margin": None}):
        other = AutoForecaster(h=h, season_length=1, models=models, **params).fit(df)
        assert other.rule_ is None and other.rules_.empty, params
    one = AutoForecaster(h=h, season_length=1, models=models, n_windows=1).fit(df)
    assert one.rule_ == "gate" and one.rules_["last_window_mase"].isna().all()
    capped = AutoForecaster(h=h, season_length=1, models=models, top_k=2).fit(df)  # no rule combines more than 2
    assert list(capped.rules_["rule"]) == ["gate", "best 2"] and capped.weights_.gt(0).sum(axis=1).max() <= 2


def test_the_last_window_rule_on_arbitrary_errors():
    """Drawn validation errors (NaN where a candidate could not forecast): the rule never raises, the gate stays
    unless another rule beats it by more than the margin (as Student's t over the series), the kept one is the
    lowest of those that do, each score is that rule's combination on the last window, and the order of the series
    changes nothing."""
    from hypothesis import given
    from hypothesis import strategies as st
    from scipy.stats import norm, t

    from tsrsa.estimator.model_choice import combined, last_window_rule, rule_options, series_weights

    @given(st.integers(0, 2**31 - 1), st.integers(1, 12), st.integers(1, 6), st.integers(1, 3), st.integers(1, 4),
           st.floats(0.0, 0.5), st.sampled_from([0.5, 2.0]))
    def check(seed, S, C, W, h, missing, margin):
        rng = np.random.default_rng(seed)
        signed = rng.normal(size=(S, C, W, h)) * rng.uniform(0.2, 3.0, size=(1, C, 1, 1))
        signed[rng.random((S, C)) < missing] = np.nan
        names, ids = [f"c{c}" for c in range(C)], np.array([f"s{i}" for i in range(S)], dtype=object)
        (rule, top_k, kept_margin), table = last_window_rule(signed, ids, names, top_k=None, margin=margin)
        options = rule_options(None, margin)
        assert [row[0] for row in table] == [name for name, _, _ in options]
        assert (rule, top_k, kept_margin) in options
        means = np.array([row[1] for row in table])
        beats = np.array([row[2] for row in table])
        needed = table[0][3]
        if np.isnan(means).all():
            assert rule == "gate" and np.isnan(needed)
            return
        errors = np.mean(np.abs(signed[:, :, :-1]), axis=(2, 3))
        usable = np.isfinite(errors) & np.isfinite(signed[:, :, -1]).all(axis=2)
        rows = usable.sum(axis=1) >= 2
        assert needed == pytest.approx(t.ppf(norm.cdf(margin), df=rows.sum() - 1), rel=1e-12) and needed > margin
        passing = [r for r in range(1, len(options)) if beats[r] > needed]
        want = min(passing, key=lambda r: means[r]) if passing else 0
        assert rule == options[want][0]
        for (name, k, m), mean in zip(options, means):
            w = series_weights(errors[rows], np.abs(signed[rows, :, :-1]), ids[rows], names, top_k=k, margin=m,
                               blocked=~usable[rows])
            assert np.allclose(w.sum(axis=1), 1.0)
            got = np.mean(np.abs(combined(w, signed[rows, :, -1])), axis=1).mean()
            assert mean == pytest.approx(got, rel=1e-12), name
        order = rng.permutation(S)
        again = last_window_rule(signed[order], ids[order], names, top_k=None, margin=margin)
        assert again[0][0] == rule
        np.testing.assert_allclose([row[1] for row in again[1]], means, rtol=1e-12)

    check()


def integer_time(n_series: int = 3, length: int = 90, period: int = 16, seed: int = 0) -> pd.DataFrame:
    """Series on integer time (no season the default look-back could read) with a cycle of ``period`` steps."""
    rng = np.random.default_rng(seed)
    t = np.arange(length)
    return pd.concat([pd.DataFrame({"unique_id": f"s{k}", "ds": t, "y": 10 + 3 * np.sin(2 * np.pi * t / period + k)
                                    + rng.normal(0, 0.2, length)}) for k in range(n_series)], ignore_index=True)


def test_on_integer_time_dlinear_chooses_between_the_default_look_back_and_twice_it_for_every_network(
        small_budget, tmp_path):
    df = integer_time()
    models = {"Naive": SeasonalNaiveForecaster(h=H), "LSTM": LSTMForecaster(h=H), "DLinear": DLinearForecaster(h=H),
              "Fixed": DLinearForecaster(h=H, input_size=8)}
    auto = AutoForecaster(h=H, models=models, random_state=0, n_windows=W, freq=1).fit(df)
    table = auto.look_backs_.set_index("candidate")
    assert list(table.index) == ["LSTM", "DLinear"]  # the given look-back of "Fixed" is the user's: not tried
    follower = table.loc["LSTM"]  # validated once, at the look-back DLinear (the scout) chose
    assert follower["kept"] == table.loc["DLinear", "kept"]
    assert np.isnan(follower["mase"] if follower["kept"] == follower["longer"] else follower["longer_mase"])
    assert auto.choice_["LSTM"].mean() == pytest.approx(follower[["mase", "longer_mase"]].max())
    naive_and_lstm = {"Naive": SeasonalNaiveForecaster(h=H, season_length=1), "LSTM": LSTMForecaster(h=H)}
    without = AutoForecaster(h=H, models=naive_and_lstm, random_state=0, n_windows=W, freq=1).fit(df)
    assert without.look_backs_.empty  # no DLinear to choose with: every network at its default look-back
    table = table.reset_index()
    row = table.iloc[1]
    assert (row["input_size"], row["longer"]) == (2 * H, 4 * H)  # two horizons on integer time, and twice that
    assert row["kept"] == (row["longer"] if row["longer_mase"] < row["mase"] else row["input_size"])
    assert auto.models_["DLinear"].input_size_ == row["kept"]  # refitted at what it kept
    kept_mase = row["longer_mase"] if row["kept"] == row["longer"] else row["mase"]
    assert auto.choice_["DLinear"].mean() == pytest.approx(kept_mase)  # the choice reads the kept forecasts
    assert not any(isinstance(v, DLinearForecaster) and v.input_size == 4 * H for v in models.values())  # untouched
    auto.save(tmp_path / "auto")
    pd.testing.assert_frame_equal(tsrsa.load(tmp_path / "auto").look_backs_, table)
    # where half of the series or fewer hold the longer look-back with the validation block, it is not tried
    short = pd.concat([df[df["unique_id"] != "s2"], df[df["unique_id"] == "s2"].head(24)], ignore_index=True)
    short = pd.concat([short, short[short["unique_id"] == "s2"].assign(unique_id="s3")], ignore_index=True)
    assert AutoForecaster(h=H, models=models, random_state=0, n_windows=W, freq=1).fit(short).look_backs_.empty
    # where the time index gives the look-back a season (monthly dates: 12 steps), it is not tried either
    monthly_dates = df.assign(ds=pd.DatetimeIndex(pd.date_range("2000-01-01", periods=90, freq="MS")).take(df["ds"]))
    fitted = AutoForecaster(h=H, models=models, random_state=0, n_windows=W).fit(monthly_dates)
    assert fitted.look_backs_.empty and fitted.models_["DLinear"].input_size_ == 12  # the year, held by the rule
