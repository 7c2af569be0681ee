"""Argument checks shared by the numeric modules."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["finite_array"]


def finite_array(name: str, value: ArrayLike, min_ndim: int) -> NDArray[np.float64]:
    """`value` as float64, with at least `min_ndim` dimensions and no NaN or inf.

    Raises:
        ValueError: Naming the argument and what is wrong with it.
    """
    array = np.asarray(value, dtype=np.float64)
    if array.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimension(s), got shape {array.shape}.")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or inf.")
    return array
