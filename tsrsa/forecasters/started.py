"""Deprecated address of :mod:`tsrsa.estimator.started` (removed in tsrsa 0.16): each name warns and resolves there."""
from tsrsa.forecasters.moved import old_address

__getattr__, __dir__ = old_address(__name__)
