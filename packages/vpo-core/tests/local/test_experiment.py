import json

import numpy as np
import pytest

import vpo_core
from vpo_core.adapters.local.experiment import ExperimentConfig, plan
from vpo_core.adapters.local.experiment_report import per_task_metrics, summarise, write_report
from vpo_core.metrics import best_at_k, best_at_k_chains, chain_pass_at_k, pareto_fraction


def test_plan_shares_one_warm_start_per_mode_and_seed():
    config = ExperimentConfig(methods="grpo,random_w,vpo,multi_rlvr", main_methods="grpo,vpo", main_seeds=3)
    config.other_seeds = 2
    jobs = plan(config)
    warm = [j for j in jobs if j.kind == "warm"]
    train = [j for j in jobs if j.kind == "train"]
    # main: single seeds 0-2 (grpo 3, random_w 2) and multi seeds 0-2 (vpo 3, multi_rlvr 2); ablation: 2 seeds x 2 modes
    assert sorted(j.name for j in warm if j.name.startswith("main/")) == sorted(
        [f"main/warm-{mode}-seed{s}" for mode in ("single", "multi") for s in range(3)]
    )
    by_name = {j.name: j for j in jobs}
    for job in train:
        (warm_name,) = job.after
        assert by_name[warm_name].kind == "warm"
        assert by_name[warm_name].info["mode"] == job.info["mode"]
        assert f"model={by_name[warm_name].info['run']}/init_model" in job.args
        assert "warmup_steps=0" in job.args
    # random_w seed 0 and grpo seed 0 start from the same weights; different seeds do not
    starts = {j.name: j.after[0] for j in train}
    assert starts["main/random_w-seed0"] == starts["main/grpo-seed0"] != starts["main/grpo-seed1"]
    # the ablation runs only the main methods, with its own warm starts and the solver demonstrations
    ablation = [j for j in train if j.name.startswith("ablation/")]
    assert {j.info["method"] for j in ablation} == {"grpo", "vpo"}
    assert all("env.demonstrations=solver" in j.args for j in ablation)
    # every model is evaluated once, after its job
    evals = [j for j in jobs if j.kind == "eval"]
    assert len(evals) == len(train) + len(warm)
    assert len({j.name for j in jobs}) == len(jobs)


def test_weight_sampler_reaches_every_training_run():
    jobs = plan(ExperimentConfig(methods="grpo,vpo", main_seeds=1, weight_sampler="sobol"))
    assert all("weight_sampler=sobol" in j.args for j in jobs if j.kind in ("warm", "train"))
    default = plan(ExperimentConfig(methods="grpo,vpo", main_seeds=1))
    assert not any(a.startswith("weight_sampler=") for j in default for a in j.args)
    with pytest.raises(ValueError, match="weight_sampler must be one of"):
        ExperimentConfig(weight_sampler="halton")


def test_bad_method_is_refused():
    with pytest.raises(ValueError, match="unknown methods"):
        ExperimentConfig(methods="grpo,vpoo")


def test_per_task_metrics_match_the_core_estimators():
    env = vpo_core.make("maze-v1")
    rng = np.random.default_rng(0)
    w = np.asarray(env.reward_spec.w_star)
    multi = rng.random((5, 4, 3, 4))
    out = per_task_metrics(env, multi, mode="multi")
    np.testing.assert_allclose(out["best@5"], best_at_k_chains(multi @ w, 5))
    np.testing.assert_allclose(out["curve"][:, 4], out["best@5"])
    np.testing.assert_allclose(out["mean_w_star"], (multi @ w).reshape(5, -1).mean(axis=1))
    single = rng.random((5, 12, 1, 4))
    out = per_task_metrics(env, single, mode="single")
    np.testing.assert_allclose(out["best@10"], best_at_k((single @ w)[:, :, 0], 10))
    assert out["curve"].shape == (5, 12)


def _fake_experiment(tmp_path, shift):
    rng = np.random.default_rng(1)
    (tmp_path / "pools").mkdir()
    records = []
    for method, mode, m, offset in (("grpo", "single", 1, 0.0), ("vpo", "multi", 3, shift)):
        for seed in range(3):
            n = 12 // m
            pool = np.clip(rng.random((20, n, m, 4)) * 0.5 + offset, 0, 1)
            name = f"pools/{method}-{seed}.npz"
            np.savez_compressed(tmp_path / name, rewards=pool.astype(np.float32))
            run = f"runs/main/{method}-seed{seed}"
            records.append(
                {"variant": "main", "method": method, "seed": seed, "mode": mode, "label": f"{method}-seed{seed}"}
                | {"run": run, "pool": name}
            )
    index = tmp_path / "index.json"
    index.write_text(json.dumps({"config": {"env": "maze-v1"}, "pools": records}))
    return index


