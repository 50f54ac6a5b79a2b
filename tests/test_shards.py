"""A panel stored as Parquet shards: writing and reading shares, a fit from shards in one process
equal to the fit from the frame, and two ranks that each read only their share and reach the
validation loss of the data-parallel fit on the whole frame.

The two-rank check runs two rank processes as torchrun starts them (RANK, WORLD_SIZE, ... on
127.0.0.1), one thread each, as subprocesses with a timeout, so a hang fails instead of stalling.
"""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
import torch

import tsrsa
from tsrsa.data import ParquetShards, write_shards

from conftest import make_panel
from test_distributed import TORCHRUN_ENV, launch_ranks

TINY = dict(h=4, input_size=12, max_epochs=2, val_size=4, random_state=0, trainer={"accelerator": "cpu", "num_threads": 1})


@pytest.fixture
def alone(monkeypatch):
    for name in TORCHRUN_ENV:
        monkeypatch.delenv(name, raising=False)


def test_series_lie_whole_in_one_file_and_the_shares_split_the_files(tmp_path):
    df = make_panel(n_series=7, length=30)
    df = df[~((df["unique_id"] == "s3") & (df.index % 2 == 0))].reset_index(drop=True)  # one shorter series
    before = df.copy()
    shards = write_shards(df, tmp_path / "panel", n_files=3)
    pd.testing.assert_frame_equal(df, before)  # the user's frame untouched
    assert len(shards) == 3 and sum(shards.rows) == len(df)
    owners = {}
    for f in shards.files:
        for sid in pd.read_parquet(f)["unique_id"].unique():
            assert sid not in owners, f"series {sid} in two files"
            owners[sid] = f
    assert set(owners) == set(df["unique_id"])
    for world in (1, 2, 3):
        shares = [shards.share(r, world) for r in range(world)]
        assert sorted(f for s in shares for f in s) == sorted(shards.files)  # each file to one rank
        frames = [shards.read(r, world) for r in range(world)]
        assert sum(len(f) for f in frames) == len(df)
        assert not set.intersection(*[set(f["unique_id"]) for f in frames]) or world == 1
    back = shards.read().sort_values(["unique_id", "ds"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(back, df.sort_values(["unique_id", "ds"]).reset_index(drop=True),
                                  check_dtype=False)


def test_files_are_dealt_out_by_rows_largest_first(tmp_path):
    rows = {"a": 50, "b": 10, "c": 40, "d": 20}  # one series per file
    for sid, n in rows.items():
        frame = pd.DataFrame({"unique_id": sid, "ds": np.arange(n), "y": np.ones(n)})
        frame.to_parquet(tmp_path / f"{sid}.parquet", index=False)
    shards = ParquetShards.open(tmp_path)
    names = [sorted(f.stem for f in shards.share(r, 2)) for r in range(2)]
    assert names == [["a", "b"], ["c", "d"]]  # a to rank 0, c to 1, d to 1 (40 < 50), b to 0 (60 = 60: lower rank)


def test_a_hive_partitioned_folder_gets_its_id_column_back(tmp_path):
    df = make_panel(n_series=3, length=20)
    df.to_parquet(tmp_path / "hive", partition_cols=["unique_id"], index=False)
    shards = ParquetShards.open(tmp_path / "hive")
    assert len(shards) == 3
    frame = shards.read()
    assert sorted(frame["unique_id"].unique()) == ["s0", "s1", "s2"]
    assert not isinstance(frame["unique_id"].dtype, pd.CategoricalDtype)
    model = tsrsa.SeasonalNaiveForecaster(h=3, season_length=6).fit(shards)
    expected = tsrsa.SeasonalNaiveForecaster(h=3, season_length=6).fit(df).predict()
    pd.testing.assert_frame_equal(model.predict().sort_values(["unique_id", "ds"]).reset_index(drop=True),
                                  expected.sort_values(["unique_id", "ds"]).reset_index(drop=True))


def test_a_process_alone_reads_every_file_and_fits_as_from_the_frame(tmp_path, alone):
    df = make_panel(n_series=5, length=60)
    shards = write_shards(df, tmp_path / "panel", n_files=2)
    from_shards = tsrsa.DLinearForecaster(**TINY).fit(shards)
    from_frame = tsrsa.DLinearForecaster(**TINY).fit(df)
    pd.testing.assert_frame_equal(from_shards.predict(), from_frame.predict())
    assert from_shards.memory_.ids.tolist() == from_frame.memory_.ids.tolist()
    cv = [m.cross_validate(data, n_windows=2) for m, data in ((from_shards, shards), (from_frame, df))]
    pd.testing.assert_frame_equal(*cv)
    later = make_panel(n_series=5, length=64).groupby("unique_id").tail(4)
    folder = write_shards(later, tmp_path / "later", n_files=2)
    pd.testing.assert_frame_equal(from_shards.update(folder).predict(), from_frame.update(later).predict())


@pytest.mark.parametrize("call, error, match", [
    (lambda p: ParquetShards.open(p / "nowhere"), ValueError, "is not a folder"),
    (lambda p: ParquetShards.open(p), ValueError, "no Parquet files"),
    (lambda p: ParquetShards.open(3), TypeError, "path of a folder"),
    (lambda p: write_shards(make_panel(), p / "x", n_files=0), ValueError, "n_files must be a positive int"),
    (lambda p: write_shards(make_panel().values, p / "x"), TypeError, "long DataFrame"),
    (lambda p: write_shards(make_panel(), p / "x", id_col="series"), ValueError, "no id column 'series'"),
])
def test_bad_arguments_are_refused(tmp_path, call, error, match):
    with pytest.raises(error, match=match):
        call(tmp_path)


def test_a_folder_is_not_overwritten_unless_asked_and_a_share_needs_a_file_per_rank(tmp_path):
    df = make_panel(n_series=2, length=20)
    shards = write_shards(df, tmp_path / "panel", n_files=2)
    with pytest.raises(ValueError, match="overwrite=True"):
        write_shards(df, tmp_path / "panel", n_files=1)
    assert len(ParquetShards.open(tmp_path / "panel")) == 2  # the refused call changed nothing
    assert len(write_shards(df, tmp_path / "panel", n_files=1, overwrite=True)) == 1
    with pytest.raises(ValueError, match="cannot give each of 3 ranks a share"):
        shards.share(0, 3)
    with pytest.raises(ValueError, match="rank 2 is not one of world_size=2"):
        shards.share(2, 2)


RANK_SCRIPT = """
import sys, torch
sys.path.insert(0, {tests!r})
from conftest import make_panel
import tsrsa
from tsrsa.data import ParquetShards
df, shards = make_panel(n_series=8, length=160, seed=1), ParquetShards.open({folder!r})
out = {{}}
whole = tsrsa.DLinearForecaster(**{params!r}).fit(df)  # every rank holds the whole frame
out["whole"] = whole.fit_history_["val_loss"].tolist()
shared = tsrsa.DLinearForecaster(**{params!r}).fit(shards)  # every rank reads its share
out["shared"] = shared.fit_history_["val_loss"].tolist()
out["ids"] = shared.memory_.ids.tolist()
out["state"] = shared.network_.state_dict()
out["start"] = shared.start_
try:
    tsrsa.DLinearForecaster(**{params!r}, conformal_windows=2).fit(shards)
except ValueError as error:
    out["refused"] = str(error)
torch.save(out, "rank%d.pt" % torch.distributed.get_rank())
"""

PARAMS = dict(h=4, input_size=24, max_epochs=12, batch_size=32, val_size=24, learning_rate=3e-3,
              trainer={"accelerator": "cpu", "num_threads": 1}, random_state=0, start="ar")  # the AR start: a pooled fit that rank 0 sends


@pytest.mark.processes
def test_two_ranks_each_read_their_share_and_reach_the_loss_of_the_whole_frame(tmp_path):
    """Two ranks on 8 series x 160 steps in 4 files: each holds only the series of its files, both end
    with the same weights, and the best validation loss (over all ranks' windows) is within 2% of
    the data-parallel fit in which every rank holds the whole frame."""
    df = make_panel(n_series=8, length=160, seed=1)
    shards = write_shards(df, tmp_path / "panel", n_files=4)
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT.format(tests=os.path.dirname(__file__), folder=str(shards.path), params=PARAMS))
    launch_ranks(script, tmp_path)(timeout=150)
    ranks = [torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in range(2)]
    for r, out in enumerate(ranks):  # each rank knows exactly the series of its files
        expected = sorted(shards.read(r, 2)["unique_id"].unique())
        assert sorted(out["ids"]) == expected
        assert "conformal intervals calibrate" in out["refused"]
    assert set(ranks[0]["ids"]).isdisjoint(ranks[1]["ids"])
    assert ranks[0]["start"]["model"] == "ar" and ranks[1]["start"] == ranks[0]["start"]  # rank 0's start, everywhere
    for name, value in ranks[0]["state"].items():
        torch.testing.assert_close(ranks[1]["state"][name], value, rtol=0, atol=0)
    np.testing.assert_allclose(ranks[0]["shared"], ranks[1]["shared"], rtol=1e-6)  # one loss over all ranks
    whole, shared = min(ranks[0]["whole"]), min(ranks[0]["shared"])
    assert abs(shared / whole - 1) < 0.02, (whole, shared)
