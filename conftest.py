"""Collection of the package's doctests: the old module addresses under ``tsrsa/forecasters`` (deprecated
shims, :mod:`tsrsa.forecasters.moved`) hold no code of their own, and reading their names warns, so the
doctest collector skips them."""
from tsrsa.forecasters.moved import MOVED

collect_ignore = [f"tsrsa/forecasters/{name}.py" for name in MOVED]
