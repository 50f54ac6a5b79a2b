"""The short-series benchmark's RESULTS.md section and plot, from the rows of ``results/short_series.csv``.

``render`` writes the protocol (:data:`INTRO`), a table per series of test MSE against training
length, RSA's ratios to the others and the options set against the default; ``plot`` draws test
MSE against training length, one panel per series. Used by ``short_series.py``
(``--tables-only`` re-renders both from the CSV).
"""
from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

import tsrsa
from tsrsa.benchmarking.classic import CLASSIC
from tsrsa.benchmarking.defaults_screen import ADDED, SHORT_FITS, spelt_auto
from tsrsa.benchmarking.results import replace_section
from tsrsa.benchmarking.short_series import split_rule
from tsrsa.benchmarking.simulated import PROCESSES

#: the columns that name a run: a later row with the same values replaces an earlier one
KEY = ("dataset", "train_length", "model", "label", "seed")

#: the protocol as RESULTS.md states it
INTRO = """Test error against training length on short series with strong autoregressive or seasonal \
structure: three simulated processes with known roots, and the classic series of `shared/datasets/classic` \
(each at the lengths it reaches). A cell is (series, training length n, seed): n training steps, then the test \
part, of which every stride-1 window is scored (simulated: the 480 steps after the training part, the same for every \
length of a path; classic: the end of the series). Errors are taken on the series scaled by the mean and standard \
deviation of its n training steps (MSE 1 = forecasting the training mean).

Split rule per length: validation = the last v = max(⌈1.5h⌉, ⌊n/10⌋) training steps; input L = the largest \
multiple of g up to (n − v)/3, at least g and at most 96 (g = the season m when m ≤ 48, else 8); a season is \
used only when n ≥ 2m. Neural models (tsrsa's defaults; the protocol sets h, input_size, val_size, \
random_state = seed, num_threads=1; the default training budget scales with the data: 100 epochs with patience \
20 at 200 and 500 steps, fewer above; a row whose params column records 20 epochs with patience 5 in batches \
of 64 ran at that budget) train on the \
first n − v steps and keep the weights of their best validation epoch; seeds 0–2, on a simulated process each \
seed also its own path. Seasonal naive repeats the last season (the last value without one). ETS: additive-error \
state-space exponential smoothing (statsmodels), the form of lowest AIC among no / additive / damped trend × \
without / with the season (initial states concentrated out; above a season of 24, heuristic starts). ARIMA: d and \
D as auto.arima picks them (KPSS; STL seasonal strength > 0.64), then the lowest AIC over (p, q) ∈ {0,1,2}² × \
(P, Q) ∈ {(0,0), (1,0), (0,1)}; a season above 24 enters instead as K ∈ {2, 4, 6} Fourier pairs (K by the AIC \
of a least-squares harmonic fit) with ARMA errors. True model: the generating structure with its coefficients and \
a constant estimated by maximum likelihood, the floor no learner beats on average; true parameters: the generating \
model itself. The statistical models are fitted on all n training steps and filtered forward over the test part, \
parameters fixed (no refit)."""


# ---------------------------------------------------------------------- tables and plot
ORDER = ("RSAForecaster", "TransformerForecaster", "LSTMForecaster", "DLinearForecaster", "SeasonalNaiveForecaster",
         "ETS", "ARIMA", "true model", "true parameters")
COMMANDS = ("python benchmarks/short_series.py --datasets simulated",
            "python benchmarks/short_series.py --datasets classic")


def _ms(v: pd.Series) -> str:
    v = v.dropna()
    return "" if v.empty else f"{v.mean():.3f}" if len(v) == 1 else f"{v.mean():.3f} ± {v.std(ddof=1):.3f}"


def _ratio(a: pd.DataFrame, b: pd.DataFrame, paired: bool) -> tuple[float, str]:
    """Mean test MSE of ``a`` over that of ``b`` on their common seeds (all of ``a``'s against the single
    row of a deterministic model on a classic series), and the text "ratio (wins/seeds)"."""
    if a.empty or b.empty:
        return np.nan, ""
    pa, pb = a.set_index("seed")["test_mse"], b.set_index("seed")["test_mse"]
    if len(pb) == 1 and not paired:
        return pa.mean() / pb.iloc[0], f"{pa.mean() / pb.iloc[0]:.2f}"
    common = pa.index.intersection(pb.index)
    if not len(common):
        return np.nan, ""
    value = pa[common].mean() / pb[common].mean()
    wins = f" ({int((pa[common] <= pb[common]).sum())}/{len(common)})" if len(common) > 1 else ""
    return value, f"{value:.2f}{wins}"


