"""The ``sobol`` weight sampler (`vpo_lab.qmc`): Gamma quantiles, Dir(alpha) weights, and its use in the estimator."""

import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpo_core.advantages import AdvantageConfig, RolloutBatch, compute_advantages
from vpo_core.weights import group_weights
from vpo_lab.qmc import gamma_quantile, sobol_weights


# ------------------------------------------------------------------ Gamma quantile
@settings(max_examples=40, deadline=None)
@given(
    u=st.floats(1e-9, 1 - 1e-9),
    alpha=st.floats(0.05, 50.0),
)
def test_gamma_quantile_inverts_the_cdf(u, alpha):
    x = float(gamma_quantile(np.array([u]), alpha)[0])
    assert x > 0
    # Check with an independent CDF by numerical integration of a smooth integrand: the density itself for
    # alpha >= 1; for alpha < 1, with t = s^(1/alpha), P(alpha, x) = ∫_0^{x^alpha} exp(-s^(1/alpha)) ds / Γ(alpha + 1).
    if alpha >= 1:
        grid = np.linspace(0.0, x, 200001)
        density = np.exp((alpha - 1) * np.log(np.maximum(grid, 1e-300)) - grid - math.lgamma(alpha))
        cdf = np.trapezoid(density, grid)
    else:
        grid = np.linspace(0.0, x**alpha, 200001)
        cdf = np.trapezoid(np.exp(-(grid ** (1 / alpha))), grid) / math.gamma(alpha + 1)
    assert cdf == pytest.approx(u, rel=1e-4, abs=1e-9)


def test_gamma_quantile_alpha_one_is_exponential():
    u = np.array([1e-12, 0.1, 0.5, 0.999999])
    assert np.array_equal(gamma_quantile(u, 1.0), -np.log1p(-u))


def test_gamma_quantile_rejects_bad_input():
    with pytest.raises(ValueError, match="strictly inside"):
        gamma_quantile(np.array([0.0]), 2.0)
    with pytest.raises(ValueError, match="alpha"):
        gamma_quantile(np.array([0.5]), -1.0)


# ------------------------------------------------------------------ the mapped weights are Dir(alpha)
def _ks_two_sample(a, b):
    a, b = np.sort(a), np.sort(b)
    grid = np.concatenate([a, b])
    return float(
        np.max(np.abs(np.searchsorted(a, grid, "right") / a.size - np.searchsorted(b, grid, "right") / b.size))
    )


@pytest.mark.parametrize(("d", "alpha"), [(2, 1.0), (4, 1.0), (3, 0.5), (5, 2.5)])
def test_sobol_weights_are_dirichlet_distributed(d, alpha):
    k, groups = 16, 1500
    w = sobol_weights(d, k, list(range(groups)), alpha=alpha, seed=7).reshape(-1, d)
    # Dir(alpha 1_d) moments: E w_i = 1/d, Var w_i = (d-1)/(d^2 (d alpha + 1)), Cov = -1/(d^2 (d alpha + 1)).
    var = (d - 1) / (d * d * (d * alpha + 1))
    cov = -1 / (d * d * (d * alpha + 1))
    emp = np.cov(w, rowvar=False)
    assert np.allclose(w.mean(axis=0), 1 / d, atol=4 * math.sqrt(var / groups))
    assert np.allclose(np.diag(emp), var, rtol=0.1)
    if d > 2:
        off = emp[~np.eye(d, dtype=bool)]
        assert np.allclose(off, cov, rtol=0.15, atol=0.1 * var)
    # Marginals are Beta(alpha, (d-1) alpha): one point per group (independent scrambles) against the law.
    first = sobol_weights(d, 1, list(range(4000)), alpha=alpha, seed=11)[:, 0, :]
    critical = 1.63 / math.sqrt(4000)  # KS at level 1% (single sample)
    for i in range(d):
        x = np.sort(first[:, i])
        if alpha == 1.0:  # Beta(1, d-1): F(x) = 1 - (1 - x)^(d-1)
            cdf = 1 - (1 - x) ** (d - 1)
            n = x.size
            stat = max(np.max(np.arange(1, n + 1) / n - cdf), np.max(cdf - np.arange(n) / n))
            assert stat < critical
        else:  # against iid numpy draws of the same law: two-sample KS at level 1%
            ref = np.random.default_rng(i).dirichlet([alpha] * d, size=4000)[:, i]
            assert _ks_two_sample(x, ref) < 1.63 * math.sqrt(2 / 4000)


