import hashlib
import math
import subprocess
import sys

import numpy as np
import pytest

from vpo_core.weights import (
    dirichlet_weights,
    fill_negative_exponentials,
    group_gamma_draws,
    group_weights,
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


# ------------------------------------------------------------------ float32 exponentials (alpha = 1)
def _reference_negative_exponentials(seed: int, key: str, n: int) -> np.ndarray:
    """The documented definition, element by element in float64: log(1 - (x >> 9)·2^-23)."""
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    bit_generator = np.random.PCG64()
    bit_generator.state = {
        "bit_generator": "PCG64",
        "state": {"state": int.from_bytes(digest[:16], "little"), "inc": int.from_bytes(digest[16:], "little") | 1},
        "has_uint32": 0,
        "uinteger": 0,
    }
    words = []
    for raw in bit_generator.random_raw((n + 1) // 2).tolist():
        words += [raw & 0xFFFFFFFF, raw >> 32]
    return np.array([math.log(1.0 - (x >> 9) / 2**23) for x in words[:n]])


@pytest.mark.parametrize("n", [1, 7, 64])
def test_negative_exponentials_follow_their_definition(n):
    keys = ["a", "b", "c"]
    out = np.empty((3, n), dtype=np.float32)
    fill_negative_exponentials(out, keys, seed=5)
    for b, key in enumerate(keys):
        np.testing.assert_allclose(out[b], _reference_negative_exponentials(5, key, n), rtol=1e-6, atol=1e-7)


def test_negative_exponentials_are_exp1_and_prefix_stable():
    out = np.empty((1, 200_001), dtype=np.float32)
    fill_negative_exponentials(out, ["ks"], seed=0)
    e = -out[0].astype(np.float64)
    assert np.all(np.isfinite(e))
    assert np.all(e >= 0)
    assert e.mean() == pytest.approx(1.0, abs=0.01)
    # Kolmogorov-Smirnov distance to Exp(1); 1.63/sqrt(n) is the 1% critical value
    sorted_e = np.sort(e)
    cdf = 1.0 - np.exp(-sorted_e)
    grid = np.arange(1, len(e) + 1) / len(e)
    assert np.max(np.abs(grid - cdf)) < 1.63 / math.sqrt(len(e))
    shorter = np.empty((1, 1000), dtype=np.float32)
    fill_negative_exponentials(shorter, ["ks"], seed=0)
    assert np.array_equal(shorter[0], out[0, :1000])


def test_gamma_draws_for_alpha_one_are_the_negated_exponentials():
    out = np.empty((2, 4 * 3), dtype=np.float32)
    fill_negative_exponentials(out, ["x", "y"], seed=2)
    draws = group_gamma_draws(4, 3, ["x", "y"], seed=2)  # (B, k, d) over (B, d, k) blocks
    assert np.array_equal(draws, -out.reshape(2, 4, 3).transpose(0, 2, 1).astype(np.float64))


def test_negative_exponentials_reject_a_wrong_buffer():
    with pytest.raises(ValueError, match="C-contiguous float32"):
        fill_negative_exponentials(np.empty((2, 3)), ["a", "b"])
    with pytest.raises(ValueError, match="shape \\(3, n\\)"):
        fill_negative_exponentials(np.empty((2, 3), dtype=np.float32), ["a", "b", "c"])
