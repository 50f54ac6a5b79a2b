"""The long-horizon protocol of Time-Series-Library: splits, scaling and the frames a model fits.

For a data set of ``T`` rows and ``C`` channels and an input length ``L``:

- ETTh1/ETTh2: training rows [0, 8640), validation [8640 - L, 11520), test [11520 - L, 14400);
  ETTm1/ETTm2 the same times 4; the rows after the test part are unused;
- weather, exchange_rate, national_illness (``Dataset_Custom``): ``n_train = int(0.7 T)``,
  ``n_test = int(0.2 T)``, the rest validation, chronological, each part after the first
  looking back ``L`` rows into the part before it;
- every channel is scaled by a StandardScaler (mean, population std) fitted on the training
  rows only, and the metrics are taken on that scale.

Files are read raw, rows as they are (weather's duplicate timestamp, gap and -9999 values
included, as the literature does), with integer time (``ds`` = row number) so that a broken
calendar passes validation unchanged.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tsrsa.data.scalers import series_statistics

#: standard horizons per data set (input 96, national_illness input 36)
HORIZONS = (96, 192, 336, 720)
ILI_HORIZONS = (24, 36, 48, 60)

#: the data sets of the protocol, with their standard input length and horizons
LTSF_DATASETS = {
    "ETTh1": (96, HORIZONS),
    "ETTh2": (96, HORIZONS),
    "ETTm1": (96, HORIZONS),
    "ETTm2": (96, HORIZONS),
    "weather": (96, HORIZONS),
    "exchange_rate": (96, HORIZONS),
    "national_illness": (36, ILI_HORIZONS),
}

# ETT borders in rows (12 / 4 / 4 months of 30 days); the minute files hold 4 rows per hour
_ETT_ENDS = {"ETTh1": 1, "ETTh2": 1, "ETTm1": 4, "ETTm2": 4}


@dataclass(frozen=True)
class Borders:
    """Row borders of the three parts; a part's windows start ``input_size`` rows before it.

    Training rows are [0, train_end); validation targets lie in [train_end, val_end) and test
    targets in [val_end, test_end). Time-Series-Library writes the same as
    ``border1s = [0, train_end - L, val_end - L]``, ``border2s = [train_end, val_end, test_end]``.
    """

    train_end: int
    val_end: int
    test_end: int
    input_size: int

    @property
    def border1s(self) -> tuple[int, int, int]:
        L = self.input_size
        return 0, self.train_end - L, self.val_end - L

    @property
    def border2s(self) -> tuple[int, int, int]:
        return self.train_end, self.val_end, self.test_end

    @property
    def val_size(self) -> int:
        return self.val_end - self.train_end

    def n_windows(self, part: str, h: int) -> int:
        """Stride-1 windows (``input_size`` inputs, ``h`` targets) of one channel in a part."""
        k = ("train", "val", "test").index(part)
        return self.border2s[k] - self.border1s[k] - self.input_size - h + 1


def borders(name: str, n_rows: int, input_size: int) -> Borders:
    """The protocol's borders for data set ``name`` with ``n_rows`` rows and input ``input_size``.

    Examples
    --------
    >>> borders("ETTh1", 17420, 96).border1s, borders("ETTh1", 17420, 96).border2s
    ((0, 8544, 11424), (8640, 11520, 14400))
    >>> borders("weather", 52696, 96).border2s
    (36887, 42157, 52696)
    """
    if name in _ETT_ENDS:
        m = _ETT_ENDS[name]
        ends = (12 * 30 * 24 * m, 16 * 30 * 24 * m, 20 * 30 * 24 * m)
        if n_rows < ends[2]:
            raise ValueError(f"{name} has {n_rows} rows; the protocol needs at least {ends[2]}")
    else:
        n_train, n_test = int(n_rows * 0.7), int(n_rows * 0.2)
        ends = (n_train, n_rows - n_test, n_rows)
    if input_size < 1 or ends[0] - input_size < 1:
        raise ValueError(f"input_size={input_size} does not fit the {ends[0]} training rows of {name}")
    return Borders(*ends, input_size=int(input_size))


@dataclass
class ProtocolData:
    """One data set ready for the protocol: every channel scaled on the training rows."""

    name: str
    channels: list[str]  # (C,) channel names, the series ids
    scaled: np.ndarray  # (T, C) float64, StandardScaler-scaled values, rows as in the file
    mean: np.ndarray  # (C,) training-row mean of each channel
    std: np.ndarray  # (C,) training-row population std of each channel
    borders: Borders

    @property
    def input_size(self) -> int:
        return self.borders.input_size


def wide_values(frame: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """(T, C) values and channel names of a long frame from :func:`tsrsa.datasets.load`
    (rows grouped by channel, file order within each)."""
    channels = list(pd.unique(frame["unique_id"]))
    y = frame["y"].to_numpy(dtype=np.float64)
    if len(y) % len(channels):
        raise ValueError("the channels of the frame have different lengths")
    return y.reshape(len(channels), -1).T.copy(), [str(c) for c in channels]  # (T, C)


def prepare(name: str, values: np.ndarray, channels: list[str], input_size: int) -> ProtocolData:
    """Split and scale the raw (T, C) ``values`` of data set ``name`` as the protocol does."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2 or values.shape[1] != len(channels):
        raise ValueError(f"values must be (rows, {len(channels)} channels); got {values.shape}")
    if not np.isfinite(values).all():
        raise ValueError(f"{name} holds NaN or inf values; the protocol reads finite files only")
    b = borders(name, len(values), input_size)
    T, C = values.shape
    flat = values.T.ravel()  # channel after channel
    offsets = np.arange(C + 1, dtype=np.int64) * T
    mean, std = series_statistics(flat, offsets, np.full(C, b.train_end), "standard")
    scaled = (values - mean[None, :]) / std[None, :]  # (T, C)
    return ProtocolData(name=name, channels=list(channels), scaled=scaled, mean=mean, std=std, borders=b)


