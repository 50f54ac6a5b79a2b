"""benchmarks/rsa_cost.py: the table of RSA's fit time against its twin's."""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import rsa_cost  # noqa: E402


def test_the_section_gives_the_median_ratio_per_fit_and_per_epoch():
    base = dict(series="s", h=12, windows=100, input_size=24, patch_len=4, predict_seconds=0.01)
    runs = {"RSA": [(2.0, 10), (3.0, 10), (9.0, 30)], "Transformer": [(2.0, 20), (2.5, 20), (1.0, 10)]}
    rows = [dict(base, model=m, repeat=r, fit_seconds=f, epochs=e) for m in runs for r, (f, e) in enumerate(runs[m])]
    rows += [dict(base, model=m, repeat=-1, phase=p, fit_seconds=1.0) for m in runs for p in ("training", "other")]
    table = pd.DataFrame(rows).assign(date="2026-11-27", machine="test")
    text = rsa_cost.section(table, "python benchmarks/rsa_cost.py")
    # medians: RSA 3.0 s (0.3 s an epoch), twin 2.0 s (0.1 s an epoch)
    assert "| s | 12 | 24 / 4 | 100 | 3.00 | 2.00 | 1.50 | 10 | 20 | 3.00 |" in text
    assert "| s | RSA | 1.00 | 1.00 |" in text and "python benchmarks/rsa_cost.py" in text
    assert "geometric mean" not in text  # one series: no summary row


def test_the_short_series_close_with_their_geometric_mean_ratio_and_etth1_stays_out_of_it():
    base = dict(h=12, windows=100, input_size=24, patch_len=4, predict_seconds=0.01, repeat=0, epochs=10)
    fits = {"a": (2.0, 1.0), "b": (1.0, 2.0), "ETTh1_OT": (9.0, 1.0)}  # RSA's, the twin's seconds
    rows = [dict(base, series=name, model=m, fit_seconds=f)
            for name, pair in fits.items() for m, f in zip(("RSA", "Transformer"), pair)]
    text = rsa_cost.section(pd.DataFrame(rows).assign(date="2026-11-28", machine="test"), "cmd")
    assert "| short series, geometric mean (2) |  |  |  |  |  | 1.00 |  |  | 1.00 |  |  |" in text  # (2 x 0.5) ** 0.5


def test_the_layer_step_times_both_layers_and_the_section_shows_the_extra():
    step = rsa_cost.layer_step(tokens=3, rounds=1, steps=2)
    assert set(step) == {"RSA", "Transformer"} and all(0 < us < 1e7 for us, _ in step.values())
    assert step["RSA"][1] > step["Transformer"][1] > 20  # RSA's REMs and gate are operators of their own
    base = dict(series="s", h=12, windows=100, input_size=24, patch_len=4, predict_seconds=0.01, epochs=10)
    rows = [dict(base, model=m, repeat=0, fit_seconds=1.0) for m in ("RSA", "Transformer")]
    rows += [dict(series="s", model=m, h=12, phase="layer step", tokens=6, microseconds=us, operator_calls=n)
             for m, us, n in (("RSA", 1300.0, 190), ("Transformer", 1000.0, 110))]
    text = rsa_cost.section(pd.DataFrame(rows).assign(date="2026-11-27", machine="test"), "cmd")
    assert "| s | 6 | 1300 | 1000 | 300 | 1.30 | 190 | 110 |" in text


def test_operator_calls_counts_forward_and_backward():
    import torch

    x = torch.randn(4, 3, requires_grad=True)
    plain = rsa_cost.operator_calls(torch.nn.Identity(), x)  # the sum, its backward
    linear = rsa_cost.operator_calls(torch.nn.Linear(3, 2), x)  # and addmm, its backward's products
    assert 0 < plain < linear
