import hashlib
import math
import subprocess
import sys

import numpy as np
import pytest

from vpo_core.weights import (
    KeyedWeights,
    dirichlet_weights,
    group_gamma_draws,
    group_weights,
    keyed_generator,
    stable_seed,
)


def test_stable_seed_matches_sha256_definition():
    for seed, key, key_str in [(0, 5, "5"), (3, "abc", "abc"), (7, ("u", 2), "u:2")]:
        expected = int.from_bytes(hashlib.sha256(f"{seed}:{key_str}".encode()).digest()[:8], "little")
        assert stable_seed(seed, key) == expected


def test_dirichlet_rows_on_simplex_and_deterministic():
    w = dirichlet_weights(5, 100, seed=1, key="g")
    assert w.shape == (100, 5)
    assert w.dtype == np.float64
    assert np.all(w >= 0)
    assert np.allclose(w.sum(axis=1), 1.0)
    assert np.array_equal(w, dirichlet_weights(5, 100, seed=1, key="g"))
    assert not np.array_equal(w, dirichlet_weights(5, 100, seed=1, key="h"))
    assert not np.array_equal(w, dirichlet_weights(5, 100, seed=2, key="g"))


def test_dirichlet_mean_is_uniform():
    w = dirichlet_weights(4, 20000, seed=0, key=0)
    assert np.allclose(w.mean(axis=0), 0.25, atol=0.01)


def test_dirichlet_identical_in_fresh_process():
    code = "from vpo_core.weights import dirichlet_weights as f; print(repr(f(3, 4, alpha=0.5, seed=9, key=('a', 1)).tolist()))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert eval(out) == dirichlet_weights(3, 4, alpha=0.5, seed=9, key=("a", 1)).tolist()


def test_group_weights_rows_equal_single_draws():
    keys = ["x", 3, ("p", 1), "x"]
    gw = group_weights(6, 10, keys, alpha=2.0, seed=4)
    assert gw.shape == (4, 10, 6)
    for b, key in enumerate(keys):
        assert np.array_equal(gw[b], dirichlet_weights(6, 10, alpha=2.0, seed=4, key=key))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"d": 0, "k": 3}, "d \\(number of reward dimensions\\)"),
        ({"d": 3, "k": 0}, "k \\(number of weight draws\\)"),
        ({"d": 3, "k": 3, "alpha": 0.0}, "alpha \\(Dirichlet concentration\\)"),
        ({"d": 3, "k": 3, "alpha": float("nan")}, "alpha \\(Dirichlet concentration\\)"),
    ],
)
def test_bad_input(kwargs, message):
    d, k = kwargs.pop("d"), kwargs.pop("k")
    with pytest.raises(ValueError, match=message):
        dirichlet_weights(d, k, **kwargs)


# ------------------------------------------------------------------ the keyed float64 draws
def _reference_generator(seed: int, key: str) -> np.random.Generator:
    """The documented definition: the sha256 digest of f"{seed}:{key}" is PCG64's state and increment."""
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    bit_generator = np.random.PCG64()
    bit_generator.state = {
        "bit_generator": "PCG64",
        "state": {"state": int.from_bytes(digest[:16], "little"), "inc": int.from_bytes(digest[16:], "little") | 1},
        "has_uint32": 0,
        "uinteger": 0,
    }
    return np.random.Generator(bit_generator)


@pytest.mark.parametrize("alpha", [1.0, 0.3, 2.5])
def test_draws_follow_their_definition(alpha):
    keys = ["a", "b", "c"]
    draws = group_gamma_draws(4, 7, keys, alpha=alpha, seed=5)  # (B, k, d) over (B, d, k) blocks
    for b, key in enumerate(keys):
        expected = _reference_generator(5, key).standard_gamma(alpha, size=(4, 7))
        assert np.array_equal(draws[b], expected.T)
    weights = group_weights(4, 7, keys, alpha=alpha, seed=5)
    np.testing.assert_allclose(weights, draws / draws.sum(axis=-1, keepdims=True), rtol=1e-15)
    assert np.array_equal(keyed_generator(5, "b").random(3), _reference_generator(5, "b").random(3))


def test_alpha_one_exponentials_are_numpys_gamma_one():
    # one sampler for every alpha: standard_exponential is the fast spelling of standard_gamma(1.0)
    fast = KeyedWeights(3).gamma_draws(6, 50, ["k"], alpha=1.0)
    assert np.array_equal(fast[0].T, _reference_generator(3, "k").standard_gamma(1.0, size=(6, 50)))


def test_alpha_one_draws_are_exp1_and_prefix_stable():
    e = group_gamma_draws(1, 200_000, ["ks"], seed=0)[0, :, 0]
    assert e.dtype == np.float64
    assert np.all(np.isfinite(e))
    assert np.all(e >= 0)
    assert e.mean() == pytest.approx(1.0, abs=0.01)
    # Kolmogorov-Smirnov distance to Exp(1); 1.63/sqrt(n) is the 1% critical value
    sorted_e = np.sort(e)
    cdf = 1.0 - np.exp(-sorted_e)
    grid = np.arange(1, len(e) + 1) / len(e)
    assert np.max(np.abs(grid - cdf)) < 1.63 / math.sqrt(len(e))
    shorter = group_gamma_draws(1, 1000, ["ks"], seed=0)[0, :, 0]
    assert np.array_equal(shorter, e[:1000])