def load_protocol_data(name: str, input_size: int | None = None, data_dir=None) -> ProtocolData:
    """Read data set ``name`` raw with :func:`tsrsa.datasets.load` and prepare it."""
    from tsrsa.datasets import load

    if name not in LTSF_DATASETS:
        raise ValueError(f"{name!r} is not a long-horizon data set; use one of {list(LTSF_DATASETS)}")
    values, channels = wide_values(load(name, data_dir=data_dir))
    return prepare(name, values, channels, input_size or LTSF_DATASETS[name][0])


def training_start(data: ProtocolData, h: int, train_fraction: float = 1.0,
                   max_windows: int | None = None) -> int:
    """First training row a model sees: all of them, or the rows of the most recent
    ``ceil(train_fraction * n)`` of the ``n`` training windows (at most ``max_windows``)."""
    if not 0.0 < train_fraction <= 1.0:
        raise ValueError(f"train_fraction={train_fraction} must lie in (0, 1]")
    b = data.borders
    n = b.n_windows("train", h)
    if n < 1:
        raise ValueError(f"h={h} leaves no training window in the {b.train_end} training rows")
    keep = max(1, math.ceil(train_fraction * n - 1e-9))
    if max_windows is not None:
        keep = min(keep, int(max_windows))
    return b.train_end - (keep + b.input_size + h - 1)


def validation_size(data: ProtocolData, h: int, max_windows: int | None = None) -> int:
    """Rows after the training part that a model holds out for validation."""
    v = data.borders.val_size
    return v if max_windows is None else min(v, int(max_windows) + h - 1)


def fit_frame(data: ProtocolData, start: int, stop: int) -> pd.DataFrame:
    """Long frame (``unique_id`` = channel, ``ds`` = row number, ``y`` scaled) of rows [start, stop)."""
    block = data.scaled[start:stop]  # (n, C)
    n = len(block)
    return pd.DataFrame({
        "unique_id": np.repeat(np.asarray(data.channels, dtype=object), n),
        "ds": np.tile(np.arange(start, stop, dtype=np.int64), len(data.channels)),
        "y": block.T.ravel(),
    })
