"""Initial REM values from the training data: AR roots and seasonal periods (statsmodels/scipy)."""
from tsrsa.init.ar import ar_roots, companion_roots, pooled_ar_roots
from tsrsa.init.seasonality import seasonal_periods

__all__ = ["ar_roots", "companion_roots", "pooled_ar_roots", "seasonal_periods"]
