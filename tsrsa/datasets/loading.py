"""Loading data sets: statsmodels series offline, benchmark files from a folder or a download.

Only the standard library, numpy and pandas are imported here; statsmodels is imported on the
first call that needs it.
"""
from __future__ import annotations

import hashlib
import os
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd

from tsrsa.datasets.registry import TSLIB_HINT, DatasetInfo, info

#: Environment variable naming a folder that holds the benchmark CSV files.
ENV_VAR = "TSRSA_DATA_DIR"

#: Seconds a socket may stay silent during a download before it is abandoned.
DOWNLOAD_TIMEOUT = 15.0

# The weather file as distributed has U+FFFD where the original had "²" and "µ".
_WEATHER_RENAMES = {
    "SWDR (W/m\ufffd)": "SWDR (W/m\u00b2)",
    "PAR (\ufffdmol/m\ufffd/s)": "PAR (\u00b5mol/m\u00b2/s)",
    "max. PAR (\ufffdmol/m\ufffd/s)": "max. PAR (\u00b5mol/m\u00b2/s)",
}


def cache_dir() -> Path:
    """Folder where downloaded benchmark files are kept.

    ``$XDG_CACHE_HOME/tsrsa/datasets`` when ``XDG_CACHE_HOME`` is set, otherwise
    ``~/.cache/tsrsa/datasets``. Nothing is created until a download happens.

    Returns
    -------
    pathlib.Path
    """
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    root = Path(base) if base else Path.home() / ".cache"
    return root / "tsrsa" / "datasets"


def load(name: str, *, data_dir: str | os.PathLike | None = None) -> pd.DataFrame:
    """Load a data set as a long frame with columns ``unique_id``, ``ds``, ``y``.

    The frame is raw: NaN values are kept, nothing is filled, sorted or resampled. Each channel
    of a multivariate file is one series whose ``unique_id`` is the column name (for example
    ``"OT"``); rows are grouped by series in the file's column order, in file order within a
    series.

    Parameters
    ----------
    name : str
        One of :func:`available`:

        - ``"co2"``, ``"sunspots"``, ``"elnino"``, ``"nile"``: shipped with statsmodels,
          always available offline; one series each, named like the data set.
        - ``"ETTh1"``, ``"ETTh2"``, ``"ETTm1"``, ``"ETTm2"``, ``"weather"``,
          ``"exchange_rate"``, ``"national_illness"``: benchmark CSV files, looked up in order in
          `data_dir`, in the folder named by the ``TSRSA_DATA_DIR`` environment variable, and in
          :func:`cache_dir` (each folder may hold the file directly or in its
          Time-Series-Library sub-folder such as ``ETT-small/``). The first hit is read as it is;
          its checksum is not checked. When no folder has the file, the ETT files are downloaded
          from GitHub into the cache and their md5 checked; the other three have no stable
          download address and must be fetched by hand.
    data_dir : str or os.PathLike, optional
        Folder searched first for benchmark files. Ignored for the statsmodels data sets.

    Returns
    -------
    pandas.DataFrame
        Columns ``unique_id`` (str), ``ds`` (datetime64), ``y`` (float64).

    Raises
    ------
    TypeError
        If `name` is not a string or `data_dir` is not a path.
    ValueError
        If `name` is unknown (the message lists the available names) or a local file cannot
        be parsed.
    FileNotFoundError
        If a benchmark file is in none of the folders and cannot be downloaded; the message
        lists the folders searched and where to get the file.

    Notes
    -----
    ``weather`` keeps the quirks of the published file: 80 rows hold the sentinel -9999 (in
    ``OT``, ``max. PAR (µmol/m²/s)`` and ``wv (m/s)``), the timestamp 2020-05-12 06:00 appears
    twice, and 9 steps are missing on 2020-05-29. Its three column names that were published
    with U+FFFD replacement characters are restored as ``"SWDR (W/m²)"``,
    ``"PAR (µmol/m²/s)"`` and ``"max. PAR (µmol/m²/s)"``. The dates of ``exchange_rate`` and
    ``national_illness`` are synthetic (see ``datasets/README.md``).

    Examples
    --------
    >>> from tsrsa import datasets
    >>> df = datasets.load("co2")
    >>> list(df.columns)
    ['unique_id', 'ds', 'y']
    >>> df["unique_id"].unique().tolist(), len(df), int(df["y"].isna().sum())
    (['co2'], 2284, 59)
    """
    entry = info(name)
    if data_dir is not None and not isinstance(data_dir, (str, os.PathLike)):
        raise TypeError(f"data_dir must be a str or os.PathLike; got {type(data_dir).__name__}")
    if entry.file is None:
        return _STATSMODELS_LOADERS[entry.name]()
    path = _find_or_download(entry, data_dir)
    return _read_benchmark(entry, path)


