import json
from pathlib import Path

import numpy as np
import pytest

import vpo_core
from vpo_core.evaluation import SavedPool, save_pool
from vpo_core.metrics import best_at_k, best_at_k_chains, chain_pass_at_k, pareto_fraction
from vpo_lab.experiment import ExperimentConfig, plan
from vpo_lab.experiment_report import per_task_metrics, summarise, write_report


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


def _save_pool(path: Path, rewards: np.ndarray, mode: str) -> None:
    """A pool file as the evaluation saves it: the rewards with their metadata."""
    save_pool(path, SavedPool(rewards, mode=mode, env="maze-v1"))


def _fake_experiment(tmp_path, shift):
    rng = np.random.default_rng(1)
    (tmp_path / "pools").mkdir()
    records = []
    for method, mode, m, offset in (("grpo", "single", 1, 0.0), ("vpo", "multi", 3, shift)):
        for seed in range(3):
            n = 12 // m
            pool = np.clip(rng.random((20, n, m, 4)) * 0.5 + offset, 0, 1)
            name = f"pools/{method}-{seed}.npz"
            _save_pool(tmp_path / name, pool.astype(np.float32), mode)
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


def test_the_report_says_where_each_arm_fails(tmp_path):
    index = _fake_experiment(tmp_path, shift=0.3)
    for seed in range(3):  # GRPO never reaches tasks 0-4 (seed 0) / 0-1 (seeds 1, 2): no valid candidate there
        name = tmp_path / f"pools/grpo-{seed}.npz"
        pool = np.load(name)["rewards"]
        pool[: 5 if seed == 0 else 2] = 0.0
        _save_pool(name, pool, "single")
    env = vpo_core.make("maze-v1")
    summary = summarise(index, env)
    grpo = summary["arms"]["grpo"]
    assert grpo["no_valid"]["mean"] == pytest.approx(9 / 60)
    assert grpo["best@3|unreached"]["mean"] == 0.0
    per_seed = [
        per_task_metrics(env, np.load(tmp_path / f"pools/grpo-{s}.npz")["rewards"], mode="single") for s in range(3)
    ]
    reached = np.concatenate([p["best@3"][p["no_valid"] == 0] for p in per_seed])
    assert grpo["best@3|reached"]["mean"] == pytest.approx(reached.mean())
    assert "best@3|unreached" not in summary["arms"]["vpo"]  # VPO reaches every task
    assert summary["arms"]["vpo"]["no_valid"]["mean"] == 0.0
    diff = summary["differences"]["vpo - grpo"]
    assert diff["B no_valid"]["mean"] == pytest.approx(9 / 60)
    for metric in ("best@3", "E_w[best@5]"):  # the two parts add up to the lead
        parts = diff[f"{metric}|B unreached"]["mean"] + diff[f"{metric}|B reached"]["mean"]
        assert parts == pytest.approx(diff[metric]["mean"])
    vpo_best3 = [
        per_task_metrics(env, np.load(tmp_path / f"pools/vpo-{s}.npz")["rewards"], mode="multi")["best@3"]
        for s in range(3)
    ]
    missed = sum(vpo_best3[s][: 5 if s == 0 else 2].sum() for s in range(3)) / 60  # GRPO's best@3 is 0 there
    assert diff["best@3|B unreached"]["mean"] == pytest.approx(missed)
    assert diff["best@3"]["seed_level"]
    assert diff["best@3"]["df"] == 2.0
    table = write_report(index).read_text()
    fails = table[table.index("| where each arm fails") :].splitlines()
    assert fails[0] == (
        "| where each arm fails | seeds | no_valid | best@3, reached tasks | best@3, unreached tasks | "
        "best@30, reached tasks | best@30, unreached tasks |"
    )
    assert "| A - B, split by B's reach | B: tasks not reached | best@3 lead | best@3: from tasks B misses |" in table