def test_summary_finds_a_real_difference_and_not_a_fake_one(tmp_path):
    index = _fake_experiment(tmp_path, shift=0.3)
    summary = summarise(index, vpo_core.make("maze-v1"))
    diff = summary["differences"]["vpo - grpo"]["mean_w_star"]
    assert diff["low"] > 0.2
    assert summary["arms"]["vpo"]["seeds"] == [0, 1, 2]
    table = write_report(index)
    assert "vpo - grpo" in table.read_text()
    assert (tmp_path / "best_at_k.png").exists()


def test_the_report_has_the_pool_metrics_table(tmp_path):
    index = _fake_experiment(tmp_path, shift=0.3)
    env = vpo_core.make("maze-v1")
    summary = summarise(index, env)
    pool = np.load(tmp_path / "pools/grpo-0.npz")["rewards"].astype(np.float64)  # (20 tasks, 12, 1, 4)
    per_task = per_task_metrics(env, pool, mode="single")
    success = np.stack([env.is_success(p, t) for p, t in zip(pool, env.tasks("test")[:20], strict=True)])
    np.testing.assert_allclose(per_task["chain_pass@10"], [chain_pass_at_k(s_, 10) for s_ in success])
    np.testing.assert_allclose(per_task["pareto_fraction"], [pareto_fraction(p.reshape(-1, 4)) for p in pool])
    assert {"pareto_fraction", "chain_pass@10", "solution_pass@10"} <= set(summary["arms"]["grpo"])
    assert "chain_pass@10" not in summary["arms"]["vpo"]  # 4 chains per task: fewer than 10
    table = write_report(index).read_text()
    rows = table[table.index("| pool metrics") :].splitlines()
    assert rows[0] == "| pool metrics | seeds | pareto_fraction | chain_pass@10 | solution_pass@10 |"
    assert rows[2].startswith("| grpo | 3 | ")
    assert rows[3].startswith("| vpo | 3 | ")


def test_summary_interval_covers_zero_without_a_difference(tmp_path):
    index = _fake_experiment(tmp_path, shift=0.0)
    diff = summarise(index, vpo_core.make("maze-v1"))["differences"]["vpo - grpo"]["mean_w_star"]
    assert diff["low"] <= 0 <= diff["high"]


def test_goal_conditioned_arms_get_the_papers_goal_table(tmp_path):
    index = _fake_experiment(tmp_path, shift=0.1)
    data = json.loads(index.read_text())
    rng = np.random.default_rng(2)
    for seed in range(3):
        for conditioning in ("w_star", "dirichlet"):
            name = f"pools/goal_cond-{seed}-{conditioning}.npz"
            np.savez_compressed(tmp_path / name, rewards=rng.random((20, 12, 1, 4)).astype(np.float32))
            run = f"runs/main/goal_cond-seed{seed}"
            data["pools"].append(
                {"variant": "main", "method": "goal_cond", "seed": seed, "mode": "single"}
                | {"label": f"goal_cond-seed{seed}@{conditioning}", "run": run, "pool": name}
            )
    index.write_text(json.dumps(data))
    env = vpo_core.make("maze-v1")
    summary = summarise(index, env)
    assert {"goal_cond@w_star", "goal_cond@dirichlet", "vpo"} <= set(summary["arms"])
    pool = np.load(tmp_path / "pools/goal_cond-0-w_star.npz")["rewards"].astype(np.float64)
    assert np.isclose(
        per_task_metrics(env, pool, mode="single")["best@6"].mean(),
        best_at_k(pool[..., 0, :] @ np.asarray(env.reward_spec.w_star), 6).mean(),
    )
    for arm in ("goal_cond@w_star", "goal_cond@dirichlet", "vpo"):
        assert {"best@3", "best@6", "E_w[best@3]", "E_w[best@6]"} <= set(summary["arms"][arm])
    table = write_report(index).read_text()
    goal_table = table[table.index("| goal-conditioned table") :]
    assert [line.split(" | ")[0] for line in goal_table.splitlines()[2:]] == [
        "| goal_cond@dirichlet",
        "| goal_cond@w_star",
        "| vpo",
    ]