# --------------------------------------------------------------------------------------------
# statsmodels data sets


def _long(uid: str, ds, values) -> pd.DataFrame:
    ds = pd.DatetimeIndex(ds)
    y = np.asarray(values, dtype="float64")
    return pd.DataFrame({"unique_id": np.full(len(y), uid, dtype=object), "ds": ds.to_numpy(), "y": y})


def _year_starts(years) -> pd.DatetimeIndex:
    years = np.asarray(years, dtype="float64").astype("int64")
    return pd.to_datetime([f"{y:04d}-01-01" for y in years], format="%Y-%m-%d")


def _load_co2() -> pd.DataFrame:
    from statsmodels.datasets import co2

    data = co2.load_pandas().data
    return _long("co2", data.index, data["co2"])


def _load_sunspots() -> pd.DataFrame:
    from statsmodels.datasets import sunspots

    data = sunspots.load_pandas().data
    return _long("sunspots", _year_starts(data["YEAR"]), data["SUNACTIVITY"])


def _load_elnino() -> pd.DataFrame:
    from statsmodels.datasets import elnino

    data = elnino.load_pandas().data
    months = [c for c in data.columns if c != "YEAR"]  # JAN ... DEC, in calendar order
    start = _year_starts(data["YEAR"].iloc[:1])[0]
    ds = pd.date_range(start, periods=len(data) * len(months), freq="MS")
    return _long("elnino", ds, data[months].to_numpy(dtype="float64").ravel())


def _load_nile() -> pd.DataFrame:
    from statsmodels.datasets import nile

    data = nile.load_pandas().data
    return _long("nile", _year_starts(data["year"]), data["volume"])


_STATSMODELS_LOADERS = {
    "co2": _load_co2,
    "sunspots": _load_sunspots,
    "elnino": _load_elnino,
    "nile": _load_nile,
}


# --------------------------------------------------------------------------------------------
# benchmark files


def _search_dirs(data_dir) -> list[tuple[str, Path]]:
    dirs: list[tuple[str, Path]] = []
    if data_dir is not None:
        dirs.append(("data_dir", Path(data_dir).expanduser()))
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        dirs.append((f"${ENV_VAR}", Path(env).expanduser()))
    dirs.append(("cache", cache_dir()))
    return dirs


def _candidates(entry: DatasetInfo, folder: Path) -> list[Path]:
    paths = [folder / entry.file]
    if entry.subdir:
        paths.append(folder / entry.subdir / entry.file)
    return paths


def benchmark_file(name: str, *, data_dir: str | os.PathLike | None = None, download: bool = True) -> Path:
    """Path of a benchmark data set's CSV file, as :func:`load` finds it.

    The folders are searched as :func:`load` searches them (`data_dir`, ``$TSRSA_DATA_DIR``,
    :func:`cache_dir`, each directly or in its Time-Series-Library sub-folder); when none has
    the file, an ETT file is downloaded into the cache and its md5 checked.

    Parameters
    ----------
    name : str
        A benchmark data set of :func:`available` (``"ETTh1"``, ``"weather"``, ...).
    data_dir : str or os.PathLike, optional
        Folder searched first.
    download : bool, default True
        With False, never touch the network: a file in no folder raises at once.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ValueError
        If `name` is unknown or ships with statsmodels (it has no file).
    FileNotFoundError
        If no folder has the file and it is not (or cannot be) downloaded; the message lists
        the folders searched and where to get the file.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     (Path(folder) / "ETT-small").mkdir()
    ...     _ = (Path(folder) / "ETT-small" / "ETTh1.csv").write_text("date,OT")
    ...     print(benchmark_file("ETTh1", data_dir=folder, download=False).relative_to(folder))
    ETT-small/ETTh1.csv
    """
    entry = info(name)
    if entry.file is None:
        raise ValueError(f"data set {entry.name!r} ships with statsmodels and has no file; load it with load()")
    if data_dir is not None and not isinstance(data_dir, (str, os.PathLike)):
        raise TypeError(f"data_dir must be a str or os.PathLike; got {type(data_dir).__name__}")
    return _find_or_download(entry, data_dir, download=download)


