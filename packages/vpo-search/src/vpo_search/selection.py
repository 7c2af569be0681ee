"""Which problems to search: the hardest ones of two evaluation runs, or an explicit list."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vpo_core import Task
from vpo_core.evaluation import SavedPool, best_at_k_of_pool, load_pool
from vpo_search.protocol import SearchableEnv

__all__ = ["check_pool_source", "hardest_problems", "load_pools", "pool_best_at_k", "resolve_problems"]


def load_pools(paths: Sequence[str | os.PathLike[str]]) -> dict[str, SavedPool]:
    """The candidate pools saved by ``vpo eval`` (``pool_<name>.npy``, shape (T, n, m, d)).

    Args:
        paths: Pool files (``.npy`` or ``.npz``), or evaluation directories (every ``pool_*.npy`` in them).

    Returns:
        Pools (`vpo_core.evaluation.load_pool`: rewards with their mode) by file path.

    Raises:
        FileNotFoundError: For a path that is neither a pool file nor a directory with pools.
        ValueError: For a pool that is not 4-dimensional, or the same file given twice.
    """
    pools: dict[str, SavedPool] = {}
    for raw in paths:
        path = Path(raw)
        files = sorted(path.glob("pool_*.npy")) if path.is_dir() else [path]
        if not files or not all(f.is_file() for f in files):
            raise FileNotFoundError(f"{path}: no pool_*.npy found; pass the pools vpo eval saved (out=).")
        for file in files:
            name = str(file.resolve())
            if name in pools:
                raise ValueError(f"{file} is given twice; pass each arm's pool once.")
            pools[name] = load_pool(file)
    return pools


def pool_best_at_k(env: SearchableEnv, tasks: Sequence[Task[Any]], pool: SavedPool, k: int) -> NDArray:
    """best@k of the normalized w*-score per task (the pool's own estimator: chains in multi mode).

    Args:
        env: The env (its per-task spec scalarizes).
        tasks: The pool's T tasks, in order.
        pool: Rewards of shape (T, n, m, d'); d' may exceed a task's d when rows were zero-padded.
        k: Candidates.

    Returns:
        best@k per task, shape (T,).

    Raises:
        ValueError: If the pool is smaller than k or holds non-zero padding.
    """
    rewards = pool.rewards.astype(np.float64)
    n_tasks, n, m, width = rewards.shape
    if n * m < k:
        raise ValueError(f"a pool of {n}·{m} candidates per task cannot give best@{k}; evaluate with samples>={k}.")
    out = np.empty(n_tasks)
    for i, task in enumerate(tasks):
        spec = env.spec_for(task)
        if width < spec.dim or np.any(rewards[i, ..., spec.dim :] != 0):
            raise ValueError(
                f"pool rows of {task.id} have {width} dims with non-zero padding; its spec has {spec.dim}."
            )
        scores = spec.scalarize(rewards[i, ..., : spec.dim]) / max(spec.max_scalar(), 1e-12)  # (n, m)
        out[i] = best_at_k_of_pool(scores, k, mode=pool.mode)
    return out


def check_pool_source(env: SearchableEnv, tasks: Sequence[Task[Any]], pool: SavedPool, name: str) -> None:
    """Refuse a pool that was not made by this env on these tasks.

    A pool's rows are matched to the split's tasks by position, so a pool of another env (or of the
    same env on other data or another split) would select problems by someone else's scores. The pool's
    metadata (`vpo_core.evaluation.SavedPool`: ``env``, ``task_ids``, ``reward_names``, written by
    ``vpo eval``) must name this env and the split's first T tasks in order; a pool whose
    metadata names no env cannot be checked and is refused too.

    Args:
        env: The env being searched.
        tasks: The split's tasks.
        pool: The pool.
        name: Its file, for the message.

    Raises:
        ValueError: Naming the file, what it records and what the search expected.
    """
    expected = str(env.env_id)
    if pool.env is None:
        raise ValueError(
            f"pool {name} does not record which env made it (its metadata has no env); re-run "
            f"vpo eval on {expected} to save it with its metadata, or pass problems= explicitly."
        )
    if pool.env != expected:
        raise ValueError(
            f"pool {name} was made by env {pool.env!r}, but the search runs on {expected!r}; pass the "
            f"pools vpo eval saved for {expected}."
        )
    count = int(pool.rewards.shape[0])
    if pool.task_ids is not None:
        ids = [str(task.id) for task in tasks[:count]]
        if len(pool.task_ids) != count or [str(t) for t in pool.task_ids] != ids:
            where = next((i for i, (a, b) in enumerate(zip(pool.task_ids, ids, strict=False)) if str(a) != b), None)
            detail = (
                f"row {where} is {pool.task_ids[where]!r}, the split's task {where} is {ids[where]!r}"
                if where is not None
                else f"it has {len(pool.task_ids)} task ids for {count} rows and the split {len(tasks)} tasks"
            )
            raise ValueError(
                f"pool {name} was evaluated on other tasks than this split's ({detail}); are the env options (env.KEY=) "
                "(data, source) or split the evaluation's?"
            )
    if pool.reward_names is not None:
        for i, task in enumerate(tasks[: min(count, len(pool.reward_names))]):
            names = list(env.spec_for(task).names)
            if list(pool.reward_names[i]) != names:
                raise ValueError(
                    f"pool {name} scored task {task.id} on {list(pool.reward_names[i])}, but the env's spec is "
                    f"{names}; re-evaluate with this env's version."
                )


def hardest_problems(
    env: SearchableEnv, tasks: Sequence[Task[Any]], pools: dict[str, SavedPool], *, k: int = 30
) -> list[Task[Any]]:
    """The tasks on which every arm scores 0 at best@k (the paper's 32 hardest at k = 30).

    Args:
        env: The env.
        tasks: The split's tasks; pool row i is task i (``vpo eval`` evaluates the first T).
        pools: One pool per arm, shape (T, n, m, d).
        k: The budget.

    Returns:
        The selected tasks, in split order.

    Raises:
        ValueError: Without pools, for a pool of another env or other tasks (`check_pool_source`), for
            pools of different T, or more rows than tasks.
    """
    if not pools:
        raise ValueError("problems=hardest needs the evaluation pools of the arms: pools=<dir or pool_*.npy>,...")
    for name, pool in pools.items():
        check_pool_source(env, tasks, pool, name)
    sizes = {name: pool.rewards.shape[0] for name, pool in pools.items()}
    if len(set(sizes.values())) != 1:
        raise ValueError(f"the pools cover different numbers of tasks {sizes}; evaluate both arms on the same tasks.")
    count = next(iter(sizes.values()))
    if count > len(tasks):
        raise ValueError(
            f"the pools have {count} tasks but the split has {len(tasks)}; are the env options (env.KEY=) the evaluation's?"
        )
    zero = np.ones(count, dtype=bool)
    for pool in pools.values():
        zero &= pool_best_at_k(env, tasks[:count], pool, k) <= 0.0
    return [task for task, hard in zip(tasks[:count], zero, strict=True) if hard]


def resolve_problems(
    env: SearchableEnv,
    tasks: Sequence[Task[Any]],
    problems: str,
    pools: Sequence[str],
    *,
    k: int,
    max_problems: int | None,
) -> list[Task[Any]]:
    """The problems a run searches.

    Args:
        env: The env.
        tasks: The split's tasks.
        problems: ``hardest``, ``all``, or comma-separated task indices or task ids.
        pools: Pool paths for ``hardest``.
        k: best@k budget of ``hardest``.
        max_problems: Keep the first this many (None: all).

    Raises:
        ValueError: For an index out of range or an unknown task id.
    """
    if problems == "hardest":
        chosen = hardest_problems(env, tasks, load_pools(pools), k=k)
    elif problems == "all":
        chosen = list(tasks)
    else:
        by_id = {task.id: task for task in tasks}
        chosen = []
        for item in (p.strip() for p in problems.split(",") if p.strip()):
            if item.lstrip("-").isdigit():
                if not 0 <= int(item) < len(tasks):
                    raise ValueError(f"problem index {item} is out of range: the split has {len(tasks)} tasks.")
                chosen.append(tasks[int(item)])
            elif item in by_id:
                chosen.append(by_id[item])
            else:
                raise ValueError(f"unknown problem {item!r}: give task indices or ids such as {tasks[0].id!r}.")
    return chosen if max_problems is None else chosen[:max_problems]
