"""The scrambled Sobol sequence of `vpo_core.qmc` (E_w[best@k]'s evaluation weights; vpo-lab's sampler)."""

import numpy as np
import pytest

from vpo_core.qmc import MAX_SOBOL_DIM, sobol_points, sobol_uniforms
from vpo_core.weights import KeyedWeights


# ------------------------------------------------------------------ the Sobol sequence
def test_plain_sobol_first_points_are_the_known_sequence():
    # Dimension 1 is van der Corput; dimensions 2 and 3 (x+1, x^2+x+1) start as below in natural order.
    p = sobol_points(3, 8)
    assert p[:, 0].tolist() == [0, 0.5, 0.25, 0.75, 0.125, 0.625, 0.375, 0.875]
    assert p[:, 1].tolist() == [0, 0.5, 0.75, 0.25, 0.625, 0.125, 0.375, 0.875]
    assert p[:, 2].tolist() == [0, 0.5, 0.75, 0.25, 0.375, 0.875, 0.625, 0.125]


@pytest.mark.parametrize("scrambled", [False, True])
def test_every_dimension_is_stratified(scrambled):
    # A (0, 1)-sequence in each coordinate: the first 2^t points put one point in each cell of width 2^-t.
    rng = np.random.default_rng(3) if scrambled else None
    p = sobol_points(MAX_SOBOL_DIM, 256, rng)
    for j in range(MAX_SOBOL_DIM):
        assert sorted(np.floor(p[:, j] * 256).astype(int).tolist()) == list(range(256))


def test_pairs_of_dimensions_fill_dyadic_boxes():
    # The 2-d projections of the first 2^10 points are (t, 10, 2)-nets with t <= 6 (Joe & Kuo's tables give
    # t <= 5 for every pair of the first 21 dimensions here): every 2^-a x 2^-b box with a + b = 4 holds
    # exactly 2^6 points. A wrong direction number breaks it; the scramble preserves it.
    p = sobol_points(MAX_SOBOL_DIM, 1024, np.random.default_rng(0))
    for i in range(MAX_SOBOL_DIM):
        for j in range(i + 1, MAX_SOBOL_DIM):
            for a in range(5):
                b = 4 - a
                cells = np.floor(p[:, i] * 2**a).astype(int) * 2**b + np.floor(p[:, j] * 2**b).astype(int)
                assert np.bincount(cells, minlength=16).tolist() == [64] * 16, (i, j, a)


def test_scrambled_points_are_inside_the_open_cube():
    p = sobol_points(5, 100, np.random.default_rng(1))
    assert np.all((p > 0) & (p < 1))


@pytest.mark.parametrize(("d", "k"), [(0, 3), (MAX_SOBOL_DIM + 1, 3), (3, 0)])
def test_sobol_bad_sizes(d, k):
    with pytest.raises(ValueError, match=r"sobol|k \(number of points\)"):
        sobol_points(d, k)


def test_keyed_uniforms_are_the_scrambled_points_of_each_keys_stream():
    # One Generator serves every key (KeyedWeights repositions it): row b must equal a scramble from key b alone.
    u = sobol_uniforms(3, 8, ["a", ("b", 2)], KeyedWeights(4))
    assert u.shape == (2, 8, 3)
    np.testing.assert_array_equal(u[0], sobol_points(3, 8, KeyedWeights(4).generator("a")))
    np.testing.assert_array_equal(u[1], sobol_points(3, 8, KeyedWeights(4).generator(("b", 2))))
    assert not np.array_equal(u[0], u[1])
    assert sobol_uniforms(3, 8, [], KeyedWeights(4)).shape == (0, 8, 3)
