"""Forecast plots: recent history, the forecast and its quantile bands, one panel per series."""
from __future__ import annotations

from tsrsa.metrics import quantile_columns


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
    Figure, FigureCanvasAgg = matplotlib_classes()
    spec = model.frame_spec
    memory = model.memory_ if panel is None else model.memory_.for_frame(model, panel)
    if ids is None:
        ids = list(forecast[spec.id_col].drop_duplicates()[:max_series])
    known = list(memory.ids)
    missing = [i for i in ids if i not in known]
    if missing:
        raise ValueError(f"ids {missing} are not among the forecast series")
    fig = Figure(figsize=(9, 2.6 * len(ids)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(ids), 1, squeeze=False)[:, 0]
    bands = sorted(quantile_columns(forecast).items(), key=lambda item: item[1])
    for ax, sid in zip(axes, ids):
        i = known.index(sid)
        if panel is not None:
            values = panel.series(i)[-history:]
            times = panel.timestamps(i)[-len(values):]
        else:
            values = memory.tails[i][-history:]
            times = model.freq_.range(_first_of_tail(model, memory, i, len(values)), len(values))
        ax.plot(times, values, color="0.25", lw=1.2, label="history")
        rows = forecast[forecast[spec.id_col] == sid]
        t = rows[spec.time_col].to_numpy()
        for k in range(len(bands) // 2):  # outermost band first, lighter
            (lo, q_lo), (hi, q_hi) = bands[k], bands[-1 - k]
            ax.fill_between(t, rows[lo], rows[hi], color="C0", alpha=0.15 + 0.1 * k,
                            label=f"{100 * (q_hi - q_lo):g}% interval")
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

