"""`LcbConfig`: the options of lcb-v1, one frozen record (``env.<field>=`` on the command lines)."""

from __future__ import annotations

from dataclasses import dataclass

from env_lcb._data import DEFAULT_REVISION, HUB_ID

__all__ = ["MAX_TESTS", "LcbConfig"]

MAX_TESTS = 32


@dataclass(frozen=True)
class LcbConfig:
    """The options of lcb-v1.

    Attributes:
        data_dir: Local copy of the data (DeepCoder Hub layout, or code_generation_lite jsonl files).
            A path is kept as text.
        source: ``"deepcoder"`` (train: primeintellect + taco + lcbv5 train; test: lcbv5 test) or
            ``"lcb_lite"``.
        max_tests: Tests kept per problem (the paper: 32, the smallest by size).
        time_limit_s: CPU seconds per test (kept as a float).
        workers: Sandbox workers (at most one per core; kept as an int).
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
        if self.source not in ("deepcoder", "lcb_lite"):
            raise ValueError(f"source must be deepcoder or lcb_lite, got {self.source!r}.")
        if not isinstance(self.max_tests, int) or not 1 <= self.max_tests <= MAX_TESTS:
            raise ValueError(f"max_tests must be an int in [1, {MAX_TESTS}], got {self.max_tests!r}.")
        object.__setattr__(self, "data_dir", None if self.data_dir is None else str(self.data_dir))
        object.__setattr__(self, "time_limit_s", float(self.time_limit_s))
        object.__setattr__(self, "workers", int(self.workers))
