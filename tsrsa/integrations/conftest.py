"""pytest's collection of this folder's doctests (``--doctest-modules``): a module that imports an
optional dependency which is not installed is left out, so that the suite skips it instead of
failing to import it (the extras: ``pip install 'tsrsa[ptf]'``, ``'tsrsa[sktime]'``)."""
from __future__ import annotations

import importlib.util

#: module of this folder -> the optional package it imports when loaded
OPTIONAL = {"pytorch_forecasting.py": "pytorch_forecasting", "sktime.py": "sktime"}

collect_ignore = [module for module, package in OPTIONAL.items() if importlib.util.find_spec(package) is None]
