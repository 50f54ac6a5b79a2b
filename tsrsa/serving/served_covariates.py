"""The covariates of a served fixed-window model: its fitted encoder and the graph inputs built from it.

A model fitted with covariates reads, besides its windows, a :class:`~tsrsa.nn.covariates.CovariateBatch`:
every time-varying channel over the look-back (``past`` (B, L, C)), the known-future channels of the horizon
(``future`` (B, H, F)), the numeric statics (``static_num`` (B, S_n)) and the categorical statics' codes
(``static_cat`` (B, S_c) int64). ``to_onnx`` makes the parts the model reads graph inputs under those names
(:class:`~tsrsa.serving.onnx_export.CovariateForecast`) and saves the fitted encoder
(``CovariateEncoder.to_json``) and each series' encoded last steps and statics; here the served model builds
the same arrays from the frames it is given with the encoder itself (:mod:`tsrsa.data.covariate_encoding`:
categories, the fit's normalisation, calendar and holiday features), as ``predict`` builds them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tsrsa.data.covariate_encoding import CovariateEncoder
from tsrsa.data.covariates import check_covariate_frame, future_rows
from tsrsa.data.memory import EncodedCovariates, SeriesMemory
from tsrsa.data.validation import format_id

__all__ = ["COVARIATE_INPUTS", "ServedCovariates"]

#: the graph's covariate inputs, in this order (those the model reads)
COVARIATE_INPUTS = ("past", "future", "static_num", "static_cat")


@dataclass(frozen=True)
class ServedCovariates:
    """A served model's covariates: the fitted ``encoder``, the graph's covariate ``inputs`` (a part of
    :data:`COVARIATE_INPUTS`), the trained horizon ``H`` and whether a forecast of any length reads the
    known-future values of the whole of it (``whole_horizon``: ``known_future="tokens"``)."""

    encoder: CovariateEncoder
    inputs: tuple
    H: int
    whole_horizon: bool
    id_col: str
    time_col: str
    model: str = "model"

    @classmethod
    def from_record(cls, record: dict, info: dict) -> "ServedCovariates":
        """What ``to_onnx`` wrote (``info["covariates"]``); KeyError/TypeError/ValueError when it is not that."""
        inputs = tuple(str(n) for n in record["inputs"])
        unknown = [n for n in inputs if n not in COVARIATE_INPUTS]
        if unknown:
            raise ValueError(f"unknown covariate inputs {unknown}")
        return cls(CovariateEncoder.from_json(record["encoder"]), inputs, int(info["h"]),
                   bool(record["whole_horizon"]), info["id_col"], info["time_col"], str(info.get("model", "model")))

    @property
    def spec(self):
        return self.encoder.spec

    @property
    def columns(self) -> tuple:
        """The frame columns a frame given to ``predict(df=...)`` or ``update`` must hold."""
        return self.spec.columns

    def checked(self, panel, fill):
        """``panel`` with its covariate columns checked and filled as the model's ``fit`` checks them."""
        return check_covariate_frame(panel, self.spec, fill) if self.spec.active else panel

    def encoded(self, panel) -> EncodedCovariates:
        """``panel``'s covariates as the network reads them."""
        return EncodedCovariates(*self.encoder.encode_panel(panel))

    def future(self, ids: pd.Index, stamps, h: int, future_df) -> np.ndarray | None:
        """Known-future channels (S, H, F) of the ``h`` steps at ``stamps`` (S * h, series-major) of the series
        ``ids``, from ``future_df`` and the timestamps (zeros after step h); None when the model reads none."""
        spec = self.spec
        if future_df is not None and not spec.future:
            raise ValueError(f"future_df was given, but this {self.model} declares no future covariates: it has "
                             f"nothing to read there; leave future_df out")
        if "future" not in self.inputs:
            return None
        if spec.future and future_df is None:
            raise ValueError(f"this model reads the known-future covariates {list(spec.future)}: pass "
                             f"future_df= with their values for the next {h} step(s) of every series")
        frame = future_rows(future_df, ids, stamps, h, spec, self.id_col, self.time_col) if spec.future else None
        return self.encoder.encode_horizon(frame, stamps, ids, h, self.H, lambda row: f"in future_df for series "
                                           f"{format_id(ids[row // h])} at {stamps[row]}")

    def steps(self, h: int) -> int:
        """How many steps of known-future values a forecast of ``h`` steps reads."""
        return self.H if self.whole_horizon else h

    def feeds(self, memory: SeriesMemory, future: np.ndarray | None) -> dict[str, np.ndarray]:
        """The graph's covariate inputs for the windows of ``memory`` (and their horizon's ``future``)."""
        parts = {"past": memory.covariates, "future": future, "static_num": memory.static_num,
                 "static_cat": memory.static_cat}
        return {name: np.ascontiguousarray(parts[name], dtype=np.int64 if name == "static_cat" else np.float32)
                for name in self.inputs}
