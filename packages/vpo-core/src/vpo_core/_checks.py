"""Argument checks shared by the numeric modules (objectives, normalisers, flat batches, entry points).

Every check raises a ValueError that names the argument and what is wrong with it; none returns NaN.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "STDS",
    "Std",
    "check_eps",
    "check_scores",
    "check_std",
    "check_vector",
    "finite_array",
    "finite_or_raise",
]

Std = Literal["population", "unbiased"]
"""z-score convention: the population std (the paper's appendix) or the Bessel-corrected std (veRL)."""
STDS: tuple[Std, ...] = ("population", "unbiased")


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


def check_std(std: Any) -> None:
    """Raise unless `std` is one of `STDS`."""
    if std not in STDS:
        raise ValueError(f"std must be one of {STDS}, got {std!r}.")


def check_eps(eps: Any) -> float:
    """`eps` as a float, checked to be a finite number >= 0 (bools and text are refused)."""
    if isinstance(eps, bool) or not isinstance(eps, int | float | np.integer | np.floating):
        raise ValueError(f"eps must be a finite number >= 0, got {eps!r}.")
    value = float(eps)
    if not math.isfinite(value) or value < 0.0:
        raise ValueError(f"eps must be a finite number >= 0, got {eps!r}.")
    return value


def check_scores(x: ArrayLike, name: str = "scores") -> NDArray[np.float64]:
    """Rollout scalars as float64, shape (B, G) with B, G >= 1, all finite."""
    array = np.asarray(x, dtype=np.float64)
    if array.ndim != 2 or array.shape[1] < 1:
        raise ValueError(f"{name} must have shape (B groups, G rollouts), got {array.shape}.")
    if array.shape[0] < 1:
        raise ValueError(f"{name} must hold at least one group (B >= 1), got shape {array.shape}.")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or inf.")
    return array


def check_vector(w: ArrayLike, d: int, name: str) -> NDArray[np.float64]:
    """A weight vector as float64, shape (d,), all finite."""
    array = np.asarray(w, dtype=np.float64)
    if array.shape != (d,):
        raise ValueError(f"{name} must have shape ({d},) to match the rewards' d, got {array.shape}.")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or inf.")
    return array


def finite_or_raise(values: NDArray[np.float64], what: str) -> NDArray[np.float64]:
    """`values` unchanged if all finite; otherwise a ValueError saying that `what` overflow float64."""
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{what} overflow float64 (the true values exceed ~1.8e308); rescale the rewards or weights.")
    return values
