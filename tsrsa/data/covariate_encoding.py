"""How declared covariates become numbers for a network: the fitted :class:`CovariateEncoder`.

Fitted on the training part only and saved with the model (``to_json``/``from_json``): a numeric
time-varying column is standardised by its mean and spread over every series' training steps; a
categorical one becomes one indicator column per category seen in fit; calendar columns enter as
they are; a numeric static is standardised over the series; a categorical static becomes a code for
an embedding (code 0 is kept for a category not seen in fit, the bucket of
``unknown_categories="unknown"``). The columns themselves are read and checked in
:mod:`tsrsa.data.covariates`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from tsrsa.data.calendar import calendar_features
from tsrsa.data.covariates import CovariateSpec, is_categorical, panel_stamps, row_place, static_frame
from tsrsa.data.scalers import MAX_SCALED, mean_and_spread
from tsrsa.data.validation import format_id

__all__ = ["CovariateEncoder"]


class CovariateEncoder:
    """Encodes a spec's covariates as numbers for a network; fitted on the training part only.

    ``time`` columns (past, then known-future) give the look-back channels; the known-future ones
    and the calendar the horizon channels; statics give numeric values and category codes.
    """

    def __init__(self, spec: CovariateSpec, freq_alias: str | None, numeric: dict, categories: dict,
                 calendar: list[str]):
        self.spec = spec
        self.freq_alias = freq_alias
        self.numeric = numeric  # column -> (mean, spread) (time-varying and static numeric columns)
        self.categories = categories  # column -> list of categories seen in fit
        self.calendar = calendar  # generated column names, in order

    # ------------------------------------------------------------------ fitting
    @classmethod
    def fit(cls, spec: CovariateSpec, panel, fit_lengths: np.ndarray) -> "CovariateEncoder":
        numeric, categories = {}, {}
        frame = panel.covariates if panel.covariates is not None else pd.DataFrame(index=pd.RangeIndex(0))
        inside = np.concatenate([np.arange(a, a + n) for a, n in zip(panel.offsets[:-1], fit_lengths)]) \
            if panel.n_series else np.zeros(0, dtype=np.int64)
        for name in spec.past + spec.future:
            values = frame[name].iloc[inside]
            if is_categorical(values):
                categories[name] = _category_list(values)
            else:
                numeric[name] = _moments(values.to_numpy(np.float64))
        statics = static_frame(panel, spec)
        for name in spec.static:
            values = statics[name]
            if name == spec.id_col or is_categorical(values):
                categories[name] = _category_list(values)
            else:
                numeric[name] = _moments(values.to_numpy(np.float64))
        calendar = []
        if spec.generated:
            if not panel.freq.is_datetime:
                raise ValueError("calendar and holiday features need datetime timestamps; this data's time is "
                                 "integer: pass known-future covariates of your own instead")
            calendar = list(calendar_features(pd.DatetimeIndex(panel.first[:1]), panel.freq.alias,
                                              features="auto" if spec.calendar == "auto" else
                                              list(spec.calendar or ()), country=spec.country).columns)
        return cls(spec, panel.freq.alias, numeric, categories, calendar)

    # ------------------------------------------------------------------ layout
    def _width(self, name: str) -> int:
        if name in self.numeric:
            return 1
        return len(self.categories[name])

    @property
    def n_future(self) -> int:
        return sum(self._width(n) for n in self.spec.future) + len(self.calendar)

    @property
    def n_time(self) -> int:
        return sum(self._width(n) for n in self.spec.past) + self.n_future

    @property
    def future_from(self) -> int:
        """The first known-future channel among the look-back channels (``n_time``: none)."""
        return self.n_time - self.n_future

    def future_after(self, time: np.ndarray, ends: np.ndarray, stops: np.ndarray, H: int) -> np.ndarray | None:
        """Known-future channels (n, H, F) of the H steps after positions ``ends`` (n,) of a panel's
        encoded ``time`` (N, C), zeros from ``stops`` (n,) on (each series' end); None without any."""
        if not self.n_future:
            return None
        steps = ends[:, None] + 1 + np.arange(H)[None, :]  # (n, H)
        inside = steps < stops[:, None]
        future = time[np.where(inside, steps, 0)][..., self.future_from:]  # (n, H, F)
        return np.where(inside[..., None], future, 0.0).astype(np.float32)

    def shape(self) -> dict:
        """The network's covariate layout (``tsrsa.nn.covariates``)."""
        statics = [n for n in self.spec.static if n in self.numeric]
        return {"n_past": self.n_time, "n_future": self.n_future, "n_static": len(statics),
                "cardinalities": [len(self.categories[n]) + 1 for n in self.spec.static if n in self.categories]}

    def numeric_channels(self) -> list[int]:
        """Positions of the numeric time-varying columns among the look-back channels (not the
        category indicators, not the calendar)."""
        out, at = [], 0
        for name in self.spec.past + self.spec.future:
            if name in self.numeric:
                out.append(at)
            at += self._width(name)
        return out

    # ------------------------------------------------------------------ encoding
    def _column(self, name: str, values: pd.Series, where=None) -> np.ndarray:
        """(n, width) float32 of one time-varying column; ``where(row)`` names a row's series and time
        in the ValueError raised for a standardised value beyond ``MAX_SCALED``."""
        if name in self.numeric:
            if is_categorical(values):
                raise TypeError(f"covariate {name!r} was numeric in fit but holds {values.dtype} now")
            mean, spread = self.numeric[name]
            raw = values.to_numpy(np.float64)
            with np.errstate(over="ignore", invalid="ignore"):
                z = (raw - mean) / spread
            wrong = np.flatnonzero(~(np.abs(z) <= MAX_SCALED))
            if wrong.size:
                row = int(wrong[0])
                place = where(row) if where is not None else f"in row {row}"
                raise ValueError(
                    f"covariate {name!r} {place}: the value {raw[row]:.6g}, standardised by the mean {mean:.6g} and "
                    f"spread {spread:.6g} fitted on the training part, lies beyond the +-{MAX_SCALED:.0e} a float32 "
                    f"network computes with; check the value, or divide the column by a constant and refit")
            return z.astype(np.float32)[:, None]
        codes = self._codes(name, values)  # (n,) -1 for the unknown bucket
        out = np.zeros((len(values), len(self.categories[name])), dtype=np.float32)
        seen = codes >= 0
        out[np.flatnonzero(seen), codes[seen]] = 1.0
        return out

    def _codes(self, name: str, values: pd.Series) -> np.ndarray:
        known = self.categories[name]
        codes = pd.Index(known).get_indexer(values.astype(object).to_numpy())
        if (codes < 0).any() and self.spec.unknown == "raise":
            new = values.astype(object).to_numpy()[codes < 0][0]
            raise ValueError(
                f"covariate {name!r} holds {new!r}, a category not seen in fit (it saw {known[:10]}); refit with it, "
                f"or pass unknown_categories='unknown' to send unseen categories to an 'unknown' bucket")
        return codes

    def _calendar(self, stamps) -> np.ndarray:
        if not self.calendar:
            return np.zeros((len(stamps), 0), dtype=np.float32)
        spec = self.spec
        features = calendar_features(stamps, self.freq_alias, features="auto" if spec.calendar == "auto" else
                                     list(spec.calendar or ()), country=spec.country)
        return features[self.calendar].to_numpy(np.float32)

    def encode_time(self, frame: pd.DataFrame, stamps, where=None) -> np.ndarray:
        """Look-back channels (n, C) of the rows ``frame`` (the declared time-varying columns) at ``stamps``."""
        parts = [self._column(n, frame[n], where) for n in self.spec.past + self.spec.future]
        parts.append(self._calendar(stamps))
        return np.concatenate(parts, axis=1) if parts else np.zeros((len(stamps), 0), np.float32)

    def encode_future(self, frame: pd.DataFrame | None, stamps, where=None) -> np.ndarray:
        """Horizon channels (n, F) of the rows ``frame`` (the known-future columns) at ``stamps``."""
        parts = [self._column(n, frame[n], where) for n in self.spec.future]
        parts.append(self._calendar(stamps))
        return np.concatenate(parts, axis=1)

    def encode_horizon(self, frame: pd.DataFrame | None, stamps, ids, h: int, H: int, where=None) -> np.ndarray:
        """Horizon channels (S, H, F) of the ``h`` steps after each of the S series ``ids``: ``frame`` (the
        known-future columns) and ``stamps`` their rows, series-major (S * h); zeros after step ``h``."""
        block = self.encode_future(frame, stamps, where).reshape(len(ids), h, -1)  # (S, h, F)
        out = np.zeros((len(ids), H, block.shape[2]), dtype=np.float32)
        out[:, :h] = block
        return out

    def encode_static(self, statics: pd.DataFrame, where=None) -> tuple[np.ndarray, np.ndarray]:
        """(numeric (S, S_n) float32, codes (S, S_c) int64; code 0 is the unknown bucket)."""
        numeric = [n for n in self.spec.static if n in self.numeric]
        cats = [n for n in self.spec.static if n in self.categories]
        num = np.zeros((len(statics), len(numeric)), dtype=np.float32)
        for j, name in enumerate(numeric):
            num[:, j] = self._column(name, statics[name], where)[:, 0]
        codes = np.zeros((len(statics), len(cats)), dtype=np.int64)
        for j, name in enumerate(cats):
            codes[:, j] = self._codes(name, statics[name]) + 1
        return num, codes

    def encode_panel(self, panel) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(time (N, C), static numeric (S, S_n), static codes (S, S_c)) of a checked panel."""
        frame = panel.covariates if panel.covariates is not None else pd.DataFrame(index=pd.RangeIndex(len(panel.values)))
        stamps = panel_stamps(panel) if self.calendar else np.zeros(len(panel.values))
        num, codes = self.encode_static(static_frame(panel, self.spec),
                                        lambda i: f"of series {format_id(panel.ids[i])} (static)")
        return self.encode_time(frame, stamps, lambda row: row_place(panel, row)), num, codes

    def check_statics_unchanged(self, panel, encoded, known: np.ndarray, static_num: np.ndarray,
                                static_cat: np.ndarray) -> None:
        """ValueError when a series of ``panel`` the model knows (``known[j]``: its row in the fitted
        ``static_num``/``static_cat``, -1 for a new one) carries a static value other than the fitted one."""
        seen = np.flatnonzero(known >= 0)
        numeric = [n for n in self.spec.static if n in self.numeric]
        cats = [n for n in self.spec.static if n in self.categories]
        changed = [(name, j, f"{old * self.numeric[name][1] + self.numeric[name][0]:.6g}")
                   for c, name in enumerate(numeric) for j, old in
                   zip(seen, static_num[known[seen], c]) if encoded.static_num[j, c] != old]
        changed += [(name, j, repr(_plain(self.categories[name][old - 1])) if old else "a category not seen in fit")
                    for c, name in enumerate(cats) if name != self.spec.id_col for j, old in
                    zip(seen, static_cat[known[seen], c]) if encoded.static_cat[j, c] != old]
        if changed:
            name, j, old = changed[0]
            new = _plain(static_frame(panel, self.spec)[name].iloc[int(j)])
            raise ValueError(
                f"static covariate {name!r} of series {format_id(panel.ids[int(j)])} was {old} in fit, but this "
                f"frame gives {f'{new:.6g}' if name in self.numeric else repr(new)}: a static covariate holds one "
                f"value per series for good; pass the fitted value, or refit with the new one")

    # ------------------------------------------------------------------ saving
    def to_json(self) -> dict:
        spec = self.spec
        return {"past": list(spec.past), "future": list(spec.future), "static": list(spec.static),
                "calendar": spec.calendar if isinstance(spec.calendar, (str, type(None))) else list(spec.calendar),
                "country": spec.country, "unknown": spec.unknown, "id_col": spec.id_col, "freq": self.freq_alias,
                "numeric": {k: list(v) for k, v in self.numeric.items()},
                "categories": {k: [_plain(c) for c in v] for k, v in self.categories.items()},
                "generated": list(self.calendar)}

    @classmethod
    def from_json(cls, data: dict) -> "CovariateEncoder":
        calendar = data["calendar"] if isinstance(data["calendar"], (str, type(None))) else tuple(data["calendar"])
        spec = CovariateSpec(tuple(data["past"]), tuple(data["future"]), tuple(data["static"]), calendar,
                             data["country"], data["unknown"], data["id_col"])
        return cls(spec, data["freq"], {k: tuple(v) for k, v in data["numeric"].items()},
                   {k: list(v) for k, v in data["categories"].items()}, list(data["generated"]))


def _category_list(values: pd.Series) -> list:
    if isinstance(values.dtype, pd.CategoricalDtype):
        return list(values.cat.categories)
    found = pd.unique(values.dropna().astype(object))
    try:
        return sorted(found)
    except TypeError:
        return list(found)


def _moments(values: np.ndarray) -> tuple[float, float]:
    if values.size == 0:
        return 0.0, 1.0
    mean, spread = mean_and_spread(values)  # finite for any finite values
    return mean, spread if spread > 1e-12 else 1.0


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value
