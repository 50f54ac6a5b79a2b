"""Where the benchmark data files are: the folder that holds ``m4/`` and ``classic/``.

The long-horizon files are found by :func:`tsrsa.datasets.load`; the M4 release and the classic
series are read from the sub-folders of one data folder, looked up here in the same order.
"""
from __future__ import annotations

import os
from pathlib import Path

from tsrsa.datasets import ENV_VAR, cache_dir


def data_folder(given=None, fallback=None) -> Path:
    """The data folder: ``given``, else ``$TSRSA_DATA_DIR``, else ``fallback``, else the cache.

    Parameters
    ----------
    given : str or os.PathLike, optional
        A folder named by the caller (a ``--data-dir`` flag); used as it is.
    fallback : str or os.PathLike, optional
        The folder to use when neither ``given`` nor the environment variable names one (the
        benchmark scripts pass ``shared/datasets`` beside the checkout).

    Returns
    -------
    pathlib.Path
        The folder; it is not checked to exist.
    """
    if given:
        return Path(given)
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR])
    return Path(fallback) if fallback else cache_dir()
