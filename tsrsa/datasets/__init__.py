"""Real data sets as long frames (columns ``unique_id``, ``ds``, ``y``).

Two kinds of data sets are known here (see :data:`REGISTRY` and ``datasets/README.md``):

- small series that ship with statsmodels (``co2``, ``sunspots``, ``elnino``, ``nile``); they
  always load, without files or network;
- the long-horizon benchmark files of Informer / Autoformer (``ETTh1``, ``ETTh2``, ``ETTm1``,
  ``ETTm2``, ``weather``, ``exchange_rate``, ``national_illness``), one series per channel.
  They are read from a local folder (``data_dir``, then ``$TSRSA_DATA_DIR``, then a cache folder)
  and, for the ETT files only, downloaded into the cache when no folder has them.

Frames are returned raw: missing values stay NaN, sentinel values (weather's -9999) and duplicate
timestamps (one in weather) are kept, nothing is filled, sorted or resampled. Rows come grouped by
series, series in the file's column order, and each series' rows in file order.

Only the standard library, numpy and pandas are imported here; statsmodels is imported on the
first call that needs it.
"""
from tsrsa.datasets.loading import ENV_VAR, benchmark_file, cache_dir, load
from tsrsa.datasets.registry import REGISTRY, DatasetInfo, Split, available, info

__all__ = [
    "ENV_VAR", "REGISTRY", "DatasetInfo", "Split", "available", "benchmark_file", "cache_dir", "info", "load",
]
