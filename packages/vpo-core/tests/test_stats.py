import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpo_core.stats import bootstrap_ci, paired_difference_ci


def test_estimate_is_the_grand_mean_and_inside_the_interval():
    data = np.arange(12.0).reshape(3, 4)
    ci = bootstrap_ci(data)
    assert ci.estimate == pytest.approx(5.5)
    assert ci.low <= ci.estimate <= ci.high
    assert (ci.seeds, ci.tasks) == (3, 4)


def test_constant_data_gives_a_zero_width_interval():
    ci = bootstrap_ci(np.full((2, 5), 0.25))
    assert ci.low == ci.high == pytest.approx(0.25)


def test_one_seed_matches_the_exact_task_bootstrap_distribution():
    # With S = 1 the replicate mean is the mean of T tasks drawn with replacement; for T = 3 all 27
    # draws are equally likely, so the bootstrap quantiles must match the enumerated distribution.
    values = np.array([0.0, 1.0, 5.0])
    exact = np.sort([np.mean(draw) for draw in itertools.product(values, repeat=3)])
    ci = bootstrap_ci(values, level=0.8, replicates=40_000)
    assert ci.low == pytest.approx(np.quantile(exact, 0.1), abs=0.34)
    assert ci.high == pytest.approx(np.quantile(exact, 0.9), abs=0.34)


def test_seed_variation_widens_the_interval():
    rng = np.random.default_rng(0)
    tasks = rng.normal(size=50)
    same = np.stack([tasks] * 5)
    shifted = same + np.array([-1.0, -0.5, 0.0, 0.5, 1.0])[:, None]
    assert (bootstrap_ci(shifted).high - bootstrap_ci(shifted).low) > 2 * (
        bootstrap_ci(same).high - bootstrap_ci(same).low
    )


def test_coverage_is_near_nominal_for_a_normal_model():
    # seed effect N(0, 0.3^2) and task effect N(0, 1): the 90% interval should cover the true mean 0
    # in roughly 90% of simulated experiments (the percentile bootstrap undercovers a little at S = 5).
    rng = np.random.default_rng(1)
    hits = 0
    trials = 200
    for _ in range(trials):
        data = rng.normal(0, 0.3, size=(5, 1)) + rng.normal(0, 1, size=(1, 60)) + rng.normal(0, 0.2, size=(5, 60))
        ci = bootstrap_ci(data, level=0.9, replicates=500, seed=int(rng.integers(1 << 30)))
        hits += ci.low <= 0 <= ci.high
    assert 0.72 <= hits / trials <= 0.98


def test_paired_difference_removes_shared_task_difficulty():
    rng = np.random.default_rng(2)
    difficulty = rng.normal(0, 1, size=(1, 100))
    a = difficulty + 0.1 + rng.normal(0, 0.05, size=(3, 100))
    b = difficulty + rng.normal(0, 0.05, size=(3, 100))
    paired = paired_difference_ci(a, b)
    assert paired.excludes_zero()
    assert paired.low > 0.05
    # the unpaired intervals overlap heavily: the pairing is what makes the difference visible
    assert bootstrap_ci(a).low < bootstrap_ci(b).high


def test_deterministic_given_seed():
    data = np.random.default_rng(3).random((4, 30))
    assert bootstrap_ci(data, seed=7) == bootstrap_ci(data, seed=7)


@pytest.mark.parametrize(
    ("values", "message"),
    [(np.zeros((0, 3)), "shape"), (np.array([[0.1, np.nan]]), "finite"), (np.zeros((2, 2, 2)), "shape")],
)
def test_bad_values_raise_clear_errors(values, message):
    with pytest.raises(ValueError, match=message):
        bootstrap_ci(values)


def test_mismatched_pairs_raise():
    with pytest.raises(ValueError, match="same"):
        paired_difference_ci(np.zeros((3, 5)), np.zeros((2, 5)))


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 4),
    st.integers(1, 12),
    st.floats(0.5, 0.99),
    st.integers(0, 10_000),
)
def test_interval_is_ordered_and_within_data_range(seeds, tasks, level, seed):
    data = np.random.default_rng(seed).random((seeds, tasks))
    ci = bootstrap_ci(data, level=level, replicates=200, seed=seed)
    assert data.min() - 1e-12 <= ci.low <= ci.high <= data.max() + 1e-12
