"""Metrics: published test vectors, subset/chain enumeration, exact rationals, properties."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from vpo_core.metrics import (
    EXPECTED_WEIGHTS,
    best_at_k,
    best_at_k_chains,
    best_at_k_curve,
    best_at_k_weights,
    chain_pass_at_k,
    collinearity,
    evaluation_weights,
    expected_best_at_k,
    pareto_fraction,
    pass_at_k,
    reward_diversity,
    solution_pass_at_k,
)

SCORES = st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.75, 1.0])


# ------------------------------------------------------------------------------ test vectors
def test_tv1_and_tv7_best_at_k_weights():
    np.testing.assert_allclose(best_at_k_weights(4, 2), [0, 1 / 6, 1 / 3, 1 / 2], atol=1e-15)
    np.testing.assert_allclose(best_at_k_weights(6, 3), [0, 0, 1 / 20, 3 / 20, 3 / 10, 1 / 2], atol=1e-15)
    big = best_at_k_weights(5000, 1000)
    assert abs(big.sum() - 1.0) < 1e-12
    assert big[-1] == pytest.approx(0.2, abs=1e-15)
    assert np.all(big[:999] == 0)
    x = [0.1, 0.5, 0.3, 0.9]
    assert [best_at_k(x, k) for k in (1, 2, 3, 4)] == pytest.approx([9 / 20, 2 / 3, 4 / 5, 9 / 10], abs=1e-15)


def test_tv4_and_tv7_pass_at_k():
    assert pass_at_k(8, 2, 4) == pytest.approx(11 / 14, abs=1e-15)
    assert pass_at_k(5000, 5, 1000) == pytest.approx(0.67248390966683558, abs=2e-16)
    assert pass_at_k(1000, 3, 1) == pytest.approx(0.003, abs=1e-15)
    assert pass_at_k(1000, 0, 10) == 0.0
    assert pass_at_k(10, 8, 3) == 1.0
    np.testing.assert_allclose(pass_at_k(np.array([8, 8, 10]), np.array([2, 0, 10]), 4), [11 / 14, 0, 1])


@pytest.mark.parametrize(("n", "c", "k"), [(5000, 5, 1000), (300, 17, 29), (64, 63, 1), (2000, 1000, 999)])
def test_pass_at_k_matches_exact_rationals(n, c, k):
    exact = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
    assert pass_at_k(n, c, k) == pytest.approx(float(exact), rel=1e-14, abs=1e-16)


def test_tv6_chain_best_at_k():
    chains = [[0.2, 0.9, 0.1], [0.4, 0.4, 0.4], [0.0, 0.3, 0.8]]
    expected = [1 / 5, 8 / 15, 7 / 10, 7 / 10, 4 / 5, 13 / 15, 13 / 15, 9 / 10, 9 / 10]
    assert [best_at_k_chains(chains, k) for k in range(1, 10)] == pytest.approx(expected, abs=1e-14)


def test_tv8_expected_best_at_k():
    pool = [[1, 0], [0, 1], [0.5, 0.5]]
    weights = [[1, 0], [0.5, 0.5]]
    assert [expected_best_at_k(pool, k, weights=weights) for k in (1, 2, 3)] == pytest.approx([0.5, 2 / 3, 0.75])


def test_tv9_diversity_and_collinearity():
    assert reward_diversity([[1, 0], [0, 1], [1, 1]]) == pytest.approx(4 / 3)
    v = [[0, 3, 0, 1], [1, 2, 1, 1], [2, 1, 1, 1], [3, 0, 0, 1]]
    assert collinearity(v) == pytest.approx(-1 / 3)
    assert collinearity(v, absolute=True) == pytest.approx(1 / 3)
    assert math.isnan(collinearity([[1, 0], [2, 0]]))
    assert reward_diversity([[0.3, 0.2]]) == 0.0


# -------------------------------------------------------------------------------- brute force
@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 8), elements=SCORES), st.data())
def test_best_at_k_equals_subset_enumeration(x, data):
    k = data.draw(st.integers(1, len(x)))
    brute = np.mean([max(x[list(s)]) for s in itertools.combinations(range(len(x)), k)])
    assert best_at_k(x, k) == pytest.approx(brute, abs=1e-12)
    assert best_at_k_curve(x)[k - 1] == pytest.approx(brute, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 5), st.integers(1, 3)), elements=SCORES), st.data())
def test_chain_best_at_k_equals_ordered_chain_enumeration(chains, data):
    n, m = chains.shape
    k = data.draw(st.integers(1, n * m))
    c = -(-k // m)
    values = [max(np.concatenate([chains[p] for p in perm])[:k]) for perm in itertools.permutations(range(n), c)]
    assert best_at_k_chains(chains, k) == pytest.approx(np.mean(values), abs=1e-12)
    if m == 1:
        assert best_at_k_chains(chains, k) == pytest.approx(best_at_k(chains[:, 0], k), abs=1e-12)


BOOLS = st.sampled_from([0, 1])


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.int64, st.tuples(st.integers(1, 6), st.integers(1, 3)), elements=BOOLS), st.data())
def test_chain_and_solution_pass_at_k_equal_subset_enumeration(success, data):
    n, m = success.shape
    k_chains = data.draw(st.integers(1, n))
    chains = [any(success[list(s)].reshape(-1)) for s in itertools.combinations(range(n), k_chains)]
    assert chain_pass_at_k(success, k_chains) == pytest.approx(np.mean(chains), abs=1e-12)
    flat = success.reshape(-1)
    k_solutions = data.draw(st.integers(1, n * m))
    solutions = [any(flat[list(s)]) for s in itertools.combinations(range(n * m), k_solutions)]
    assert solution_pass_at_k(success, k_solutions) == pytest.approx(np.mean(solutions), abs=1e-12)
    if m == 1:  # one candidate per chain: both are Chen et al.'s pass@k
        assert chain_pass_at_k(success, k_chains) == pytest.approx(pass_at_k(n, int(flat.sum()), k_chains))
    # k chains hold k·m candidates, so at equal k the chain level is never below the solution level
    assert chain_pass_at_k(success, k_chains) >= solution_pass_at_k(success, k_chains) - 1e-12


def _pareto_brute(r):
    front = 0
    for i in range(len(r)):
        dominated = any(all(r[j] >= r[i]) and any(r[j] > r[i]) for j in range(len(r)) if j != i)
        front += not dominated
    return front / len(r)


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 12), st.integers(1, 4)), elements=SCORES))
def test_pareto_fraction_equals_the_pairwise_definition(r):
    assert pareto_fraction(r) == pytest.approx(_pareto_brute(r), abs=1e-12)


def test_pareto_fraction_examples_and_blocks():
    # (1, 0) and (0, 1) trade off; (0.5, 0.5) is on the front too; (0.4, 0.4) and (0, 0) are dominated;
    # a copy of a front point stays on the front.
    r = np.array([[1, 0], [0, 1], [0.5, 0.5], [0.4, 0.4], [0, 0], [1, 0]], dtype=float)
    assert pareto_fraction(r) == pytest.approx(4 / 6)
    assert pareto_fraction(np.ones((5, 3))) == 1.0
    big = np.random.default_rng(0).random((700, 3)).round(1)  # more rows than one comparison block (499)
    geq = np.all(big[None] >= big[:, None], axis=-1)  # [i, j]: j at least as good as i everywhere
    gt = np.any(big[None] > big[:, None], axis=-1)
    assert pareto_fraction(big) == pytest.approx(np.mean(~np.any(geq & gt, axis=1)), abs=1e-12)


def test_expected_best_at_k_chains_matches_per_weight_loop():
    rng = np.random.default_rng(3)
    pool = rng.random((6, 3, 4))
    weights = rng.dirichlet(np.ones(4), size=5)
    loop = np.mean([best_at_k_chains(pool @ w, 7) for w in weights])
    assert expected_best_at_k(pool, 7, weights=weights, chains=True) == pytest.approx(loop, abs=1e-12)


def _exact_expected_best_at_k_2d(rewards, k, chains):
    """E_w[best@k] for d = 2 exactly: w = (t, 1 - t) with t ~ U(0, 1) under Dir(1, 1), and best@k is
    piecewise linear in t with kinks only where two candidates' scores cross, so the trapezoid rule
    on the crossing points integrates it exactly."""
    flat = np.asarray(rewards, dtype=np.float64).reshape(-1, 2)
    slope, intercept = flat[:, 0] - flat[:, 1], flat[:, 1]  # score(t) = intercept + slope · t
    knots = {0.0, 1.0}
    for i, j in itertools.combinations(range(len(flat)), 2):
        if slope[i] != slope[j]:
            t = (intercept[j] - intercept[i]) / (slope[i] - slope[j])
            if 0.0 < t < 1.0:
                knots.add(float(t))
    ts = np.array(sorted(knots))
    values = [expected_best_at_k(rewards, k, weights=[[t, 1.0 - t]], chains=chains) for t in ts]
    return float(np.trapezoid(values, ts))


def _maze_like_pool(rng, shape, d):
    """Rewards on a grid like maze's (a failed candidate is the zero vector), shape (*shape, d)."""
    r = rng.integers(0, 6, size=(*shape, d)) / 5.0
    r[rng.random(shape) < 0.3] = 0.0
    return r