def test_one_seed_arms_are_marked_task_level_only(tmp_path):
    index = _fake_experiment(tmp_path, shift=0.3)
    data = json.loads(index.read_text())
    data["pools"] = [r for r in data["pools"] if r["seed"] == 0]
    index.write_text(json.dumps(data))
    summary = summarise(index, vpo_core.make("maze-v1"))
    assert summary["arms"]["vpo"]["best@3"]["seed_level"] is False
    assert summary["differences"]["vpo - grpo"]["best@3"]["seed_level"] is False
    assert " †" in write_report(index).read_text()


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
            _save_pool(tmp_path / name, rng.random((20, 12, 1, 4)).astype(np.float32), "single")
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


def test_plan_with_starts_eval_steps_and_budgets():
    config = ExperimentConfig(
        methods="grpo,vpo,maxrl",
        main_methods="grpo,vpo",
        main_seeds=2,
        other_seeds=1,
        starts="random:env.demonstrations=random;direct:env.demonstrations=direct",
        steps=30,
        eval_steps="10,20",
        budget_single=40,
        budget_multi=120,
    )
    jobs = plan(config)
    train = {j.name: j for j in jobs if j.kind == "train"}
    # every start runs every method with its full seeds (no main/ablation split)
    assert sorted(train) == sorted(
        f"{start}/{method}-seed{seed}"
        for start in ("random", "direct")
        for method, seeds in (("grpo", 2), ("vpo", 2), ("maxrl", 1))
        for seed in range(seeds)
    )
    assert "env.demonstrations=direct" in train["direct/vpo-seed0"].args
    assert "env.demonstrations=direct" in next(j for j in jobs if j.name == "direct/warm-multi-seed0").args
    # the budgets reach training and evaluation alike, per mode; snapshots are kept for the eval steps
    assert "max_new_tokens=120" in train["random/vpo-seed1"].args
    assert "max_new_tokens=40" in train["random/grpo-seed1"].args
    assert "keep_steps=10,20" in train["random/grpo-seed0"].args
    evals = {j.name: j for j in jobs if j.kind == "eval"}
    for step, checkpoint in ((10, "@step10"), (20, "@step20"), (30, "")):
        name = f"eval/direct/vpo-seed0{'@step' + str(step) if checkpoint else ''}"
        job = evals[name]
        assert job.info["step"] == step
        assert f"checkpoints=runs/experiment-maze-v1/direct/vpo-seed0{checkpoint}" in job.args
        assert "max_new_tokens=120" in job.args
    assert "max_new_tokens=40" in evals["eval/random/warm-single-seed0@init"].args
    assert len({j.name for j in jobs}) == len(jobs)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"steps": 30, "eval_steps": "10,30"}, "eval_steps must lie in"),
        ({"steps": 30, "eval_steps": "ten"}, "eval_steps must be comma-separated"),
        ({"starts": ":env.demonstrations=direct"}, "each start is name:train-options"),
        ({"budget_multi": -1}, "budget_multi must be >= 0"),
    ],
)
def test_bad_experiment_options_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        ExperimentConfig(**options)


