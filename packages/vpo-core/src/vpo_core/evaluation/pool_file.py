"""The saved pool: rewards of shape (T tasks, n completions, m candidates, d) and how they were sampled.

`save_pool` is the one writer and `load_pool` the one reader of pool files. A pool carries its
metadata: the env, the prompt mode (which best@k estimator applies: the chain estimator in multi
mode, iid in single mode), the tasks' ids, reward names and w* (per-task specs), the sampling
settings and the package versions. Two containers, chosen by the file's suffix:

- ``.npy`` (the evaluation app's ``pool_<row>.npy``): the rewards array as before, so ``np.load``
  still reads it, and the metadata beside it in ``<same stem>.json``;
- ``.npz`` (an experiment's compact summary): ``rewards`` and ``metadata`` (a JSON string).

A pool file without its metadata (a bare array, as pools were saved before they carried it) is
refused: its mode cannot be read from its shape (a multi-mode pool may have m = 1).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vpo_core.errors import DataFileError, MissingDataError

__all__ = ["FORMAT_VERSION", "SavedPool", "load_pool", "new_pool", "package_versions", "save_pool"]

FORMAT_VERSION = 1
"""Version of the metadata layout `save_pool` writes and `load_pool` reads."""


@dataclass(frozen=True, eq=False)
class SavedPool:
    """A split's candidate pools and how they were made.

    Attributes:
        rewards: Shape (T, n, m, d); rows of a task with fewer dimensions than d (per-task specs) are
            zero-padded.
        mode: ``"multi"`` (chains of m candidates: the chain estimator) or ``"single"`` (iid).
        env: The env id, or None.
        label: The evaluated row (checkpoint name and conditioning), or None.
        task_ids: Ids of the T tasks in row order, or None.
        reward_names: Each task's reward dimension names (its spec), or None.
        w_star: Each task's w*, one list of floats per task, or None.
        settings: Sampling settings (temperature, top_p, max_new_tokens, samples, seeds, conditioning, ...).
        versions: Package versions of the writer (`package_versions`).
    """

    rewards: NDArray[Any]
    mode: str
    env: str | None = None
    label: str | None = None
    task_ids: list[str] | None = None
    reward_names: list[list[str]] | None = None
    w_star: list[list[float]] | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if np.ndim(self.rewards) != 4:
            raise ValueError(f"a pool has shape (tasks, completions, m, d), got {np.shape(self.rewards)}.")
        if self.mode not in ("single", "multi"):
            raise ValueError(f"a pool's mode is single or multi, got {self.mode!r}.")

    @property
    def m(self) -> int:
        """Candidates per completion."""
        return int(self.rewards.shape[2])

    def metadata(self) -> dict[str, Any]:
        """What `save_pool` writes beside the rewards (JSON-ready)."""
        meta = {k: v for k, v in asdict(self).items() if k != "rewards"}
        return {"format": FORMAT_VERSION, "m": self.m, "shape": list(self.rewards.shape), **meta}


def package_versions() -> dict[str, str]:
    """Versions of vpo-core, vpo-engines (where installed), numpy, the installed env packages and Python."""
    names = ["vpo-core", "vpo-engines", "numpy"]
    for ep in importlib.metadata.entry_points(group="vpo.envs"):
        if ep.dist is not None and ep.dist.name not in names:
            names.append(ep.dist.name)
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    versions["python"] = sys.version.split()[0]
    return versions


def new_pool(
    env: Any,
    env_id: str,
    tasks: Sequence[Any],
    rewards: NDArray[Any],
    *,
    mode: str,
    label: str | None = None,
    settings: dict[str, Any] | None = None,
) -> SavedPool:
    """A pool with its metadata read from the env (per-task specs) and the installed packages.

    Args:
        env: The environment that scored the pool.
        env_id: Its id.
        tasks: The T tasks, in the pool's row order.
        rewards: Shape (T, n, m, d).
        mode: The prompt mode the pool was sampled in.
        label: The evaluated row.
        settings: The sampling settings.

    Returns:
        The pool.
    """
    specs = [env.spec_for(task) for task in tasks]
    return SavedPool(
        rewards=rewards,
        mode=mode,
        env=env_id,
        label=label,
        task_ids=[str(task.id) for task in tasks],
        reward_names=[list(spec.names) for spec in specs],
        w_star=[[float(w) for w in spec.w_star] for spec in specs],
        settings=dict(settings or {}),
        versions=package_versions(),
    )


def save_pool(path: str | os.PathLike[str], pool: SavedPool) -> Path:
    """Write `pool` (see the module docstring for the two containers).

    Args:
        path: A ``.npy`` file (rewards as saved, metadata in ``<stem>.json`` beside it) or an ``.npz``
            file (compressed ``rewards`` and ``metadata``).
        pool: The pool; its rewards are saved with their dtype.

    Returns:
        The path written.

    Raises:
        ValueError: For another suffix.
    """
    from vpo_core import strict_json

    target = Path(path)
    meta = strict_json.dumps(pool.metadata())
    if target.suffix == ".npy":
        np.save(target, pool.rewards)
        target.with_suffix(".json").write_text(meta + "\n")
    elif target.suffix == ".npz":
        np.savez_compressed(target, rewards=pool.rewards, metadata=np.array(meta))
    else:
        raise ValueError(f"a pool file ends in .npy or .npz, got {target}.")
    return target


def load_pool(path: str | os.PathLike[str]) -> SavedPool:
    """Read a pool file of `save_pool`.

    Args:
        path: A ``.npy`` or ``.npz`` pool file.

    Returns:
        The pool; its rewards as stored (cast with ``.astype`` where float64 is needed).

    Raises:
        MissingDataError: If there is no such file (a FileNotFoundError).
        DataFileError: For a file that holds no pool of shape (T, n, m, d), a pool without metadata (the
            ``.json`` sidecar of a ``.npy`` pool, the ``metadata`` of an ``.npz`` one: the format of
            pools saved before they carried it), or metadata that is not JSON or not of
            `SavedPool.metadata`'s shape (a ValueError).
    """
    file = Path(path)
    if not file.is_file():
        raise MissingDataError(f"pool file {file} does not exist.")
    meta: tuple[Path, str] | None = None  # (where the metadata is, its text)
    if file.suffix == ".npz":
        with np.load(file) as saved:
            if "rewards" not in saved.files:
                raise DataFileError(f"{file} holds no 'rewards' array (arrays: {saved.files}); is it a pool file?")
            rewards = saved["rewards"]
            if "metadata" in saved.files:
                meta = (file, str(saved["metadata"]))
    else:
        rewards = np.load(file)
        sidecar = file.with_suffix(".json")
        if sidecar.is_file():
            meta = (sidecar, sidecar.read_text(errors="replace"))
    if np.ndim(rewards) != 4:
        raise DataFileError(f"{file}: a pool has shape (tasks, completions, m, d), got {np.shape(rewards)}.")
    if meta is None:
        missing = "'metadata' array in it" if file.suffix == ".npz" else f"{file.with_suffix('.json').name} beside it"
        raise DataFileError(
            f"{file} is a pool without its metadata (no {missing}: the format before pools carried it), so its "
            "prompt mode is unknown; save it again with the mode it was sampled in: "
            "vpo_core.evaluation.save_pool(path, SavedPool(rewards, mode='multi' or 'single'))."
        )
    return SavedPool(rewards=rewards, **_checked_metadata(meta[0], meta[1], np.shape(rewards)))


def _is_text_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def _is_number_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, int | float) and not isinstance(x, bool) for x in value)


def _checked_metadata(where: Path, text: str, shape: tuple[int, ...]) -> dict[str, Any]:
    """The `SavedPool` fields in a pool's metadata, each checked against what `save_pool` writes.

    Args:
        where: The file the metadata is in (named in the errors).
        text: The metadata as JSON text.
        shape: The rewards' shape (T, n, m, d).

    Returns:
        Field name -> value, for the fields the metadata holds.

    Raises:
        DataFileError: One line naming the file and the field that is wrong.
    """
    fix = "write the pool again with vpo_core.evaluation.save_pool"
    try:
        meta = json.loads(text)
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError; deep nesting a RecursionError
        raise DataFileError(f"{where}: the pool's metadata is not JSON; {fix}.") from None
    if not isinstance(meta, dict):
        raise DataFileError(f"{where}: the pool's metadata is not a JSON object ({type(meta).__name__}); {fix}.")
    version = meta.get("format", FORMAT_VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= FORMAT_VERSION:
        raise DataFileError(
            f"{where}: metadata format {version!r} is not one this vpo-core reads (1..{FORMAT_VERSION}); update vpo-core."
        )
    if "shape" in meta and meta["shape"] != list(shape):
        raise DataFileError(f"{where}: the metadata's shape {meta['shape']!r} is not the pool's {list(shape)}; {fix}.")
    tasks = shape[0]
    checks: dict[str, tuple[str, Any]] = {
        "mode": ("'single' or 'multi'", lambda v: v in ("single", "multi")),
        "env": ("text or null", lambda v: v is None or isinstance(v, str)),
        "label": ("text or null", lambda v: v is None or isinstance(v, str)),
        "task_ids": (f"a list of {tasks} texts or null", lambda v: v is None or (_is_text_list(v) and len(v) == tasks)),
        "reward_names": (
            f"a list of {tasks} lists of texts or null",
            lambda v: v is None or (isinstance(v, list) and len(v) == tasks and all(_is_text_list(x) for x in v)),
        ),
        "w_star": (
            f"a list of {tasks} lists of numbers or null",
            lambda v: v is None or (isinstance(v, list) and len(v) == tasks and all(_is_number_list(x) for x in v)),
        ),
        "settings": ("a JSON object", lambda v: isinstance(v, dict)),
        "versions": (
            "an object of texts",
            lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
        ),
    }
    if "mode" not in meta:
        raise DataFileError(f"{where}: the pool's metadata has no 'mode' (single or multi); {fix}.")
    fields: dict[str, Any] = {}
    for key, (wanted, ok) in checks.items():
        if key in meta:
            if not ok(meta[key]):
                shown = json.dumps(meta[key])[:80]
                raise DataFileError(f"{where}: the metadata's {key!r} must be {wanted}, got {shown}; {fix}.")
            fields[key] = meta[key]
    return fields
