"""Feature maps of the linear-attention kinds: φ turns a key or query into non-negative features
whose dot products stand in for softmax's exp(q·k).

- ``elu``: φ(x) = elu(x) + 1 (Katharopoulos et al. 2020), d_φ = d.
- ``dpfp``: the deterministic parameter-free projection of Schlag et al. (2021). With
  r(x) = [relu(x), relu(-x)] ∈ R^{2d},

      φ(x) = concat_{j=1..ν} r(x) ⊙ roll(r(x), j),   i.e.  φ_{2d(j-1) + i} = r_i · r_{(i - j) mod 2d},

  so d_φ = 2dν. Features are sparse (r has at most d non-zero entries) and all zero at x = 0.
- ``sum_normalise``: φ / (Σ_i φ_i + ε), each feature vector summing to one (or zero when all its
  features are zero, as DPFP's at x = 0).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["FEATURE_MAPS", "check_feature_map", "dpfp", "elu_plus_one", "feature_map", "feature_size",
           "sum_normalise"]

FEATURE_MAPS = ("elu", "dpfp")


def elu_plus_one(x: torch.Tensor) -> torch.Tensor:
    """elu(x) + 1 > 0: (..., d) -> (..., d)."""
    return F.elu(x) + 1.0


def dpfp(x: torch.Tensor, nu: int = 1) -> torch.Tensor:
    """DPFP features: (..., d) -> (..., 2 d ν) (see the module docstring)."""
    r = torch.cat([F.relu(x), F.relu(-x)], dim=-1)  # (..., 2d)
    return torch.cat([r * torch.roll(r, shifts=j, dims=-1) for j in range(1, nu + 1)], dim=-1)  # (..., 2dν)


def sum_normalise(phi: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """φ / (Σ_i φ_i + ε) over the last dimension (features are non-negative)."""
    return phi / (phi.sum(dim=-1, keepdim=True) + eps)


def feature_map(x: torch.Tensor, name: str, nu: int = 1) -> torch.Tensor:
    """The feature map ``name`` ("elu" or "dpfp") of x (..., d)."""
    return elu_plus_one(x) if name == "elu" else dpfp(x, nu)


def feature_size(name: str, d: int, nu: int = 1) -> int:
    """d_φ of the map ``name`` on d inputs."""
    return d if name == "elu" else 2 * d * nu


def check_feature_map(name, nu, d: int) -> None:
    """ValueError unless ``name`` is a feature map and ν fits a head of d channels."""
    if name not in FEATURE_MAPS:
        raise ValueError(f"feature_map={name!r} is not one of {FEATURE_MAPS}")
    if isinstance(nu, bool) or not isinstance(nu, int) or nu < 1:
        raise ValueError(f"nu={nu!r} must be an int >= 1")
    if name == "dpfp" and nu > 2 * d - 1:
        raise ValueError(f"nu={nu} must be at most 2 * head size - 1 = {2 * d - 1}: larger rolls repeat features")
