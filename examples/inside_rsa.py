"""Inside RSA as a script: a linear RNN written as REM heads, and what a fitted model's heads learned.

The plain-script twin of notebooks/02_inside_rsa.ipynb::

    python examples/inside_rsa.py                           # prints the check and the tables
    python examples/inside_rsa.py --output-dir inside_rsa   # also heatmaps of the REM kinds and
                                                            # of the learned REMs
    python examples/inside_rsa.py --budget small            # seconds: a narrow network, one epoch
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd
import torch

import tsrsa
from tsrsa import RSAForecaster, Trainer
from tsrsa.nn import linear_rnn_to_rem, rem_matrix


def rnn_as_rem_error(steps: int = 50, seed: int = 0) -> float:
    """Largest gap between a linear RNN's states and the RSA layer built from its REM heads."""
    g = torch.Generator().manual_seed(seed)
    D = torch.zeros(4, 4, dtype=torch.float64)  # eigenvalues 0.9, -0.5 and 0.8 e^{+-i pi/6}
    D[0, 0], D[1, 1] = 0.9, -0.5
    c, s = 0.8 * math.cos(math.pi / 6), 0.8 * math.sin(math.pi / 6)
    D[2:, 2:] = torch.tensor([[c, -s], [s, c]], dtype=torch.float64)
    S = torch.randn(4, 4, generator=g, dtype=torch.float64)
    W_h, W_x = S @ D @ torch.linalg.inv(S), torch.randn(4, 2, generator=g, dtype=torch.float64)

    x = torch.randn(3, steps, 2, generator=g, dtype=torch.float64)  # (B, T, d_in)
    h, state = torch.zeros(3, steps, 4, dtype=torch.float64), torch.zeros(3, 4, dtype=torch.float64)
    for t in range(steps):  # h_t = W_h h_{t-1} + W_x x_t
        state = state @ W_h.T + x[:, t] @ W_x.T
        h[:, t] = state

    heads = linear_rnn_to_rem(W_h, W_x)
    print("REM heads of the RNN:", ", ".join(f"{k} ({float(r):.2f})" for k, r in zip(heads.kinds, heads.radius)))
    attention = heads.build_attention()
    inputs = torch.zeros(3, steps, attention.proj.in_features, dtype=torch.float64)
    inputs[..., :2] = x
    with torch.no_grad():
        from_heads = attention(inputs)[..., :4] + x @ heads.lag0.T  # REM heads + the lag-0 term
    return float((from_heads - h).abs().max())


def side_by_side(model: RSAForecaster) -> pd.DataFrame:
    """Each REM head: the estimate it started from, its decay and period at the start and learned."""
    explained = model.explain()
    rem = explained[explained["rem_type"] != "softmax"].merge(model.init_report_[["head", "estimate"]], on="head")
    return pd.DataFrame({
        "layer": rem["layer"], "head": rem["head"], "rem_type": rem["rem_type"], "started from": rem["estimate"],
        "decay at start": rem["lambda_init"].fillna(rem["gamma_init"]),
        "decay learned": rem["lambda"].fillna(rem["gamma"]),
        "period at start": 2 * np.pi / rem["theta_init"] * rem["dilation"], "period learned": rem["period"],
        "dilation": rem["dilation"], "gate": rem["gate"],
    })


def draw_kinds(path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    kinds = {
        "regular λ=0.8": rem_matrix("regular", 12, lam=0.8),
        "regular λ=−0.8": rem_matrix("regular", 12, lam=-0.8),
        "cyclic_cos γ=0.9 θ=π/3": rem_matrix("cyclic_cos", 12, gamma=0.9, theta=math.pi / 3),
        "cyclic_sin γ=0.9 θ=π/3": rem_matrix("cyclic_sin", 12, gamma=0.9, theta=math.pi / 3),
        "regular λ=0.8, dilation 4": rem_matrix("regular", 12, lam=0.8, dilation=4),
    }
    fig = Figure(figsize=(15, 3.4), layout="constrained")
    FigureCanvasAgg(fig)
    for ax, (title, P) in zip(fig.subplots(1, len(kinds)), kinds.items()):
        ax.imshow(P.numpy(), cmap="RdBu_r", vmin=-1, vmax=1)
        ax.set(title=title, xlabel="key token j", ylabel="query token i")
    fig.savefig(path, dpi=100)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", choices=("small", "full"), default="full", help="small: a seconds-long smoke run")
    parser.add_argument("--output-dir", type=Path, default=None, help="write the heatmaps here")
    parser.add_argument("--num-threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    args = parser.parse_args(argv)
    network = dict(d_model=16, d_ff=32, max_epochs=1) if args.budget == "small" else dict(max_epochs=20)

    error = rnn_as_rem_error()
    print(f"largest |RNN state - RSA layer output|: {error:.1e} (rounding error: the layer is the RNN)\n")

    train = tsrsa.datasets.load("co2").iloc[:-104]
    model = RSAForecaster(h=52, input_size=208, patch_len=4, fill="interpolate", random_state=0,
                          trainer=Trainer(num_threads=args.num_threads), **network)
    model.fit(train)
    print("which head started from which estimate (dilation in weeks):")
    print(model.init_report_.drop(columns=["note"]).to_string(index=False), "\n")
    table = side_by_side(model)
    print("each REM head, start and learned (decay per token, period and dilation in weeks):")
    print(table.round(3).to_string(index=False))

    if args.output_dir is not None:
        args.output_dir.mkdir(parents=True, exist_ok=True)
        draw_kinds(args.output_dir / "rem_kinds.png")
        model.plot_rem().savefig(args.output_dir / "learned_rems.png", dpi=100)
        print(f"\nheatmaps written to {args.output_dir}")
    return {"error": error, "table": table, "model": model}


if __name__ == "__main__":
    main()
