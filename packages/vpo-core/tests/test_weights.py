import hashlib
import subprocess
import sys

import numpy as np
import pytest

from vpo_core.weights import dirichlet_weights, group_weights, stable_seed


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
