"""Streaming: the cost of one update and the memory held, against the length of the history.

    python benchmarks/bench_streaming.py [--histories 1000,10000,100000] [--kinds softmax,rsa] [--cache 24:tova]

For each attention kind that streams, a TransformerForecaster in the streaming configuration
(the library's default width: d_model 64, 4 heads, 2 layers, patches of 4 steps, h 24, input 96;
one training epoch on 400 steps of a noisy sine, since the weights do not change the cost) takes
in a history of N steps with one ``update``, then:

- update ms: the mean of 32 ``update(df)`` calls of one new observation each (frame validation
  included), every fourth one completing a token (so the mean is the cost per step, amortised);
- step ms: the same for 32 calls of the network's ``stream`` on one step (the recurrent work alone);
- state MB: what the series' state holds, and the part of it that is a softmax key/value cache;
- recompute s: ``predict(df=history)``, which streams the whole history again from its first step.

One CPU thread. Rows go to ``benchmarks/results/streaming_speed.csv`` and the RESULTS.md section
"streaming-speed". A recurrent state without a softmax cache (the REM heads) holds the same
numbers at every N; a softmax cache grows by one key and one value per token and layer, so the
update cost of a kind with a softmax branch grows with N (bounded caches are the fix).
"""
from __future__ import annotations

import argparse
import csv
import datetime
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

HERE = Path(__file__).resolve().parent
CSV = HERE / "results" / "streaming_speed.csv"
COLUMNS = ("date", "kind", "history_steps", "update_ms", "step_ms", "state_mb", "cache_mb", "recompute_s", "machine")


def series(start: int, n: int) -> pd.DataFrame:
    t = np.arange(start, start + n)
    y = np.sin(2 * np.pi * t / 24) + 0.1 * np.random.default_rng(start).standard_normal(n)
    return pd.DataFrame({"unique_id": "s", "ds": t, "y": y})


def nbytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def cache_bytes(layer) -> int:
    """Bytes of the softmax key/value cache in a layer's state (RSA: its softmax branch's), with a bounded
    cache's positions and scores."""
    from tsrsa.nn import BoundedCacheState, KeyValueState, RSAState

    cache = layer.branch if isinstance(layer, RSAState) else layer
    if not isinstance(cache, KeyValueState):
        return 0
    return nbytes([cache.k, cache.v] + ([cache.pos, cache.score] if isinstance(cache, BoundedCacheState) else []))


def measure(kind: str, history: int, cache: tuple[int, str] | None = None) -> dict:
    from tsrsa import TransformerForecaster

    options = {"cache_size": cache[0], "cache_policy": cache[1]} if cache else None
    model = TransformerForecaster(h=24, input_size=96, patch_len=4, attention=kind, attention_options=options,
                                  stream=True, max_epochs=1, trainer={"num_threads": 1}, random_state=0).fit(series(0, 400))
    model.update(series(400, history - 400))
    states = [g.state for g in model.memory_.groups]
    state_mb = sum(nbytes(s.tensors().values()) for s in states) / 2**20  # complex: 8 bytes per number
    cache_mb = sum(cache_bytes(layer) for s in states for layer in s.blocks) / 2**20
    update_ms = []
    for i in range(32):
        row = series(history + i, 1)
        began = time.perf_counter()
        model.update(row)
        update_ms.append(1e3 * (time.perf_counter() - began))
    network, net_state = model.network_, model.memory_.groups[0].state
    step_ms = []
    with torch.no_grad():
        for _ in range(32):
            began = time.perf_counter()
            _, net_state = network.stream(torch.zeros(1, 1), net_state)
            step_ms.append(1e3 * (time.perf_counter() - began))
    whole = series(0, history + 32)
    began = time.perf_counter()
    model.predict(df=whole)
    recompute = time.perf_counter() - began
    label = f"{kind}, {cache[1]} cache of {cache[0]}" if cache else kind
    return {"kind": label, "history_steps": history, "update_ms": round(float(np.mean(update_ms)), 3),
            "step_ms": round(float(np.mean(step_ms)), 3), "state_mb": round(state_mb, 3),
            "cache_mb": round(cache_mb, 3), "recompute_s": round(recompute, 3)}


def table(path: Path) -> str:
    runs = pd.read_csv(path).drop_duplicates(["kind", "history_steps"], keep="last")
    lines = ["| kind | history (steps) | update() ms | network step ms | softmax cache MB "
             "| rest of the state KB | recompute the history, s |", "|---|---|---|---|---|---|---|"]
    for row in runs.sort_values(["kind", "history_steps"]).itertuples():
        rest = 1024 * (row.state_mb - row.cache_mb)
        lines.append(f"| {row.kind} | {row.history_steps:,} | {row.update_ms:.2f} | {row.step_ms:.2f} | "
                     f"{row.cache_mb:.2f} | {rest:.1f} | {row.recompute_s:.2f} |")
    return ("One series; TransformerForecaster(stream=True, attention=kind) at the default width (d_model 64, "
            "4 heads, 2 layers, patches of 4 steps). *update() ms*: mean of 32 calls taking in one new "
            "observation each (frame validation included; every fourth completes a token of 4 steps); *network step "
            "ms*: the same for the recurrent work alone; "
            "*softmax cache*: the keys and values the state keeps (one per kept token and layer; a bounded cache "
            "also keeps each token's position and score); *rest of the state*: "
            "the kind's recurrent state (RSA's REM recurrences, linear attention's sums, the fast weight matrices), "
            "the head's recent token vectors, the running statistics and the unfinished patch; *recompute*: "
            "`predict(df=history)`, streaming the whole history again.\n\n" + "\n".join(lines) + "\n\n"
            "Made by `python benchmarks/bench_streaming.py` (rows with a bounded cache: `--cache SIZE:POLICY`) "
            f"on {', '.join(sorted(runs['date'].unique()))} "
            f"({runs['machine'].iloc[0]}).")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--histories", default="1000,10000,100000")
    parser.add_argument("--kinds", default=None, help="default: every kind with a recurrent form")
    parser.add_argument("--cache", default=None, metavar="SIZE:POLICY",
                        help="bound the softmax caches (e.g. 24:tova); default kinds then: softmax,rsa")
    parser.add_argument("--tables-only", action="store_true")
    args = parser.parse_args(argv)
    cache = None
    if args.cache:
        size, _, policy = args.cache.partition(":")
        cache = (int(size), policy or "window")
    from tsrsa.benchmarking.results import machine_description, replace_section
    from tsrsa.nn import attention_kinds, get_attention

    if not args.tables_only:
        torch.set_num_threads(1)
        kinds = (args.kinds.split(",") if args.kinds else ["softmax", "rsa"] if cache
                 else [k for k in attention_kinds() if get_attention(k).recurrent])
        new = not CSV.exists()
        with open(CSV, "a", newline="") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            if new:
                writer.writerow(COLUMNS)
            for kind in kinds:
                for history in (int(x) for x in args.histories.split(",")):
                    row = {"date": datetime.date.today().isoformat(), **measure(kind, history, cache),
                           "machine": f"{machine_description()}, 1 thread"}
                    writer.writerow([row[c] for c in COLUMNS])
                    handle.flush()
                    print(row, flush=True)
    replace_section(HERE / "RESULTS.md", "streaming-speed", table(CSV),
                    title="Streaming: update cost and memory against the history's length")
    return 0


if __name__ == "__main__":
    sys.exit(main())
