"""Strict JSON for the files the project writes: no ``NaN``/``Infinity`` tokens, which are not JSON.

Python's `json` writes ``NaN`` for a float NaN by default; most JSON parsers (``jq``, JavaScript's
``JSON.parse``, Go, Rust's serde) reject the file. Here a non-finite number is written as ``null``
(an undefined metric, e.g. the collinearity of a one-dimensional reward), numpy scalars and arrays
become plain numbers and lists, and `json.dumps` runs with ``allow_nan=False`` so nothing slips through.

Example:
    >>> dumps({"rho": float("nan"), "k": [1, 2]})
    '{"rho": null, "k": [1, 2]}'
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["dumps", "to_strict", "write"]


def to_strict(value: Any) -> Any:
    """`value` with every non-finite float replaced by None and numpy types turned into Python ones."""
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): to_strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_strict(v) for v in value]
    tolist = getattr(value, "tolist", None)  # numpy scalars and arrays, without importing numpy
    if callable(tolist):
        return to_strict(tolist())
    if isinstance(value, Path):
        return str(value)
    return value


def dumps(value: Any, **kwargs: Any) -> str:
    """`json.dumps` of `to_strict(value)`; raises ValueError rather than ever writing NaN."""
    return json.dumps(to_strict(value), allow_nan=False, **kwargs)


def write(path: str | Path, value: Any, *, indent: int | None = 2) -> None:
    """Write `value` to `path` as strict JSON (a newline at the end)."""
    Path(path).write_text(dumps(value, indent=indent) + "\n")
