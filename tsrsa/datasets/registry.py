"""What tsrsa knows of each data set: file, checksum, frequency, split, source, licence."""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import NamedTuple

_TSLIB_DRIVE = "https://drive.google.com/drive/folders/13Cg1KYOlzM5C7K8gK8NfC-F3EYxkM3D2?usp=sharing"
#: where the files without a download address come from
TSLIB_HINT = (
    "download the Autoformer / Time-Series-Library data folder by hand: the Google Drive link in "
    f"the README of https://github.com/thuml/Time-Series-Library ({_TSLIB_DRIVE})"
)
_ETT_RAW = "https://raw.githubusercontent.com/zhouhaoyi/ETDataset/main/ETT-small/{}"


class Split(NamedTuple):
    """Rows (time steps per series) of the standard train / validation / test split.

    The three parts are consecutive from the first row. For ETT they do not cover the whole
    file: the rows after ``train + val + test`` are unused by the standard protocol.
    """

    train: int
    val: int
    test: int


@dataclass(frozen=True)
class DatasetInfo:
    """What :func:`load` knows about one data set.

    Attributes
    ----------
    name : str
        The name passed to :func:`load`.
    file : str or None
        CSV file name of a benchmark data set; None for data shipped with statsmodels.
    md5 : str or None
        Checksum of the reference copy of ``file``; checked only right after a download.
    freq : str
        pandas frequency alias of ``ds`` (weather has one duplicate and one gap despite it).
    n_channels : int
        Number of series (``unique_id`` values) in the loaded frame.
    n_rows : int
        Timestamps per series in the reference copy (rows of the file, header excluded).
    target : str
        The ``unique_id`` of the usual forecasting target (``"OT"`` for the benchmarks).
    split : Split or None
        Standard train / validation / test rows (Informer / Autoformer / Time-Series-Library
        data loaders); None where there is no standard split.
    url : str or None
        Public address of the exact file, used for automatic download; None where no stable
        single-file address exists.
    license : str
        Licence or terms of the data.
    source : str
        Where the data come from and, for files, where to get them by hand.
    description : str
        One line on what the series are.
    subdir : str or None
        Folder that holds ``file`` in the Time-Series-Library ``dataset/`` layout; a data folder
        may hold the file either directly or inside this sub-folder.
    date_format : str or None
        ``strftime`` format of the file's ``date`` column.
    """

    name: str
    file: str | None
    md5: str | None
    freq: str
    n_channels: int
    n_rows: int
    target: str
    split: Split | None
    url: str | None
    license: str
    source: str
    description: str
    subdir: str | None = None
    date_format: str | None = None


def _custom_split(n: int) -> Split:
    # Dataset_Custom in Autoformer / Time-Series-Library: 70 % / rest / 20 % by rows.
    train, test = int(n * 0.7), int(n * 0.2)
    return Split(train, n - train - test, test)


_ETT_LICENSE = "CC BY-ND 4.0 (zhouhaoyi/ETDataset); cite Zhou et al., Informer, AAAI 2021"
_ETT_SOURCE = "https://github.com/zhouhaoyi/ETDataset (ETT-small/)"
_AUTOFORMER_LICENSE = (
    "no licence file where distributed (Autoformer data folder); public source data; "
    "cite Wu et al., Autoformer, NeurIPS 2021"
)


def _ett(name: str, md5: str, freq: str, n_rows: int, split: Split, what: str) -> DatasetInfo:
    return DatasetInfo(
        name=name, file=f"{name}.csv", md5=md5, freq=freq, n_channels=7, n_rows=n_rows,
        target="OT", split=split, url=_ETT_RAW.format(f"{name}.csv"), license=_ETT_LICENSE,
        source=_ETT_SOURCE, description=what, subdir="ETT-small",
        date_format="%Y-%m-%d %H:%M:%S",
    )


