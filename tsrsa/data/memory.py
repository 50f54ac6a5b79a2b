"""What a fitted model remembers of its series so that ``predict()`` needs no data."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tsrsa.data.panel import Panel
from tsrsa.data.scalers import series_statistics


@dataclass
class SeriesMemory:
    """Per series: its id, last timestamp, last values and scaling statistics."""

    ids: pd.Index  # (S,) the user's ids, their dtype kept
    last: pd.Index  # (S,) last observed timestamp
    tails: np.ndarray  # (S, T) float64, the last T values
    loc: np.ndarray  # (S,) scaling location
    scale: np.ndarray  # (S,) scaling spread

    @property
    def n_series(self) -> int:
        return len(self.ids)

    @classmethod
    def from_panel(cls, panel: Panel, tail_length: int, loc=None, scale=None) -> "SeriesMemory":
        """Remember the last ``tail_length`` values of each series of ``panel``."""
        n = panel.n_series
        return cls(
            ids=panel.ids,
            last=panel.last,
            tails=panel.tails(tail_length),
            loc=np.zeros(n) if loc is None else np.asarray(loc, dtype=np.float64),
            scale=np.ones(n) if scale is None else np.asarray(scale, dtype=np.float64),
        )

    def append(self, other: "SeriesMemory") -> "SeriesMemory":
        """This memory followed by ``other``'s series (same tail length)."""
        return SeriesMemory(ids=self.ids.append(other.ids), last=self.last.append(other.last),
                            tails=np.concatenate([self.tails, other.tails]), loc=np.concatenate([self.loc, other.loc]),
                            scale=np.concatenate([self.scale, other.scale]))

    def for_new_data(self, panel: Panel, tail_length: int, scaler: str | None) -> "SeriesMemory":
        """Memory of ``panel``'s series: statistics of known ids are kept from fitting, those
        of unseen ids come from their own history in ``panel``."""
        loc, scale = series_statistics(panel.values, panel.offsets, panel.lengths, scaler)
        known = self.ids.get_indexer(panel.ids)  # (S_new,) position in the fitted ids or -1
        seen = known >= 0
        loc[seen] = self.loc[known[seen]]
        scale[seen] = self.scale[known[seen]]
        return SeriesMemory.from_panel(panel, tail_length, loc, scale)