def test_sobol_weights_keyed_and_reproducible_in_a_fresh_process():
    w = sobol_weights(3, 5, ["g", ("s", 1)], alpha=0.5, seed=9)
    assert w.shape == (2, 5, 3)
    assert np.allclose(w.sum(axis=-1), 1.0)
    assert np.all(w >= 0)
    assert np.array_equal(w[1], sobol_weights(3, 5, [("s", 1)], alpha=0.5, seed=9)[0])
    assert not np.array_equal(w[0], sobol_weights(3, 5, ["g"], alpha=0.5, seed=10)[0])
    code = (
        "from vpo_lab.qmc import sobol_weights as f; print(repr(f(3, 5, ['g', ('s', 1)], alpha=0.5, seed=9).tolist()))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert eval(out) == w.tolist()


def test_sobol_average_is_less_noisy_than_iid():
    # The point of the sampler: the mean of max_j w·r_j over K points varies less across keys.
    rng = np.random.default_rng(0)
    r = rng.random((3, 4))
    keys = list(range(400))

    def spread(w):
        return float(np.std(np.max(w @ r.T, axis=-1).mean(axis=-1)))

    assert spread(sobol_weights(4, 64, keys)) < 0.5 * spread(group_weights(4, 64, keys))


def test_compute_advantages_threads_the_sampler():
    rng = np.random.default_rng(1)
    r = rng.random((2, 4, 3, 4))
    keys = ["a", "b"]
    batch = RolloutBatch.of(r, w_star=np.full(4, 0.25), keys=keys)
    kwargs = {"seed": 3, "num_weights": 8}
    sobol = compute_advantages(batch, AdvantageConfig.parse("vpo", weight_sampler="sobol", **kwargs))
    dirichlet = compute_advantages(batch, AdvantageConfig.parse("vpo", **kwargs))
    assert not np.allclose(sobol, dirichlet)
    w = sobol_weights(4, 8, keys, seed=3)
    scalars = np.max(np.einsum("bgmd,bkd->bgkm", r, w), axis=-1).mean(axis=-1)
    expected = (scalars - scalars.mean(1, keepdims=True)) / (scalars.std(1, keepdims=True) + 1e-6)
    assert np.allclose(sobol, expected, atol=1e-9)
    one_answer = RolloutBatch.of(r[:, :, :1], w_star=np.full(4, 0.25), keys=keys)
    single = compute_advantages(one_answer, AdvantageConfig.parse("random_w", weight_sampler="sobol", **kwargs))
    assert single.shape == (2, 4)
    with pytest.raises(ValueError, match="weight_sampler must be one of"):
        AdvantageConfig.parse("vpo", weight_sampler="halton", **kwargs)


# ------------------------------------------------------------------ small and huge concentrations (issue 37)
@pytest.mark.parametrize("alpha", [1e-3, 1e-4, 1e-12, 1e-300])
def test_sobol_tiny_alpha_points_go_to_the_vertices(alpha):
    # Dir(alpha 1_d) -> a uniform vertex as alpha -> 0. The quantile underflowed here (and Newton from 0 stopped
    # at ~1e-63), so most points were the centre or arbitrary mixtures; in log space the largest coordinate wins.
    d, k, groups = 4, 64, 200
    w = sobol_weights(d, k, list(range(groups)), alpha=alpha, seed=5).reshape(-1, d)
    assert np.all(np.isfinite(w))
    assert np.all(w >= 0)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0)
    top = w.max(axis=-1)
    assert np.mean(top > 0.99) > 0.98
    n = k * groups
    np.testing.assert_allclose(w.mean(axis=0), 1 / d, atol=5 * math.sqrt((1 / d) * (1 - 1 / d) / n))


