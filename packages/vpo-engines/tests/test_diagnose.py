"""The collinearity diagnostic (vpo_engines.diagnose, apps/diagnose.py): the appendix's recipe, verdicts, table."""

from __future__ import annotations

from math import comb

import numpy as np
import pytest

from vpo_core.profile import CollinearityRow
from vpo_engines.diagnose import diagnose_pool, format_table, paper_rows, verdict


def appendix_rho(pool: np.ndarray) -> float:
    """The appendix, literally: flatten, drop zero-variance dims, np.corrcoef, mean of D(D-1) off-diagonals."""
    flat = pool.reshape(-1, pool.shape[-1])
    flat = flat[:, flat.var(axis=0) > 0]
    c = np.corrcoef(flat.T)
    d = c.shape[0]
    return float((c.sum() - np.trace(c)) / (d * (d - 1)))


def test_rho_is_the_appendix_recipe_with_a_constant_dimension():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(20, 8, 1, 1))
    pool = np.concatenate(
        [base, base + 0.5 * rng.normal(size=base.shape), np.ones_like(base), rng.normal(size=base.shape)], -1
    )
    d = diagnose_pool("x", pool, (0.25, 0.25, 0.25, 0.25), mode="single")
    assert d.kept_dims == (0, 1, 3)
    assert d.rho == pytest.approx(appendix_rho(pool), abs=1e-12)


def test_collinear_pool_is_out_of_regime_and_independent_pool_in_it():
    rng = np.random.default_rng(1)
    x = rng.uniform(size=(50, 16, 1, 1))
    collinear = np.concatenate([x, 2 * x + 1, 0.5 * x], -1)
    d = diagnose_pool("grpo", collinear, (1 / 3, 1 / 3, 1 / 3), mode="single")
    assert d.rho == pytest.approx(1.0)
    assert verdict(d.rho).startswith("not in VPO's regime")
    independent = rng.uniform(size=(50, 16, 1, 3))
    assert verdict(diagnose_pool("vpo", independent, (1 / 3,) * 3, mode="single").rho).startswith("in VPO's regime")
    assert verdict(0.8).startswith("borderline")
    assert verdict(float("nan")).startswith("undetermined")


# the paper's table as printed: every row comes from its env's profile, so a lost row fails here
PAPER_TABLE = [
    "| Maze (paper) | 4 reward feats (D=4) | 0.39 | 0.37 | 0.593 | 0.432 | +0.161 |",
    "| MuSiQue (paper) | 4 hop + 1 F1 (D=5) | 0.12 | 0.11 | 0.864 | 0.841 | +0.023 |",
    "| EUREQA (paper) | 5 entity-EM (D=5) | 0.05 | 0.03 | 0.204 | 0.182 | +0.022 |",
    "| ToolRL (paper) | 4 sub-metrics (D=4) | 0.86 | 0.62 | 0.953 | 0.924 | +0.028 |",
    "| UltraFeedback (paper) | 5 ArmoRM dims (D=5) | 0.95 | 0.82 | 0.767 | 0.772 | -0.004 |",
]


def test_the_paper_rows_come_whole_and_in_order_from_the_installed_envs():
    table = format_table("toy-v1", "2", None, None, with_paper=True).splitlines()
    assert table[2:-1] == PAPER_TABLE
    assert [row.position for row in paper_rows()] == [1, 2, 3, 4, 5]


def test_a_paper_row_is_checked():
    row = {"position": 1, "domain": "X", "dims": "2 (D=2)", "rho_vpo": 0.1, "rho_grpo": 0.2}
    row |= {"best_vpo": 0.5, "best_grpo": 0.4, "delta": 0.1}
    assert CollinearityRow(**row).source.startswith("paper, appendix")
    for bad in ({"position": 0}, {"domain": ""}, {"rho_vpo": 1.5}, {"delta": float("nan")}):
        with pytest.raises(ValueError, match=r"must be|is a mean"):
            CollinearityRow(**{**row, **bad})


def test_paper_rows_get_the_paper_verdicts():
    verdicts = {row.domain: verdict(row.rho_grpo) for row in paper_rows()}
    assert all(verdicts[n].startswith("in VPO's regime") for n in ("Maze", "MuSiQue", "EUREQA", "ToolRL"))
    assert not verdicts["UltraFeedback"].startswith("in VPO's regime")


def test_best_at_k_single_pool_is_the_order_statistic_estimator():
    rng = np.random.default_rng(2)
    pool = rng.uniform(size=(3, 20, 1, 2))
    w = (0.7, 0.3)
    d = diagnose_pool("grpo", pool, w, k=16, mode="single")
    expected = []
    for t in range(3):
        s = np.sort(pool[t, :, 0] @ np.array(w))
        n = len(s)
        expected.append(sum(comb(i, 15) * s[i] for i in range(15, n)) / comb(n, 16))
    assert d.k == 16
    assert d.best_at_k == pytest.approx(float(np.mean(expected)))


def test_k_is_capped_at_the_pool_size_and_multi_pools_use_m_candidates():
    pool = np.random.default_rng(3).uniform(size=(2, 4, 3, 2))
    d = diagnose_pool("vpo", pool, (0.5, 0.5), k=16, mode="multi")
    assert d.k == 12
    best_of_all = np.mean(np.max((pool @ np.array([0.5, 0.5])).reshape(2, -1), axis=1))
    assert d.best_at_k == pytest.approx(best_of_all)
    assert diagnose_pool("grpo", pool[:, :, :1], (0.5, 0.5), mode="single").k == 4
    with pytest.raises(ValueError, match="single or multi"):
        diagnose_pool("grpo", pool, (0.5, 0.5), mode="chains")


