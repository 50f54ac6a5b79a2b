"""Hierarchies: coherent forecasts of series that add up (stores -> regions -> total).

- :func:`aggregate` (``aggregate.py``): bottom-level series -> every node's series, the summing
  matrix ``S_df`` and the levels ``tags`` (hierarchicalforecast's ``aggregate``).
- :func:`reconcile` (``reconcile.py``): a forecast frame of every node -> coherent forecasts, through
  hierarchicalforecast's reconcilers; the method names and what each needs are in ``methods.py``.

hierarchicalforecast is an optional dependency (``pip install tsrsa[hierarchy]``), imported on first use.
"""
from tsrsa.hierarchy.aggregate import aggregate
from tsrsa.hierarchy.reconcile import reconcile

__all__ = ["aggregate", "reconcile"]
