"""Associative recall: how many key→value pairs one layer of a kind stores, and whether it overwrites.

    python benchmarks/bench_recall.py [--tasks capacity,reassign] [--steps 1500] [--seeds 0]
    python benchmarks/bench_recall.py --speed     # the delta rule's chunked form against a token loop

The synthetic settings of Schlag, Irie and Schmidhuber (2021), small enough for one CPU thread.
A sequence writes key→value pairs (keys: S symbols, values: 16 symbols, both drawn at random per
sequence), then every key is queried. The network is one layer of the kind, nothing else: each
write token is [key embedding (8) ; value embedding (8)] (width 16, one head, so d = 16 and d_φ
is 16 for "elu", 32ν for "dpfp"), the layer streams over the writes (``stream``), then each
query [key embedding ; a learned "no value" embedding] is streamed from a copy of that state (the
queries do not see each other), and a linear readout gives the value's logits. Adam, batch 32,
cosine learning rate from 3e-3, cross-entropy; scored on 8 fresh batches.

- capacity: every one of the S keys written once, S = d_φ/4 .. 4·d_φ. No write rule keeps more
  than d_φ independent pairs in a d_v × d_φ matrix: the loss should rise once S passes d_φ, and
  DPFP's larger d_φ should move that point.
- reassign: S <= d_φ keys, each written once and then 2S more writes of random keys with new
  values (3S writes); each key is queried for its latest value. The delta rule can replace a
  value; the sum rule adds, so its read is a mixture of a key's old and new values.

Rows go to ``benchmarks/results/recall.csv``, the plot to ``benchmarks/results/recall.png`` and
the tables to the RESULTS.md section "recall".
"""
from __future__ import annotations

import argparse
import csv
import datetime
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn

HERE = Path(__file__).resolve().parent
CSV = HERE / "results" / "recall.csv"
PLOT = HERE / "results" / "recall.png"
WIDTH, N_VALUES, BATCH = 16, 16, 32
TRAIN_QUERIES = 32  # keys queried per training sequence (every key when scoring)
RATIOS = (0.25, 0.5, 1.0, 2.0, 4.0)  # capacity: S / d_φ
REASSIGN_RATIOS = (0.25, 0.5, 1.0)  # reassign: S / d_φ
#: name -> (kind, options)
MODELS = {
    "linear": ("linear", {}),
    "fast_weight sum elu": ("fast_weight", {"update": "sum", "feature_map": "elu"}),
    "fast_weight sum dpfp ν=1": ("fast_weight", {"update": "sum", "feature_map": "dpfp", "nu": 1}),
    "fast_weight sum dpfp ν=2": ("fast_weight", {"update": "sum", "feature_map": "dpfp", "nu": 2}),
    "fast_weight sum dpfp ν=3": ("fast_weight", {"update": "sum", "feature_map": "dpfp", "nu": 3}),
    "fast_weight delta elu": ("fast_weight", {"update": "delta", "feature_map": "elu"}),
    "fast_weight delta dpfp ν=1": ("fast_weight", {"update": "delta", "feature_map": "dpfp", "nu": 1}),
}
REASSIGN_MODELS = ("linear", "fast_weight sum elu", "fast_weight sum dpfp ν=1", "fast_weight delta elu",
                   "fast_weight delta dpfp ν=1")
COLUMNS = ("date", "task", "model", "kind", "options", "d_phi", "keys", "writes", "loss", "accuracy", "steps",
           "seed", "train_s", "machine")


def feature_count(kind: str, options: dict) -> int:
    """d_φ of one head of width WIDTH."""
    if kind == "linear" or options.get("feature_map") == "elu":
        return WIDTH
    return 2 * WIDTH * options.get("nu", 1)


