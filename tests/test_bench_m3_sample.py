"""The M3 sample and its harness: the committed sample's strata, the rows, resuming, the scores, and that
no choice reads the test part."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tsrsa.benchmarking import m3_sample as m3
from tsrsa.benchmarking import m3_summary

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import m3_defaults  # noqa: E402

SAMPLE = ROOT / "benchmarks" / "configs" / "m3_sample.csv"
SHARED_M3 = ROOT.parent / "shared" / "datasets" / "m3"
#: the networks' budget here, passed as the variant's parameters
TINY = ["-p", "max_epochs=1", "-p", "ensemble_size=1", "-p", "start=null"]


def write_m3(folder: Path, test_scale: float = 1.0) -> Path:
    """A monthly and a quarterly series in M3's file layout; the test parts multiplied by ``test_scale``."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    info, frames = [], {}
    for sid, subset, n in (("N2001", "monthly", 110), ("N 701", "quarterly", 50)):
        m, h = m3.SEASON[subset], m3.HORIZON[subset]
        t = np.arange(n)
        y = 100 + 0.5 * t + 10 * np.sin(2 * np.pi * t / m) + rng.normal(0, 2, n)
        y[n - h:] *= test_scale
        ds = pd.date_range("1990-01-01", periods=n, freq=m3.FREQ[subset])
        frames[subset] = pd.DataFrame({"unique_id": sid, "ds": ds.strftime("%Y-%m-%d"), "y": y})
        info.append({"unique_id": sid, "subset": subset, "n": n, "horizon": h, "category": "MICRO"})
    pd.DataFrame(info).to_csv(folder / "M3-info.csv", index=False)
    for subset, frame in frames.items():
        frame.to_csv(folder / f"M3-{subset}.csv", index=False)
    pd.DataFrame(info).loc[:, list(m3.SAMPLE_COLUMNS)].to_csv(folder / "sample.csv", index=False)
    return folder


def run_cli(folder: Path, output: Path, *extra: str) -> pd.DataFrame:
    m3_defaults.main(["--data-dir", str(folder), "--sample", str(folder / "sample.csv"), "--output", str(output),
                      "--variant", "tiny", *TINY, *extra])
    return pd.read_csv(output, dtype={"unique_id": str}, keep_default_na=False)


# ---------------------------------------------------------------------- the sample
def test_the_committed_sample_is_stratified_and_so_is_every_prefix():
    sample = m3.read_sample(SAMPLE)
    assert list(sample.columns) == list(m3.SAMPLE_COLUMNS)
    assert sample["unique_id"].is_unique and len(sample) == sum(m3.SAMPLE_SIZES.values())
    assert sample.groupby("subset").size().to_dict() == m3.SAMPLE_SIZES
    assert (sample["n"] >= 3 * sample["horizon"] + 2).all()
    assert sample["horizon"].to_list() == sample["subset"].map(m3.HORIZON).to_list()
    counts = sample.groupby(["subset", "category"]).size()
    for k in (20, 60, 150):
        prefix = sample.iloc[:k].groupby(["subset", "category"]).size().reindex(counts.index, fill_value=0)
        assert (np.abs(prefix - counts * k / len(sample)) <= 1.0).all(), k


@pytest.mark.skipif(not (SHARED_M3 / "M3-info.csv").exists(), reason="needs the M3 files in shared/datasets/m3")
def test_the_committed_sample_is_what_its_seed_draws_in_proportion_to_the_strata():
    info = m3.read_info(SHARED_M3)
    sample = m3.read_sample(SAMPLE)
    pd.testing.assert_frame_equal(m3.draw_sample(info), sample, check_dtype=False)
    pool = m3.eligible(info)
    for subset, total in m3.SAMPLE_SIZES.items():
        sizes = pool[pool["subset"] == subset].groupby("category").size()
        drawn = sample[sample["subset"] == subset].groupby("category").size()
        assert (np.abs(drawn - sizes / sizes.sum() * total) < 1.0 + 1e-9).all()


def test_allocation_is_proportional_with_at_least_one_per_stratum():
    assert m3.allocate(pd.Series({"a": 90, "b": 9, "c": 1}), 10) == {"a": 8, "b": 1, "c": 1}
    assert sum(m3.allocate(pd.Series({"a": 5, "b": 7, "c": 11}), 7).values()) == 7


# ---------------------------------------------------------------------- origins and scores
def test_origins_cut_the_training_part_and_scores_follow_m3():
    s = pd.Series(np.arange(30.0), index=pd.date_range("2000-01-01", periods=30, freq="MS"))
    parts = {name: m3.origin(s, 5, name) for name in m3.ORIGINS}
    assert len(parts["test"].fit) == 25 and parts["test"].target.tolist() == list(range(25, 30))
    assert len(parts["val1"].fit) == 20 and parts["val1"].target.tolist() == list(range(20, 25))
    assert len(parts["val2"].fit) == 15 and parts["val2"].target.tolist() == list(range(15, 20))
    assert m3.smape([100.0, 0.0], [50.0, 0.0]) == pytest.approx(200 * 50 / 150 / 2)
    fitted = np.arange(20.0)
    assert m3.mase([10.0], [8.0], fitted, 12) == pytest.approx(2.0 / 12)  # lag 12: errors of 12
    assert m3.mase([10.0], [8.0], fitted[:12], 12) == pytest.approx(2.0)  # too short: lag 1
    assert np.isnan(m3.mase([1.0], [1.0], np.ones(20), 12))


