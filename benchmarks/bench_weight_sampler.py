"""Noise of VPO's advantages under iid Dirichlet weights vs scrambled Sobol weights (issue 25).

    OMP_NUM_THREADS=1 uv run python benchmarks/bench_weight_sampler.py [--groups 32] [--seeds 100] [--timing-only]

Groups of maze rewards as VPO trains on them: for each of the first `--groups` maze training tasks,
G = 8 completions of m = 3 random valid routes (the env's own warm-start demonstrations, parsed and
scored by the env: de-duplicated training rewards, d = 4). For each group the advantages
``compute_advantages("vpo", ...)`` are computed under `--seeds` different seeds (fresh weights each)
at K weights per group; their variance over seeds, averaged over rollouts and groups, is the noise
the weight sampling adds to the advantage. The exact advantage (K → ∞) does not depend on the seed,
so this variance is the Monte Carlo error itself.

Prints (1) the noise at each K for both samplers and their ratio, and (2) how many plain Dirichlet
draws give the noise that Sobol reaches at K = 100: a log-log fit of the Dirichlet noise over K
(Monte Carlo noise falls as ~1/K) gives a guess, the noise is measured on a grid around it, and K is
interpolated between the two measured values that bracket the target.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import timeit  # noqa: E402

import numpy as np  # noqa: E402

import vpo_core  # noqa: E402
from vpo_core import AdvantageConfig, RolloutBatch, compute_advantages  # noqa: E402

G, M = 8, 3


def maze_groups(n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Training rewards (B, G, m, d) of random valid maze routes, and the env's w*."""
    env = vpo_core.make("maze-v1")
    tasks = env.tasks("train")[:n_groups]
    rng = np.random.default_rng(0)
    groups = []
    for task in tasks:
        rows = []
        for _ in range(G):
            text = env.demonstration(task, mode="multi", m=M, rng=rng)
            rows.append(env.score_completion(task, text, mode="multi", m=M).training_rewards)
        groups.append(np.stack(rows))
    return np.stack(groups), env.reward_spec.w_star


def noise(rewards: np.ndarray, w_star: np.ndarray, k: int, sampler: str, seeds: int) -> float:
    """Mean over rollouts of the variance over seeds of the VPO advantage (groups with any spread only)."""
    keys = [f"task-{b}" for b in range(rewards.shape[0])]
    draws = np.stack(
        [
            compute_advantages(
                RolloutBatch.of(rewards, w_star=w_star, keys=keys),
                AdvantageConfig.parse("vpo", seed=s, num_weights=k, weight_sampler=sampler),
            )
            for s in range(seeds)
        ]
    )  # (seeds, B, G)
    return float(draws.var(axis=0, ddof=1).mean())


def timing(w_star: np.ndarray) -> None:
    """Cost of one compute_advantages("vpo") call, B = 128 groups x G = 8 x m = 3 x d = 4, K = 100, per sampler."""
    rewards = np.random.default_rng(0).random((128, G, M, 4))
    ms = {}
    for sampler in ("dirichlet", "sobol"):
        calls = iter(range(10**9))  # fresh group keys every call, as in training

        def run(sampler: str = sampler, calls=calls) -> None:
            keys = [f"{next(calls)}:{b}" for b in range(128)]
            compute_advantages(
                RolloutBatch.of(rewards, w_star=w_star, keys=keys),
                AdvantageConfig.parse("vpo", num_weights=100, weight_sampler=sampler),
            )

        ms[sampler] = min(timeit.repeat(run, number=5, repeat=5)) / 5 * 1e3
    print("| compute_advantages('vpo'), B=128 G=8 m=3 d=4 K=100 | ms (best of 5) | sobol / dirichlet |")
    print("|---|---:|---:|")
    print(f"| dirichlet (anchor) | {ms['dirichlet']:.2f} | 1.00x |")
    print(f"| sobol | {ms['sobol']:.2f} | {ms['sobol'] / ms['dirichlet']:.2f}x |\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=32)
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--timing-only", action="store_true", help="only time one call per sampler")
    args = parser.parse_args()
    timing(np.full(4, 0.25))
    if args.timing_only:
        return
    rewards, w_star = maze_groups(args.groups)
    spread = np.ptp(rewards.reshape(rewards.shape[0], -1), axis=1) > 0
    rewards = rewards[spread]
    print(
        f"{rewards.shape[0]} maze groups with distinct rewards, (G, m, d) = {rewards.shape[1:]}, {args.seeds} seeds\n"
    )
    ks = (8, 16, 32, 64, 100, 128, 256)
    table = {(k, s): noise(rewards, w_star, k, s, args.seeds) for k in ks for s in ("dirichlet", "sobol")}
    print("| K | var, dirichlet | var, sobol | dirichlet / sobol |")
    print("|---:|---:|---:|---:|")
    for k in ks:
        d, q = table[k, "dirichlet"], table[k, "sobol"]
        print(f"| {k} | {d:.3e} | {q:.3e} | {d / q:.2f}x |")
    # K of plain draws matching sobol's noise at K = 100: a log-log fit of the Dirichlet column gives a first
    # guess, then the noise is measured on a grid around it and interpolated (log-log) between the two
    # measured K that bracket the target.
    log_k = np.log(np.array(ks, dtype=float))
    log_v = np.log([table[k, "dirichlet"] for k in ks])
    slope, intercept = np.polyfit(log_k, log_v, 1)
    target = table[100, "sobol"]
    guess = float(np.exp((np.log(target) - intercept) / slope))
    grid = sorted({round(guess * f) for f in (0.4, 0.55, 0.75, 1.0, 1.3)})
    measured = [(k, noise(rewards, w_star, k, "dirichlet", args.seeds)) for k in grid]
    print(f"\nDirichlet noise ~ K^{slope:.2f} (fit over K = {ks[0]}..{ks[-1]}); sobol at K = 100: {target:.3e}")
    print("measured near the fit's guess: " + ", ".join(f"K={k}: {v:.3e}" for k, v in measured))
    below = [(k, v) for k, v in measured if v <= target]
    above = [(k, v) for k, v in measured if v > target]
    if below and above:
        (k0, v0), (k1, v1) = above[-1], below[0]
        t = (np.log(target) - np.log(v0)) / (np.log(v1) - np.log(v0))
        k_match = float(np.exp(np.log(k0) + t * (np.log(k1) - np.log(k0))))
        print(f"plain Dirichlet draws needed for the same noise: K ≈ {k_match:.0f} ({k_match / 100:.0f}x as many)")
    else:
        print(f"the target lies outside the measured grid; the fit's guess is K ≈ {guess:.0f}")


if __name__ == "__main__":
    main()
