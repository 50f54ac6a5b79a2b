"""Forecast plots: recent history, the forecast and its bands, one panel per series.

The bands are whatever the forecast frame holds: pairs of quantile columns (``yhat_q10`` with
``yhat_q90``: an 80 % band) and interval columns (``yhat_lo_80`` with ``yhat_hi_80``), widest first.
"""
from __future__ import annotations

import re

from tsrsa.metrics import quantile_columns

_INTERVAL = re.compile(r"^yhat_(lo|hi)_(\d+(?:\.\d+)?)$")


def bands(forecast) -> list[tuple[str, str, float]]:
    """(lower column, upper column, coverage in percent) of every band ``forecast`` holds, widest first.

    Examples
    --------
    >>> import pandas as pd
    >>> bands(pd.DataFrame(columns=["yhat", "yhat_q10", "yhat_q90", "yhat_lo_95", "yhat_hi_95"]))
    [('yhat_lo_95', 'yhat_hi_95', 95.0), ('yhat_q10', 'yhat_q90', 80.0)]
    """
    found = []
    levels = sorted(quantile_columns(forecast).items(), key=lambda item: item[1])
    for k in range(len(levels) // 2):  # the outermost pair of levels first
        (lo, q_lo), (hi, q_hi) = levels[k], levels[-1 - k]
        if q_lo < 0.5 < q_hi:
            found.append((lo, hi, round(100 * (q_hi - q_lo), 10)))
    sides = {}
    for col in forecast.columns:
        match = _INTERVAL.match(str(col))
        if match:
            sides.setdefault(match.group(2), {})[match.group(1)] = col
    found += [(pair["lo"], pair["hi"], float(level)) for level, pair in sides.items() if len(pair) == 2]
    return sorted(found, key=lambda band: -band[2])


def matplotlib_classes():
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("plotting needs matplotlib: pip install 'tsrsa[plot]'") from err
    return Figure, FigureCanvasAgg


def plot_forecast(model, panel, forecast, *, ids=None, max_series: int = 4, history: int = 100):
    """A matplotlib Figure (not registered with pyplot, so no global state and no GUI).

    ``panel`` (optional) gives the history; without it the model's remembered tails are used.
    """
    spec = model.frame_spec
    memory = model.memory_ if panel is None else model.memory_.for_frame(model, panel)
    if ids is None:
        ids = list(forecast[spec.id_col].drop_duplicates()[:max_series])
    known = list(memory.ids)
    missing = [i for i in ids if i not in known]
    if missing:
        raise ValueError(f"ids {missing} are not among the forecast series")
    histories = {}
    for sid in ids:
        i = known.index(sid)
        if panel is not None:
            values = panel.series(i)[-history:]
            histories[sid] = (panel.timestamps(i)[-len(values):], values)
        else:
            histories[sid] = remembered(model, sid, history)
    return draw_forecasts(histories, forecast, spec)


def remembered(model, sid, n: int) -> tuple:
    """(times, values) of the last ``n`` values a fitted forecaster remembers of series ``sid``."""
    memory = model.memory_
    i = list(memory.ids).index(sid)
    values = memory.tails[i][-n:]
    return model.freq_.range(_first_of_tail(model, memory, i, len(values)), len(values)), values


def draw_forecasts(histories: dict, forecast, spec):
    """One panel per series of ``histories`` ({id: (times, values)}, in order): the history, then the forecast
    of ``forecast`` (columns ``spec``'s id and time, ``yhat`` and any bands) with its bands."""
    Figure, FigureCanvasAgg = matplotlib_classes()
    fig = Figure(figsize=(9, 2.6 * len(histories)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(histories), 1, squeeze=False)[:, 0]
    drawn = bands(forecast)
    for ax, (sid, (times, values)) in zip(axes, histories.items()):
        ax.plot(times, values, color="0.25", lw=1.2, label="history")
        rows = forecast[forecast[spec.id_col] == sid]
        t = rows[spec.time_col].to_numpy()
        for k, (lo, hi, coverage) in enumerate(drawn):  # widest first, lighter
            ax.fill_between(t, rows[lo], rows[hi], color="C0", alpha=0.15 + 0.1 * k,
                            label=f"{coverage:g}% interval")
        ax.plot(t, rows["yhat"], color="C0", lw=1.6, label="forecast")
        ax.set_title(str(sid), loc="left", fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].legend(loc="upper left", fontsize=8)
    return fig


def _first_of_tail(model, memory, i: int, n: int):
    """Timestamp of the first of the last ``n`` remembered values of series i."""
    last = memory.last[i]
    if not model.freq_.is_datetime:
        return last - (n - 1) * model.freq_.step
    return last - (n - 1) * model.freq_.offset if n > 1 else last

