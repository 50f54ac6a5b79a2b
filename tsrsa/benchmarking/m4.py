"""The M4 competition's Hourly and Weekly sets: files, splits and the competition's scores.

The files are the competition's release (``<data folder>/m4/{Hourly,Weekly}-{train,test}.csv``):
one row per series, ``V1`` the id, the values in ``V2..`` padded on the right with NaN. They carry
no dates, so time is the integer position inside each series (``ds`` = 0, 1, ...; ``freq=1``).

Conventions of the competition's guide (Makridakis et al. 2020, IJF, and its benchmark code,
github.com/Mcompetitions/M4-methods):

- horizon h = 48 (Hourly), 13 (Weekly); season m = 24 (Hourly), 1 (Weekly: M4 treats weekly data
  as non-seasonal in MASE and in its benchmarks);
- sMAPE = 200/h sum |y - yhat| / (|y| + |yhat|) and MASE = MAE / in-sample MAE of the lag-m naive,
  both per series, then averaged over series (``tsrsa.metrics.smape`` and ``mase`` are exactly these
  per-series definitions and are reused);
- Naive2 (:mod:`tsrsa.benchmarking.naive2`): the naive forecast of the seasonally adjusted series;
- OWA = (sMAPE / sMAPE_Naive2 + MASE / MASE_Naive2) / 2 over the whole set.

Examples
--------
>>> from tsrsa.benchmarking.m4 import load_split, scores_with_owa, naive2_forecasts
>>> val = load_split("Hourly", "validation")  # doctest: +SKIP
>>> scores_with_owa(val, naive2_forecasts(val))  # doctest: +SKIP
{'smape': ..., 'mase': ..., 'owa': 1.0}
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from tsrsa.benchmarking.folders import data_folder
from tsrsa.benchmarking.naive2 import naive2
from tsrsa.metrics import mase, smape


@dataclass(frozen=True)
class Frequency:
    """One M4 frequency as the benchmark treats it."""

    name: str
    h: int  # forecast horizon (the competition's)
    m: int  # season of MASE and Naive2 (the competition's)
    input_size: int  # input window of the neural models
    period: int  # the series' natural cycle in steps, for reference (24 hours, 52 weeks)


#: input 168 = 7 days of hours; 52 = one year of weeks (every Weekly series has >= 67 values before
#: the validation horizon, so every series can be forecast from a full window)
FREQUENCIES = {
    "Hourly": Frequency("Hourly", h=48, m=24, input_size=168, period=24),
    "Weekly": Frequency("Weekly", h=13, m=1, input_size=52, period=52),
}

#: the competition's winner (Smyl's ES-RNN), per frequency, as published (M4 paper, Makridakis et al.
#: 2020, IJF): sMAPE, MASE, OWA. Only the Hourly figures are quoted here.
WINNER = {"Hourly": {"smape": 9.328, "mase": 0.893, "owa": 0.440}}


# ---------------------------------------------------------------------- files
def read_wide(path) -> dict[str, np.ndarray]:
    """The series of one M4 file.

    Parameters
    ----------
    path : str or os.PathLike
        A file of the release: ``V1`` the id, the values after it, padded on the right with NaN.

    Returns
    -------
    dict
        ``{id: values (n_id,)}`` in the file's order, the trailing padding dropped.

    Raises
    ------
    ValueError
        When a series is empty or has a missing value inside it.
    """
    frame = pd.read_csv(path)
    ids = frame.iloc[:, 0].astype(str).to_numpy()
    values = frame.iloc[:, 1:].to_numpy(dtype=np.float64)  # (S, width)
    out = {}
    for sid, row in zip(ids, values):
        n = int(np.flatnonzero(~np.isnan(row))[-1]) + 1 if (~np.isnan(row)).any() else 0
        if n == 0 or np.isnan(row[:n]).any():
            raise ValueError(f"{path}: series {sid} is empty or has a missing value inside it")
        out[sid] = row[:n]
    return out


def long_frame(series: dict[str, np.ndarray], start=None) -> pd.DataFrame:
    """A long frame (``unique_id``, ``ds``, ``y``) with integer time.

    Parameters
    ----------
    series : dict
        ``{id: values}``.
    start : dict, optional
        ``{id: first ds}``; 0 for every series by default.

    Returns
    -------
    pandas.DataFrame
    """
    ids, ds, ys = [], [], []
    for sid, y in series.items():
        s = 0 if start is None else int(start[sid])
        ids.append(np.full(len(y), sid, dtype=object))
        ds.append(np.arange(s, s + len(y), dtype=np.int64))
        ys.append(y)
    return pd.DataFrame({"unique_id": np.concatenate(ids), "ds": np.concatenate(ds), "y": np.concatenate(ys)})


# ---------------------------------------------------------------------- splits
@dataclass
class M4Split:
    """Histories and the horizon after them: the official test, or the last h of each history."""

    frequency: Frequency
    history: dict[str, np.ndarray]  # {id: (n_id,)}
    future: dict[str, np.ndarray]  # {id: (h,)}

    @property
    def ids(self) -> list[str]:
        return list(self.history)

    def frame(self) -> pd.DataFrame:
        """The histories as a long frame with integer time."""
        return long_frame(self.history)

    def actuals(self) -> np.ndarray:
        """(S, h) the values to forecast, in the order of :attr:`ids`."""
        return np.stack([self.future[sid] for sid in self.ids])


def m4_folder(data_dir=None) -> Path:
    """``<data folder>/m4``, the data folder found by :func:`~tsrsa.benchmarking.folders.data_folder`."""
    return data_folder(data_dir) / "m4"


def load_split(name: str, split: str, data_dir=None) -> M4Split:
    """One frequency's series, split for validation or for the official test.

    Parameters
    ----------
    name : {"Hourly", "Weekly"}
    split : {"validation", "test"}
        "test": the full training series and the official test; "validation": each training
        series without its last h values, and those values.
    data_dir : str or os.PathLike, optional
        The folder that holds ``m4/`` (default: ``$TSRSA_DATA_DIR``, else the cache folder).

    Returns
    -------
    M4Split
    """
    freq = FREQUENCIES[name]
    folder = m4_folder(data_dir)
    train = read_wide(folder / f"{name}-train.csv")
    if split == "validation":
        return M4Split(freq, {k: v[: -freq.h] for k, v in train.items()}, {k: v[-freq.h:] for k, v in train.items()})
    if split != "test":
        raise ValueError(f"split={split!r}: 'validation' or 'test'")
    test = read_wide(folder / f"{name}-test.csv")
    if list(test) != list(train) or any(len(v) != freq.h for v in test.values()):
        raise ValueError(f"{folder}: {name}-test.csv does not hold h={freq.h} values for each training series")
    return M4Split(freq, train, test)


def available(data_dir=None) -> bool:
    """Whether the folder holds the train and test files of every frequency."""
    folder = m4_folder(data_dir)
    return all((folder / f"{n}-{s}.csv").exists() for n in FREQUENCIES for s in ("train", "test"))


# ---------------------------------------------------------------------- scores
def scores(split: M4Split, forecasts) -> dict[str, float]:
    """Mean sMAPE and MASE over the series of a split.

    Parameters
    ----------
    split : M4Split
    forecasts : array (S, h)
        Finite forecasts, series in the order of ``split.ids``.

    Returns
    -------
    dict
        ``{"smape": ..., "mase": ...}``; MASE with the frequency's season m.
    """
    forecasts = np.asarray(forecasts, dtype=np.float64)
    y = split.actuals()
    if forecasts.shape != y.shape or not np.isfinite(forecasts).all():
        raise ValueError(f"forecasts have shape {forecasts.shape} (finite: {np.isfinite(forecasts).all()}); "
                         f"expected finite values of shape {y.shape}")
    m = split.frequency.m
    s = [smape(y[i], forecasts[i]) for i in range(len(y))]
    q = [mase(y[i], forecasts[i], split.history[sid], m) for i, sid in enumerate(split.ids)]
    return {"smape": float(np.mean(s)), "mase": float(np.mean(q))}


def owa(score: dict, naive2_score: dict) -> float:
    """Overall weighted average of ``score`` relative to Naive2's scores on the same set."""
    return 0.5 * (score["smape"] / naive2_score["smape"] + score["mase"] / naive2_score["mase"])


def naive2_forecasts(split: M4Split) -> np.ndarray:
    """(S, h) Naive2's forecasts of every series of the split (its frequency's season)."""
    f = split.frequency
    return np.stack([naive2(split.history[s], f.m, f.h) for s in split.ids])


def scores_with_owa(split: M4Split, forecasts) -> dict[str, float]:
    """sMAPE, MASE (:func:`scores`) and the OWA against Naive2 on the same split.

    Returns
    -------
    dict
        ``{"smape": ..., "mase": ..., "owa": ...}``, unrounded.
    """
    score = scores(split, forecasts)
    return {**score, "owa": owa(score, scores(split, naive2_forecasts(split)))}
