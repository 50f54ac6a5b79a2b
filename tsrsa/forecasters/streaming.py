"""Deprecated: the streaming state lives in :mod:`tsrsa.estimator.stream_state`.

The names this module held resolve to their new spelling with a ``DeprecationWarning`` that names it;
the functions that took an estimator first are methods of
:class:`~tsrsa.estimator.stream_state.StreamState` now.
"""
from __future__ import annotations

import warnings

#: old name -> (module, new name)
RENAMED = {"StreamMemory": "StreamState", "StreamGroup": "StreamGroup", "CHUNK_TOKENS": "CHUNK_TOKENS"}
#: old function -> the method that does its work now
METHODS = {"streamed_memory": "StreamState.from_fit / StreamState.for_frame",
           "continued_streams": "StreamState.advance", "forecast_at_cutoffs": "StreamState.forecast_at",
           "stored_forecast": "StreamState.forecast", "forecast_with_future": "StreamState.forecast",
           "save_streams": "StreamState.to_files", "load_streams": "StreamState.from_files",
           "kept_history": "StreamState.kept_history",
           "token_training_windows": "StreamState.training_windows",
           "consecutive_token_windows": "StreamState.training_windows"}


def __getattr__(name: str):
    if name in RENAMED:
        from tsrsa.estimator import stream_state

        new = RENAMED[name]
        warnings.warn(f"tsrsa.forecasters.streaming.{name} is deprecated; use tsrsa.forecasters.stream_state.{new}'s "
                      f"new home, tsrsa.estimator.stream_state.{new}", DeprecationWarning, stacklevel=2)
        return getattr(stream_state, new)
    if name in METHODS:
        raise AttributeError(f"tsrsa.forecasters.streaming.{name} is gone: its work is "
                             f"tsrsa.estimator.stream_state.{METHODS[name]} (a method given the model)")
    raise AttributeError(f"module 'tsrsa.forecasters.streaming' has no attribute {name!r}")