def test_recipe_options_come_from_the_lab_recipes_and_the_command_line_wins(capsys):
    from vpo_core.errors import ConfigError
    from vpo_lab.experiment import main, recipe_options
    from vpo_lab.recipes import RECIPES

    assert recipe_options(["env=maze-v1"]) == []
    options = recipe_options(["env=maze-v1", "recipe=v2"])
    recipe = RECIPES["maze-v1"]["v2"]
    assert options == [f"{k}={v}" for k, v in recipe.items()]
    assert recipe["steps"] == 300
    assert recipe["eval_steps"] == "50,150"
    with pytest.raises(ConfigError, match="declares no experiment recipe 'v9'"):
        recipe_options(["recipe=v9"])
    with pytest.raises(ConfigError, match=r"musique-v1 declares no experiment recipe 'v2'.*none"):
        recipe_options(["env=musique-v1", "recipe=v2"])
    assert main(["env=maze-v1", "recipe=v9"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: maze-v1 declares no experiment recipe 'v9' (vpo_lab.recipes); it declares ['v2']."
    )


def test_the_v2_recipe_plans_its_grid_in_its_committed_folders(tmp_path, capsys):
    """The recipe moved out of env-maze unchanged: its grid runs in runs/ and writes where the v2 results are."""
    from vpo_lab.experiment import main

    assert main(["env=maze-v1", "recipe=v2", f"work={tmp_path}", f"out={tmp_path}", "dry_run=true"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = {line.split()[1] for line in lines}
    assert {"direct/warm-multi-seed0", "random/vpo-seed2", "eval/direct/vpo-seed0@step150"} <= names
    assert all(line.startswith("todo ") for line in lines)
    warm = next(line for line in lines if line.split()[1] == "direct/warm-multi-seed0")
    assert "env.demonstrations=direct" in warm
    assert "warmup_steps=1000 warmup_batch=32" in warm
    from vpo_lab.recipes import RECIPES

    recipe = RECIPES["maze-v1"]["v2"]
    assert (recipe["work"], recipe["out"]) == ("runs/experiment-maze-v1-v2", "results/maze-v1-miniature-v2")


def test_arms_of_starts_and_steps_pair_vpo_with_each_baseline_at_the_same_start_and_step(tmp_path):
    rng = np.random.default_rng(3)
    (tmp_path / "pools").mkdir()
    records = []
    for start in ("random", "direct"):
        for method, mode, m in (("grpo", "single", 1), ("vpo", "multi", 3)):
            for step in (10, 30):
                for seed in range(2):
                    name = f"pools/{start}-{method}-{step}-{seed}.npz"
                    shift = 0.3 if (method, start, step) == ("vpo", "direct", 30) else 0.0
                    pool = np.clip(rng.random((6, 6 // m, m, 4)) * 0.5 + shift, 0, 1)
                    _save_pool(tmp_path / name, pool.astype(np.float32), mode)
                    run = f"runs/{start}/{method}-seed{seed}"
                    label = f"{method}-seed{seed}" + ("" if step == 30 else f"@step{step}")
                    records.append(
                        {"variant": start, "method": method, "seed": seed, "mode": mode, "step": step}
                        | {"run": run, "label": label, "pool": name}
                    )
    index = tmp_path / "index.json"
    index.write_text(json.dumps({"config": {"env": "maze-v1"}, "pools": records}))
    summary = summarise(index, vpo_core.make("maze-v1"))
    assert set(summary["arms"]) == {
        f"{s}:{m}@{t}" for s in ("random", "direct") for m in ("grpo", "vpo") for t in (10, 30)
    }
    assert set(summary["differences"]) == {
        f"{s}:vpo@{t} - {s}:grpo@{t}" for s in ("random", "direct") for t in (10, 30)
    }
    assert summary["differences"]["direct:vpo@30 - direct:grpo@30"]["mean_w_star"]["low"] > 0.1
    assert summary["differences"]["random:vpo@30 - random:grpo@30"]["mean_w_star"]["low"] < 0.1
    for entry in summary["arms"].values():
        assert {"valid", "diversity_valid", "distinct_valid", "pareto_covered"} <= set(entry)
    write_report(index)  # one best@k plot per start and evaluated step
    assert sorted(p.name for p in tmp_path.glob("best_at_k*.png")) == [
        f"best_at_k_{start}_step{step}.png" for start in ("direct", "random") for step in (10, 30)
    ]


def test_jobs_run_the_library_commands_and_markers_of_app_paths_still_count(tmp_path, monkeypatch):
    import json
    import subprocess
    import sys

    from vpo_lab import experiment

    config = ExperimentConfig(
        methods="grpo", main_methods="grpo", main_seeds=1, ablation_options="", work=str(tmp_path)
    )
    jobs = plan(config)
    assert [j.args[0] for j in jobs] == ["train", "evaluate", "train", "evaluate"]
    warm = jobs[0]
    marker = experiment._marker(config, warm)  # written when jobs ran apps/train.py by path
    marker.parent.mkdir(parents=True)
    marker.write_text(json.dumps({"args": ["apps/train.py", *warm.args[1:]], "seconds": 1.0}))
    commands = []

    def fake_run(command, stdout=None, stderr=None):
        commands.append(command)
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(subprocess, "run", fake_run)
    experiment.run_jobs(config, jobs)
    expected = [[sys.executable, "-m", "vpo_engines.local", *j.args] for j in jobs[1:]]
    assert sorted(commands) == sorted(expected)  # two at a time (jobs=2): independent jobs in either order
    assert all(experiment._is_done(config, j) for j in jobs)
    marker.write_text(json.dumps({"args": ["apps/evaluate.py", *warm.args[1:]]}))
    assert not experiment._is_done(config, warm)


def test_the_local_commands_module_dispatches_and_refuses_unknown_commands(capsys):
    from vpo_engines.local.__main__ import main

    assert main(["nope"]) == 2
    assert "usage: python -m vpo_engines.local" in capsys.readouterr().err
    assert main(["evaluate", "--help"]) == 0
    assert "checkpoints" in capsys.readouterr().out


def test_warm_starts_made_on_a_gpu_count_on_the_cpu_and_only_warm_runs_the_warm_starts(tmp_path):
    from vpo_lab import experiment

    options = {"methods": "grpo,vpo", "main_methods": "grpo,vpo", "main_seeds": 1, "ablation_options": ""}
    gpu = ExperimentConfig(**options, work=str(tmp_path), warm_train="device=cuda warmup_steps=7", train="device=cuda")
    cpu = ExperimentConfig(**options, work=str(tmp_path), warm_train="device=cuda warmup_steps=7")
    warm = {j.name: j for j in plan(gpu) if j.kind == "warm"}
    assert sorted(warm) == ["main/warm-multi-seed0", "main/warm-single-seed0"]
    # warm_train reaches the warm starts only, after the start's options (so it overrides them)
    assert warm["main/warm-multi-seed0"].args[-2:] == ["device=cuda", "warmup_steps=7"]
    assert not any("warmup_steps=7" in j.args for j in plan(gpu) if j.kind != "warm")
    for job in plan(gpu):  # every job finished on the GPU machine ...
        marker = experiment._marker(gpu, job)
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps({"args": job.args}))
    # ... counts as done on the CPU, where the same jobs carry no train-wide device=cuda
    assert all(experiment._is_done(cpu, job) for job in plan(cpu))
    assert any(job.args != gpu_job.args for job, gpu_job in zip(plan(cpu), plan(gpu), strict=True))
    # any other difference is still a different job
    other = ExperimentConfig(**options, work=str(tmp_path), warm_train="device=cuda warmup_steps=8")
    assert not all(experiment._is_done(other, job) for job in plan(other))
    # a grid of fewer methods names another method on its multi warm start: still the same warm start
    fewer = ExperimentConfig(
        **{**options, "methods": "multi_rlvr"}, work=str(tmp_path), warm_train="device=cuda warmup_steps=7"
    )
    fewer_warm = next(j for j in plan(fewer) if j.kind == "warm")
    assert "method=multi_rlvr" in fewer_warm.args
    assert "method=vpo" in warm["main/warm-multi-seed0"].args
    assert experiment._is_done(fewer, fewer_warm)
    with pytest.raises(ValueError, match="only must be empty or 'warm'"):
        ExperimentConfig(only="train")


def test_only_warm_runs_just_the_warm_starts_and_their_evaluations(capsys):
    from vpo_lab.experiment import main

    assert (
        main(["env=maze-v1", "methods=grpo,vpo", "main_seeds=1", "ablation_options=", "only=warm", "dry_run=true"]) == 0
    )
    lines = capsys.readouterr().out.splitlines()
    names = sorted(line.split()[1] for line in lines)
    assert names == [
        "eval/main/warm-multi-seed0@init",
        "eval/main/warm-single-seed0@init",
        "main/warm-multi-seed0",
        "main/warm-single-seed0",
    ]


def test_collect_only_summarises_the_finished_jobs_of_a_grid_and_runs_nothing(tmp_path):
    from vpo_lab.experiment import main

    tiny = [
        "env=maze-v1",
        "methods=grpo,vpo",
        "main_seeds=1",
        "ablation_options=",
        "steps=2",
        "eval_tasks=2",
        "eval_samples=3",
        f"work={tmp_path / 'work'}",
        f"out={tmp_path / 'out'}",
        "warm_train=warmup_steps=2 warmup_batch=2 hidden_size=32 layers=1 heads=2 vocab_size=300",
    ]
    assert main([*tiny, "only=warm"]) == 0  # the warm starts and their evaluations, for real
    (tmp_path / "out").rename(tmp_path / "out-warm")
    assert main([*tiny, "collect_only=true"]) == 0
    index = json.loads((tmp_path / "out" / "index.json").read_text())
    assert sorted(record["method"] for record in index["pools"]) == ["warm-multi", "warm-single"]
    assert all((tmp_path / "out" / record["pool"]).exists() for record in index["pools"])
    assert not (tmp_path / "work" / "main" / "vpo-seed0").exists()  # no RL run was started
    assert "collect_only" not in index["config"]


def test_arms_sort_by_start_method_and_step_in_number_order():
    from vpo_lab.experiment_report import _arm_order

    arms = ["random:vpo@50", "direct:grpo@300", "direct:warm-single", "direct:grpo@50", "direct:grpo@150", "vpo"]
    assert sorted(arms, key=_arm_order) == [
        "vpo",
        "direct:grpo@50",
        "direct:grpo@150",
        "direct:grpo@300",
        "direct:warm-single",
        "random:vpo@50",
    ]


def test_a_fresh_clone_resumes_from_the_committed_results_and_its_kept_warm_starts(tmp_path, capsys):
    import gzip
    import shutil

    from vpo_lab.experiment import main

    tiny = [
        "env=maze-v1",
        "methods=grpo",
        "main_seeds=1",
        "other_seeds=1",
        "ablation_options=",
        "steps=2",
        "eval_tasks=2",
        "eval_samples=3",
        "keep_warm=true",
        f"work={tmp_path / 'work'}",
        f"out={tmp_path / 'out'}",
        "train=hidden_size=32 layers=1 heads=2 vocab_size=300",
        "warm_train=warmup_steps=2 warmup_batch=2",
    ]
    assert main(tiny) == 0  # warm start, one GRPO run, their evaluations, for real
    out = tmp_path / "out"
    assert (out / "warm" / "main__warm-single-seed0" / "config.json").exists()
    # the run's per-step records are kept gzipped, the same records as the run's own file
    kept_metrics = gzip.decompress((out / "runs" / "main__grpo-seed0" / "metrics.jsonl.gz").read_bytes())
    assert kept_metrics == (tmp_path / "work" / "main" / "grpo-seed0" / "metrics.jsonl").read_bytes()
    assert len(kept_metrics.decode().splitlines()) == 2
    assert not (out / "runs" / "main__grpo-seed0" / "metrics.jsonl").exists()
    kept = sorted(p.name for p in (out / "done").iterdir())
    assert kept == [
        "eval__main__grpo-seed0.json",
        "eval__main__warm-single-seed0-init.json",
        "main__grpo-seed0.json",
        "main__warm-single-seed0.json",
    ]
    shutil.rmtree(tmp_path / "work")  # a fresh clone: only the committed out/ is left
    capsys.readouterr()
    assert main([*tiny, "dry_run=true"]) == 0
    assert all(line.startswith("done") for line in capsys.readouterr().out.splitlines())

    # a new arm runs from the restored warm start; the earlier arms are neither rerun nor dropped
    assert main([*tiny, "methods=grpo,maxrl"]) == 0
    assert (tmp_path / "work" / "main" / "warm-single-seed0" / "init_model" / "config.json").exists()
    assert (tmp_path / "work" / "main" / "maxrl-seed0" / "metrics.jsonl").exists()
    assert not (tmp_path / "work" / "main" / "grpo-seed0").exists()
    index = json.loads((out / "index.json").read_text())
    assert sorted(record["method"] for record in index["pools"]) == ["grpo", "maxrl", "warm-single"]
    assert "restored the warm start main/warm-single-seed0" in capsys.readouterr().err


def test_a_warm_start_marked_done_in_out_without_its_model_is_redone(tmp_path):
    from vpo_lab.experiment import ExperimentConfig, _is_done, _kept_marker, _marker, plan

    config = ExperimentConfig(
        env="maze-v1", methods="grpo", main_seeds=1, ablation_options="", work=str(tmp_path / "w"), out=str(tmp_path)
    )
    warm = next(job for job in plan(config) if job.kind == "warm")
    marker = _kept_marker(config, warm)
    marker.parent.mkdir(parents=True)
    marker.write_text(json.dumps({"args": warm.args}))
    assert not _is_done(config, warm)  # nothing to restore: the warm-up runs again
    _marker(config, warm).parent.mkdir(parents=True)
    _marker(config, warm).write_text(json.dumps({"args": warm.args}))
    assert _is_done(config, warm)


def test_collecting_one_start_keeps_the_other_starts_records(tmp_path):
    from vpo_lab.experiment import ExperimentConfig, collect, plan

    out = tmp_path / "out"
    (out / "pools").mkdir(parents=True)
    (out / "pools" / "random__grpo-seed0__grpo-seed0.npz").write_bytes(b"kept")
    other = {"job": "eval/random/grpo-seed0", "method": "grpo", "pool": "pools/random__grpo-seed0__grpo-seed0.npz"}
    gone = {"job": "eval/random/vpo-seed0", "method": "vpo", "pool": "pools/missing.npz"}
    (out / "index.json").write_text(json.dumps({"config": {}, "pools": [other, gone, {"method": "old", "pool": "x"}]}))
    config = ExperimentConfig(
        env="maze-v1", methods="grpo", main_seeds=1, starts="direct:env.demonstrations=direct",
        work=str(tmp_path / "work"), out=str(out),
    )  # fmt: skip
    index = json.loads(collect(config, plan(config)).read_text())
    assert index["pools"] == [other]  # nothing of the direct start ran; the random start's pool file is there


def test_an_unfinished_runs_evaluations_are_collected_but_not_kept_as_done(tmp_path):
    from vpo_lab.experiment import ExperimentConfig, _marker, collect, plan

    config = ExperimentConfig(
        env="maze-v1", methods="grpo", main_seeds=1, ablation_options="", steps=10, eval_steps="5",
        work=str(tmp_path / "work"), out=str(tmp_path / "out"),
    )  # fmt: skip
    jobs = {job.name: job for job in plan(config)}
    step5 = jobs["eval/main/grpo-seed0@step5"]  # the run itself is not done
    _marker(config, step5).parent.mkdir(parents=True)
    _marker(config, step5).write_text(json.dumps({"args": step5.args}))
    Path(step5.info["eval_dir"]).mkdir(parents=True)
    _save_pool(Path(step5.info["eval_dir"]) / "pool_grpo-seed0@step5.npy", np.zeros((2, 3, 1, 4)), "single")
    index = json.loads(collect(config, list(jobs.values())).read_text())
    assert [record["job"] for record in index["pools"]] == ["eval/main/grpo-seed0@step5"]
    assert not (tmp_path / "out" / "done").exists()


def test_a_run_that_runs_again_has_its_old_evaluations_redone(tmp_path, monkeypatch, capsys):
    import subprocess

    from vpo_lab import experiment

    config = ExperimentConfig(
        env="maze-v1", methods="grpo", main_seeds=1, ablation_options="", steps=10, eval_steps="5",
        work=str(tmp_path / "work"), out=str(tmp_path / "out"),
    )  # fmt: skip
    jobs = plan(config)
    by_name = {job.name: job for job in jobs}
    warm, run, step5 = (
        by_name["main/warm-single-seed0"],
        by_name["main/grpo-seed0"],
        by_name["eval/main/grpo-seed0@step5"],
    )
    # an interrupted grid: the warm start finished, the run was stopped after its step-5 evaluation
    for job in (warm, step5):
        for marker in (experiment._marker(config, job), experiment._kept_marker(config, job)):
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(json.dumps({"args": job.args}))
    (tmp_path / "out" / "warm" / "main__warm-single-seed0").mkdir(parents=True)
    (tmp_path / "out" / "warm" / "main__warm-single-seed0" / "config.json").write_text("{}")
    assert experiment._is_done(config, step5)  # its own marker says done ...
    pending = [job.name for job in experiment.pending_jobs(config, jobs)]
    assert step5.name in pending
    assert run.name in pending
    assert warm.name not in pending
    assert experiment.main([f"{k}={v}" for k, v in [
        ("env", "maze-v1"), ("methods", "grpo"), ("main_seeds", 1), ("ablation_options", ""), ("steps", 10),
        ("eval_steps", 5), ("work", tmp_path / "work"), ("out", tmp_path / "out"), ("dry_run", "true"),
    ]]) == 0  # fmt: skip
    states = dict(line.split()[1::-1] for line in capsys.readouterr().out.splitlines())
    assert states[step5.name] == "todo"
    assert states[warm.name] == "done"

    import threading

    commands, marker_seen, lock = [], [], threading.Lock()

    def fake_run(command, stdout=None, stderr=None):  # runs in two threads at once (jobs=2)
        with lock:
            if not commands:
                marker_seen.append(experiment._marker(config, step5).exists())
            commands.append(command[3:])
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(subprocess, "run", fake_run)
    experiment.run_jobs(config, jobs)
    assert marker_seen == [False]  # removed before anything ran
    assert step5.args in commands
    assert run.args in commands
    assert warm.args not in commands
    assert not experiment._kept_marker(config, step5).exists()  # collect keeps it again once the run is done
    assert "eval/main/grpo-seed0@step5: runs again" in capsys.readouterr().err


def test_a_marker_from_before_a_default_changed_counts_for_the_job_that_pins_it(tmp_path):
    """recipe v2 pins lr=0.0001 and prompts_per_step=8 (the engine's defaults when its grid ran): its committed
    markers name neither; markers of identity 2 name lr= but not prompts_per_step=."""
    from vpo_lab.experiment import MARKER_IDENTITY, ExperimentConfig, _is_done, _marker, plan

    config = ExperimentConfig(
        env="maze-v1",
        methods="grpo",
        main_seeds=1,
        ablation_options="",
        train="layers=4 lr=0.0001 prompts_per_step=8",
        work=str(tmp_path / "w"),
        out=str(tmp_path),
    )
    job = next(job for job in plan(config) if job.kind == "train")
    assert {"lr=0.0001", "prompts_per_step=8"} <= set(job.args)
    marker = _marker(config, job)
    marker.parent.mkdir(parents=True)
    unpinned = [arg for arg in job.args if arg not in ("lr=0.0001", "prompts_per_step=8")]
    no_prompts = [arg for arg in job.args if arg != "prompts_per_step=8"]

    def done(args: list[str], identity: int | None) -> bool:
        marker.write_text(json.dumps({"args": args} | ({} if identity is None else {"identity": identity})))
        return _is_done(config, job)

    assert done(unpinned, None)  # written before markers carried "identity"
    assert done(no_prompts, 2)  # session 25's markers name lr=, and ran at 8 prompts per step
    assert not done(unpinned, 2)  # an identity-2 marker without lr= ran at that day's lr (1.6e-4)
    assert not done(no_prompts, MARKER_IDENTITY)  # a new one: no prompts_per_step= is today's default
    assert done(job.args, MARKER_IDENTITY)
    assert not done([arg if arg != "lr=0.0001" else "lr=0.0002" for arg in job.args], None)  # named another lr
