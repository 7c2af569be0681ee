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
