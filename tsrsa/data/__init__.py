"""Data layer: frame validation, long/wide/Series input, per-series arrays, windows, scalers.

Knows pandas and numpy; knows nothing of models.
"""
from tsrsa.data.calendar import CALENDAR_FEATURES, calendar_features
from tsrsa.data.fill import FILL_METHODS, fill_missing
from tsrsa.data.frames import FrameSpec, forecast_frame, to_rows
from tsrsa.data.frequency import Frequency, parse_freq
from tsrsa.data.panel import Panel
from tsrsa.data.scalers import SCALERS, scale_values, series_statistics
from tsrsa.data.shards import ParquetShards, write_shards
from tsrsa.data.validation import build_panel, check_min_length
from tsrsa.data.windows import SlidingWindows, training_windows, validation_windows

__all__ = [
    "CALENDAR_FEATURES", "FILL_METHODS", "SCALERS", "FrameSpec", "Frequency", "Panel", "ParquetShards",
    "SlidingWindows", "build_panel", "calendar_features", "check_min_length", "fill_missing", "forecast_frame",
    "parse_freq", "scale_values", "series_statistics", "to_rows", "training_windows", "validation_windows",
    "write_shards",
]
