"""A validated panel: every series once, on one regular grid, as one contiguous array."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tsrsa.data.frequency import Frequency


@dataclass
class Panel:
    """Validated series, stored once: series i is ``values[offsets[i]:offsets[i + 1]]``.

    Built by :func:`tsrsa.data.validation.build_panel`; never holds NaN or inf and every
    series steps regularly by ``freq`` from ``first[i]`` to ``last[i]``.
    """

    ids: pd.Index  # (S,) the user's ids, their dtype kept
    values: np.ndarray  # (N,) float64, series after series
    offsets: np.ndarray  # (S + 1,) int64
    first: pd.Index  # (S,) first timestamp of each series
    last: pd.Index  # (S,) last timestamp of each series
    freq: Frequency
    layout: str = "long"  # how the user passed it: "long", "wide" or "series"
    #: declared covariate columns, one row per value (aligned with ``values``), NaN where a row was
    #: missing; None without covariates (see tsrsa.data.covariates)
    covariates: pd.DataFrame | None = None
    #: (rank, world_size) when this is one rank's share of a panel stored in shards
    #: (tsrsa.data.shards): the other ranks hold the other series
    share: tuple[int, int] | None = None
    _lengths: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_series(self) -> int:
        return len(self.ids)

    @property
    def lengths(self) -> np.ndarray:  # (S,)
        if self._lengths is None:
            self._lengths = np.diff(self.offsets)
        return self._lengths

    def series(self, i: int) -> np.ndarray:
        """Values of series i (a view)."""
        return self.values[self.offsets[i] : self.offsets[i + 1]]

    def timestamps(self, i: int):
        """Timestamps of series i."""
        return self.freq.range(self.first[i], int(self.lengths[i]))

    def stamps_at(self, positions: np.ndarray) -> tuple[pd.Index, np.ndarray]:
        """The timestamps of absolute positions ``positions`` (n,) of ``values``, and their series (n,)."""
        positions = np.asarray(positions, dtype=np.int64)
        series = np.searchsorted(self.offsets, positions, side="right") - 1
        return self.freq.shift(pd.Index(self.first).take(series), positions - self.offsets[series]), series

    def tails(self, n: int) -> np.ndarray:
        """The last ``n`` values of every series, shape (S, n); needs every length >= n."""
        index = self.offsets[1:, None] - n + np.arange(n)[None, :]  # (S, n)
        return self.values[index]

    def take(self, rows) -> "Panel":
        """The series at positions ``rows`` (in that order)."""
        rows = np.asarray(rows, dtype=np.int64)
        lengths = self.lengths[rows]
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        index = np.repeat(self.offsets[rows] - offsets[:-1], lengths) + np.arange(offsets[-1])
        return Panel(self.ids[rows], self.values[index], offsets, pd.Index(self.first).take(rows),
                     pd.Index(self.last).take(rows), self.freq, self.layout, self._rows_of(index), self.share)

    def head(self, lengths) -> "Panel":
        """The first ``lengths[i]`` values of every series (1 <= lengths[i] <= its length)."""
        lengths = np.asarray(lengths, dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        index = np.repeat(self.offsets[:-1] - offsets[:-1], lengths) + np.arange(offsets[-1])
        last = self.freq.shift(self.last, lengths - self.lengths)
        return Panel(self.ids, self.values[index], offsets, self.first, pd.Index(last), self.freq, self.layout,
                     self._rows_of(index), self.share)

    def steps(self, rows, start: int, stop: int) -> "Panel":
        """Positions ``start`` to ``stop - 1`` (0 <= start < stop <= each length) of the series at ``rows``:
        a stretch of equal length from the middle of each (``update``'s scoring of new windows)."""
        rows = np.asarray(rows, dtype=np.int64)
        n = stop - start
        index = ((self.offsets[rows] + start)[:, None] + np.arange(n)[None, :]).ravel()  # (len(rows) * n,)
        offsets = np.arange(len(rows) + 1, dtype=np.int64) * n
        first = pd.Index(self.first).take(rows)
        moved = np.full(len(rows), start, dtype=np.int64)
        return Panel(self.ids[rows], self.values[index], offsets, pd.Index(self.freq.shift(first, moved)),
                     pd.Index(self.freq.shift(first, moved + n - 1)), self.freq, self.layout, self._rows_of(index),
                     self.share)

    def _rows_of(self, index: np.ndarray) -> pd.DataFrame | None:
        """The covariate rows at positions ``index``, on a fresh RangeIndex."""
        if self.covariates is None:
            return None
        return self.covariates.iloc[index].reset_index(drop=True)