def _latest(df: pd.DataFrame) -> pd.DataFrame:
    df = df.drop_duplicates(subset=list(KEY), keep="last").copy()
    df["rank"] = [ORDER.index(m) if m in ORDER else len(ORDER) for m in df["model"]]
    return df


def render(df: pd.DataFrame, plot_link: str = "results/short_series.png") -> str:
    """The RESULTS.md section: protocol, the error tables and RSA's ratios, per dataset."""
    if df.empty:
        return "_No short-series results yet._\n"
    today = todays(df)
    # earlier defaults too: an option is set against its own
    every_default = df[(df["label"] == "default") | today].assign(label="default")
    df = _latest(df.assign(label=today_labels(df, today)))
    dates = sorted(set(df["date"].astype(str).str[:10]))  # the options' runs too
    out = [INTRO, "", "| dataset | what | h | season | test windows | input / validation steps per length |",
           "|---|---|---|---|---|---|"]
    names = [d for d in [*PROCESSES, *CLASSIC] if d in set(df["dataset"])]
    for d in names:
        part = df[df["dataset"] == d]
        spec, h = PROCESSES.get(d) or CLASSIC[d], int(part["horizon"].iloc[0])
        season, text = spec.season, spec.text
        rules = "; ".join(f"{n}: {s.input_size} / {s.val_size}" for n in sorted(part["train_length"].unique())
                          for s in [split_rule(int(n), h, season)])
        windows = ", ".join(str(w) for w in sorted(part["test_windows"].unique()))
        out.append(f"| {d} | {text} | {h} | {season or '–'} | {windows} | {rules} |")
    out.append(f"\n![test MSE against training length]({plot_link})\n")
    summary = []
    tabled = (df["label"] == "default") | df["label"].str.startswith(EARLIER)  # shown beside today's, not compared
    options, df = df[~tabled], df[tabled]
    for d in names:
        part = df[df["dataset"] == d]
        lengths = sorted(part["train_length"].unique())
        out += [f"#### {d}\n", "| model | label | " + " | ".join(f"n={n}" for n in lengths)
                + " | best epoch | fit seconds |", "|---|---|" + "---|" * (len(lengths) + 2)]
        for (_, model, label), g in part.groupby(["rank", "model", "label"]):
            cells = [_ms(g[g["train_length"] == n]["test_mse"]) for n in lengths]
            epoch = pd.to_numeric(g["best_epoch"], errors="coerce").dropna()
            cells += [f"{epoch.mean():.1f}" if len(epoch) else "–", f"{g['train_seconds'].mean():.1f}"]
            out.append(f"| {model.removesuffix('Forecaster')} | {label} | " + " | ".join(cells) + " |")
        out += ["", "| n | RSA / Transformer | RSA / LSTM | RSA / DLinear | best anchor | RSA / anchor | "
                "RSA / true model | best |", "|---|---|---|---|---|---|---|---|"]
        for n in lengths:
            cell = part[(part["train_length"] == n) & (part["label"] == "default")]
            get = lambda m: cell[cell["model"] == m]  # noqa: E731
            rsa = get("RSAForecaster")
            anchors = {m: get(m)["test_mse"].mean() for m in ("ETS", "ARIMA") if len(get(m))}
            anchor = min(anchors, key=anchors.get) if anchors else None
            means = cell.groupby("model")["test_mse"].mean()
            sim = d in PROCESSES
            ratios = {m: _ratio(rsa, get(m), sim) for m in ("TransformerForecaster", "LSTMForecaster",
                                                             "DLinearForecaster", "true model", anchor)}
            out.append(f"| {n} | " + " | ".join(ratios[m][1] for m in ratios if m != "true model" and m != anchor)
                       + f" | {anchor or ''} | {ratios[anchor][1]} | {ratios['true model'][1]} | "
                       f"{means.idxmin().removesuffix('Forecaster') if len(means) else ''} |")
            summary.append((sim, *(ratios[m][0] for m in ("TransformerForecaster", "LSTMForecaster",
                                                          "DLinearForecaster", anchor))))
        out.append("")
    out.append(_summary(summary))
    out += _options(options, every_default)
    missing = [d for d in ("AirPassengers", "monthly_milk") if d not in names]
    out.append(f"\n{' and '.join(missing)} (144 and 168 steps) reach no length of the grid. " if missing else "\n")
    span = " to ".join(dict.fromkeys([dates[0], dates[-1]]))
    out[-1] += (f"Runs: {span}, on {'; '.join(sorted(df['machine'].unique()))}, one process, one thread. Commands: "
                + ", then ".join(f"`{c}`" for c in COMMANDS)
                + "; `--tables-only` re-renders this section and the plot from the CSV.")
    return "\n".join(out) + "\n"