@pytest.mark.parametrize(
    ("pool", "w", "message"),
    [
        (np.zeros((3, 2, 2)), (1.0, 0.0), "shape"),
        (np.zeros((1, 2, 1, 3)), (1.0, 0.0), "reward dims"),
        (np.full((1, 2, 1, 2), np.nan), (1.0, 0.0), "NaN"),
    ],
)
def test_bad_pools_are_named(pool, w, message):
    with pytest.raises(ValueError, match=message):
        diagnose_pool("x", pool, w, mode="single")


def test_table_layout_matches_the_paper():
    pool = np.random.default_rng(4).uniform(size=(2, 16, 1, 2))
    a, b = (
        diagnose_pool("vpo", pool, (0.5, 0.5), mode="single"),
        diagnose_pool("grpo", pool * 0.5, (0.5, 0.5), mode="single"),
    )
    table = format_table("toy-v1", "2 dims (D=2)", a, b, with_paper=True)
    lines = table.splitlines()
    assert lines[0] == "| Domain | reward dims | ρ̄ VPO | ρ̄ GRPO | best@16 VPO | best@16 GRPO | Δ |"
    assert len(lines) == 2 + len(paper_rows()) + 1
    assert lines[-1].startswith("| toy-v1 | 2 dims (D=2) |")
    assert lines[-1].endswith(f"{a.best_at_k - b.best_at_k:+.3f} |")
    assert "| UltraFeedback (paper) | 5 ArmoRM dims (D=5) | 0.95 | 0.82 | 0.767 | 0.772 | -0.004 |" in table
    assert format_table("toy-v1", "2", a, None).splitlines()[-1].endswith("| – | – |")


def test_best_at_k_uses_each_tasks_w_star_where_the_spec_varies_per_task():
    from vpo_core import RewardSpec, Task
    from vpo_engines.diagnose import task_w_stars

    class Ragged:  # env-lcb's shape: task i has i + 1 dimensions (one per test), w* uniform over them
        reward_spec = RewardSpec.uniform([f"t{i}" for i in range(3)], [f"test {i}" for i in range(3)])

        def spec_for(self, task):
            d = task.index + 1
            return RewardSpec.uniform([f"t{i}" for i in range(d)], [f"test {i}" for i in range(d)])

    tasks = [Task(id=f"r/{i}", split="test", index=i, payload=None) for i in range(3)]
    w = task_w_stars(Ragged(), tasks, 3)
    np.testing.assert_allclose(w, [[1, 0, 0], [0.5, 0.5, 0], [1 / 3, 1 / 3, 1 / 3]])
    pool = np.zeros((3, 2, 1, 3))
    for i in range(3):
        pool[i, 0, 0, : i + 1] = 1.0  # every task solved by its first completion (zero-padded rows)
    d = diagnose_pool("x", pool, w, k=2, mode="single")
    assert d.best_at_k == pytest.approx(1.0)  # the class-level w* (1/3 each) would give (1/3 + 2/3 + 1) / 3
    with pytest.raises(ValueError, match="2 per-task w\\* rows"):
        diagnose_pool("x", pool, w[:2], k=2, mode="single")


def _row(position, domain, rho_vpo, rho_grpo, delta, **extra):
    return CollinearityRow(
        position=position,
        domain=domain,
        dims="2 (D=2)",
        rho_vpo=rho_vpo,
        rho_grpo=rho_grpo,
        best_vpo=0.5 + delta,
        best_grpo=0.5,
        delta=delta,
        **extra,
    )


def test_the_verdict_cites_the_rows_in_its_band_and_core_names_no_domain():
    import inspect

    import vpo_engines.diagnose

    rows = [_row(2, "Beta", 0.95, 0.75, -0.01, outcome="tie"), _row(1, "Alpha", 0.8, 0.2, 0.05)]
    assert verdict(0.8, rows=rows).endswith(
        "(the paper's Alpha, a VPO win, and Beta, a tie, both have a row in this band)"
    )
    assert verdict(0.95, rows=rows).endswith("expect VPO to tie scalar GRPO, as on Beta)")
    assert verdict(0.8, rows=rows[:1]).endswith("(the paper's Beta, a tie, has a row in this band)")
    assert verdict(0.95, rows=rows[1:]).endswith("expect VPO to tie scalar GRPO)")  # no tying row up there
    assert verdict(0.8, rows=[]) == "borderline: 0.7 <= ρ̄ = 0.80 < 0.9"
    # the installed envs' rows give the paper's wording, and the module itself names none of them
    assert verdict(0.8).endswith(
        "(the paper's ToolRL, a VPO win, and UltraFeedback, a tie, both have a row in this band)"
    )
    source = inspect.getsource(vpo_engines.diagnose)
    assert [row.domain for row in paper_rows() if row.domain.lower() in source.lower()] == []


def test_a_rows_outcome_is_declared_or_read_from_the_sign_of_delta():
    assert [_row(1, "X", 0.1, 0.1, d).outcome for d in (0.1, 0.0, -0.1)] == ["win", "tie", "loss"]
    assert _row(1, "X", 0.1, 0.1, -0.004, outcome="tie").outcome == "tie"
    with pytest.raises(ValueError, match="outcome must be one of"):
        _row(1, "X", 0.1, 0.1, 0.1, outcome="draw")
    assert {row.domain: row.outcome for row in paper_rows()}["UltraFeedback"] == "tie"