# ---------------------------------------------------------------------- runs
def test_rows_resume_and_the_validation_rows_never_read_the_test_part(tmp_path):
    folder = write_m3(tmp_path / "m3")
    output = tmp_path / "rows.csv"
    rows = run_cli(folder, output, "--models", "DLinear,SeasonalNaive")
    assert len(rows) == 2 * 3 * 2
    assert set(m3.ROW_COLUMNS) == set(rows.columns)
    assert (rows["error"] == "").all() and (rows["mase"].astype(float) > 0).all()
    assert rows["tsrsa_version"].iloc[0] and rows["date"].str.endswith("+00:00").all()
    net = rows[rows["model"] == "DLinear"].iloc[0]
    assert json.loads(net["params"]) == {"h": 18, "random_state": 0, "num_threads": 1,
                                                            "max_epochs": 1, "ensemble_size": 1, "start": None}
    assert rows.loc[rows["model"] == "SeasonalNaive", "params"].iloc[-1] == '{"h": 8, "season_length": 4}'
    assert rows.loc[rows["model"] == "SeasonalNaive", "seed"].eq("").all()
    assert rows.groupby("origin")["fit_length"].max().to_dict() == {"test": 92, "val1": 74, "val2": 56}

    assert len(run_cli(folder, output, "--models", "DLinear,SeasonalNaive")) == len(rows)  # all there already
    kept = pd.read_csv(output, dtype=str, keep_default_na=False).iloc[:-1]
    kept.to_csv(output, index=False)
    again = run_cli(folder, output, "--models", "DLinear,SeasonalNaive")
    assert len(again) == len(rows) and again.iloc[-1]["mase"] == rows.iloc[-1]["mase"]

    altered = run_cli(write_m3(tmp_path / "m3x", test_scale=1000.0), tmp_path / "altered.csv",
                      "--models", "DLinear,SeasonalNaive")
    columns = ["model", "unique_id", "origin", "mase", "smape", "params"]
    val = rows[rows["origin"] != "test"][columns].reset_index(drop=True)
    pd.testing.assert_frame_equal(altered[altered["origin"] != "test"][columns].reset_index(drop=True), val)
    assert (altered[altered["origin"] == "test"]["mase"].astype(float).to_numpy()
            > 10 * rows[rows["origin"] == "test"]["mase"].astype(float).to_numpy()).all()


def test_origins_may_be_named_by_kind():
    assert m3_defaults.origin_names("validation,test") == ["val1", "val2", "test"]
    assert m3_defaults.origin_names("val2") == ["val2"]


def test_a_refusal_is_a_row_and_unknown_names_are_refused(tmp_path):
    folder = write_m3(tmp_path / "m3")
    rows = run_cli(folder, tmp_path / "rows.csv", "--models", "DLinear", "--origins", "val2", "--series-limit", "1",
                   "-p", "input_size=60")  # 60 + 18 > the 56 values before val2
    assert len(rows) == 1 and rows["mase"].iloc[0] == "" and "needs at least" in rows["error"].iloc[0]
    with pytest.raises(ValueError, match="no model"):
        run_cli(folder, tmp_path / "x.csv", "--models", "SeasonalNaive", "-p", "not_a_parameter=1")
    with pytest.raises(ValueError, match="unknown models"):
        run_cli(folder, tmp_path / "x.csv", "--models", "Prophet")


def test_the_summary_pairs_variants_by_series(tmp_path, capsys):
    base = {"date": "", "tsrsa_version": "0.13.0", "tsrsa_commit": "x", "params": "{}", "subset": "monthly",
            "category": "MICRO", "seed": 0, "fit_length": 50, "horizon": 18, "smape": 10.0, "fit_seconds": 1.0,
            "predict_seconds": 0.1, "error": ""}
    rows = [{**base, "variant": v, "model": "RSA", "unique_id": f"s{i}", "origin": o, "mase": mase}
            for i in range(4) for o in ("val1", "val2", "test")
            for v, mase in (("old", 1.0 + i), ("new", 0.5 * (1.0 + i)))]
    rows.append({**base, "variant": "new", "model": "RSA", "unique_id": "s9", "origin": "val1", "mase": "",
                 "error": "ValueError: too short"})
    pd.DataFrame(rows).loc[:, list(m3.ROW_COLUMNS)].to_csv(tmp_path / "rows.csv", index=False)
    frame = m3_summary.read_rows(tmp_path / "rows.csv")
    r = m3_summary.paired_ratio(frame, "RSA", "validation", "new", "old")
    assert r["series"] == 4 and r["ratio"] == pytest.approx(0.5) and r["low"] == pytest.approx(0.5)
    table = m3_summary.table(frame, reference="old")
    line = table[(table["variant"] == "new") & (table["kind"] == "validation")].iloc[0]
    assert line["series"] == 4 and line["refused"] == 1 and line["mase"] == pytest.approx(1.25)
    m3_defaults.main(["--summary", "--output", str(tmp_path / "rows.csv"), "--reference", "old"])
    assert "0.500 [0.500, 0.500] n=4" in capsys.readouterr().out