def _summary(cells) -> str:
    """How often RSA (mean over seeds) is at or below the others, over the cells where both ran."""
    def count(rows, j, factor=1.0):
        ratios = [r[j] for r in rows if np.isfinite(r[j])]
        return f"{sum(r <= factor for r in ratios)}/{len(ratios)}"
    sim = [c for c in cells if c[0]]
    classic = [c for c in cells if not c[0]]
    return (f"Test MSE mean ± std over seeds (on a simulated process each seed is also a path); best epoch and "
            f"fit seconds: means over every length and seed (fit seconds: wall time on a shared machine).\n\n"
            f"RSA at or below its twin: {count(cells, 1)} cells; on the simulated processes below LSTM "
            f"{count(sim, 2)} and DLinear {count(sim, 3)}; on the classic series within 5 % of the best "
            f"anchor {count(classic, 4, 1.05)}. Ratios: mean test MSE over seeds; (k/s): seeds on which RSA is at "
            f"or below. Anchor: ETS or ARIMA, whichever has the lower test MSE.")


def auto_table(df: pd.DataFrame) -> str:
    """AutoForecaster at its defaults on the classic cells it ran: its test MSE beside RSA's (mean over seeds), the
    best single model's and the better of ETS and ARIMA, as a markdown table with the ratios."""
    rows = _latest(df[df["label"] == "default"])
    rows = rows[rows["dataset"].isin(list(CLASSIC))]
    mean = rows.groupby(["dataset", "train_length", "model"])["test_mse"].mean().unstack("model")
    if "AutoForecaster" not in mean:
        return ""
    mean = mean[mean["AutoForecaster"].notna()]
    singles = mean.drop(columns=["AutoForecaster"])
    anchors = mean[[c for c in ("ETS", "ARIMA") if c in mean]].min(axis=1, skipna=True)
    out = ["| series | n | AutoForecaster | RSA | best single (mean over seeds) | better of ETS, ARIMA | Auto / RSA | "
           "Auto / anchor |", "|---|---|---|---|---|---|---|---|"]
    for (dataset, n), row in mean.iterrows():
        best = singles.loc[(dataset, n)].idxmin()
        anchor = anchors.loc[(dataset, n)]
        out.append(f"| {dataset} | {n} | {row['AutoForecaster']:.4f} | {row['RSAForecaster']:.4f} | "
                   f"{best.removesuffix('Forecaster')} {singles.loc[(dataset, n), best]:.4f} | "
                   + (f"{anchor:.4f} | " if np.isfinite(anchor) else "| ")
                   + f"{row['AutoForecaster'] / row['RSAForecaster']:.2f} | "
                   + (f"{row['AutoForecaster'] / anchor:.2f} |" if np.isfinite(anchor) else "|"))
    return "\n".join(out)


def parse_label(label: str) -> dict:
    """The options a row's label names ("a=1,b=x" -> {"a": "1", "b": "x"}; "default" -> {})."""
    if label == "default":
        return {}
    return dict(part.split("=", 1) for part in label.split(",") if "=" in part)


#: what a run sets itself (the protocol's and the machine's arguments), never a model choice
RUN_KEYS = frozenset({"accelerator", "devices", "strategy", "precision", "h", "input_size", "val_size", "freq",
                      "num_threads", "verbose"})
