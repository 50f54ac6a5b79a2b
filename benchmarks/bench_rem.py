"""Dense versus FFT computation of the REM branch P @ V, at growing token counts.

    python benchmarks/bench_rem.py [--threads 1] [--tokens 96 336 720 1440] [--repeats 5] [--from-csv]

Times one RSAAttention's REM branch (building P or its kernels, then applying them) forward and
forward+backward, batch 32, 4 REM heads (regular, cyclic pair, dilated regular) of width 16,
float32, on the CPU. Writes benchmarks/results/rem_speed.csv and the "REM speed" section of
benchmarks/RESULTS.md and prints its table (``--from-csv``: only the section, from the CSV); the
dense form stays the default below RSAAttention's FFT_FROM_TOKENS.
"""
from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import pandas as pd
import torch

from tsrsa.benchmarking.results import replace_section
from tsrsa.nn.rsa import FFT_FROM_TOKENS, RSAAttention

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "rem_speed.csv"
COMMAND = "python benchmarks/bench_rem.py --threads 1 --repeats 5 --tokens 24 96 192 336 720 1440 2880"


def _time(fn, repeats: int) -> float:
    fn()  # warm-up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def measure(tokens: int, method: str, repeats: int, batch: int = 32, width: int = 16) -> dict:
    attn = RSAAttention(4 * width, 4, n_regular=1, n_cyclic=1, n_dilated_regular=1, dilations=4, method=method)
    v = torch.randn(batch, 4, tokens, width, requires_grad=True)

    def forward():
        with torch.no_grad():
            attn.rem_branch(v)

    def forward_backward():
        attn.rem_branch(v).sum().backward()

    return {"tokens": tokens, "method": method, "forward_ms": 1e3 * _time(forward, repeats),
            "forward_backward_ms": 1e3 * _time(forward_backward, repeats)}


def main(argv=None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[24, 96, 192, 336, 720, 1440])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--from-csv", action="store_true", help="measure nothing: rewrite the section from the CSV")
    args = parser.parse_args(argv)
    if args.from_csv:
        table = pd.read_csv(RESULTS)
    else:
        torch.set_num_threads(args.threads)
        rows = [measure(T, method, args.repeats) for T in args.tokens for method in ("dense", "fft")]
        table = pd.DataFrame(rows)
        table["machine"] = (f"{platform.processor() or platform.machine()}, {args.threads} threads, "
                            f"torch {torch.__version__}")
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(RESULTS, index=False)
    wide = table.pivot(index="tokens", columns="method", values=["forward_ms", "forward_backward_ms"])
    summary = pd.DataFrame({
        "dense fwd ms": wide[("forward_ms", "dense")], "fft fwd ms": wide[("forward_ms", "fft")],
        "speed-up fwd": wide[("forward_ms", "dense")] / wide[("forward_ms", "fft")],
        "dense fwd+bwd ms": wide[("forward_backward_ms", "dense")],
        "fft fwd+bwd ms": wide[("forward_backward_ms", "fft")],
        "speed-up fwd+bwd": wide[("forward_backward_ms", "dense")] / wide[("forward_backward_ms", "fft")],
    })
    body = (
        f"One RSAAttention REM branch (regular, cyclic pair and dilated regular heads of width 16, batch "
        f"32, float32) on the CPU ({table['machine'].iloc[0]}); milliseconds, best of the repeats. The "
        f"dense form builds each (T, T) REM; the FFT form convolves the values with each head's lag "
        f"kernel in O(T log T). RSAAttention switches to the FFT above {FFT_FROM_TOKENS} tokens (its "
        f"`method=\"auto\"`).\n\n{markdown(summary)}\n\nCommand: `{COMMAND}`"
    )
    replace_section(HERE / "RESULTS.md", "rem-speed", body, title="REM speed: dense versus FFT")
    print(markdown(summary))
    return summary


def markdown(frame: pd.DataFrame) -> str:
    header = [frame.index.name or ""] + list(frame.columns)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for index, row in frame.iterrows():
        lines.append("| " + " | ".join([str(index)] + [f"{v:.2f}" for v in row]) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
