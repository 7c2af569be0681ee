"""Options, problem selection, the ledger, curves and figure, and the endpoint check (no OpenEvolve needed)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from env_lcb import LcbEnv, Problem
from vpo_core import Task
from vpo_core.evaluation import SavedPool, save_pool
from vpo_core.metrics import best_at_k, pass_at_k
from vpo_search import (
    EndpointError,
    Ledger,
    check_endpoint,
    hardest_problems,
    load_pools,
    parse_args,
    pool_best_at_k,
    problem_summary,
    program_hash,
    resolve_problems,
    write_report,
)

ENV = LcbEnv()


def _task(index: int, d: int) -> Task:
    tests = tuple((f"{i}\n", f"{i}\n") for i in range(d))
    problem = Problem(pid=f"p{index}", question="q", starter_code="", tests=tests, fn_name=None, solution=None)
    return Task(id=f"lcb-v1/test/{index}", split="test", index=index, payload=problem)


TASKS = [_task(0, 2), _task(1, 3), _task(2, 2), _task(3, 4)]


# ------------------------------------------------------------------------------------------------ options
def test_options_default_to_the_paper_and_parse_typed_key_values():
    command, config = parse_args([])
    assert command == "run"
    assert (config.iterations, config.m, config.mode, config.hardest_k, config.max_problems) == (
        200,
        3,
        "multi",
        30,
        32,
    )
    command, config = parse_args(
        ["report", "iterations=5", "budget_s=90.5", "pools=a.npy,b.npy", "problems=3,17", "env.data_dir=/d"]
    )
    assert command == "report"
    assert (config.iterations, config.budget_s, config.pools, config.problems) == (5, 90.5, ["a.npy", "b.npy"], "3,17")
    assert config.env_args == {"data_dir": "/d"}
    assert config.served_model == "vpo"
    assert parse_args(["problems=[3,17]", "model=ckpt", "budget_s=null"])[1].problems == "3,17"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["iteratons=5"], "unknown option 'iteratons'; did you mean iterations\\?"),
        (["iterations=many"], "option iterations expects an integer, got 'many'"),
        (["iterations"], "key=value pairs"),
        (["explore"], r"unknown command 'explore'; the commands are: run, report, select, and options"),
        (["env_args.data_dir=/d"], r"'env_args.data_dir=/d' is now written env.data_dir=/d\."),
        (["--iterations=5"], "write iterations=5, not '--iterations=5'"),
        (["mode=multi", "m=1"], "m must be >= 1"),
        (["shard=4/4"], "shard must be i/n"),
        (["arm=../x"], "arm must be a plain label"),
    ],
)
def test_bad_options_are_named(argv, message):
    with pytest.raises(ValueError, match=message):
        parse_args(argv)


# ------------------------------------------------------------------------------------------------ selection
def _pool(scores_by_task: list[float], d: int = 4, n: int = 10, m: int = 3) -> np.ndarray:
    """A pool where the chosen task rows have one candidate passing the first test."""
    pool = np.zeros((len(scores_by_task), n, m, d))
    for t, hit in enumerate(scores_by_task):
        if hit:
            pool[t, n - 1, m - 1, 0] = 1.0
    return pool


def _save(path: Path, rewards: np.ndarray, env=ENV, tasks=None) -> Path:
    """A pool file as apps/evaluate.py writes it: rewards with the env id and task ids in its metadata."""
    from vpo_core.evaluation import new_pool, save_pool

    tasks = TASKS[: rewards.shape[0]] if tasks is None else tasks
    return save_pool(path, new_pool(env, env.env_id, tasks, rewards, mode="multi"))


def test_hardest_problems_are_zero_at_best_at_30_for_every_arm(tmp_path):
    _save(tmp_path / "pool_vpo.npy", _pool([0, 1, 0, 0]))
    other = tmp_path / "grpo"
    other.mkdir()
    _save(other / "pool_grpo.npy", _pool([0, 0, 0, 1]))
    pools = load_pools([tmp_path / "pool_vpo.npy", other])
    vpo = str((tmp_path / "pool_vpo.npy").resolve())
    assert sorted(pools) == sorted([vpo, str((other / "pool_grpo.npy").resolve())])
    np.testing.assert_allclose(pool_best_at_k(ENV, TASKS, pools[vpo], 30), [0, 1 / 3, 0, 0])
    np.testing.assert_allclose(pool_best_at_k(ENV, TASKS, pools[vpo], 3), [0, 0.1 / 3, 0, 0])  # 1 chain in 10
    with pytest.raises(ValueError, match="given twice"):
        load_pools([tmp_path, tmp_path / "pool_vpo.npy"])
    assert [t.id for t in hardest_problems(ENV, TASKS, pools)] == ["lcb-v1/test/0", "lcb-v1/test/2"]
    chosen = resolve_problems(ENV, TASKS, "hardest", [str(tmp_path / "pool_vpo.npy"), str(other)], k=30, max_problems=1)
    assert [t.id for t in chosen] == ["lcb-v1/test/0"]


def test_selection_errors(tmp_path):
    with pytest.raises(ValueError, match="needs the evaluation pools"):
        resolve_problems(ENV, TASKS, "hardest", [], k=30, max_problems=None)
    with pytest.raises(FileNotFoundError, match="no pool_"):
        load_pools([tmp_path])
    with pytest.raises(ValueError, match="cannot give best@30"):
        pool_best_at_k(ENV, TASKS, SavedPool(_pool([0, 0, 0, 0], n=5), mode="multi"), 30)
    padded = _pool([0, 0, 0, 0])
    padded[0, 0, 0, 3] = 1.0  # task 0 has 2 tests: a non-zero third column is not padding
    with pytest.raises(ValueError, match="non-zero padding"):
        pool_best_at_k(ENV, TASKS, SavedPool(padded, mode="multi"), 30)
    with pytest.raises(ValueError, match="different numbers of tasks"):
        hardest_problems(
            ENV,
            TASKS,
            {
                "a": SavedPool(_pool([0, 0]), mode="multi", env="lcb-v1"),
                "b": SavedPool(_pool([0, 0, 0]), mode="multi", env="lcb-v1"),
            },
        )
    assert [t.index for t in resolve_problems(ENV, TASKS, "3, lcb-v1/test/1", [], k=30, max_problems=None)] == [3, 1]
    with pytest.raises(ValueError, match="out of range"):
        resolve_problems(ENV, TASKS, "9", [], k=30, max_problems=None)
    with pytest.raises(ValueError, match="unknown problem 'x'"):
        resolve_problems(ENV, TASKS, "x", [], k=30, max_problems=None)


def test_a_pool_of_another_env_or_other_tasks_is_refused(tmp_path):
    # Pool rows are matched to the split's tasks by position: a pool of another env (same shape, same d) used
    # to select problems by someone else's scores. Refused with the file, what it records and what was expected.
    import vpo_core

    maze = vpo_core.make("maze-v1")
    maze_tasks = maze.tasks("test")[:4]
    foreign = _save(tmp_path / "pool_maze.npy", np.zeros((4, 10, 3, 4)), maze, maze_tasks)
    with pytest.raises(ValueError, match=r"pool_maze.npy was made by env 'maze-v1', but the search runs on 'lcb-v1'"):
        resolve_problems(ENV, TASKS, "hardest", [str(foreign)], k=30, max_problems=None)
    bare = tmp_path / "bare" / "pool_x.npy"  # no metadata at all: refused by the reader
    bare.parent.mkdir()
    np.save(bare, _pool([0, 0, 0, 0]))
    with pytest.raises(ValueError, match=r"pool_x.npy is a pool without its metadata"):
        resolve_problems(ENV, TASKS, "hardest", [str(bare)], k=30, max_problems=None)
    save_pool(bare, SavedPool(_pool([0, 0, 0, 0]), mode="multi"))  # metadata that names no env
    with pytest.raises(ValueError, match=r"does not record which env made it.*re-run vpo eval on lcb-v1"):
        resolve_problems(ENV, TASKS, "hardest", [str(bare)], k=30, max_problems=None)
    # the same env on other tasks (another split, or other data): the ids differ
    shifted = SavedPool(_pool([0, 0]), mode="multi", env="lcb-v1", task_ids=["lcb-v1/test/1", "lcb-v1/test/2"])
    with pytest.raises(ValueError, match=r"other tasks than this split's \(row 0 is 'lcb-v1/test/1'"):
        hardest_problems(ENV, TASKS, {"p": shifted})
    renamed = SavedPool(_pool([0]), mode="multi", env="lcb-v1", task_ids=["lcb-v1/test/0"], reward_names=[["x", "y"]])
    with pytest.raises(ValueError, match=r"scored task lcb-v1/test/0 on \['x', 'y'\]"):
        hardest_problems(ENV, TASKS, {"p": renamed})


# ------------------------------------------------------------------------------------------------ report
def _fake_run(root: Path, calls: list[list[tuple[str | None, float, bool]]], arm: str = "vpo", task: str = "t/0"):
    """A state directory with a ledger: per call, its candidates as (program, score, success)."""
    root.mkdir(parents=True)
    run = {"env": "e", "split": "test", "arm": arm, "model": arm, "mode": "multi", "m": 3, "seed": 0, "task": task}
    (root / "run.json").write_text(json.dumps(run))
    ledger = Ledger(root)
    for number, call in enumerate(calls):
        ledger.add_call({"kind": "call", "call": number, "candidates": [p for p, _, _ in call]})
        for program, score, success in call:
            if program is not None:
                verdicts = ["ok" if success else "wa"]
                ledger.add_eval(
                    {"kind": "eval", "hash": program_hash(program), "rewards": [score], "verdicts": verdicts}
                    | {"feedback": "", "score": score, "success": success}
                )
    ledger.add_call({"kind": "call_error", "error": "boom"})
    return root


def test_curves_are_the_estimators_at_k_equal_to_all_candidates(tmp_path):
    calls = [
        [("a", 0.0, False), (None, 0.0, False), ("b", 0.25, False)],
        [("c", 0.5, False), ("a", 0.0, False), ("d", 0.1, False)],
        [("e", 1.0, True), ("f", 0.3, False), ("g", 1.0, True)],
    ]
    summary = problem_summary(_fake_run(tmp_path / "vpo" / "t__0", calls), evaluate_missing=None)
    assert summary["k"] == [3, 6, 9]
    assert summary["best_at_k"] == [0.25, 0.5, 1.0]
    assert summary["pass_at_k"] == [0.0, 0.0, 1.0]
    assert (summary["solved_at_iteration"], summary["failed_candidates"], summary["failed_calls"]) == (3, 1, 1)
    assert summary["best"]["program"] == "g"  # the final answer: the best search score, the latest of equals
    assert summary["best"]["iteration"] == 3
    scores = [s for call in calls for _, s, _ in call]
    for t in (1, 2, 3):  # vpo-core's unbiased estimators at k = n give the same numbers
        pool = scores[: 3 * t]
        successes = sum(ok for call in calls[:t] for _, _, ok in call)
        assert summary["best_at_k"][t - 1] == pytest.approx(best_at_k(pool, 3 * t))
        assert summary["pass_at_k"][t - 1] == pass_at_k(3 * t, successes, 3 * t)


def test_report_json_and_figure_for_two_arms(tmp_path):
    _fake_run(tmp_path / "vpo" / "t__0", [[("a", 0.5, False)] * 3, [("b", 1.0, True)] * 3], task="t/0")
    _fake_run(tmp_path / "vpo" / "t__1", [[("c", 0.0, False)] * 3], task="t/1")
    _fake_run(tmp_path / "grpo" / "t__0", [[("a", 0.5, False)] * 3], arm="grpo", task="t/0")
    _fake_run(tmp_path / "grpo" / "t__1", [[("c", 0.0, False)] * 3] * 2, arm="grpo", task="t/1")
    report = write_report(tmp_path, None)
    assert report["iterations"] == 2
    assert report["arms"]["vpo"]["pass_at_k"] == [0.0, 0.5]
    assert report["arms"]["vpo"]["best_at_k"] == [0.25, 0.5]  # t/1 keeps its last value after its one iteration
    assert report["arms"]["grpo"]["best_at_k"] == [0.25, 0.25]
    assert report["arms"]["vpo"]["solved"] == 1
    assert "warning" not in report
    saved = json.loads((tmp_path / "search.json").read_text())
    assert saved["arms"]["grpo"]["problems"]["t/1"]["iterations"] == 2
    assert json.loads((tmp_path / "vpo" / "t__0" / "result.json").read_text())["best"]["program"] == "b"
    assert (tmp_path / "search.png").stat().st_size > 10_000


def test_missing_evaluation_is_an_error_without_an_evaluator(tmp_path):
    root = _fake_run(tmp_path / "vpo" / "t__0", [[("a", 0.5, False)] * 3])
    Ledger(root).add_call({"kind": "call", "call": 1, "candidates": ["never evaluated", None, None]})
    with pytest.raises(ValueError, match="candidate 0 of iteration 2 has no evaluation"):
        problem_summary(root, evaluate_missing=None)


def test_ledger_skips_a_line_cut_short(tmp_path):
    ledger = Ledger(tmp_path)
    ledger.add_call({"kind": "call", "call": 0, "candidates": [None]})
    with open(ledger.calls_path, "a") as handle:
        handle.write('{"kind": "call", "cal')
    assert len(ledger.completed_calls()) == 1


# ------------------------------------------------------------------------------------------------ endpoint
def test_endpoint_check(openai_server, no_proxy):
    server = openai_server(lambda body: "", model="vpo", key="sekrit")
    assert check_endpoint(server.base_url, "vpo", "sekrit") == ["vpo"]
    with pytest.raises(EndpointError, match=r"serves \['vpo'\], not 'grpo'; pass model="):
        check_endpoint(server.base_url, "grpo", "sekrit")
    with pytest.raises(EndpointError, match="rejected the API key"):
        check_endpoint(server.base_url, "vpo", "wrong")
    port = server.httpd.server_address[1]
    server.close()  # nothing listens there any more
    with pytest.raises(EndpointError, match=f"cannot reach the model endpoint http://127.0.0.1:{port}/v1 .*vllm serve"):
        check_endpoint(f"http://127.0.0.1:{port}/v1", "vpo", "sekrit", timeout_s=5)


# ------------------------------------------------------------------------------------------------ adapter
def test_answer_adapter_makes_any_text_env_searchable():
    import vpo_core
    from vpo_search import AnswerSearch, check_searchable, evaluate
    from vpo_search.protocol import candidate_program

    maze = check_searchable(AnswerSearch(vpo_core.make("maze-v1")))
    task = maze.tasks("test")[0]
    candidates = maze.parse(task, maze.env.reference_completion(task, mode="multi", m=3), mode="multi", m=3)
    route = candidate_program(maze, candidates[0])
    assert route.split()[0] in ("UP", "DOWN", "LEFT", "RIGHT")
    result = evaluate(maze, task, route)
    assert result.success
    assert result.verdicts[0] == "completion=1"
    assert "Reaching the exit (E) (completion): 1" in result.feedback
    empty = evaluate(maze, task, maze.initial_program(task))
    assert empty.score == 0.0
    assert "could not be read" in empty.feedback


def test_tickets_are_unique_across_concurrent_callers(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    ledger = Ledger(tmp_path)
    with ThreadPoolExecutor(4) as pool:
        tickets = list(pool.map(lambda _: ledger.next_ticket(), range(200)))
    assert sorted(tickets) == list(range(200))


def test_select_command_picks_the_problems_every_arm_misses(tmp_path, capsys):
    from vpo_search.cli import main

    data = Path(__file__).parent / "data" / "lite"
    vpo, grpo = np.zeros((2, 10, 3, 32)), np.zeros((2, 10, 3, 32))  # zero-padded to LCB's 32 dims
    grpo[1, 4, 0, 1] = 1.0  # grpo passes a test of the second problem once
    env = LcbEnv(data_dir=data, source="lcb_lite")
    for name, rewards in (("vpo", vpo), ("grpo", grpo)):
        _save(tmp_path / f"pool_{name}.npy", rewards, env, env.tasks("test")[:2])
    args = ["select", f"pools={tmp_path}", f"out={tmp_path}", "env.source=lcb_lite", f"env.data_dir={data}"]
    assert main(args) == 0
    assert capsys.readouterr().out.split() == ["lcb-v1/test/0"]
    assert json.loads((tmp_path / "problems.json").read_text()) == ["lcb-v1/test/0"]
    with pytest.raises(SystemExit, match="cannot give best@31"):
        main([*args, "hardest_k=31"])


def test_answer_adapter_scores_a_program_with_one_rewards_call():
    import vpo_core
    from vpo_search import AnswerSearch, evaluate

    env = vpo_core.make("maze-v1")
    calls = []
    rewards = env.rewards
    env.rewards = lambda task, candidates: calls.append(len(candidates)) or rewards(task, candidates)  # type: ignore[method-assign]
    adapter = AnswerSearch(env)
    task = adapter.tasks("test")[0]
    evaluate(adapter, task, "UP RIGHT")
    assert calls == [1]