class RecallNetwork(nn.Module):
    """Embeddings, one layer of the kind (one head), a linear readout (see the module docstring)."""

    def __init__(self, kind: str, options: dict, n_keys: int):
        super().__init__()
        from tsrsa.nn import build_attention

        self.key = nn.Embedding(n_keys, WIDTH // 2)
        self.value = nn.Embedding(N_VALUES + 1, WIDTH // 2)  # the last one: "no value" (a query)
        self.layer = build_attention(kind, WIDTH, 1, causal=True, **options)
        self.readout = nn.Linear(WIDTH, N_VALUES)

    def forward(self, keys, values, queries):
        """keys, values (B, L) written in order; queries (B, Q) -> logits (B, Q, N_VALUES)."""
        B, Q = queries.shape
        writes = torch.cat([self.key(keys), self.value(values)], dim=-1)  # (B, L, WIDTH)
        _, state = self.layer.stream(writes, self.layer.init_state(B))
        state = state.map(lambda s: s.repeat_interleave(Q, dim=0))  # (B * Q, ...)
        blank = torch.full_like(queries, N_VALUES)
        asks = torch.cat([self.key(queries), self.value(blank)], dim=-1).reshape(B * Q, 1, WIDTH)
        y, _ = self.layer.stream(asks, state)  # (B * Q, 1, WIDTH)
        return self.readout(y).view(B, Q, N_VALUES)


def batch(task: str, n_keys: int, generator: torch.Generator, n_queries: int | None = None):
    """keys, values (B, L) written in order, queries (B, Q) and their targets (B, Q): each key's latest
    value. Q = S (every key) unless ``n_queries`` asks for fewer (a random subset of the keys)."""
    keys = torch.argsort(torch.rand(BATCH, n_keys, generator=generator), dim=1)  # every key once
    if task == "reassign":
        again = torch.randint(n_keys, (BATCH, 2 * n_keys), generator=generator)
        keys = torch.cat([keys, again], dim=1)  # (B, 3S)
    values = torch.randint(N_VALUES, keys.shape, generator=generator)
    latest = torch.zeros(BATCH, n_keys, dtype=torch.long)
    rows = torch.arange(BATCH)
    for t in range(keys.size(1)):  # in order, so that a later write replaces an earlier one
        latest[rows, keys[:, t]] = values[:, t]
    queries = torch.argsort(torch.rand(BATCH, n_keys, generator=generator), dim=1)[:, :n_queries]
    return keys, values, queries, latest.gather(1, queries)


def train(task: str, kind: str, options: dict, n_keys: int, steps: int, seed: int) -> dict:
    torch.manual_seed(seed)
    net = RecallNetwork(kind, options, n_keys)
    optimiser = torch.optim.Adam(net.parameters(), lr=3e-3)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, T_max=steps)
    generator = torch.Generator().manual_seed(seed)
    loss_fn = nn.CrossEntropyLoss()
    began = time.perf_counter()
    for _ in range(steps):
        keys, values, queries, targets = batch(task, n_keys, generator, TRAIN_QUERIES)
        loss = loss_fn(net(keys, values, queries).reshape(-1, N_VALUES), targets.reshape(-1))
        optimiser.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        optimiser.step()
        schedule.step()
    train_s = time.perf_counter() - began
    scoring = torch.Generator().manual_seed(10_000 + seed)
    losses, hits = [], []
    with torch.no_grad():
        for _ in range(8):
            keys, values, queries, targets = batch(task, n_keys, scoring)
            logits = net(keys, values, queries)
            losses.append(float(loss_fn(logits.reshape(-1, N_VALUES), targets.reshape(-1))))
            hits.append(float((logits.argmax(-1) == targets).float().mean()))
    return {"loss": round(float(np.mean(losses)), 4), "accuracy": round(float(np.mean(hits)), 4),
            "train_s": round(train_s, 1)}


def plan(tasks, names=None):
    """(task, model name, S) of every run."""
    runs = []
    for task in tasks:
        ratios, models = (RATIOS, MODELS) if task == "capacity" else (REASSIGN_RATIOS, REASSIGN_MODELS)
        for name in models:
            if names and name not in names:
                continue
            d_phi = feature_count(*MODELS[name])
            runs.extend((task, name, max(2, round(r * d_phi))) for r in ratios)
    return runs


def append_row(path: Path, row: dict) -> None:
    """One row of COLUMNS at the end of the CSV (its header written first when the file is new)."""
    new = not path.exists() or path.stat().st_size == 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        if new:
            writer.writerow(COLUMNS)
        writer.writerow([row[c] for c in COLUMNS])


# ---------------------------------------------------------------------- tables and plot
def cell(row) -> str:
    return f"{row.loss:.2f} ({100 * row.accuracy:.0f}%)"


def tables(df: pd.DataFrame) -> str:
    df = df.drop_duplicates(["task", "model", "keys", "seed"], keep="last")
    df = df.groupby(["task", "model", "d_phi", "keys", "writes"], as_index=False, sort=False)[
        ["loss", "accuracy", "steps"]].mean()
    chance = math.log(N_VALUES)
    parts = []
    capacity = df[df.task == "capacity"]
    if len(capacity):
        head = "| model | d_φ | " + " | ".join(f"S = {r:g}·d_φ" for r in RATIOS) + " | most keys, ≥ 90% retrieved |"
        lines = [head, "|---|---|" + "---|" * (len(RATIOS) + 1)]
        for name in [m for m in MODELS if m in set(capacity.model)]:
            rows = capacity[capacity.model == name].set_index("keys")
            d_phi = int(rows.d_phi.iloc[0])
            cells = []
            for r in RATIOS:
                S = max(2, round(r * d_phi))
                cells.append(f"{cell(rows.loc[S])}, S={S}" if S in rows.index else "")
            kept = rows.index[rows.accuracy >= 0.9]
            cells.append(f"{int(kept.max())}" if len(kept) else "none")
            lines.append(f"| {name} | {d_phi} | " + " | ".join(cells) + " |")
        parts.append("**Capacity**: S keys each written once, then every key queried. Cells: test loss in nats "
                     f"(chance: ln {N_VALUES} = {chance:.2f}) and the share of values retrieved.\n\n"
                     + "\n".join(lines) + "\n\n![capacity](results/recall.png)")
    reassign = df[df.task == "reassign"]
    if len(reassign):
        head = "| model | d_φ | " + " | ".join(f"S = {r:g}·d_φ" for r in REASSIGN_RATIOS) + " |"
        lines = [head, "|---|---|" + "---|" * len(REASSIGN_RATIOS)]
        for name in [m for m in MODELS if m in set(reassign.model)]:
            rows = reassign[reassign.model == name].set_index("keys")
            d_phi = int(rows.d_phi.iloc[0])
            cells = [f"{cell(rows.loc[S])}, S={S}" if (S := max(2, round(r * d_phi))) in rows.index else ""
                     for r in REASSIGN_RATIOS]
            lines.append(f"| {name} | {d_phi} | " + " | ".join(cells) + " |")
        delta = reassign[reassign.model.str.contains("delta")]["loss"]
        summed = reassign[~reassign.model.str.contains("delta")]["loss"]
        parts.append("**Re-assignment**: S keys written once, then 2S writes of random keys with new values; every "
                     "key queried for its latest value. Cells as above.\n\n" + "\n".join(lines)
                     + f"\n\nLoss over these cells: delta rule {delta.min():.2f} to {delta.max():.2f} nats, sum rule "
                     f"and linear attention {summed.min():.2f} to {summed.max():.2f}.")
    return "\n\n".join(parts)


def plot(df: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    capacity = df[df.task == "capacity"].groupby(["model", "d_phi", "keys"], as_index=False)["loss"].mean()
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for i, name in enumerate(m for m in MODELS if m in set(capacity.model)):
        rows = capacity[capacity.model == name].sort_values("keys")
        line, = ax.plot(rows["keys"], rows["loss"], marker="o", label=f"{name} (d_φ={int(rows.d_phi.iloc[0])})",
                        linestyle="--" if "delta" in name else "-")
        ax.axvline(int(rows.d_phi.iloc[0]), color=line.get_color(), alpha=0.25, linewidth=3)
    ax.axhline(math.log(N_VALUES), color="grey", linewidth=0.8, linestyle=":")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("keys stored, S (shaded: d_φ of the model)")
    ax.set_ylabel("test loss (nats)")
    ax.set_title("Associative recall: one layer, every key written once")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------------- the chunked form's speed
def speed(repeats: int = 5) -> str:
    """ms per forward + backward of the delta rule, chunked (several chunk sizes) and token by token."""
    from tsrsa.nn.fast_weight import delta_rule_chunked, delta_rule_loop
    from tsrsa.nn.feature_maps import dpfp, sum_normalise

    def timed(fn, *inputs) -> float:
        times = []
        for _ in range(repeats):
            leaves = [t.detach().requires_grad_() for t in inputs]
            began = time.perf_counter()
            fn(*leaves)[0].sum().backward()
            times.append(time.perf_counter() - began)
        return 1e3 * float(np.median(times))

    lines = ["| tokens | token loop ms | chunk 16 ms | chunk 32 ms | chunk 64 ms | loop / chunk 32 |",
             "|---|---|---|---|---|---|"]
    for T in (24, 96, 384):
        torch.manual_seed(0)
        q, k = (sum_normalise(dpfp(torch.randn(32, 4, T, 16), 1)) for _ in range(2))  # d_φ = 32
        v, beta = torch.randn(32, 4, T, 16), torch.rand(32, 4, T)
        loop = timed(delta_rule_loop, q, k, v, beta)
        chunked = {C: timed(lambda *a, C=C: delta_rule_chunked(*a, chunk_size=C), q, k, v, beta) for C in (16, 32, 64)}
        lines.append(f"| {T} | {loop:.1f} | {chunked[16]:.1f} | {chunked[32]:.1f} | {chunked[64]:.1f} | "
                     f"{loop / chunked[32]:.1f}x |")
    return ("Delta rule, forward + backward, batch 32, 4 heads of 16 channels, DPFP ν=1 (d_φ 32), one thread, "
            f"median of {repeats}:\n\n" + "\n".join(lines))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default="capacity,reassign")
    parser.add_argument("--models", default=None, help="comma-separated names of MODELS (default: all)")
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--speed", action="store_true", help="time the delta rule's forms and print the table")
    parser.add_argument("--tables-only", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.speed:
        print(speed())
        return 0
    from tsrsa.benchmarking.results import machine_description, replace_section

    if not args.tables_only:
        names = args.models.split(",") if args.models else None
        for seed in (int(s) for s in args.seeds.split(",")):
            for task, name, n_keys in plan(args.tasks.split(","), names):
                kind, options = MODELS[name]
                writes = n_keys if task == "capacity" else 3 * n_keys
                row = {"date": datetime.date.today().isoformat(), "task": task, "model": name, "kind": kind,
                       "options": json.dumps(options, sort_keys=True), "d_phi": feature_count(kind, options),
                       "keys": n_keys, "writes": writes, **train(task, kind, options, n_keys, args.steps, seed),
                       "steps": args.steps, "seed": seed, "machine": machine_description()}
                append_row(CSV, row)
                print({c: row[c] for c in ("task", "model", "keys", "loss", "accuracy", "train_s")}, flush=True)
    df = pd.read_csv(CSV)
    plot(df, PLOT)
    dates = ", ".join(sorted(df["date"].astype(str).unique()))
    body = (tables(df) + f"\n\nOne layer of the kind, width 16, one head; {int(df['steps'].max())} Adam steps of "
            f"batch 32 per cell, seeds {sorted(df['seed'].unique().tolist())}. Made by "
            f"`python benchmarks/bench_recall.py` on {dates} ({df['machine'].iloc[-1]}, one thread).")
    replace_section(HERE / "RESULTS.md", "recall", body,
                    title="Associative recall: capacity and re-assignment of linear attention and fast weights")
    return 0


if __name__ == "__main__":
    sys.exit(main())