def test_one_keyed_weights_object_serves_any_keys_in_any_order():
    draws = KeyedWeights(9)
    forward = draws.weights(3, 5, ["x", "y", "z"])
    backward = draws.weights(3, 5, ["z", "y", "x"])
    assert np.array_equal(forward, backward[::-1])
    assert np.array_equal(forward, group_weights(3, 5, ["x", "y", "z"], seed=9))


def test_tiny_alpha_never_gives_nan_weights():
    w = group_weights(3, 2000, ["t"], alpha=1e-3, seed=1)
    assert np.all(np.isfinite(w))
    np.testing.assert_allclose(w.sum(axis=-1), 1.0)


# ------------------------------------------------------------------ small concentrations (issue 37)
def _ks_two_sample(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.sort(a), np.sort(b)
    grid = np.concatenate([a, b])
    return float(
        np.max(np.abs(np.searchsorted(a, grid, "right") / a.size - np.searchsorted(b, grid, "right") / b.size))
    )


@pytest.mark.parametrize("alpha", [1e-3, 1e-4, 1e-8, 1e-300])
def test_tiny_alpha_weights_go_to_the_vertices(alpha):
    # Dir(alpha 1_d) -> a uniformly chosen vertex as alpha -> 0: E max_i w_i = 1 - O(alpha), E w_i = 1/d.
    # (Direct Gamma draws underflow at these alphas: 75 % of draws at 1e-4 were the centre (1/d, ..., 1/d).)
    d, k = 4, 20_000
    w = group_weights(d, k, ["v"], alpha=alpha, seed=3)[0]
    assert np.all(np.isfinite(w))
    assert np.all(w >= 0)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0)
    top = w.max(axis=-1)
    assert np.mean(top > 0.99) > 0.98
    assert top.mean() > 1 - 20 * alpha - 0.01
    # each vertex is chosen with probability 1/d: a multinomial count, 5 standard deviations
    np.testing.assert_allclose(w.mean(axis=0), 1 / d, atol=5 * math.sqrt((1 / d) * (1 - 1 / d) / k))


@pytest.mark.parametrize("alpha", [0.01, 0.05])
def test_small_alpha_marginals_match_numpys_dirichlet(alpha):
    # The log-space draws (alpha < LOG_SPACE_ALPHA) against numpy's own Dirichlet sampler: two-sample KS at 1 %.
    # Every component's law is Beta(alpha, (d-1) alpha); numpy's small-alpha sampler breaks sticks, so only its
    # first component keeps the tiny values (its later ones are remainders, 0 in 30 % of draws at alpha = 0.01).
    d, k = 3, 20_000
    w = group_weights(d, k, ["m"], alpha=alpha, seed=0)[0]
    ref = np.random.default_rng(1).dirichlet([alpha] * d, size=k)
    for i in range(d):
        assert _ks_two_sample(w[:, i], ref[:, 0]) < 1.63 * math.sqrt(2 / k)
    # the largest component's law too (it is what the max over a set of answers sees)
    assert _ks_two_sample(w.max(axis=1), ref.max(axis=1)) < 1.63 * math.sqrt(2 / k)


def test_log_space_draws_are_keyed_and_their_exp_is_the_variates():
    draws = KeyedWeights(2)
    logs = draws.log_gamma_draws(3, 5, ["a", "b"], alpha=1e-3)
    assert logs.shape == (2, 5, 3)
    assert np.all(np.isfinite(logs))
    assert np.array_equal(logs[1], KeyedWeights(2).log_gamma_draws(3, 5, ["b"], alpha=1e-3)[0])
    np.testing.assert_array_equal(group_gamma_draws(3, 5, ["a", "b"], alpha=1e-3, seed=2), np.exp(logs))


@pytest.mark.parametrize(
    ("alpha", "message"),
    [
        (1e-320, r"must lie in \[1e-300, 1e\+15\].*overflow"),
        (1e300, r"must lie in \[1e-300, 1e\+15\]"),
        (float("inf"), "must be a finite positive"),
        (True, "must be a number in"),
        ("1", "must be a number in"),
    ],
)
def test_alpha_outside_the_range_is_refused_by_name(alpha, message):
    from vpo_core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"alpha \(Dirichlet concentration\) " + message):
        dirichlet_weights(3, 4, alpha=alpha)


def test_draws_that_would_exceed_the_memory_bound_are_refused_before_allocating():
    from vpo_core.errors import ConfigError
    from vpo_core.weights import MAX_DRAW_BYTES

    # 16 groups of K = 10^12 weights of d = 4 would be 512 TB; refused by size, not by a MemoryError
    with pytest.raises(ConfigError, match=r"would allocate .* GiB, over the 1 GiB bound.*num_weights"):
        group_weights(4, 10**12, list(range(16)))
    assert MAX_DRAW_BYTES == 2**30
    with pytest.raises(ConfigError, match="k \\(number of weight draws\\)"):
        dirichlet_weights(3, True)
