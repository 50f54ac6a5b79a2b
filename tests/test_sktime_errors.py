"""The sktime adapter names the fault of a y or X that sktime refuses ("Unsupported input data type"):
a time that comes twice, a time index out of order, a type sktime does not read; still a TypeError."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("sktime")

from tsrsa import SeasonalNaiveForecaster  # noqa: E402
from tsrsa.integrations.sktime import TsrsaForecaster  # noqa: E402

DAYS = pd.date_range("2024-01-01", periods=20, freq="D")


def forecaster() -> TsrsaForecaster:
    return TsrsaForecaster(SeasonalNaiveForecaster(h=1, season_length=2))


def test_a_duplicated_timestamp_is_named_with_its_series():
    y = pd.Series(np.arange(21.0), index=DAYS.append(DAYS[5:6]))
    before = y.copy()
    with pytest.raises(TypeError, match=r"y has the time 2024-01-06 00:00:00 twice: .* keep one, e.g. "
                                        r"y = y\[~y.index.duplicated\(\)\]"):
        forecaster().fit(y, fh=[1])
    pd.testing.assert_series_equal(y, before)
    panel = pd.DataFrame({"sales": np.arange(41.0)},
                         index=pd.MultiIndex.from_arrays([["a"] * 20 + ["b"] * 21, [*DAYS, *DAYS.append(DAYS[3:4])]]))
    with pytest.raises(TypeError, match=r"y has the time 2024-01-04 00:00:00 in series b twice"):
        forecaster().fit(panel, fh=[1])


def test_a_time_index_out_of_order_is_named_with_the_fix():
    y = pd.Series(np.arange(20.0), index=DAYS[::-1])
    with pytest.raises(TypeError, match=r"y's time index is not in increasing order \(the time 2024-01-19 00:00:00 "
                                        r"comes after the time 2024-01-20 00:00:00\): .* y = y.sort_index\(\)"):
        forecaster().fit(y, fh=[1])


def test_a_fitted_adapter_names_the_fault_of_new_data_and_keeps_its_state():
    model = forecaster().fit(pd.Series(np.arange(20.0), index=DAYS), fh=[1])
    before = model.predict()
    later = pd.date_range("2024-01-21", periods=3, freq="D")
    with pytest.raises(TypeError, match=r"y has the time 2024-01-21 00:00:00 twice"):
        model.update(pd.Series([1.0, 2.0, 3.0, 4.0], index=later.append(later[:1])))
    pd.testing.assert_series_equal(model.predict(), before)


def test_a_type_sktime_does_not_read_is_named():
    with pytest.raises(TypeError, match=r"y is not of a data type sktime reads \(it is a list\); pass a pd.Series"):
        forecaster().fit([1.0, 2.0, 3.0], fh=[1])
