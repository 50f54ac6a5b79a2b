"""Which REM each head of an RSA layer carries: the head layout of ``tsrsa.nn.rsa``.

Heads are laid out in this order (per layer):

    [regular] * n_regular, [cyclic_cos, cyclic_sin] * n_cyclic,
    [regular, dilated] * n_dilated_regular, [cyclic_cos, cyclic_sin, dilated] * n_dilated_cyclic,
    [softmax] * (the rest)

Regular heads read their own decay (``eta``); the cos and sin heads of one pair share (gamma, theta)
unless ``share_cyclic=False``.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["HeadPlan", "head_selections", "plan_heads"]


@dataclass(frozen=True)
class HeadPlan:
    """Which REM each head carries and which parameters it reads."""

    kinds: tuple[str, ...]  # (H_rem,) "regular", "cyclic_cos" or "cyclic_sin"
    dilations: tuple[int, ...]  # (H_rem,) in tokens
    param: tuple[int, ...]  # (H_rem,) index into eta (regular) or nu/theta (cyclic)
    n_eta: int
    n_cyclic_params: int


def plan_heads(n_heads: int, *, n_regular: int = 1, n_cyclic: int = 1, n_dilated_regular: int = 0,
               n_dilated_cyclic: int = 0, dilations=2, share_cyclic: bool = True) -> HeadPlan:
    """Lay out the REM heads of one layer (see the module docstring)."""
    counts = {"n_regular": n_regular, "n_cyclic": n_cyclic, "n_dilated_regular": n_dilated_regular,
              "n_dilated_cyclic": n_dilated_cyclic}
    for name, value in counts.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name}={value!r} must be a non-negative int")
    used = n_regular + 2 * n_cyclic + n_dilated_regular + 2 * n_dilated_cyclic
    if used > n_heads:
        raise ValueError(
            f"the REM heads need {used} heads (n_regular + 2*n_cyclic + n_dilated_regular + "
            f"2*n_dilated_cyclic) but the layer has n_heads={n_heads}"
        )
    n_units = n_dilated_regular + n_dilated_cyclic
    units = [dilations] * n_units if isinstance(dilations, int) else list(dilations)
    if len(units) != n_units:
        raise ValueError(
            f"dilations={dilations!r} must be one int or one per dilated head/pair ({n_units})"
        )
    for d in units:
        if isinstance(d, bool) or not isinstance(d, int) or d < 1:
            raise ValueError(f"dilations={dilations!r}: every dilation must be an int >= 1")
    kinds, dil, param = [], [], []
    n_eta = n_cyc = 0

    def regular(d):
        nonlocal n_eta
        kinds.append("regular"), dil.append(d), param.append(n_eta)
        n_eta += 1

    def pair(d):
        nonlocal n_cyc
        kinds.extend(["cyclic_cos", "cyclic_sin"]), dil.extend([d, d])
        param.extend([n_cyc, n_cyc] if share_cyclic else [n_cyc, n_cyc + 1])
        n_cyc += 1 if share_cyclic else 2

    for _ in range(n_regular):
        regular(1)
    for _ in range(n_cyclic):
        pair(1)
    for d in units[:n_dilated_regular]:
        regular(d)
    for d in units[n_dilated_regular:]:
        pair(d)
    return HeadPlan(tuple(kinds), tuple(dil), tuple(param), n_eta, n_cyc)


def head_selections(plan: HeadPlan, n_heads: int, gate_per_head: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """0/1 matrices that give all n_heads heads their REM value and gate by one product each, a plain
    head's row zero: (n_heads, n_eta + n_cyclic_params) over cat([eta's values, nu's values]) (theta
    through its last n_cyclic_params columns), and (n_heads, n_gates)."""
    R = len(plan.kinds)
    slots = [p if kind == "regular" else plan.n_eta + p for kind, p in zip(plan.kinds, plan.param)]
    pick = torch.zeros(n_heads, plan.n_eta + plan.n_cyclic_params)
    pick[torch.arange(R), torch.tensor(slots, dtype=torch.long)] = 1.0
    gate_pick = torch.zeros(n_heads, R if gate_per_head else 1)
    gate_pick[torch.arange(R), torch.arange(R) if gate_per_head else 0] = 1.0
    return pick, gate_pick