#: the label of a neural row made at an earlier default, followed by what it ran at: shown in the
#: tables, left out of the ratios
EARLIER = "default (ran at"


def at_today(model: str, params) -> bool:
    """Whether a row of a tsrsa neural forecaster ran at today's constructor defaults, whatever its
    label says (a run with ``--params`` that set what became the default counts; a "default" row made
    at an earlier default does not)."""
    return _neural(model) and not set(_differing_params(params, set(), _constructor_defaults(model))) - RUN_KEYS


def todays(df: pd.DataFrame) -> np.ndarray:
    """Which rows ran at today's constructor defaults (:func:`at_today`)."""
    return np.array([at_today(m, p) for m, p in zip(df["model"], df["params"])], dtype=bool)


def today_labels(df: pd.DataFrame, today: np.ndarray) -> list[str]:
    """The rows' labels as the tables read them: "default" at today's defaults; for a neural row
    labelled "default" at another, "default (ran at ...)" naming the model choices in which it
    differs from today's defaults; the label otherwise."""
    return ["default" if now else earlier(model, params) if label == "default" and _neural(model) else label
            for now, model, label, params in zip(today, df["model"], df["label"], df["params"])]


def earlier(model: str, params) -> str:
    """The label of a row at an earlier default: the options in which it differs from today's."""
    ran = _differing_params(params, set(), _constructor_defaults(model))
    return f"{EARLIER} " + ",".join(f"{k}={ran[k]}" for k in sorted(set(ran) - RUN_KEYS)) + ")"


def _neural(model: str) -> bool:
    """Whether ``model`` names a tsrsa forecaster that trains (a network)."""
    return bool(getattr(getattr(tsrsa, model, None), "stochastic", False))


@functools.cache
def _constructor_defaults(model: str) -> dict:
    """The constructor's defaults of the tsrsa estimator named ``model`` ({} for another name)."""
    from tsrsa.estimator.trainer import flat_defaults

    cls = getattr(tsrsa, model, None)
    return {} if cls is None else flat_defaults(cls)  # every option by its own name, as the rows record them


def _differing_params(params: str, option_keys, defaults: dict | None = None) -> dict:
    """A row's parameters without the option's own keys, the seed, and those at today's constructor
    default (``defaults``) or at None where today's default is None too: a parameter added to the
    estimators later is missing from older rows, which ran as its default does, or as
    ``tsrsa.benchmarking.defaults_screen.ADDED`` says; a value that "auto" gives in these fits (``SHORT_FITS``)
    is "auto"; a None that was the default then and is not now
    (``readout_tokens``) stays, so that such a row is set against the defaults of its own day."""
    values = json.loads(params) if isinstance(params, str) and params else {}
    defaults = defaults or {}
    values = {**{k: v for k, v in ADDED.items() if k in defaults}, **values}
    if values.get("max_epochs") == "auto":  # every cell is one series at the automatic budget: SHORT_FITS
        values = spelt_auto(values, defaults, SHORT_FITS)
    return {k: v for k, v in values.items()
            if k not in option_keys and k != "random_state"
            and not (v is None and defaults.get(k) is None)
            and not (k in defaults and defaults[k] == v)}


def _base_params(params: str, option_keys, defaults: dict | None = None) -> str:
    """:func:`_differing_params` as sorted JSON: the key an option's rows and its default's rows share."""
    return json.dumps(_differing_params(params, option_keys, defaults), sort_keys=True)


