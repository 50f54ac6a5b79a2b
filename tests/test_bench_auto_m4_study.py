"""benchmarks/auto_m4_study.py: its rows, and that a rule applied offline scores as AutoForecaster fitted at it."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tsrsa
from tsrsa.benchmarking.m4 import load_split, scores_with_owa
from tsrsa.benchmarking.m4_global import forecast_matrix

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import auto_m4_study as study  # noqa: E402

pytestmark = pytest.mark.slow  # candidate fits on a small M4-shaped panel (~5 s)


def write_weekly(folder: Path, n_series: int = 5, shortest: int = 70) -> None:
    """M4-shaped Weekly files (V1 the id, values padded with NaN): trending and seasonal-looking series."""
    rng = np.random.default_rng(3)
    lengths = [shortest + 9 * k for k in range(n_series)]
    width = max(lengths)
    train = pd.DataFrame(np.nan, index=range(n_series), columns=[f"V{i}" for i in range(1, width + 2)]).astype(object)
    test = pd.DataFrame(np.nan, index=range(n_series), columns=[f"V{i}" for i in range(1, 15)]).astype(object)
    for k, n in enumerate(lengths):
        t = np.arange(n + 13)
        y = 100 + (k - 2) * 0.4 * t + 6 * np.sin(2 * np.pi * t / 52) + rng.normal(0, 1 + k, n + 13).cumsum()
        train.iloc[k, 0] = test.iloc[k, 0] = f"W{k}"
        train.iloc[k, 1: n + 1] = y[:n]
        test.iloc[k, 1:] = y[n:]
    folder.mkdir(parents=True)
    train.to_csv(folder / "Weekly-train.csv", index=False)
    test.to_csv(folder / "Weekly-test.csv", index=False)


def test_a_rule_applied_offline_scores_as_autoforecaster_fitted_at_it(tmp_path):
    write_weekly(tmp_path / "m4")
    output = tmp_path / "rows.csv"
    args = ["--frequency", "Weekly", "--data-dir", str(tmp_path), "--output", str(output)]
    study.main([*args, "--models", "SeasonalNaive,Theta"])
    rows = pd.read_csv(output, keep_default_na=False)
    assert list(rows.columns) == list(study.COLUMNS) and len(rows) == 2 * 5 and not rows["error"].any()
    table = study.rule_scores("Weekly", 0, output, tmp_path).set_index("model")
    val, test = load_split("Weekly", "validation", tmp_path), load_split("Weekly", "test", tmp_path)
    models = {name: model for name, model in study.candidates(13, 1, 0).items() if name in ("SeasonalNaive", "Theta")}
    for rule, params in {"noise2_gate2": {"combine": "mean"}, "auto": {}, "mean2": {"margin": None},
                         "best": {"combine": None, "margin": None},
                         "panel_best": {"choose": "panel", "combine": None, "margin": None}}.items():
        auto = tsrsa.AutoForecaster(h=13, season_length=1, freq=1, random_state=0, models=models, **params)
        auto.fit(val.frame())
        for origin, split, frame in (("later", val, auto.predict()), ("test", test, auto.predict(df=test.frame()))):
            want = scores_with_owa(split, forecast_matrix(frame, split.ids, 13))
            for metric in ("smape", "mase", "owa"):
                assert table.loc[rule, f"{origin}_{metric}"] == pytest.approx(want[metric], rel=1e-6), (rule, origin)
    rows = rows.drop_duplicates("model", keep="last").set_index("model")
    kept = dict(part.split("=") for part in table.loc["noise2_gate2", "kept"].split())
    charged = rows["validation_seconds"].sum() + sum(rows.loc[n, "refit_seconds"] * float(s) for n, s in kept.items())
    rounding = 0.005 * rows["refit_seconds"].sum() + 0.01  # the shares are printed to two decimals
    assert table.loc["noise2_gate2", "seconds"] == pytest.approx(charged, abs=rounding)  # statistical refits by share
    alone = table.loc["Theta"]
    want = scores_with_owa(test, forecast_matrix(models["Theta"].clone().fit(val.frame()).predict(
        df=test.frame()), test.ids, 13))
    assert alone["test_smape"] == pytest.approx(want["smape"], rel=1e-6)
    # a labelled candidate stands in for the default of its name
    study.main([*args, "--models", "SeasonalNaive", "--set", "season_length=2"])
    label = "SeasonalNaive[season_length=2]"
    assert label in set(pd.read_csv(output)["model"])
    swapped = study.rule_scores("Weekly", 0, output, tmp_path, use=[label]).set_index("model")
    other = tsrsa.SeasonalNaiveForecaster(h=13, season_length=2, freq=1).fit(val.frame()).predict(df=test.frame())
    want = scores_with_owa(test, forecast_matrix(other, test.ids, 13))
    assert swapped.loc["SeasonalNaive", "test_mase"] == pytest.approx(want["mase"], rel=1e-6)
    assert table.loc["SeasonalNaive", "test_mase"] != pytest.approx(want["mase"], rel=1e-6)
    with pytest.raises(ValueError, match="run it first"):
        study.rule_scores("Weekly", 0, output, tmp_path, use=["Theta[theta=3]"])
    with pytest.raises(SystemExit):
        study.main([*args, "--models", "Prophet"])


def test_a_network_keeps_the_look_back_that_validates_better_as_autoforecaster_does(tmp_path, small_budget):
    write_weekly(tmp_path / "m4", shortest=110)
    output = tmp_path / "rows.csv"
    args = ["--frequency", "Weekly", "--data-dir", str(tmp_path), "--output", str(output)]
    study.main([*args, "--models", "SeasonalNaive,DLinear"])
    study.main([*args, "--models", "DLinear", "--set", "input_size=52"])  # twice the 26 weeks of two horizons
    use, extra, lines = study.look_back_choice("Weekly", 0, output, tmp_path, longer=["DLinear[input_size=52]"])
    val, test = load_split("Weekly", "validation", tmp_path), load_split("Weekly", "test", tmp_path)
    built = study.candidates(13, 1, 0)
    auto = tsrsa.AutoForecaster(h=13, season_length=1, freq=1, random_state=0,
                                models={"SeasonalNaive": built["SeasonalNaive"], "DLinear": built["DLinear"]})
    auto.fit(val.frame())
    chosen = auto.look_backs_.set_index("candidate").loc["DLinear"]
    assert (chosen["input_size"], chosen["longer"]) == (26, 52)
    assert use == (["DLinear[input_size=52]"] if chosen["kept"] == 52 else []) and len(lines) == 1
    rows = pd.read_csv(output, keep_default_na=False).drop_duplicates("model", keep="last").set_index("model")
    assert extra == rows.loc["DLinear" if chosen["kept"] == 52 else "DLinear[input_size=52]", "validation_seconds"]
    table = study.rule_scores("Weekly", 0, output, tmp_path, longer=["DLinear[input_size=52]"]).set_index("model")
    want = scores_with_owa(test, forecast_matrix(auto.predict(df=test.frame()), test.ids, 13))
    assert table.loc["auto", "test_mase"] == pytest.approx(want["mase"], rel=1e-6)


def test_dated_frames_keep_each_series_steps_as_weekly_dates_that_read_a_season(tmp_path):
    write_weekly(tmp_path / "m4")
    frame = load_split("Weekly", "validation", tmp_path).frame()
    out = study.dated(frame, "Weekly")
    assert frame["ds"].dtype.kind == "i" and len(out) == len(frame)  # the given frame is left as it was
    assert (out.groupby("unique_id")["ds"].diff().dropna() == pd.Timedelta("7D")).all()
    assert (out["ds"] == pd.Timestamp("1990-01-07") + frame["ds"] * pd.Timedelta("7D")).all()
    assert study.labelled("RSA", {"dated": True}) == "RSA[dated=true]"
    model = tsrsa.DLinearForecaster(h=13, max_epochs=1, random_state=0)
    longest = out["unique_id"] == "W4"  # 93 weeks: room for a year's look-back and four windows
    assert model.plan(out[longest]).input_size == 52 and model.plan(frame[longest]).input_size == 26
    assert model.plan(out).input_size == 57 - 13 - 3  # the shortest (57 weeks) shortens the panel's look-back


def test_cost_times_autoforecaster_beside_each_candidate_alone_on_one_panel(tmp_path):
    write_weekly(tmp_path / "m4")
    output = tmp_path / "cost.csv"
    study.cost("Weekly", 3, ["SeasonalNaive", "Theta"], 0, tmp_path, with_dates=True, output=output)
    study.cost("Weekly", 4, ["SeasonalNaive", "Theta"], 0, tmp_path, output=output)
    rows = pd.read_csv(output, keep_default_na=False)
    assert list(rows.columns) == ["date", "tsrsa_version", "seed", "subset", "n_series", "model", "params",
                                  "fit_seconds"]
    assert rows["model"].tolist() == ["SeasonalNaive", "Theta", "Auto"] * 2  # each candidate alone, then Auto
    assert rows["n_series"].tolist() == [3] * 3 + [4] * 3 and (rows["fit_seconds"] >= 0).all()
    seconds = rows["fit_seconds"].to_numpy().reshape(2, 3)
    assert (seconds[:, 2] > seconds[:, 0]).all()  # Auto validates and refits what the naive fits once
    assert rows["params"].tolist()[2::3] == ['{"candidates": "SeasonalNaive,Theta", "dated": true}',
                                            '{"candidates": "SeasonalNaive,Theta", "dated": false}']
    assert not rows["params"].tolist()[0] and set(rows["tsrsa_version"]) == {tsrsa.__version__}
