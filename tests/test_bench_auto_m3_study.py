"""benchmarks/auto_m3_study.py and the modules it is split into (auto_m3_data, auto_m3_rules): the draw, its rows, and
that the offline rules are AutoForecaster's choice."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tsrsa
from tsrsa.benchmarking import m3_sample as m3

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import auto_m3_data as m3_data  # noqa: E402
import auto_m3_rules as rules  # noqa: E402
import auto_m3_study as study  # noqa: E402
from auto_m4_study import candidates  # noqa: E402

pytestmark = pytest.mark.slow  # the study's candidate fits and rules on M3-like panels (~6 s)

#: the fast candidates (ETS and ARIMA fit the same way, only slower)
FAST = {"SeasonalNaive": "SeasonalNaiveForecaster", "Theta": "ThetaForecaster"}


def write_yearly(folder: Path, n_series: int = 4, length: int = 40) -> Path:
    """A folder shaped as the M3 files, with yearly series only."""
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    ids = [f"Y{k}" for k in range(n_series)]
    frames = [pd.DataFrame({"unique_id": sid, "ds": np.arange(length),
                            "y": 100 + (k + 1) * np.arange(length) + rng.normal(0, 3 + 4 * k, length).cumsum()})
              for k, sid in enumerate(ids)]
    pd.concat(frames).to_csv(folder / "M3-yearly.csv", index=False)
    pd.DataFrame({"unique_id": ids, "subset": "yearly", "n": length, "horizon": 6, "category": "MICRO"}).to_csv(
        folder / "M3-info.csv", index=False)
    return folder


def test_the_draw_is_repeatable_and_takes_the_subsets_in_turn():
    info = pd.DataFrame({"unique_id": [f"{s[0]}{k}" for s in m3_data.HORIZON for k in range(5)],
                         "subset": [s for s in m3_data.HORIZON for _ in range(5)]})
    a = m3_data.draw(info, ["monthly", "yearly"], 3, seed=1)
    assert a.equals(m3_data.draw(info, ["monthly", "yearly"], 3, seed=1))
    assert list(a["draw"]) == [0, 0, 1, 1, 2, 2]
    # a subset's draw does not depend on which others are run
    only = m3_data.draw(info, ["monthly"], 3, seed=1)
    assert list(only["unique_id"]) == list(a.loc[a["subset"] == "monthly", "unique_id"])


def test_rows_resume_and_the_rules_are_autoforecasters(tmp_path, monkeypatch):
    monkeypatch.setattr(study, "CANDIDATES", FAST)
    folder = write_yearly(tmp_path / "m3")
    output = tmp_path / "rows.csv"
    args = ["--data-dir", str(folder), "--output", str(output), "--subsets", "yearly", "--per-subset", "4"]
    study.main(args)
    rows = pd.read_csv(output, dtype={"unique_id": str}, keep_default_na=False)
    assert list(rows.columns) == list(m3_data.COLUMNS) and len(rows) == 4 * len(FAST)
    study.main(args)  # a rerun resumes: nothing is added
    assert len(pd.read_csv(output)) == len(rows)
    table = rules.rule_table(rows, folder)
    # the test origin with two windows: each rule's mean MASE is AutoForecaster's, fitted on the training parts
    values = m3_data.read_values(folder, rows.drop_duplicates("unique_id"))
    ids = sorted(values)
    train = study.long_frame(values, ids, 6)  # the training parts
    models = {name: getattr(tsrsa, cls)(h=6, season_length=1) for name, cls in FAST.items()}
    for rule, params in {"best": {"combine": None}, "mean2": {"margin": None}, "noise2_gate2": {"combine": "mean"},
                         "auto": {}, "panel_best": {"choose": "panel", "combine": None},
                         "noise2_best": {"combine": None, "margin": 2.0}}.items():
        auto = tsrsa.AutoForecaster(h=6, season_length=1, models=models, n_windows=2, **params).fit(train)
        yhat = auto.predict()["yhat"].to_numpy().reshape(len(ids), 6)
        want = np.mean([m3.mase(values[sid][-6:], f, values[sid][:-6], 1) for sid, f in zip(ids, yhat)])
        got = table[(table.origin == "test") & (table.n_windows == 2) & (table.model == rule)]["mase"].item()
        assert got == pytest.approx(want, rel=1e-6), rule
    ranking = rules.rule_ranking(table)
    assert set(ranking["model"]) == set(rules.RULES) and (ranking["mase_worst"] >= ranking["mase_gmean"] - 1e-12).all()


def test_a_network_is_fitted_on_the_panel_and_the_rules_with_it_are_autoforecasters(tmp_path, monkeypatch):
    naive = {"SeasonalNaive": "SeasonalNaiveForecaster"}
    monkeypatch.setattr(study, "CANDIDATES", naive)
    monkeypatch.setattr(study, "NETWORKS", ("DLinear",))
    folder = write_yearly(tmp_path / "m3", n_series=5, length=60)  # room for twice the network's look-back
    frame = pd.read_csv(folder / "M3-yearly.csv")
    short = frame[(frame["unique_id"] != "Y4") | (frame["ds"] >= 46)]  # Y4: 14 values, too short for the network
    short.to_csv(folder / "M3-yearly.csv", index=False)
    output = tmp_path / "rows.csv"
    args = ["--data-dir", str(folder), "--output", str(output), "--subsets", "yearly", "--per-subset", "5"]
    study.main([*args, "--models", "SeasonalNaive,DLinear"])
    rows = pd.read_csv(output, dtype={"unique_id": str}, keep_default_na=False)
    net = rows[rows["model"] == "DLinear"].set_index("unique_id")
    assert len(net) == 5 and net.loc["Y4", "final_forecast"] == "" and "too short" in net.loc["Y4", "error"]
    assert (net.drop(index="Y4")["final_forecast"] != "").all()
    assert net["final_seconds"].nunique() == 1  # the panel's seconds, shared
    study.main([*args, "--models", "DLinear"])  # resumes: nothing is added
    assert len(pd.read_csv(output)) == len(rows)
    with pytest.raises(SystemExit):
        study.main([*args, "--models", "DLinear", "--shard", "0/2"])
    table = rules.rule_table(rows, folder)
    values = m3_data.read_values(folder, rows.drop_duplicates("unique_id"))
    ids = sorted(values)
    train = study.long_frame(values, ids, 6)  # the training parts
    for sid, part in train.groupby("unique_id"):
        assert np.array_equal(part["y"].to_numpy(), values[sid][:-6]) and list(part["ds"]) == list(range(len(part)))
    models = {name: getattr(tsrsa, cls)(h=6, season_length=1) for name, cls in naive.items()}
    models["DLinear"] = candidates(6, 1, 0)["DLinear"]
    auto = tsrsa.AutoForecaster(h=6, season_length=1, models=models, n_windows=2).fit(train)
    assert "DLinear" in auto.models_  # the network is kept by some series, so the rule reads its forecasts
    assert list(auto.look_backs_["longer"]) == [24]  # validated at 12 and 24 steps, as the study's rows were
    yhat = auto.predict()["yhat"].to_numpy().reshape(len(ids), 6)
    want = np.mean([m3.mase(values[sid][-6:], f, values[sid][:-6], 1) for sid, f in zip(ids, yhat)])
    got = table[(table.origin == "test") & (table.n_windows == 2) & (table.model == "noise2_gate2")]["mase"].item()
    assert got == pytest.approx(want, rel=1e-6)
    # the later origin: AutoForecaster fitted on the training parts less h, scored on their last h values
    fit1 = study.long_frame(values, ids, 12)
    auto = tsrsa.AutoForecaster(h=6, season_length=1, models=models, n_windows=2).fit(fit1)
    yhat = auto.predict()["yhat"].to_numpy().reshape(len(ids), 6)
    want = np.mean([m3.mase(values[sid][-12:-6], f, values[sid][:-12], 1) for sid, f in zip(ids, yhat)])
    got = table[(table.origin == "later") & (table.n_windows == 2) & (table.model == "noise2_gate2")]["mase"].item()
    assert got == pytest.approx(want, rel=1e-6)
    alone = table[(table.origin == "test") & (table.model == "DLinear")]
    assert alone["kept"].item() == "fitted on 4"


def test_a_candidate_per_release_is_scored_on_the_series_every_release_fitted(tmp_path, monkeypatch):
    monkeypatch.setattr(study, "CANDIDATES", FAST)
    folder = write_yearly(tmp_path / "m3")
    output = tmp_path / "rows.csv"
    args = ["--data-dir", str(folder), "--output", str(output), "--subsets", "yearly", "--models", "Theta"]
    study.main([*args, "--per-subset", "4"])
    monkeypatch.setattr(tsrsa, "__version__", "9.9.9")  # a later release, fitted on three of the four series
    study.main([*args, "--per-subset", "3"])
    rows = pd.read_csv(output, dtype={"unique_id": str}, keep_default_na=False)
    table = rules.release_table(rows, folder, "Theta")
    assert list(table["release"]) == [rows["tsrsa_version"].iloc[0], "9.9.9"] and set(table["series"]) == {3}
    values = m3_data.read_values(folder, rows.drop_duplicates("unique_id"))
    later = rows[rows["tsrsa_version"] == "9.9.9"]
    want = np.mean([m3.mase(values[sid][-12:-6], np.array(json.loads(f)), values[sid][:-12], 1)
                    for sid, f in zip(later["unique_id"], later["cv1_forecast"])])
    assert table["later_mase"].iloc[1] == pytest.approx(want, rel=1e-9)
    assert table["later_mase"].iloc[0] == pytest.approx(want, rel=1e-9)  # the same model: the same forecasts
    first = rules.release_table(rows, folder, "Theta", releases=[rows["tsrsa_version"].iloc[0]])
    assert list(first["series"]) == [4]  # one release listed: the series it fitted


def test_shards_split_the_sample_between_processes(tmp_path, monkeypatch):
    monkeypatch.setattr(study, "CANDIDATES", {"SeasonalNaive": "SeasonalNaiveForecaster"})
    folder = write_yearly(tmp_path / "m3", n_series=5)
    args = ["--data-dir", str(folder), "--subsets", "yearly", "--per-subset", "5"]
    study.main([*args, "--output", str(tmp_path / "a.csv"), "--shard", "0/2"])
    first = set(pd.read_csv(tmp_path / "a.csv")["unique_id"])
    study.main([*args, "--output", str(tmp_path / "a.csv"), "--shard", "1/2"])
    study.main([*args, "--output", str(tmp_path / "b.csv")])
    both, whole = pd.read_csv(tmp_path / "a.csv"), pd.read_csv(tmp_path / "b.csv")
    assert len(first) == 3 and len(both) == len(whole) == 5 and set(both["unique_id"]) == set(whole["unique_id"])
    with pytest.raises(SystemExit):
        study.main([*args, "--output", str(tmp_path / "c.csv"), "--shard", "2/2"])
    (tmp_path / "ids.txt").write_text("Y3\nY1\nnot-in-the-sample\n")
    study.main([*args, "--output", str(tmp_path / "d.csv"), "--ids", str(tmp_path / "ids.txt")])
    assert sorted(pd.read_csv(tmp_path / "d.csv")["unique_id"]) == ["Y1", "Y3"]  # those of the sample only
    with pytest.raises(SystemExit):  # a network is fitted on a subset's whole sample
        study.main([*args, "--output", str(tmp_path / "e.csv"), "--ids", str(tmp_path / "ids.txt"), "--models", "RSA"])


def test_one_series_alone_is_autoforecasters_choice_on_that_series(tmp_path, monkeypatch):
    import auto_single

    monkeypatch.setattr(study, "CANDIDATES", FAST)
    monkeypatch.setattr(auto_single, "CANDIDATES", FAST)
    folder = tmp_path / "m3"
    folder.mkdir()
    rng = np.random.default_rng(1)
    lengths = {"Y0": 40, "Y1": 20, "Y2": 16}  # training parts of 34, 14 and 10 years: two windows of 6, or one
    pd.concat([pd.DataFrame({"unique_id": sid, "ds": np.arange(n), "y": 50 + np.arange(n) + rng.normal(0, 2, n)})
               for sid, n in lengths.items()]).to_csv(folder / "M3-yearly.csv", index=False)
    pd.DataFrame({"unique_id": list(lengths), "subset": "yearly", "n": list(lengths.values()), "horizon": 6,
                  "category": "MICRO"}).to_csv(folder / "M3-info.csv", index=False)
    output = tmp_path / "rows.csv"
    study.main(["--data-dir", str(folder), "--output", str(output), "--subsets", "yearly", "--per-subset", "3"])
    per = auto_single.per_series(output, folder, before={}).set_index(["unique_id", "origin"])
    values = m3_data.read_values(folder, pd.DataFrame({"unique_id": list(lengths), "subset": "yearly", "draw": 0}))
    models = {name: getattr(tsrsa, cls)(h=6, season_length=1) for name, cls in FAST.items()}
    windows = {}
    for sid, v in values.items():  # each series alone, at the test origin
        auto = tsrsa.AutoForecaster(h=6, season_length=1, models=models).fit(pd.Series(v[:-6], name=sid))
        windows[sid] = auto.n_windows_
        want = m3.smape(v[-6:], auto.predict()["yhat"].to_numpy())
        assert per.loc[(sid, "test"), "0.19.5 sMAPE"] == pytest.approx(want, rel=1e-6), sid  # 8 digits kept
    assert windows["Y0"] == 2 and windows["Y2"] == 1  # the rule moved the short series to one window
    assert auto_single.table(per.reset_index())["series"].sum() >= 1
