"""tsrsa.datasets: offline statsmodels series, benchmark files, lookup order, download errors.

No test touches the network: ``_download`` is replaced in every test. The cache folder is
pointed into ``tmp_path``, so nothing is written outside it. Benchmark-file tests read the
shared copies in ``<checkout>/../shared/datasets`` and are skipped where that folder is missing.
"""
from __future__ import annotations

import dataclasses
import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tsrsa import datasets
import tsrsa.datasets.loading  # noqa: F401  (the module whose download the tests replace)
from tsrsa.datasets import REGISTRY, Split

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"
BENCHMARKS = [n for n, e in REGISTRY.items() if e.file is not None]


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    """No network, no data folder from the environment, a cache inside tmp_path."""

    def no_network(url, dest, **kwargs):
        raise OSError("network disabled in tests")

    monkeypatch.setattr(datasets.loading, "_download", no_network)
    monkeypatch.delenv(datasets.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


@pytest.fixture
def shared(monkeypatch):
    """Point TSRSA_DATA_DIR at the shared benchmark files, or skip."""
    if not (SHARED / "ETTh1.csv").is_file():
        pytest.skip(f"shared benchmark files not found at {SHARED}")
    monkeypatch.setenv(datasets.ENV_VAR, str(SHARED))
    return SHARED


@pytest.fixture(scope="module")
def weather():
    """weather.csv read once for the module (the largest file read here)."""
    if not (SHARED / "weather.csv").is_file():
        pytest.skip(f"shared benchmark files not found at {SHARED}")
    return datasets.load("weather", data_dir=SHARED)


def _tiny_ett(path: Path, first_value: float, n: int = 5) -> Path:
    """Write an ETT-shaped CSV of n hourly rows whose HUFL starts at first_value."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["date,HUFL,HULL,MUFL,MULL,LUFL,LULL,OT"]
    for i in range(n):
        lines.append(f"2016-07-01 {i:02d}:00:00,{first_value + i},1,2,3,4,5,{30 + i}")
    path.write_text("\n".join(lines) + "\n")
    return path


def _assert_long(df: pd.DataFrame) -> None:
    assert list(df.columns) == ["unique_id", "ds", "y"]
    assert pd.api.types.is_string_dtype(df["unique_id"]) or df["unique_id"].dtype == object
    assert pd.api.types.is_datetime64_any_dtype(df["ds"])
    assert df["y"].dtype == np.float64


# ---------------------------------------------------------------------------------------------
# registry, arguments, import cost


def test_available_lists_every_registered_name():
    names = datasets.available()
    assert names == list(REGISTRY)
    for name in ["co2", "sunspots", "elnino", "nile", "ETTh1", "ETTh2", "ETTm1", "ETTm2",
                 "weather", "exchange_rate", "national_illness"]:
        assert name in names


def test_registry_splits_and_fields():
    assert REGISTRY["ETTh1"].split == Split(8640, 2880, 2880)
    assert REGISTRY["ETTm2"].split == Split(34560, 11520, 11520)
    assert REGISTRY["weather"].split == Split(36887, 5270, 10539)
    assert REGISTRY["exchange_rate"].split == Split(5311, 760, 1517)
    assert REGISTRY["national_illness"].split == Split(676, 97, 193)
    for name in BENCHMARKS:
        entry = REGISTRY[name]
        assert entry.target == "OT" and len(entry.md5) == 32 and entry.license
        assert sum(entry.split) <= entry.n_rows
        assert entry.url is None or entry.url.startswith("https://raw.githubusercontent.com/")
    assert {n for n in BENCHMARKS if REGISTRY[n].url} == {"ETTh1", "ETTh2", "ETTm1", "ETTm2"}
    assert datasets.info("nile") is REGISTRY["nile"]


def test_unknown_name_lists_available():
    with pytest.raises(ValueError, match="available") as err:
        datasets.load("ETTh3")
    assert "co2" in str(err.value) and "national_illness" in str(err.value)
    assert "ETTh1" in str(err.value)


@pytest.mark.parametrize("bad", [1, None, ["co2"], b"co2"])
def test_wrong_name_type(bad):
    with pytest.raises(TypeError):
        datasets.load(bad)


def test_wrong_data_dir_type():
    with pytest.raises(TypeError, match="data_dir"):
        datasets.load("ETTh1", data_dir=3)


@pytest.mark.processes
def test_import_is_light():
    code = (
        "import sys, tsrsa.datasets; "
        "print(sorted(m for m in ('statsmodels', 'torch', 'scipy', 'sklearn') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------------------------------------
# statsmodels data sets (offline)


def test_co2_loads_offline_with_nan_kept():
    df = datasets.load("co2")
    _assert_long(df)
    assert df["unique_id"].unique().tolist() == ["co2"]
    assert len(df) == REGISTRY["co2"].n_rows == 2284
    assert df["y"].isna().sum() > 0  # 59 weeks without a measurement stay NaN
    ds = pd.DatetimeIndex(df["ds"])
    assert (ds.to_series().diff().dropna() == pd.Timedelta(days=7)).all()
    assert (ds.dayofweek == 5).all()  # Saturdays
    assert pd.infer_freq(ds) == "W-SAT"
    assert ds[0] == pd.Timestamp("1958-03-29")


@pytest.mark.parametrize("name", ["sunspots", "elnino", "nile"])
def test_other_statsmodels_series_are_regular(name):
    df = datasets.load(name)
    _assert_long(df)
    entry = REGISTRY[name]
    assert df["unique_id"].unique().tolist() == [name]
    assert len(df) == entry.n_rows
    assert not df["y"].isna().any()
    ds = pd.DatetimeIndex(df["ds"])
    assert ds.is_monotonic_increasing and ds.is_unique
    assert pd.tseries.frequencies.to_offset(pd.infer_freq(ds)) == pd.tseries.frequencies.to_offset(entry.freq)
    assert (ds.day == 1).all()
    if entry.freq == "YS":
        assert (ds.month == 1).all()


def test_elnino_months_in_calendar_order():
    df = datasets.load("elnino")
    assert df["ds"].iloc[0] == pd.Timestamp("1950-01-01")
    assert df["ds"].iloc[-1] == pd.Timestamp("2010-12-01")
    assert df["y"].iloc[:3].tolist() == [23.11, 24.20, 25.37]  # JAN, FEB, MAR of 1950


def test_data_dir_is_ignored_for_offline_sets(tmp_path):
    assert len(datasets.load("nile", data_dir=tmp_path / "nowhere")) == 100


# ---------------------------------------------------------------------------------------------
# benchmark files (shared copies)


def test_shared_files_match_registry_md5(shared):
    for name in BENCHMARKS:
        entry = REGISTRY[name]
        path = shared / entry.file
        if not path.is_file():
            pytest.skip(f"{path} missing")
        assert hashlib.md5(path.read_bytes()).hexdigest() == entry.md5, name


def test_etth1_from_environment_variable(shared):
    df = datasets.load("ETTh1")
    _assert_long(df)
    ids = df["unique_id"].unique().tolist()
    assert ids == ["HUFL", "HULL", "MUFL", "MULL", "LUFL", "LULL", "OT"]
    assert len(df) == 7 * 17420
    assert df.groupby("unique_id").size().eq(17420).all()
    ot = df[df["unique_id"] == "OT"]
    ds = pd.DatetimeIndex(ot["ds"])
    assert ds[0] == pd.Timestamp("2016-07-01 00:00") and ds[-1] == pd.Timestamp("2018-06-26 19:00")
    assert (np.diff(ds.asi8) == np.diff(ds.asi8)[0]).all() and pd.infer_freq(ds) == "h"
    assert ot["y"].iloc[0] == pytest.approx(30.5310001373291)
    assert not df["y"].isna().any()


def test_weather_keeps_quirks_and_fixes_names(weather):
    _assert_long(weather)
    ids = weather["unique_id"].unique().tolist()
    assert len(ids) == 21 and ids[-1] == "OT"
    assert {"SWDR (W/m²)", "PAR (µmol/m²/s)", "max. PAR (µmol/m²/s)"} <= set(ids)
    assert not any("\ufffd" in i for i in ids)
    assert len(weather) == 21 * 52696
    sentinel = weather[weather["y"] == -9999]  # kept, not replaced by NaN
    assert sentinel["unique_id"].value_counts().to_dict() == {
        "OT": 50, "max. PAR (µmol/m²/s)": 30, "wv (m/s)": 1}
    assert sentinel["ds"].nunique() == 80  # 81 values in 80 rows
    ot_ds = weather.loc[weather["unique_id"] == "OT", "ds"]
    dup = ot_ds[ot_ds.duplicated(keep=False)]
    assert dup.tolist() == [pd.Timestamp("2020-05-12 06:00")] * 2
    steps = ot_ds.diff().dropna().value_counts()
    assert steps[pd.Timedelta(minutes=10)] == 52693
    assert steps[pd.Timedelta(minutes=100)] == 1  # 09:30 -> 11:10, 9 steps missing


def test_exchange_rate_dates_parse(shared):
    df = datasets.load("exchange_rate")
    _assert_long(df)
    assert df["unique_id"].unique().tolist() == ["0", "1", "2", "3", "4", "5", "6", "OT"]
    ds = pd.DatetimeIndex(df.loc[df["unique_id"] == "OT", "ds"])
    assert len(ds) == 7588
    assert ds[0] == pd.Timestamp("1990-01-01") and ds[-1] == pd.Timestamp("2010-10-10")
    assert pd.infer_freq(ds) == "D"


def test_national_illness_has_seven_weekly_channels(shared):
    df = datasets.load("national_illness")
    _assert_long(df)
    assert df["unique_id"].nunique() == 7 and df["unique_id"].iloc[-1] == "OT"
    assert len(df) == 7 * 966
    ds = pd.DatetimeIndex(df.loc[df["unique_id"] == "OT", "ds"])
    assert pd.infer_freq(ds) == "W-TUE" and ds[0] == pd.Timestamp("2002-01-01")


# ---------------------------------------------------------------------------------------------
# lookup order, cache, download errors (synthetic files, no shared data needed)


def test_data_dir_beats_environment_variable(tmp_path, monkeypatch):
    mine = _tiny_ett(tmp_path / "mine" / "ETTh1.csv", first_value=100.0)
    _tiny_ett(tmp_path / "env" / "ETTh1.csv", first_value=-5.0)
    monkeypatch.setenv(datasets.ENV_VAR, str(tmp_path / "env"))
    df = datasets.load("ETTh1", data_dir=mine.parent)  # md5 differs from the reference: still read
    assert df.loc[df["unique_id"] == "HUFL", "y"].tolist() == [100.0, 101.0, 102.0, 103.0, 104.0]
    assert len(df) == 7 * 5
    # without data_dir the environment variable's copy is read
    df = datasets.load("ETTh1")
    assert df["y"].iloc[0] == -5.0


def test_data_dir_without_the_file_falls_back(tmp_path, monkeypatch):
    _tiny_ett(tmp_path / "env" / "ETTh1.csv", first_value=7.0)
    monkeypatch.setenv(datasets.ENV_VAR, str(tmp_path / "env"))
    (tmp_path / "empty").mkdir()
    assert datasets.load("ETTh1", data_dir=tmp_path / "empty")["y"].iloc[0] == 7.0


def test_tslib_subfolder_and_cache_are_searched(tmp_path):
    _tiny_ett(tmp_path / "tslib" / "ETT-small" / "ETTh2.csv", first_value=1.0)
    assert datasets.load("ETTh2", data_dir=str(tmp_path / "tslib"))["y"].iloc[0] == 1.0
    cached = _tiny_ett(datasets.cache_dir() / "ETTm1.csv", first_value=2.0)
    assert cached.is_relative_to(tmp_path)
    assert datasets.load("ETTm1")["y"].iloc[0] == 2.0


def test_missing_file_without_network_gives_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        datasets.load("ETTh1", data_dir=tmp_path / "nowhere")
    msg = str(err.value)
    assert "TSRSA_DATA_DIR" in msg
    assert "https://raw.githubusercontent.com/zhouhaoyi/ETDataset/main/ETT-small/ETTh1.csv" in msg
    assert str(tmp_path / "nowhere") in msg and str(datasets.cache_dir()) in msg
    assert "network disabled" in msg
    assert not any(p.is_file() for p in datasets.cache_dir().rglob("*"))  # no partial file left


def test_file_without_download_address_points_to_manual_download(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(datasets.loading, "_download", lambda *a, **k: calls.append(a))
    with pytest.raises(FileNotFoundError) as err:
        datasets.load("weather", data_dir=tmp_path)
    msg = str(err.value)
    assert "TSRSA_DATA_DIR" in msg and "Time-Series-Library" in msg
    assert "drive.google.com" in msg
    assert calls == []
    assert not datasets.cache_dir().exists()  # nothing written when nothing was downloaded


def test_download_is_checked_and_cached(tmp_path, monkeypatch):
    source = _tiny_ett(tmp_path / "src" / "ETTh1.csv", first_value=42.0)
    md5 = hashlib.md5(source.read_bytes()).hexdigest()
    monkeypatch.setitem(REGISTRY, "ETTh1", dataclasses.replace(REGISTRY["ETTh1"], md5=md5))
    calls = []

    def fake_download(url, dest, **kwargs):
        calls.append(url)
        Path(dest).write_bytes(source.read_bytes())

    monkeypatch.setattr(datasets.loading, "_download", fake_download)
    df = datasets.load("ETTh1")
    assert df["y"].iloc[0] == 42.0
    assert calls == [REGISTRY["ETTh1"].url]
    assert sorted(p.name for p in datasets.cache_dir().iterdir()) == ["ETTh1.csv"]
    datasets.load("ETTh1")  # now read from the cache
    assert len(calls) == 1


def test_download_with_wrong_checksum_is_discarded(tmp_path, monkeypatch):
    source = _tiny_ett(tmp_path / "src" / "ETTh1.csv", first_value=42.0)
    monkeypatch.setattr(datasets.loading, "_download",
                        lambda url, dest, **k: Path(dest).write_bytes(source.read_bytes()))
    with pytest.raises(FileNotFoundError, match="checksum"):
        datasets.load("ETTh1")
    assert list(datasets.cache_dir().iterdir()) == []


def test_latin1_weather_copy_gets_the_same_names(tmp_path):
    header = ("date,SWDR (W/m\u00b2),PAR (\u00b5mol/m\u00b2/s),max. PAR (\u00b5mol/m\u00b2/s),OT\n"
              "2020-01-01 00:10:00,0.0,0.0,-9999.0,428.1\n")
    (tmp_path / "weather.csv").write_bytes(header.encode("latin-1"))
    df = datasets.load("weather", data_dir=tmp_path)
    assert df["unique_id"].tolist() == ["SWDR (W/m²)", "PAR (µmol/m²/s)", "max. PAR (µmol/m²/s)", "OT"]
    assert df["y"].tolist() == [0.0, 0.0, -9999.0, 428.1]


def test_unreadable_local_file_is_a_value_error(tmp_path):
    (tmp_path / "ETTh1.csv").write_text("time,a\n1,2\n")
    with pytest.raises(ValueError, match="no 'date' column"):
        datasets.load("ETTh1", data_dir=tmp_path)
