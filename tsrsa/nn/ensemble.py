"""An ensemble of networks trained apart: its forecast is the mean of theirs.

Each member is a whole network of the same configuration, trained on its own from its own seed;
:class:`MemberMean` only averages what they output, step by step and channel by channel. For a
quantile head (``sorted_outputs=True``) each member's levels are first put in order, as a single
network's forecast is reported, so that the ensemble's quantiles are the mean of the members'
quantile functions (a Vincentised average). It reads its configuration from its first member, so
code that asks a network for ``config`` reads an ensemble the same way.
"""
from __future__ import annotations

from torch import nn

__all__ = ["MemberMean", "members_of"]


class MemberMean(nn.Module):
    """The mean of the outputs (B, H, Q) of ``members`` (at least two networks of one configuration),
    each sorted over its Q channels first when ``sorted_outputs``."""

    def __init__(self, members, *, sorted_outputs: bool = False):
        super().__init__()
        self.sorted_outputs = bool(sorted_outputs)
        members = list(members)
        if len(members) < 2:
            raise ValueError(f"an ensemble averages at least two networks; got {len(members)}")
        self.members = nn.ModuleList(members)

    @property
    def config(self):
        """The members' configuration (the first member's; they share it)."""
        return self.members[0].config

    def output_layers(self) -> list[nn.Linear]:
        """Every member's layers that write its forecast (``zero_outputs`` of an ensemble zeroes them all)."""
        return [layer for member in self.members for layer in member.output_layers()]

    def forward(self, inputs):
        total = 0
        for member in self.members:
            out = member(inputs)
            total = total + (out.sort(dim=-1).values if self.sorted_outputs else out)
        return total / len(self.members)


def members_of(network: nn.Module) -> list[nn.Module]:
    """The networks an ensemble averages, or ``[network]`` for a single one."""
    return list(network.members) if isinstance(network, MemberMean) else [network]
