"""A folder of Parquet shards is checked before anything is fitted from it: the manifest that
write_shards writes (only the files it lists, each whole), the declared columns of a folder without
one, the same columns and dtypes in every file, readable files, and an overwrite that replaces only
what write_shards wrote. Every refusal is tsrsa's ValueError or TypeError naming the file at fault,
and changes no file."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import tsrsa
from tsrsa.data import ParquetShards, write_shards

from conftest import make_panel

MANIFEST = "_tsrsa_shards.json"  # what write_shards writes beside its files (tsrsa.data.shard_manifest)


def naive():
    return tsrsa.SeasonalNaiveForecaster(h=3, season_length=6)


def sorted_forecast(model) -> pd.DataFrame:
    return model.predict().sort_values(["unique_id", "ds"]).reset_index(drop=True)


def folder_bytes(folder) -> dict:
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def others_file(path):
    """A Parquet file of other data: no id, time or target column."""
    pd.DataFrame({"sensor": ["a"] * 30, "reading": np.arange(30.0)}).to_parquet(path, index=False)


def test_write_shards_records_what_it_wrote_in_a_manifest(tmp_path):
    df = make_panel(n_series=5, length=30)
    shards = write_shards(df, tmp_path / "panel", n_files=2)
    manifest = json.loads((tmp_path / "panel" / MANIFEST).read_text())
    assert (manifest["id_col"], manifest["time_col"], manifest["target_col"]) == ("unique_id", "ds", "y")
    assert list(manifest["schema"]) == ["unique_id", "ds", "y"] and manifest["schema"]["y"] == "double"
    entries = manifest["files"]
    assert [e["name"] for e in entries] == [f.name for f in shards.files]
    assert sum(e["rows"] for e in entries) == len(df) and sum(e["series"] for e in entries) == 5
    assert all(len(e["sha256"]) == 64 and e["bytes"] == (tmp_path / "panel" / e["name"]).stat().st_size
               for e in entries)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "panel").sort_values(["unique_id", "ds"])
                                  .reset_index(drop=True), df, check_dtype=False)  # other readers skip it


def test_a_folder_of_other_parquet_data_is_refused_naming_the_file(tmp_path):
    others_file(tmp_path / "readings.parquet")
    with pytest.raises(ValueError, match=r"readings\.parquet has no column\(s\) \['unique_id', 'ds', 'y'\]"):
        naive().fit(ParquetShards.open(tmp_path))
    df = make_panel(n_series=2, length=30)
    df.to_parquet(tmp_path / "panel.parquet", index=False)  # one file of series beside it: still refused
    with pytest.raises(ValueError, match=r"readings\.parquet has no column"):
        ParquetShards.open(tmp_path)
    (tmp_path / "readings.parquet").unlink()
    renamed = df.rename(columns={"unique_id": "sid", "y": "value"})
    renamed.to_parquet(tmp_path / "panel.parquet", index=False)
    with pytest.raises(ValueError, match=r"panel\.parquet has no column\(s\) \['unique_id', 'y'\]"):
        ParquetShards.open(tmp_path)
    shards = ParquetShards.open(tmp_path, id_col="sid", target_col="value")  # declared: read
    model = tsrsa.SeasonalNaiveForecaster(h=3, season_length=6, id_col="sid", target_col="value").fit(shards)
    assert sorted(model.predict()["sid"].unique()) == ["s0", "s1"]


def test_overwrite_replaces_only_what_write_shards_wrote(tmp_path):
    df = make_panel(n_series=4, length=30)
    folder = tmp_path / "panel"
    folder.mkdir()
    others_file(folder / "mine.parquet")
    before = folder_bytes(folder)
    with pytest.raises(ValueError, match=r"did not write .*mine\.parquet"):
        write_shards(df, folder, overwrite=True)
    assert folder_bytes(folder) == before
    write_shards(df, tmp_path / "ours", n_files=3)
    others_file(tmp_path / "ours" / "mine.parquet")
    with pytest.raises(ValueError, match=r"mine\.parquet.*which write_shards did not write"):
        write_shards(df, tmp_path / "ours", n_files=1, overwrite=True)
    before = folder_bytes(tmp_path / "ours")
    shards = ParquetShards.open(tmp_path / "ours")  # the manifest's files only: the user's file is not read
    assert [f.name for f in shards.files] == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    pd.testing.assert_frame_equal(sorted_forecast(naive().fit(shards)), sorted_forecast(naive().fit(df)))
    assert folder_bytes(tmp_path / "ours") == before
    (tmp_path / "ours" / "mine.parquet").unlink()
    again = write_shards(df.iloc[:60], tmp_path / "ours", n_files=1, overwrite=True)
    assert sorted(p.name for p in (tmp_path / "ours").iterdir()) == [MANIFEST, "part-00000.parquet"]
    assert len(again.read()) == 60


def test_a_listed_file_missing_or_changed_is_refused_naming_it(tmp_path):
    df = make_panel(n_series=4, length=30)
    shards = write_shards(df, tmp_path / "panel", n_files=2)
    first, second = shards.files
    data = bytearray(second.read_bytes())
    data[len(data) // 2] ^= 0x10  # one bit of the data pages
    second.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"part-00001\.parquet does not match the checksum"):
        naive().fit(ParquetShards.open(tmp_path / "panel"))
    with pytest.raises(ValueError, match=r"part-00001\.parquet.*changed since write_shards wrote it"):
        write_shards(df, tmp_path / "panel", overwrite=True)  # not write_shards' file any more: kept
    assert second.read_bytes() == bytes(data)
    second.unlink()
    with pytest.raises(ValueError, match=r"part-00001\.parquet is listed in .* but missing"):
        ParquetShards.open(tmp_path / "panel")
    opened = write_shards(df, tmp_path / "again", n_files=2)
    opened.files[1].write_bytes(first.read_bytes())  # replaced between open and read
    with pytest.raises(ValueError, match=r"part-00001\.parquet changed since the folder was opened"):
        opened.read()


def test_every_file_must_have_the_first_files_columns_and_a_numeric_target(tmp_path):
    df = make_panel(n_series=4, length=30)
    a, b = df[df["unique_id"] < "s2"], df[df["unique_id"] >= "s2"]
    a.to_parquet(tmp_path / "a.parquet", index=False)
    b.assign(y=b["y"].astype(str)).to_parquet(tmp_path / "b.parquet", index=False)
    with pytest.raises(TypeError, match=r"column 'y' of .*b\.parquet must be numeric"):
        naive().fit(ParquetShards.open(tmp_path))
    with pytest.raises(TypeError, match=r"column 'y' must be numeric"):  # the frame with that column
        naive().fit(pd.concat([a, b.assign(y=b["y"].astype(str))]))
    b.assign(y=(b["y"] * 100).astype(np.int64)).to_parquet(tmp_path / "b.parquet", index=False)
    with pytest.raises(ValueError, match=r"b\.parquet does not match .*a\.parquet: column 'y' is int64 here and "
                                         r"double there"):
        ParquetShards.open(tmp_path)
    b.assign(extra=1.0).to_parquet(tmp_path / "b.parquet", index=False)
    with pytest.raises(ValueError, match=r"b\.parquet does not match .*extra column"):
        ParquetShards.open(tmp_path)
    b.assign(ds=np.arange(len(b)).astype(str)).to_parquet(tmp_path / "b.parquet", index=False)
    with pytest.raises(TypeError, match=r"column 'ds' of .*b\.parquet must hold datetimes or integers"):
        ParquetShards.open(tmp_path)
    with pytest.raises(TypeError, match=r"column 'y' must be numeric, got dtype"):
        write_shards(df.assign(y=df["y"].astype(str)), tmp_path / "text")
    assert not (tmp_path / "text").exists()  # refused before anything was written


def test_an_unreadable_file_is_a_value_error_naming_it(tmp_path):
    df = make_panel(n_series=4, length=30)
    df[df["unique_id"] < "s2"].to_parquet(tmp_path / "a.parquet", index=False)
    (tmp_path / "b.parquet").write_bytes(b"PAR1 not really Parquet")
    with pytest.raises(ValueError, match=r"b\.parquet is not a readable Parquet file") as caught:
        ParquetShards.open(tmp_path)
    assert not isinstance(caught.value, pa.ArrowException)
    good = (tmp_path / "a.parquet").read_bytes()
    damaged = bytearray(good)
    damaged[4:40] = bytes(36)  # the first data page's header
    (tmp_path / "b.parquet").write_bytes(bytes(damaged))
    with pytest.raises(ValueError, match=r"b\.parquet is not a readable Parquet file") as caught:
        naive().fit(ParquetShards.open(tmp_path))
    assert not isinstance(caught.value, pa.ArrowException)


def test_a_folder_without_a_manifest_is_read_when_every_file_has_the_declared_columns(tmp_path):
    """A folder that an earlier write_shards wrote (no manifest) still fits as from the frame; the
    same folder with another's file in it is refused."""
    df = make_panel(n_series=4, length=30)
    shards = write_shards(df, tmp_path / "panel", n_files=2)
    (tmp_path / "panel" / MANIFEST).unlink()
    earlier = ParquetShards.open(tmp_path / "panel")
    assert earlier.files == shards.files and earlier.sha256 is None
    pd.testing.assert_frame_equal(sorted_forecast(naive().fit(earlier)), sorted_forecast(naive().fit(df)))
    others_file(tmp_path / "panel" / "readings.parquet")
    with pytest.raises(ValueError, match=r"readings\.parquet has no column"):
        ParquetShards.open(tmp_path / "panel")
    with pytest.raises(ValueError, match=r"no _tsrsa_shards\.json"):
        write_shards(df, tmp_path / "panel", overwrite=True)


def test_the_declared_columns_of_a_manifest_are_kept(tmp_path):
    df = make_panel(n_series=3, length=30).rename(columns={"unique_id": "sid", "y": "value"})
    with pytest.raises(ValueError, match="no target column 'y'"):
        write_shards(df, tmp_path / "x", id_col="sid")
    shards = write_shards(df, tmp_path / "panel", id_col="sid", target_col="value", n_files=2)
    assert ParquetShards.open(tmp_path / "panel").columns == ("sid", "ds", "value") == shards.columns
    with pytest.raises(ValueError, match=r"written with target_col='value'"):
        ParquetShards.open(tmp_path / "panel", target_col="y")
    text = (tmp_path / "panel" / MANIFEST).read_text()
    (tmp_path / "panel" / MANIFEST).write_text(text.replace('"value"', '"ds"', 1))
    with pytest.raises(ValueError, match=r"_tsrsa_shards\.json is not a valid shards manifest: .*own checksum"):
        ParquetShards.open(tmp_path / "panel")
