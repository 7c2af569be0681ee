"""Speed of vpo-core's estimators and metrics (issue 2), against veRL's GRPO estimator in the same run.

    OMP_NUM_THREADS=1 uv run python benchmarks/bench_core.py [--baseline GIT_REV]

Prints a markdown table; figures go to BENCHMARKS.md. One core: the thread variables are set before
numpy and torch are imported. ``--baseline REV`` also times ``compute_advantages('vpo')`` of the
vpo-core at git revision REV (extracted to a temporary directory), interleaved with today's in the
same process, and prints both with their ratio: old against new on the same machine at the same time.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import importlib  # noqa: E402
import io  # noqa: E402
import itertools  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tarfile  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import timeit  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

import vpo_core  # noqa: E402
from vpo_core import AdvantageConfig, RolloutBatch, compute_advantages  # noqa: E402
from vpo_core.advantages import rollout_scalars  # noqa: E402
from vpo_core.metrics import best_at_k_curve  # noqa: E402
from vpo_core.normalizers import group_zscore  # noqa: E402
from vpo_core.weights import KeyedWeights  # noqa: E402

B, G, M, D, K, L = 128, 8, 3, 32, 100, 512


def best_ms(fn, number: int, repeat: int = 7) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e3


def baseline_vpo_core(rev: str, into: Path):
    """vpo_core as of git revision `rev`, importable as ``vpo_core_baseline`` (its imports renamed)."""
    root = Path(__file__).resolve().parents[1]
    archive = subprocess.run(
        ["git", "archive", rev, "packages/vpo-core/src/vpo_core"], cwd=root, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    package = into / "vpo_core_baseline"
    (into / "packages/vpo-core/src/vpo_core").rename(package)
    for source in package.rglob("*.py"):
        text = source.read_text()
        source.write_text(
            text.replace("from vpo_core", "from vpo_core_baseline").replace(
                "import vpo_core", "import vpo_core_baseline"
            )
        )
    sys.path.insert(0, str(into))
    return importlib.import_module("vpo_core_baseline")


def _vpo_call(package: Any, rewards: np.ndarray, w_star: np.ndarray, fresh_keys: Any) -> Any:
    """One VPO advantage call of `package` (vpo_core or a baseline's copy), in the API that revision has."""
    if not hasattr(package, "AdvantageConfig"):  # revisions before issue 39 item 4: the keyword API
        return lambda: package.compute_advantages("vpo", rewards, w_star=w_star, group_keys=fresh_keys())
    config = package.AdvantageConfig.parse("vpo")
    return lambda: package.compute_advantages(
        package.RolloutBatch.of(rewards, w_star=w_star, keys=fresh_keys()), config
    )


def compare(rev: str, rewards: np.ndarray, w_star: np.ndarray, fresh_keys) -> None:
    """Today's and `rev`'s VPO estimator, interleaved 15 times; the best process-CPU time of each."""
    with tempfile.TemporaryDirectory() as tmp:
        baseline = baseline_vpo_core(rev, Path(tmp))
        runs = {
            "old": _vpo_call(baseline, rewards, w_star, fresh_keys),
            "new": _vpo_call(vpo_core, rewards, w_star, fresh_keys),
        }
        times: dict[str, list[float]] = {"old": [], "new": []}
        for _ in range(15):
            for name, run in runs.items():
                times[name].append(min(timeit.repeat(run, timer=time.process_time, number=10, repeat=3)) / 10 * 1e3)
    old_ms, new_ms = min(times["old"]), min(times["new"])
    print(
        f"\n`compute_advantages('vpo')`, process CPU time, best of 15 interleaved rounds: {rev} {old_ms:.3f} ms, "
        f"working tree {new_ms:.3f} ms, new/old {new_ms / old_ms:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", metavar="GIT_REV", help="also time vpo-core's VPO estimator at this revision")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rewards = rng.random((B, G, M, D))
    w_star = np.full(D, 1 / D)
    counter = itertools.count()

    def fresh_keys() -> list[str]:
        step = next(counter)
        return [f"{step}:{b}" for b in range(B)]

    fixed_keys = fresh_keys()
    vpo, grpo = AdvantageConfig.parse("vpo"), AdvantageConfig.parse("grpo")
    vpo_fresh = best_ms(lambda: compute_advantages(RolloutBatch.of(rewards, w_star=w_star, keys=fresh_keys()), vpo), 20)
    keyed = KeyedWeights(0)
    draws = best_ms(lambda: keyed.weights(D, K, fresh_keys()), 20)
    scalars = rollout_scalars(RolloutBatch.of(rewards, w_star=w_star, keys=fixed_keys), vpo)
    zscore = best_ms(lambda: group_zscore(scalars), 200)
    grpo_ours = best_ms(lambda: compute_advantages(RolloutBatch.of(rewards[:, :, :1], w_star=w_star), grpo), 100)

    import torch
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage

    torch.set_num_threads(1)
    token_rewards = torch.zeros(B * G, L)
    lengths = torch.randint(64, L + 1, (B * G,))
    mask = (torch.arange(L)[None, :] < lengths[:, None]).float()
    token_rewards[torch.arange(B * G), lengths - 1] = torch.from_numpy(scalars.reshape(-1)).float()
    index = np.array([f"uid-{b}" for b in range(B) for _ in range(G)], dtype=object)
    verl_grpo = best_ms(lambda: compute_grpo_outcome_advantage(token_rewards, mask, index), 10)

    pool = rng.random(1000)
    curve = best_ms(lambda: best_at_k_curve(pool), 20)

    rows = [
        ("veRL 0.9.1 `compute_grpo_outcome_advantage`, 1024 rollouts × 512 tokens (anchor)", verl_grpo),
        ("`compute_advantages('vpo')`, B=128 G=8 m=3 d=32 K=100, fresh group keys every call", vpo_fresh),
        ("  of which: the 128×100×32 keyed float64 Dirichlet weights (sha256-keyed PCG64 per group)", draws),
        ("  of which: group z-score", zscore),
        ("`compute_advantages('grpo')`, same batch (m=1)", grpo_ours),
        ("`best_at_k_curve`, every k of a 1000-sample pool", curve),
    ]
    print("| what | ms (best of 7) | anchor / this |")
    print("|---|---:|---:|")
    for name, ms in rows:
        print(f"| {name} | {ms:.3f} | {verl_grpo / ms:.1f}× |")
    if args.baseline:
        compare(args.baseline, rewards, w_star, fresh_keys)


if __name__ == "__main__":
    main()