#: Every data set :func:`load` knows, by name.
REGISTRY: dict[str, DatasetInfo] = {
    "co2": DatasetInfo(
        name="co2", file=None, md5=None, freq="W-SAT", n_channels=1, n_rows=2284, target="co2",
        split=None, url=None,
        license="public domain (Keeling & Whorf, SIO flask samples via CDIAC); shipped with statsmodels",
        source="statsmodels.datasets.co2",
        description="weekly atmospheric CO2 at Mauna Loa (ppmv), 1958-03-29 to 2001-12-29, 59 NaN weeks",
    ),
    "sunspots": DatasetInfo(
        name="sunspots", file=None, md5=None, freq="YS", n_channels=1, n_rows=309,
        target="sunspots", split=None, url=None,
        license="public domain (NOAA National Geophysical Data Center); shipped with statsmodels",
        source="statsmodels.datasets.sunspots",
        description="yearly mean sunspot number, 1700 to 2008",
    ),
    "elnino": DatasetInfo(
        name="elnino", file=None, md5=None, freq="MS", n_channels=1, n_rows=732,
        target="elnino", split=None, url=None,
        license="public domain (NOAA CPC, ERSST.v3b Nino 1+2); shipped with statsmodels",
        source="statsmodels.datasets.elnino",
        description="monthly sea surface temperature, Nino 1+2 region of the Pacific (degC), 1950-01 to 2010-12",
    ),
    "nile": DatasetInfo(
        name="nile", file=None, md5=None, freq="YS", n_channels=1, n_rows=100, target="nile",
        split=None, url=None,
        license="public domain (Cobb 1978, Biometrika 65(2)); shipped with statsmodels",
        source="statsmodels.datasets.nile",
        description="yearly flow volume of the Nile at Aswan (1e8 m^3), 1871 to 1970",
    ),
    "ETTh1": _ett("ETTh1", "8381763947c85f4be6ac456c508460d6", "h", 17420,
                  Split(8640, 2880, 2880), "electricity transformer 1, hourly: 6 loads and oil temperature OT"),
    "ETTh2": _ett("ETTh2", "51a229a3fc13579dd939364fefe9c7ab", "h", 17420,
                  Split(8640, 2880, 2880), "electricity transformer 2, hourly: 6 loads and oil temperature OT"),
    "ETTm1": _ett("ETTm1", "82d6bd89109c63d075d99c1077b33f38", "15min", 69680,
                  Split(34560, 11520, 11520), "electricity transformer 1, every 15 min: 6 loads and OT"),
    "ETTm2": _ett("ETTm2", "7687e47825335860bf58bccb31be0c56", "15min", 69680,
                  Split(34560, 11520, 11520), "electricity transformer 2, every 15 min: 6 loads and OT"),
    "weather": DatasetInfo(
        name="weather", file="weather.csv", md5="2e79e5e4c921d3542684c4a34c6748b4", freq="10min",
        n_channels=21, n_rows=52696, target="OT", split=_custom_split(52696), url=None,
        license=_AUTOFORMER_LICENSE + "; data: MPI-BGC Jena weather station",
        source="Autoformer data folder, weather/weather.csv; " + TSLIB_HINT,
        description="Jena weather station 2020, 21 variables every 10 min (OT is the CO2 channel)",
        subdir="weather", date_format="%Y-%m-%d %H:%M:%S",
    ),
    "exchange_rate": DatasetInfo(
        name="exchange_rate", file="exchange_rate.csv", md5="2fc11972378a4c8817c1adfdde522bf9",
        freq="D", n_channels=8, n_rows=7588, target="OT", split=_custom_split(7588), url=None,
        license=_AUTOFORMER_LICENSE + "; data: LSTNet (Lai et al. 2018)",
        source="Autoformer data folder, exchange_rate/exchange_rate.csv; " + TSLIB_HINT,
        description="daily exchange rates of 8 countries (synthetic calendar-day dates)",
        subdir="exchange_rate", date_format="%Y/%m/%d %H:%M",
    ),
    "national_illness": DatasetInfo(
        name="national_illness", file="national_illness.csv",
        md5="50f75e5e1770ae57c2d29f5a6f2ae90a", freq="W-TUE", n_channels=7, n_rows=966,
        target="OT", split=_custom_split(966), url=None,
        license=_AUTOFORMER_LICENSE + "; data: CDC FluView ILINet (US government)",
        source="Autoformer data folder, illness/national_illness.csv; " + TSLIB_HINT,
        description="weekly US influenza-like-illness counts, 7 channels (synthetic shifted dates)",
        subdir="illness", date_format="%Y-%m-%d %H:%M:%S",
    ),
}


def available() -> list[str]:
    """Names accepted by :func:`load`.

    Returns
    -------
    list of str
        Data sets that ship with statsmodels first, then the benchmark files.

    Examples
    --------
    >>> from tsrsa import datasets
    >>> "co2" in datasets.available()
    True
    """
    return list(REGISTRY)


def info(name: str) -> DatasetInfo:
    """Registry entry of one data set: file, checksum, frequency, split, source, licence.

    Parameters
    ----------
    name : str
        One of :func:`available`.

    Returns
    -------
    DatasetInfo

    Raises
    ------
    TypeError
        If `name` is not a string.
    ValueError
        If `name` is not a known data set.

    Examples
    --------
    >>> from tsrsa import datasets
    >>> datasets.info("ETTh1").split
    Split(train=8640, val=2880, test=2880)
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, one of {available()}; got {type(name).__name__}")
    try:
        return REGISTRY[name]
    except KeyError:
        close = difflib.get_close_matches(name, list(REGISTRY), n=1, cutoff=0.6)
        if not close:
            close = [n for n in REGISTRY if n.lower() == name.lower()]
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(
            f"unknown data set {name!r}; available: {', '.join(available())}.{hint}"
        ) from None
