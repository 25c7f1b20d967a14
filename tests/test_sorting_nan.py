"""NaN in mode: the NaNs of a slice count as one value, as PyTorch's CPU mode counts them."""

import numpy as np
import pytest

import minigrad as mg

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("row", [[np.nan, np.nan, 1.0], [np.nan, 2.0, np.nan, 2.0, np.nan],
                                 [1.0, 1.0, np.nan, np.nan, 2.0], [3.0, 1.0, 2.0]])
def test_mode_counts_nans_as_one_value(row):
    x = np.array([row], np.float32)
    mine = mg.mode(mg.tensor(x), dim=1)[0].numpy()
    theirs = torch.mode(torch.tensor(x), dim=1).values.numpy()
    np.testing.assert_array_equal(mine, theirs)  # NaN where PyTorch's is NaN