def _find_or_download(entry: DatasetInfo, data_dir, *, download: bool = True) -> Path:
    searched: list[str] = []
    for label, folder in _search_dirs(data_dir):
        for path in _candidates(entry, folder):
            if path.is_file():
                return path
            searched.append(f"{path} ({label})")
    where = "; ".join(searched)
    if entry.url is None:
        raise FileNotFoundError(
            f"{entry.file} for data set {entry.name!r} was not found. Looked in: {where}. "
            f"No automatic download exists for it: {TSLIB_HINT}, then put {entry.file} in a "
            f"folder and pass data_dir=... or set the {ENV_VAR} environment variable to it."
        )
    if not download:
        raise FileNotFoundError(
            f"{entry.file} for data set {entry.name!r} was not found (and download=False). Looked in: "
            f"{where}. Get it from {entry.url} (md5 {entry.md5}) into a folder and pass data_dir=... or "
            f"set the {ENV_VAR} environment variable to it, or let load() download it into the cache."
        )
    try:
        return _download_to_cache(entry)
    except OSError as err:
        raise FileNotFoundError(
            f"{entry.file} for data set {entry.name!r} was not found and could not be "
            f"downloaded ({err}). Looked in: {where}. Download it by hand from {entry.url} "
            f"(md5 {entry.md5}) into a folder and pass data_dir=... or set the {ENV_VAR} "
            f"environment variable to it."
        ) from err


def _download(url: str, dest: Path, *, timeout: float = DOWNLOAD_TIMEOUT) -> None:
    """Copy `url` into the file `dest`; the only network access of this module."""
    if not url.startswith("https://"):
        raise OSError(f"refusing to download from a non-https address: {url}")
    with urllib.request.urlopen(url, timeout=timeout) as response, open(dest, "wb") as out:
        while True:
            chunk = response.read(1 << 20)
            if not chunk:
                break
            out.write(chunk)


def _md5(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _download_to_cache(entry: DatasetInfo) -> Path:
    """Download `entry` into the cache, check its md5, and return its path.

    Raises OSError on any failure; a partial or mismatching file is removed.
    """
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / entry.file
    partial = folder / f".{entry.file}.{os.getpid()}.part"
    try:
        _download(entry.url, partial)
        got = _md5(partial)
        if entry.md5 is not None and got != entry.md5:
            raise OSError(f"checksum mismatch for {entry.url}: md5 {got}, expected {entry.md5}")
        os.replace(partial, final)
    except OSError:
        partial.unlink(missing_ok=True)
        raise
    except Exception as err:  # e.g. http.client.IncompleteRead, which is no OSError
        partial.unlink(missing_ok=True)
        raise OSError(f"download of {entry.url} failed: {err}") from err
    except BaseException:  # KeyboardInterrupt: leave no partial file behind
        partial.unlink(missing_ok=True)
        raise
    return final


def _parse_dates(values: pd.Series, entry: DatasetInfo, path: Path) -> pd.DatetimeIndex:
    try:
        return pd.DatetimeIndex(pd.to_datetime(values, format=entry.date_format))
    except (ValueError, TypeError):
        pass
    try:  # another copy of the file may write its dates differently
        return pd.DatetimeIndex(pd.to_datetime(values))
    except (ValueError, TypeError) as err:
        raise ValueError(f"cannot parse the 'date' column of {path}: {err}") from None


def _read_benchmark(entry: DatasetInfo, path: Path) -> pd.DataFrame:
    try:
        # "replace" also turns a Latin-1 copy of weather.csv into the U+FFFD names fixed below
        wide = pd.read_csv(path, encoding="utf-8", encoding_errors="replace")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeError) as err:
        raise ValueError(f"cannot read {path} as CSV: {err}") from None
    wide.columns = [str(c).strip() for c in wide.columns]
    if entry.name == "weather":
        wide = wide.rename(columns=_WEATHER_RENAMES)
    if "date" not in wide.columns:
        raise ValueError(
            f"{path} has no 'date' column (columns: {list(wide.columns)}); "
            f"is it the {entry.name!r} benchmark file?"
        )
    channels = [c for c in wide.columns if c != "date"]
    if not channels:
        raise ValueError(f"{path} has a 'date' column but no value columns")
    ds = _parse_dates(wide["date"], entry, path)
    try:
        values = wide[channels].to_numpy(dtype="float64")  # (n_rows, n_channels)
    except (ValueError, TypeError) as err:
        raise ValueError(f"{path} has non-numeric values: {err}") from None
    n_rows = len(wide)
    return pd.DataFrame({
        "unique_id": np.repeat(np.asarray(channels, dtype=object), n_rows),
        "ds": np.tile(ds.to_numpy(), len(channels)),
        "y": values.T.ravel(),
    })
