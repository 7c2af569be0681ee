"""Which scorer an env uses: the machine's scoring server (default) or, when asked, one in this process.

``scorer="http"`` (default): a `ScorerClient` of the server at ``scorer_url`` (default: the
``VPO_RM_URL`` environment variable, else ``http://127.0.0.1:8765``). Cheap in every process.

``scorer="inprocess"``: an `ArmoRMScorer` loaded in this process (tests with a small model, one-process
evaluation). One per (model, settings) per process: envs built or unpickled in the same process share it.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from env_ultrafeedback._scorer import DIMENSIONS, ArmoRMScorer, RewardScorer
from env_ultrafeedback._server import DEFAULT_URL, ScorerClient

__all__ = ["SCORERS", "make_scorer"]

SCORERS = ("http", "inprocess")

_CACHE: dict[tuple[Any, ...], ArmoRMScorer] = {}
_CACHE_LOCK = threading.Lock()


def make_scorer(kind: str, *, url: str | None = None, **model_options: Any) -> RewardScorer:
    """The scorer of an env's configuration.

    Args:
        kind: ``"http"`` or ``"inprocess"``.
        url: Server URL for ``"http"`` (default: ``$VPO_RM_URL`` or ``http://127.0.0.1:8765``).
        **model_options: `ArmoRMScorer` keywords for ``"inprocess"`` (model, device, dtype, batch_size,
            max_length, scale, offset).

    Returns:
        The scorer.

    Raises:
        ValueError: On an unknown kind.
    """
    if kind == "http":
        return ScorerClient(url or os.environ.get("VPO_RM_URL") or DEFAULT_URL, names=DIMENSIONS)
    if kind == "inprocess":
        key = tuple(sorted(model_options.items()))
        with _CACHE_LOCK:
            if key not in _CACHE:
                _CACHE[key] = ArmoRMScorer(**model_options)
            return _CACHE[key]
    raise ValueError(f"unknown scorer {kind!r}; choose one of {SCORERS} (http: the machine's scoring server).")