@pytest.mark.parametrize("alpha", [0.01, 0.05])
def test_sobol_small_alpha_marginals_match_numpys_dirichlet(alpha):
    # One point per group (independent scrambles, so iid Dir(alpha) points) against numpy's first component
    # (its later components are stick remainders that lose the tiny values): two-sample KS at 1 %.
    d, n = 3, 4000
    first = sobol_weights(d, 1, list(range(n)), alpha=alpha, seed=11)[:, 0, :]
    ref = np.random.default_rng(2).dirichlet([alpha] * d, size=n)[:, 0]
    for i in range(d):
        assert _ks_two_sample(first[:, i], ref) < 1.63 * math.sqrt(2 / n)


def test_log_gamma_quantile_is_the_asymptote_below_float64_and_the_quantile_above():
    from vpo_lab.qmc import log_gamma_quantile

    u = np.array([2.0**-33, 0.01, 0.5, 0.99])
    for alpha in (1e-300, 1e-4, 0.05, 0.5, 3.0):
        y = log_gamma_quantile(u, alpha)
        assert np.all(np.isfinite(y))
        assert np.all(np.diff(y) > 0)
        asymptote = (np.log(u) + math.lgamma(alpha + 1)) / alpha
        tiny = asymptote < -690
        np.testing.assert_array_equal(y[tiny], asymptote[tiny])
        np.testing.assert_allclose(np.exp(y[~tiny]), gamma_quantile(u[~tiny], alpha), rtol=1e-12)
    # gamma_quantile itself: the asymptote where it is representable (it was stuck at ~1e-63 for alpha = 0.01)
    x = gamma_quantile(np.array([2.0**-33]), 0.01)[0]
    assert x == pytest.approx(math.exp((math.log(2.0**-33) + math.lgamma(1.01)) / 0.01), rel=1e-12) or x == 0.0


@pytest.mark.parametrize(
    ("alpha", "message"),
    [(1e5, r"\[1e-300, 10000\]"), (1e308, r"\[1e-300, 10000\]"), (5e-324, r"\[1e-300, 10000\]"), (True, "a number")],
)
def test_sobol_alpha_outside_its_range_is_refused(alpha, message):
    from vpo_core.errors import ConfigError
    from vpo_core.weights import check_weight_options

    with pytest.raises(ConfigError, match=message):
        sobol_weights(3, 4, [0], alpha=alpha)
    with pytest.raises(ConfigError, match=message):
        check_weight_options(alpha, 100, "sobol")
    if alpha == 1e5:  # the Dirichlet sampler goes further
        check_weight_options(alpha, 100, "dirichlet")


def test_an_estimator_that_would_allocate_terabytes_is_refused_by_size():
    from vpo_core.errors import ConfigError
    from vpo_core.weights import check_weight_options

    rewards = np.zeros((16, 8, 3, 4))
    for sampler in ("dirichlet", "sobol"):
        with pytest.raises(ConfigError, match=r"num_weights=1000000000 .* would allocate [\d,.]+ GiB, over the 1 GiB"):
            compute_advantages(
                RolloutBatch.of(rewards, w_star=np.full(4, 0.25)),
                AdvantageConfig.parse("vpo", num_weights=10**9, weight_sampler=sampler),
            )
    # parse time, before d is known: 16 groups of G·m = 24 scores at K = 10^8 already exceed the bound
    with pytest.raises(ConfigError, match="over the 1 GiB bound"):
        check_weight_options(1.0, 10**8, "dirichlet", groups=16, rollouts=24)
    check_weight_options(1.0, 100, "dirichlet", d=16, groups=16, rollouts=24)  # the paper's K is far inside
    with pytest.raises(ConfigError, match=r"num_weights \(K\) must be a positive int, got True"):
        check_weight_options(1.0, True)
