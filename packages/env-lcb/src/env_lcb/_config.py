"""`LcbConfig`: the options of lcb-v1, one frozen record (``env.<field>=`` on the command lines)."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from env_lcb._data import DEFAULT_REVISION, HUB_ID
from vpo_core.errors import ConfigError

__all__ = ["MAX_TESTS", "MAX_TIME_LIMIT_S", "MAX_WORKERS", "LcbConfig"]

MAX_TESTS = 32
MAX_TIME_LIMIT_S = 3600.0  # CPU seconds per test: above this a single program could hold a worker for days
MAX_WORKERS = 256  # sandbox workers (each is a bubblewrap sandbox; more than the cores only queue)


@dataclass(frozen=True)
class LcbConfig:
    """The options of lcb-v1.

    Attributes:
        data_dir: Local copy of the data (DeepCoder Hub layout, or code_generation_lite jsonl files).
            A path is kept as text.
        source: ``"deepcoder"`` (train: primeintellect + taco + lcbv5 train; test: lcbv5 test) or
            ``"lcb_lite"``.
        max_tests: Tests kept per problem (the paper: 32, the smallest by size).
        time_limit_s: CPU seconds per test, a finite number in (0, `MAX_TIME_LIMIT_S`] (kept as a float).
        workers: Sandbox workers, an int in [1, `MAX_WORKERS`] (one per core is the useful most).
        revision: Hub revision of DeepCoder (a branch, tag or, for exact reproducibility, a commit).
        hub_id: Hub id of DeepCoder (a mirror or fork with the same layout).
    """

    data_dir: str | None = None
    source: str = "deepcoder"
    max_tests: int = MAX_TESTS
    time_limit_s: float = 6.0
    workers: int = 1
    revision: str = DEFAULT_REVISION
    hub_id: str = HUB_ID

    def __post_init__(self) -> None:
        """Refuse options outside their limits, naming the limit (`ConfigError`, a ``ValueError``)."""
        if self.source not in ("deepcoder", "lcb_lite"):
            raise ConfigError(f"source must be deepcoder or lcb_lite, got {self.source!r} (env.source=...).")
        if not _is_int(self.max_tests) or not 1 <= self.max_tests <= MAX_TESTS:
            raise ConfigError(
                f"max_tests must be an int in [1, {MAX_TESTS}], got {self.max_tests!r} (env.max_tests=...)."
            )
        limit = self.time_limit_s
        if isinstance(limit, bool) or not isinstance(limit, numbers.Real) or not 0 < limit <= MAX_TIME_LIMIT_S:
            # NaN fails every comparison, inf the upper bound
            raise ConfigError(
                f"time_limit_s must be a number of CPU seconds in (0, {MAX_TIME_LIMIT_S:g}], got {limit!r} "
                "(env.time_limit_s=..., e.g. 6 as LiveCodeBench)."
            )
        if not _is_int(self.workers) or not 1 <= self.workers <= MAX_WORKERS:
            raise ConfigError(
                f"workers must be an int in [1, {MAX_WORKERS}] (at most one per core is useful), got {self.workers!r} "
                "(env.workers=...)."
            )
        object.__setattr__(self, "data_dir", None if self.data_dir is None else str(self.data_dir))
        object.__setattr__(self, "time_limit_s", float(limit))
        object.__setattr__(self, "workers", int(self.workers))


def _is_int(value: object) -> bool:
    """An integer that is not a bool (``True`` is no count), numpy integers included."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)
