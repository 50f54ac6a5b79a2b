"""What a fitted model remembers of its series so that ``predict()`` needs no data."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tsrsa.data.panel import Panel
from tsrsa.data.scalers import series_statistics


@dataclass
class EncodedCovariates:
    """A panel's covariates as a network reads them (``CovariateEncoder.encode_panel``)."""

    time: np.ndarray  # (N, C) float32, aligned with the panel's values
    static_num: np.ndarray  # (S, S_n) float32
    static_cat: np.ndarray  # (S, S_c) int64


@dataclass
class WindowCovariates:
    """The covariates of ``n`` input windows, as ``forecast_windows`` reads them."""

    past: np.ndarray  # (n, T, C) float32: every time-varying channel over the look-back
    future: np.ndarray | None  # (n, H, F) float32: the known-future channels of the horizon (None: none)
    static_num: np.ndarray  # (n, S_n) float32
    static_cat: np.ndarray  # (n, S_c) int64
    cycle: np.ndarray | None = None  # (n, 2) int64 each window's series row and first step's phase (a learned cycle)


@dataclass
class SeriesMemory:
    """Per series: its id, last timestamp, last values and scaling statistics (and, with
    covariates, the encoded covariates of those last steps and the static values)."""

    ids: pd.Index  # (S,) the user's ids, their dtype kept
    last: pd.Index  # (S,) last observed timestamp
    tails: np.ndarray  # (S, T) float64, the last T values
    loc: np.ndarray  # (S,) scaling location
    scale: np.ndarray  # (S,) scaling spread
    covariates: np.ndarray | None = None  # (S, T, C) float32 encoded covariates of the last T steps
    static_num: np.ndarray | None = None  # (S, S_n) float32
    static_cat: np.ndarray | None = None  # (S, S_c) int64

    @property
    def n_series(self) -> int:
        return len(self.ids)

    @classmethod
    def from_panel(cls, panel: Panel, tail_length: int, loc=None, scale=None,
                   encoded: EncodedCovariates | None = None) -> "SeriesMemory":
        """Remember the last ``tail_length`` values of each series of ``panel`` (and of ``encoded``)."""
        n = panel.n_series
        extra = {}
        if encoded is not None:
            index = panel.offsets[1:, None] - tail_length + np.arange(tail_length)[None, :]  # (S, T)
            extra = {"covariates": encoded.time[index], "static_num": encoded.static_num,
                     "static_cat": encoded.static_cat}
        return cls(
            ids=panel.ids,
            last=panel.last,
            tails=panel.tails(tail_length),
            loc=np.zeros(n) if loc is None else np.asarray(loc, dtype=np.float64),
            scale=np.ones(n) if scale is None else np.asarray(scale, dtype=np.float64),
            **extra,
        )

    def append(self, other: "SeriesMemory") -> "SeriesMemory":
        """This memory followed by ``other``'s series (same tail length)."""
        def joined(a, b):
            return None if a is None else np.concatenate([a, b])

        return SeriesMemory(ids=self.ids.append(other.ids), last=self.last.append(other.last),
                            tails=np.concatenate([self.tails, other.tails]), loc=np.concatenate([self.loc, other.loc]),
                            scale=np.concatenate([self.scale, other.scale]),
                            covariates=joined(self.covariates, other.covariates),
                            static_num=joined(self.static_num, other.static_num),
                            static_cat=joined(self.static_cat, other.static_cat))

    def continued(self, panel: Panel, known: np.ndarray, rows: EncodedCovariates | None = None) -> "SeriesMemory":
        """This memory with the series it knows continued by ``panel``'s values (``known[j]``: the row of
        ``panel``'s series j here, -1 for a new one, left out): tails slid, last timestamps moved and, with
        covariates, the encoded steps slid by ``rows`` (the panel's encoding)."""
        T = self.tails.shape[1]
        tails, last = self.tails.copy(), self.last
        covariates = None if self.covariates is None else self.covariates.copy()
        seen = np.flatnonzero(known >= 0)
        for j in seen:
            i = int(known[j])
            tails[i] = np.concatenate([tails[i], panel.series(int(j))])[-T:]
            if rows is not None:
                covariates[i] = np.concatenate([covariates[i], rows.time[panel.offsets[j]:panel.offsets[j + 1]]])[-T:]
        if seen.size:
            moved = pd.Series(last)
            moved.iloc[known[seen]] = pd.Index(panel.last).take(seen)
            last = pd.Index(moved)
        return SeriesMemory(ids=self.ids, last=last, tails=tails, loc=self.loc, scale=self.scale,
                            covariates=covariates, static_num=self.static_num, static_cat=self.static_cat)

    def for_new_data(self, panel: Panel, tail_length: int, scaler: str | None,
                     encoded: EncodedCovariates | None = None) -> "SeriesMemory":
        """Memory of ``panel``'s series: statistics of known ids are kept from fitting, those
        of unseen ids come from their own history in ``panel``."""
        loc, scale = series_statistics(panel.values, panel.offsets, panel.lengths, scaler)
        known = self.ids.get_indexer(panel.ids)  # (S_new,) position in the fitted ids or -1
        seen = known >= 0
        loc[seen] = self.loc[known[seen]]
        scale[seen] = self.scale[known[seen]]
        return SeriesMemory.from_panel(panel, tail_length, loc, scale, encoded)
