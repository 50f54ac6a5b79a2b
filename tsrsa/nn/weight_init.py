"""The start of the linear layers every network of tsrsa shares (GPT-2's, as nanoGPT writes it).

Its own module so that the blocks, the backbones and an attention kind (``block_recurrent``) all read
it without importing one another.
"""
from __future__ import annotations

from torch import nn


def init_linear(*linears: nn.Linear) -> None:
    """N(0, 0.02) weights and zero biases (GPT-2's start)."""
    for linear in linears:
        nn.init.normal_(linear.weight, mean=0.0, std=0.02)
        if linear.bias is not None:
            nn.init.zeros_(linear.bias)