def _options(options: pd.DataFrame, default: pd.DataFrame) -> list[str]:
    """Each option run against the same model's default on the cells (dataset, length, seed) where both
    ran, the default being the one whose other parameters the option's run shares (defaults change:
    an option run at an earlier default is set against that default): geometric means of the MSE
    ratios, validation first (it decides), test after."""
    if options.empty:
        return []
    key = ["dataset", "train_length", "seed"]
    rows = []
    for (model, label), g in options.groupby(["model", "label"]):
        keys, defaults = set(parse_label(label)), _constructor_defaults(model)
        base = default[default["model"] == model]
        base = base.assign(_base=[_base_params(p, keys, defaults) for p in base["params"]])
        g = g.assign(_base=[_base_params(p, keys, defaults) for p in g["params"]])
        base = base.drop_duplicates(subset=[*key, "_base"], keep="last").set_index([*key, "_base"])
        g = g.drop_duplicates(subset=[*key, "_base"], keep="last").set_index([*key, "_base"])
        common = g.index.intersection(base.index)
        if not len(common):
            continue
        val = np.log(g.loc[common, "val_mse"] / base.loc[common, "val_mse"])
        test = np.log(g.loc[common, "test_mse"] / base.loc[common, "test_mse"])
        where = ", ".join(f"{d} {'/'.join(str(n) for n in sorted(ns))}"
                          for d, ns in pd.Series(common.get_level_values(1), index=common.get_level_values(0))
                          .groupby(level=0).unique().items())
        budget = json.loads(base.loc[common[-1], "params"])
        at = ", ".join(f"{k} {budget.get(k)}" for k in ("batch_size", "max_epochs", "early_stopping_patience"))
        if budget.get("readout_tokens") is not None:
            at += f", readout_tokens {budget['readout_tokens']}"
        rows.append((np.exp(val.mean()), model.removesuffix("Forecaster"), label, len(common),
                     f"{(val < 0).mean():.0%}", np.exp(test.mean()), f"{(test < 0).mean():.0%}", where, at))
    lines = ["", "**Options against the default** (ablation): each option of a model run on some cells and set "
             "against the same model's default on the same (series, length, seed). Ratios are geometric means "
             "of option ÷ default; validation decides, the test is reported beside it.", "",
             "| model | option | the default it is set against | cells | validation MSE ÷ default "
             "| better on validation | test MSE ÷ default | better on test | series and lengths |",
             "|---|---|---|---|---|---|---|---|---|"]
    for v, model, label, n, vw, te, tw, where, at in sorted(rows, key=lambda r: (r[1], r[0])):
        lines.append(f"| {model} | `{label}` | {at} | {n} | {v:.3f} | {vw} | {te:.3f} | {tw} | {where} |")
    return lines


def plotted_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The rows the plot draws: each model's latest at today's defaults, whatever their label (as the tables
    read them)."""
    df = _latest(df.assign(label=today_labels(df, todays(df))))
    return df[df["label"] == "default"]


def plot(df: pd.DataFrame, path: Path) -> None:
    """Test MSE against training length, one panel per series (log-log), a colour per model
    (:func:`plotted_rows`)."""
    from matplotlib.figure import Figure

    df = plotted_rows(df)
    names = [d for d in [*PROCESSES, *CLASSIC] if d in set(df["dataset"])]
    cols = min(4, len(names))
    fig = Figure(figsize=(4 * cols, 3.2 * -(-len(names) // cols) + 0.6), layout="constrained")
    axes = fig.subplots(-(-len(names) // cols), cols, squeeze=False).ravel()
    for ax, d in zip(axes, names):
        for (rank, model), g in df[df["dataset"] == d].groupby(["rank", "model"]):
            stats = g.groupby("train_length")["test_mse"].agg(["mean", "std"]).fillna(0.0)
            ax.errorbar(stats.index, stats["mean"], yerr=stats["std"], fmt="-o" if model.endswith("Forecaster")
                        else "--s", ms=3, capsize=2, color=f"C{rank}", label=model.removesuffix("Forecaster"))
        lengths = sorted(df[df["dataset"] == d]["train_length"].unique())
        ax.set(xscale="log", yscale="log", title=d, xlabel="training steps", ylabel="test MSE (scaled)")
        ax.set_xticks(lengths, [str(n) for n in lengths], minor=False), ax.set_xticks([], minor=True)
    for ax in axes[len(names):]:
        ax.axis("off")
    handles = {h.get_label(): h for ax in axes for h in ax.get_legend_handles_labels()[0]}
    fig.legend(handles.values(), handles.keys(), loc="outside lower center", ncols=min(2 * cols + 1, len(handles)),
               fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def write_outputs(df: pd.DataFrame, results_md: Path, plot_path: Path) -> None:
    link = os.path.relpath(plot_path, results_md.parent)
    replace_section(results_md, "short-series", render(df, link), title="Short series: error against training length")
    if not df.empty:
        plot(df, plot_path)
