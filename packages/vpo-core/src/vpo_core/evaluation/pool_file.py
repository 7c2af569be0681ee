"""The saved pool: rewards of shape (T tasks, n completions, m candidates, d) and how they were sampled.

`save_pool` is the one writer and `load_pool` the one reader of pool files. A pool carries its
metadata: the env, the prompt mode (which best@k estimator applies: the chain estimator in multi
mode, iid in single mode), the tasks' ids, reward names and w* (per-task specs), the sampling
settings and the package versions. Two containers, chosen by the file's suffix:

- ``.npy`` (the evaluation app's ``pool_<row>.npy``): the rewards array as before, so ``np.load``
  still reads it, and the metadata beside it in ``<same stem>.json``;
- ``.npz`` (an experiment's compact summary): ``rewards`` and ``metadata`` (a JSON string).

`load_pool` also reads the pools written before pools carried metadata (the committed
``results/*/pools/*.npz`` and ``results/*/calibration/*/pool.npz``, ``pool_<row>.npy`` of older
evaluations): their metadata comes from the ``results.json`` of their evaluation (the row whose
``pool`` names the file) or the ``index.json`` of their experiment summary
(the record whose ``pool`` names it). A bare array with neither is read as the evaluation app wrote
them: single mode when m = 1, multi mode otherwise (`legacy_mode`).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vpo_core.errors import DataFileError, MissingDataError

__all__ = ["FORMAT_VERSION", "SavedPool", "legacy_mode", "load_pool", "new_pool", "package_versions", "save_pool"]

FORMAT_VERSION = 1
"""Version of the metadata layout; `load_pool` reads this one and the pools saved before metadata existed."""


@dataclass(frozen=True, eq=False)
class SavedPool:
    """A split's candidate pools and how they were made.

    Attributes:
        rewards: Shape (T, n, m, d); rows of a task with fewer dimensions than d (per-task specs) are
            zero-padded.
        mode: ``"multi"`` (chains of m candidates: the chain estimator) or ``"single"`` (iid).
        env: The env id, or None (unknown for old pools).
        label: The evaluated row (checkpoint name and conditioning), or None.
        task_ids: Ids of the T tasks in row order, or None.
        reward_names: Each task's reward dimension names (its spec), or None.
        w_star: Each task's w*, one list of floats per task, or None.
        settings: Sampling settings (temperature, top_p, max_new_tokens, samples, seeds, conditioning, ...).
        versions: Package versions of the writer (`package_versions`).
        source: Where the metadata came from: ``"metadata"``, ``"results.json"``, ``"index.json"`` or
            ``"shape"`` (a bare array; the mode follows `legacy_mode`). Not saved.
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
    source: str = "metadata"

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
        meta = {k: v for k, v in asdict(self).items() if k not in ("rewards", "source")}
        return {"format": FORMAT_VERSION, "m": self.m, "shape": list(self.rewards.shape), **meta}


def legacy_mode(rewards: NDArray[Any]) -> str:
    """The mode of a bare pool array with no record of its sampling: single when m = 1, else multi.

    The evaluation app's pools followed this rule before they carried their mode (every method with
    m > 1 prompts in multi mode); a multi-mode pool with m = 1 needs its metadata.
    """
    return "multi" if np.shape(rewards)[2] > 1 else "single"


def package_versions() -> dict[str, str]:
    """Versions of vpo-core, numpy, the installed env packages and Python."""
    names = ["vpo-core", "numpy"]
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
    """Read a pool file of `save_pool`, or one saved before pools carried metadata.

    Args:
        path: A ``.npy`` or ``.npz`` pool file.

    Returns:
        The pool; its rewards as stored (cast with ``.astype`` where float64 is needed).

    Raises:
        MissingDataError: If there is no such file (a FileNotFoundError).
        DataFileError: For a file that holds no pool of shape (T, n, m, d), or metadata (the ``.json``
            sidecar of a ``.npy`` pool, the ``metadata`` of an ``.npz`` one) that is not JSON or not of
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
    if meta is not None:
        return SavedPool(rewards=rewards, **_checked_metadata(meta[0], meta[1], np.shape(rewards)))
    return _legacy_pool(file, rewards)


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
    fix = "write the pool again with vpo_core.evaluation.save_pool, or delete the metadata to read the bare array"
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


def _legacy_pool(file: Path, rewards: NDArray[Any]) -> SavedPool:
    """A pool saved without metadata: what its evaluation's results.json or its summary's index.json says."""
    pool = SavedPool(rewards=rewards, mode=legacy_mode(rewards), source="shape")
    results = _read_json(file.parent / "results.json")
    rows = results.get("rows") if isinstance(results, dict) else None  # the schema of docs/evaluation.md
    if isinstance(rows, dict):
        named = [(k, r) for k, r in rows.items() if isinstance(r, dict) and r.get("pool") == file.name]
        if named and named[0][1].get("mode") in ("single", "multi"):
            label, row = named[0]
            settings = {k: v for k, v in _settings(row).items() if k != "env"}
            env = results.get("env")
            return replace(
                pool,
                mode=row["mode"],
                env=env if isinstance(env, str) else None,
                label=label,
                settings=settings,
                source="results.json",
            )
    for folder in (file.parent, file.parent.parent):
        summary = _read_json(folder / "index.json")
        if not isinstance(summary, dict):
            continue
        relative = file.resolve().relative_to(folder.resolve()).as_posix()
        records = summary.get("pools")
        for record in records if isinstance(records, list) else []:
            if (
                isinstance(record, dict)
                and record.get("pool") == relative
                and record.get("mode") in ("single", "multi")
            ):
                config = summary.get("config")
                env = config.get("env") if isinstance(config, dict) else None
                label = record.get("label")
                return replace(
                    pool,
                    mode=record["mode"],
                    env=env if isinstance(env, str) else None,
                    label=label if isinstance(label, str) else None,
                    source="index.json",
                )
    return pool


def _read_json(path: Path) -> Any:
    """The JSON in `path`, or None where there is none (no file, or not JSON)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):  # no file, not text or not JSON, nested past the parser
        return None


def _settings(row: dict[str, Any]) -> dict[str, Any]:
    settings = row.get("settings")
    return settings if isinstance(settings, dict) else {}
