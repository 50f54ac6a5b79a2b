"""AutoForecaster's fit time against each of its candidates' fit alone: the ``--cost`` runs of
``auto_m3_study.py`` and ``auto_m4_study.py``.

Every fit is a public call at the arguments given (``candidate.clone().fit(frame)``, then
``auto.clone().fit(frame)``), one after another in one process, so that each candidate and AutoForecaster
are timed under the same conditions; AutoForecaster's cost is its fit seconds over those of its most
expensive candidate.
"""
from __future__ import annotations

import datetime as dt
import time

COLUMNS = ("date", "tsrsa_version", "seed", "subset", "n_series", "model", "params", "fit_seconds")


def time_fits(auto, frame, output, *, seed: int, subset: str, described: str) -> None:
    """Fit each of ``auto``'s candidates alone, then ``auto`` itself, on ``frame``; one row per fit appended to
    ``output`` (``COLUMNS``; ``described``: the Auto row's ``params``) and printed as it finishes."""
    import tsrsa
    from tsrsa.benchmarking.results import append_rows

    n_series = int(frame["unique_id"].nunique())
    fits = [(name, model, "") for name, model in auto.candidate_models()] + [("Auto", auto, described)]
    for name, model, params in fits:
        began = time.perf_counter()
        model.clone().fit(frame)
        row = {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               "tsrsa_version": tsrsa.__version__, "seed": seed, "subset": subset, "n_series": n_series,
               "model": name, "params": params, "fit_seconds": round(time.perf_counter() - began, 3)}
        append_rows(output, [row], COLUMNS)
        print(row, flush=True)
