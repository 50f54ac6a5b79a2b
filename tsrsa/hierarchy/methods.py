"""The reconciliation methods by name, mapped onto hierarchicalforecast's classes, and what each needs.

| name | hierarchicalforecast | needs ``df`` | intervals (``level=``) |
|---|---|---|---|
| ``bottom_up`` | ``BottomUp()`` | no | every ``intervals_method`` |
| ``top_down`` | ``TopDown("forecast_proportions")`` | no | ``bootstrap`` only |
| ``top_down_average`` | ``TopDown("average_proportions")`` | target | every ``intervals_method`` |
| ``ols`` (= ``mint_ols``) | ``MinTrace("ols")`` | no | every ``intervals_method`` |
| ``wls_struct`` | ``MinTrace("wls_struct")`` | no | every ``intervals_method`` |
| ``mint_shrink`` | ``MinTrace("mint_shrink")`` | target and fitted values | every ``intervals_method`` |

The interval methods are hierarchicalforecast's: ``normality`` (a normal law whose spread each node's base
interval or symmetric quantile columns give, correlated as the method's W says), ``bootstrap``, ``permbu``
and ``conformal`` (from the in-sample residuals of ``df``: its target and fitted values).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Method:
    """One reconciliation method: how to build its hierarchicalforecast reconciler and what it reads."""

    hf_class: str  # the class of hierarchicalforecast.methods
    hf_method: str | None  # its ``method`` argument, None for BottomUp
    needs_target: bool  # reads the in-sample target of ``df``
    needs_fitted: bool  # reads the in-sample fitted values (``yhat``) of ``df``
    interval_methods: tuple[str, ...]  # the ``intervals_method`` values it gives intervals with
    what: str  # one line for the docs and the error messages

    def build(self):
        """A fresh hierarchicalforecast reconciler (the import happens here: the library is optional)."""
        from hierarchicalforecast import methods

        cls = getattr(methods, self.hf_class)
        return cls() if self.hf_method is None else cls(method=self.hf_method)


INTERVAL_METHODS = ("normality", "bootstrap", "permbu", "conformal")
#: interval methods that read the in-sample residuals (``df`` with target and fitted values)
INSAMPLE_INTERVALS = ("bootstrap", "permbu", "conformal")
#: interval methods that read each node's base spread from its interval or quantile columns
SPREAD_INTERVALS = ("normality", "permbu")

_OLS = Method("MinTrace", "ols", False, False, INTERVAL_METHODS,
              "MinT with W = I (OLS): S (S'S)^-1 S' yhat")
METHODS: dict[str, Method] = {
    "bottom_up": Method("BottomUp", None, False, False, INTERVAL_METHODS,
                        "the bottom forecasts summed up the tree"),
    "top_down": Method("TopDown", "forecast_proportions", False, False, ("bootstrap",),
                       "the top forecast split by the proportions of the base forecasts, level by level"),
    "top_down_average": Method("TopDown", "average_proportions", True, False, INTERVAL_METHODS,
                               "the top forecast split by each bottom series' average historical share"),
    "ols": _OLS,
    "mint_ols": _OLS,
    "wls_struct": Method("MinTrace", "wls_struct", False, False, INTERVAL_METHODS,
                         "MinT with W = diag(number of bottom series under each node)"),
    "mint_shrink": Method("MinTrace", "mint_shrink", True, True, INTERVAL_METHODS,
                          "MinT with W the shrunk covariance of the in-sample one-step residuals"),
}


def method_named(name) -> Method:
    """The method called ``name``; a TypeError or a ValueError listing the known names otherwise."""
    if not isinstance(name, str):
        raise TypeError(f"method must be a string, one of {sorted(METHODS)}; got {name!r} ({type(name).__name__})")
    if name not in METHODS:
        raise ValueError(f"unknown reconciliation method {name!r}; the known ones are {', '.join(sorted(METHODS))}")
    return METHODS[name]