def test_expected_best_at_k_is_within_0_002_of_the_exact_integral_for_d_2():
    # The fixed 100 iid draws used before missed by up to 0.007 on these pools; the Sobol set stays within 0.002.
    rng = np.random.default_rng(0)
    errors = []
    for _ in range(6):
        for shape, chains in (((30,), False), ((10, 3), True)):
            pool = _maze_like_pool(rng, shape, 2)
            for k in (1, 5, 30):
                exact = _exact_expected_best_at_k_2d(pool, k, chains)
                errors.append(abs(expected_best_at_k(pool, k, chains=chains) - exact))
    assert max(errors) <= 0.002, max(errors)


def test_expected_best_at_k_is_within_0_002_of_a_2_to_the_18_reference_for_d_4():
    # reference: 2^18 iid Dir(1) draws (Monte Carlo error ~3e-4); the old 100 draws missed it by more than 0.002
    rng = np.random.default_rng(11)
    reference_weights = np.random.default_rng(99).dirichlet(np.ones(4), size=2**18)
    for _ in range(3):
        pool = _maze_like_pool(rng, (30,), 4)
        pool[..., 0] = np.where(pool.any(axis=-1), 1.0, 0.0)  # completion, as in maze
        reference = expected_best_at_k(pool, 5, weights=reference_weights)
        assert expected_best_at_k(pool, 5) == pytest.approx(reference, abs=0.002)


