"""What is wrong with a y or X that sktime refuses, said plainly, for :mod:`tsrsa.integrations.sktime`.

sktime checks y and X before a forecaster sees them. A frame it cannot read -- a time index out of
order, a timestamp that comes twice (which also leaves the index out of order), a type it does not
know -- ends in one ``TypeError`` that begins "Unsupported input data type" and lists, for each of
the formats it tried, why that format did not fit, the index printed whole. :func:`named_faults`
turns that error into one that names the fault and its fix: the duplicated time (with its series),
or the first time out of order, found here; else the reason sktime gives for the format the object
has (a ``pd.Series`` is read as sktime's "pd.Series", a frame with a 2-level row index as
"pd-multiindex", ...), shortened. The error stays a ``TypeError``, as sktime raises it.

Other refusals of sktime are left as they are: they name their fault already (NaN in y without a
``fill=``: "cannot handle missing data (nans)"; categorical values in y).
"""
from __future__ import annotations

import contextlib

import pandas as pd

#: the start of sktime's message for a y or X it cannot read
UNSUPPORTED = "Unsupported input data type"
#: the longest reason of sktime's quoted (its reasons print whole indexes)
REASON_CHARS = 240


@contextlib.contextmanager
def named_faults(**inputs):
    """Run a call of sktime's with ``inputs`` (``y=...``, ``X=...``): sktime's "Unsupported input data type"
    error for one of them becomes a ``TypeError`` naming the fault (module docstring)."""
    try:
        yield
    except TypeError as err:
        text = str(err)
        if UNSUPPORTED not in text:
            raise
        for name, obj in inputs.items():
            if obj is not None and f"input {name} " in text:
                raise TypeError(input_fault(name, obj, text)) from None
        raise


def input_fault(name: str, obj, message: str = "") -> str:
    """Why sktime cannot read ``obj`` (its argument ``name``), and the fix."""
    index = getattr(obj, "index", None)
    if isinstance(obj, (pd.Series, pd.DataFrame)) and isinstance(index, pd.Index) and len(index):
        twice = index.duplicated()
        if twice.any():
            where = index[twice][0]
            what = _row(where, index)
            return (f"{name} has {what} twice: sktime (and tsrsa) take one row per time of each series; keep one, "
                    f"e.g. {name} = {name}[~{name}.index.duplicated()], or average them with "
                    f"{name}.groupby(level={_levels(index)}).mean()")
        unsorted = _first_unsorted(index)
        if unsorted is not None:
            return (f"{name}'s time index is not in increasing order ({_row(index[unsorted], index)} comes after "
                    f"{_row(index[unsorted - 1], index)}): sktime reads each series in time order; sort it with "
                    f"{name} = {name}.sort_index()")
    reason = _reason(name, obj)
    if reason is None:
        return message
    return (f"{name} is not of a data type sktime reads ({reason}); pass a pd.Series or pd.DataFrame indexed by time "
            f"(DatetimeIndex, PeriodIndex or integers), or a DataFrame whose row MultiIndex ends in the time")


def _row(key, index: pd.Index) -> str:
    if isinstance(index, pd.MultiIndex):
        *instance, time = key
        return f"the time {time} in series {'/'.join(str(part) for part in instance)}"
    return f"the time {key}"


def _levels(index: pd.Index) -> str:
    if isinstance(index, pd.MultiIndex):
        return repr(list(range(index.nlevels)))
    return "0"


def _first_unsorted(index: pd.Index) -> int | None:
    """The position of the first row whose time is not after the one before it in the same series."""
    frame = index.to_frame(index=False)
    times = frame.iloc[:, -1]
    if isinstance(index, pd.MultiIndex):
        same = (frame.iloc[1:, :-1].to_numpy() == frame.iloc[:-1, :-1].to_numpy()).all(axis=1)
    else:
        same = [True] * (len(frame) - 1)
    try:
        behind = (times.iloc[1:].to_numpy() <= times.iloc[:-1].to_numpy()) & same
    except TypeError:  # times that do not compare (mixed types): sktime's own reason says more
        return None
    hits = behind.nonzero()[0]
    return int(hits[0]) + 1 if hits.size else None


def _reason(name: str, obj) -> str | None:
    """sktime's reason for the format ``obj`` has, shortened; None when it has none of them."""
    from sktime.datatypes import check_is_mtype

    if isinstance(obj, pd.Series):
        mtype = "pd.Series"
    elif isinstance(obj, pd.DataFrame):
        levels = obj.index.nlevels
        mtype = "pd.DataFrame" if levels == 1 else ("pd-multiindex" if levels == 2 else "pd_multiindex_hier")
    else:
        return f"it is a {type(obj).__name__}"
    valid, reasons, _ = check_is_mtype(obj, [mtype], return_metadata=[], msg_return_dict="dict")
    if valid:
        return None
    reason = " ".join(str(reasons.get(mtype, reasons) if isinstance(reasons, dict) else reasons).split())
    return reason if len(reason) <= REASON_CHARS else reason[:REASON_CHARS] + "..."