def test_evaluation_weights_are_a_fixed_dirichlet_set():
    w = evaluation_weights(4)
    assert w.shape == (EXPECTED_WEIGHTS, 4)
    assert np.allclose(w.sum(axis=1), 1.0)
    assert np.all(w >= 0)
    np.testing.assert_allclose(w.mean(axis=0), 0.25, atol=0.002)  # the old 100 draws: (0.249, 0.299, 0.231, 0.222)
    np.testing.assert_array_equal(w, evaluation_weights(4))
    assert not np.array_equal(w, evaluation_weights(4, seed=1))
    assert evaluation_weights(30, 8).shape == (8, 30)  # beyond Sobol's 21 dimensions: iid draws
    with pytest.raises(ValueError, match="num_weights"):
        evaluation_weights(4, 0)


def test_diversity_matches_pairwise_loop():
    rng = np.random.default_rng(5)
    pools = rng.random((3, 7, 4))
    loop = np.mean(
        [np.mean([np.abs(p[i] - p[j]).sum() for i, j in itertools.combinations(range(7), 2)]) for p in pools]
    )
    assert reward_diversity(pools) == pytest.approx(loop, abs=1e-12)


# --------------------------------------------------------------------------------- properties
@settings(max_examples=50, deadline=None)
@given(hnp.arrays(np.float64, st.integers(2, 30), elements=st.floats(0, 1)))
def test_best_at_k_is_monotone_between_mean_and_max(x):
    curve = best_at_k_curve(x)
    assert curve[0] == pytest.approx(x.mean(), abs=1e-12)
    assert curve[-1] == pytest.approx(x.max(), abs=1e-12)
    assert np.all(np.diff(curve) >= -1e-12)


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 60), st.data())
def test_pass_at_k_in_unit_interval_and_monotone(n, data):
    c = data.draw(st.integers(0, n))
    values = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    assert all(0.0 <= v <= 1.0 for v in values)
    assert np.all(np.diff(values) >= -1e-12)


# ------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: best_at_k([0.1, 0.2], 3), r"1 <= k <= n \(pool size 2\)"),
        (lambda: best_at_k([0.1, np.nan], 1), "NaN or inf"),
        (lambda: best_at_k(0.3, 1), "at least 1 dimension"),
        (lambda: best_at_k_chains([[0.1, 0.2]], 3), r"1 <= k <= n_chains·m = 1·2"),
        (lambda: pass_at_k(4, 5, 1), "0 <= c <= n"),
        (lambda: pass_at_k(4, 1, 5), "1 <= k <= n"),
        (lambda: expected_best_at_k([[1, 0]], 1, weights=[[1, 0, 0]]), r"weights must have shape \(K, 2\)"),
        (lambda: reward_diversity(np.zeros((2, 2, 2, 2))), r"\(N, d\) or \(P, N, d\)"),
        (lambda: chain_pass_at_k([[1, 0], [0, 0]], 3), r"k \(chains\) must satisfy 1 <= k \(chains\) <= n"),
        (lambda: solution_pass_at_k([[1, 0], [0, 0]], 5), r"k \(candidates\) must satisfy"),
        (lambda: chain_pass_at_k([[0.5]], 1), "booleans"),
        (lambda: chain_pass_at_k([1, 0], 1), r"shape \(n chains, m candidates\)"),
        (lambda: pareto_fraction(np.zeros((0, 2))), r"N >= 1"),
    ],
)
def test_bad_input_is_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()
