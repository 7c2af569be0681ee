"""env-maze: the paper's mazes, the reward definition, parsing, the exact solver, prompts and CLI."""

from __future__ import annotations

import itertools
import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vpo_core
from env_maze import Maze, MazeEnv, solve
from env_maze._generate import generate, split_seeds
from env_maze._parse import parse_moves, split_routes
from env_maze._reward import score_routes, simulate_reference
from env_maze.cli import main as cli_main
from vpo_core.testing import check_env

PAPER_EXAMPLE = """\
S . . . . . . D .
# . # . . . . D D
. . # # . . . . D
. # L . . . L # .
. . . . B . . . .
. . . . . L . . .
G . . . . . . . .
G G . . . . . . .
G G . . . . # . E"""

SEED_42 = [
    "S . . . . . D D D",
    ". . . . . . . D .",
    ". . . . L . . . #",
    ". . . . . . . . .",
    ". . . . B . . . .",
    "# . . L . . . . .",
    "G . . . . . L . .",
    "G G . . . . . . .",
    "G G . . . . . . E",
]

U, D, L, R = 0, 1, 2, 3


@pytest.fixture(scope="module")
def env():
    return MazeEnv()


# ------------------------------------------------------------------------ generation anchors
def test_seed_4242_is_test_maze_0_and_the_papers_example(env):
    maze = env.tasks("test")[0].payload
    assert maze.text == PAPER_EXAMPLE
    assert (maze.budget, maze.count("G"), maze.count("D"), maze.count("L"), maze.seed) == (27, 5, 4, 3, 4242)


def test_seed_42_is_train_maze_0(env):
    maze = env.tasks("train")[0].payload
    assert maze.text.splitlines() == SEED_42
    assert maze.budget == 25


def test_split_seeds_and_budget_range():
    train, test = split_seeds("train"), split_seeds("test")
    assert (len(train), train[0], train[-1]) == (1000, 42, 1119)
    assert (len(test), test[0], test[-1]) == (100, 4242, 4345)
    budgets = [generate(s).budget for s in train[::10] + test]
    assert min(budgets) >= 23
    assert max(budgets) <= 33
    assert generate(43) is None or 43 in train  # rejected seeds are skipped, never retried
    with pytest.raises(ValueError, match="unknown maze split"):
        split_seeds("validation")


def test_the_env_tasks_are_the_generated_mazes_of_the_split_seeds(env):
    # the split's mazes are kept from the seed scan (not generated twice): they must be what `generate` gives
    for split in ("train", "test"):
        tasks = env.tasks(split)
        seeds = split_seeds(split)[: len(tasks)]
        assert [task.metadata["seed"] for task in tasks] == list(seeds)
        for task, seed in list(zip(tasks, seeds, strict=True))[::37]:
            fresh = generate(seed)
            assert fresh is not None
            assert (task.payload.rows, task.payload.budget) == (fresh.rows, fresh.budget)


def test_every_test_maze_keeps_the_designed_conflict(env):
    for task in env.tasks("test"):
        solution = solve(task.payload)
        # no achievable route collects all gold and all diamonds, so no route scores w* = 1...
        assert not np.any((solution.rewards[:, 1] == 1) & (solution.rewards[:, 2] == 1))
        assert solution.best_score < 1
        # ...while every treasure kind can be collected in full by some route
        assert solution.rewards[:, 1].max() == 1
        assert solution.rewards[:, 2].max() == 1


# ---------------------------------------------------------------------------------- reward
SMALL = Maze.from_text(
    """\
S G L . E
. # # # .
. D . . B""",
    budget=12,
)


@pytest.mark.parametrize(
    ("moves", "expected"),
    [
        ([R, R, R, R], [1, 1, 0, 0]),  # through gold and the only lava, straight to E
        ([D, D, R, R, R, R, U, U], [1, 0, 1, 1]),  # the lower corridor: diamond and bonus, no lava
        ([R, L, D, D, R, R, R, R, U, U], [1, 1, 1, 1]),  # gold, back, then the lower corridor
        ([R, R, R], [0, 0, 0, 0]),  # never reaches E
        ([], [0, 0, 0, 0]),  # no moves
        ([U, U, L, R, R, R, R], [1, 1, 0, 0]),  # wall and border bumps cost steps but do not move
        ([R, R, R, R, L, L, L], [1, 1, 0, 0]),  # moves after E are ignored
        ([D, D, R, R, R, R, U, U] + [R] * 4, [1, 0, 1, 1]),
    ],
)
def test_reward_definition_golden(moves, expected):
    np.testing.assert_array_equal(score_routes(SMALL, [moves])[0], expected)
    np.testing.assert_array_equal(simulate_reference(SMALL, moves), expected)


def test_budget_truncates_and_items_count_once():
    tight = Maze(rows=SMALL.rows, budget=9)
    # 10 moves needed for gold+diamond: with budget 9 the route stops short of E
    np.testing.assert_array_equal(score_routes(tight, [[R, L, D, D, R, R, R, R, U, U]])[0], [0, 0, 0, 0])
    # revisiting the gold cell does not count twice
    np.testing.assert_array_equal(score_routes(SMALL, [[R, L, R, L, R, R, R, R]])[0], [1, 1, 0, 0])


def test_vectorised_scorer_equals_reference_simulator(env):
    rng = random.Random(0)
    for task in env.tasks("test")[:20]:
        maze = task.payload
        routes = [list(r) for r in solve(maze).routes[:30]]
        routes += [[rng.randrange(4) for _ in range(rng.randrange(0, 40))] for _ in range(100)]
        routes += [[*r[: rng.randrange(len(r) + 1)], rng.randrange(4)] for r in routes[:30]]
        got = score_routes(maze, routes)
        want = np.array([simulate_reference(maze, r) for r in routes])
        np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------------- parsing
@pytest.mark.parametrize(
    ("text", "moves"),
    [
        ("UP DOWN left Right", (U, D, L, R)),
        ("up,down->LEFT.right\nUP", (U, D, L, R, U)),
        ("UPUP U N 2UP UP_LEFT", ()),
        ("go Up then rightwards RIGHT", (U, R)),
    ],
)
def test_parse_moves_is_tolerant_like_the_authors(text, moves):
    assert parse_moves(text) == moves


def test_single_mode_reads_the_first_answer_tag(env):
    task = env.tasks("test")[0]
    cands = env.parse(task, "think: UP UP\n<ANSWER>RIGHT DOWN</answer> <answer>LEFT</answer>")
    assert [c.answer for c in cands] == [(R, D)]


def test_multi_route_parsing_rules():
    assert split_routes("<route_2>UP</route_2> DOWN", 3) == ["", "UP", ""]
    assert split_routes("UP --- DOWN --- LEFT --- RIGHT", 3) == ["UP", "DOWN", "LEFT"]
    assert split_routes("<answer>UP</answer><answer>DOWN</answer>", 2) == ["UP", "DOWN"]
    assert split_routes("just UP", 3) == ["just UP", "", ""]


def test_training_rewards_dedupe_routes_by_moves(env):
    task = env.tasks("test")[0]
    ref = env.reference_completion(task)[len("<answer>") : -len("</answer>")]
    text = f"<route_1>{ref}</route_1><route_2>{ref.lower()}</route_2><route_3></route_3>"
    cands = env.parse(task, text, mode="multi", m=3)
    training = env.dedupe_rewards(task, cands, env.rewards(task, cands))
    np.testing.assert_array_equal(training[1:], 0.0)
    assert training[0, 0] == 1.0


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400), st.integers(1, 6))
def test_parsing_and_scoring_are_total(text, m):
    env = MazeEnv(train_size=1, test_size=1)
    task = env.tasks("test")[0]
    rewards = env.score(task, text, mode="multi", m=m)
    assert rewards.shape == (m, 4)
    assert np.all((rewards >= 0) & (rewards <= 1))


# ---------------------------------------------------------------------------------- solver
def _brute_force(maze: Maze) -> set[tuple[float, ...]]:
    outcomes = set()
    for length in range(maze.budget + 1):
        for route in itertools.product(range(4), repeat=length):
            r = simulate_reference(maze, route)
            if r[0] == 1:
                outcomes.add(tuple(r))
    return outcomes


def test_solver_finds_every_outcome_of_a_small_maze():
    maze = Maze.from_text("S G L\n. # E\nD . B", budget=8)
    solution = solve(maze)
    assert {tuple(r) for r in solution.rewards} == _brute_force(maze)
    np.testing.assert_array_equal(score_routes(maze, solution.routes), solution.rewards)
    assert solution.best_score == pytest.approx(max(np.mean(r) for r in _brute_force(maze)))


def test_solver_pareto_set_of_the_papers_example(env):
    solution = solve(env.tasks("test")[0].payload)
    assert {tuple(r) for r in solution.pareto_rewards} == {(1, 1, 0, 1), (1, 0, 1, 1), (1, 0.2, 0.25, 1)}
    assert solution.best_score == 0.75
    for row in solution.rewards:  # every non-Pareto outcome is dominated by a Pareto one
        assert np.any(np.all(solution.pareto_rewards >= row, axis=1))


def test_demonstrations_are_valid_and_diverse(env):
    task = env.tasks("train")[3]
    demos = env.demonstrations(task, 12)
    rewards = score_routes(task.payload, [parse_moves(d) for d in demos])
    assert np.all(rewards[:, 0] == 1)
    assert len({tuple(r) for r in rewards}) == len(demos)
    assert env.optimum(task) == pytest.approx(env.reward_spec.scalarize(rewards).max())


# ------------------------------------------------------------------------- env and prompts
def test_conformance(env):
    check_env(env, max_tasks=3)


def test_prompts_follow_the_paper(env):
    task = env.tasks("test")[0]
    single = env.render_prompt(task)[0]["content"]
    assert single.startswith("Navigate a 9x9 maze from S to E. Collect gold and diamonds, avoid lava.\n\nGrid:\n")
    assert "- You have 27 steps.\n" in single
    assert single.endswith(
        "This maze has 5 Gold, 4 Diamond, 3 Lava, and 1 Bonus tiles.\n"
        "Output moves in <answer>...</answer> tags, e.g., <answer>UP UP RIGHT</answer>."
    )
    multi = env.render_prompt(task, mode="multi", m=4)[0]["content"]
    assert "- You have 27 steps per route.\n" in multi
    assert "Each route has its own 27-step budget" in multi
    assert "14-step" not in multi
    assert "provide 4 genuinely different routes" in multi
    assert "(<route_1>...</route_1>, <route_2>...</route_2>, <route_3>...</route_3>, <route_4>...</route_4>)" in multi
    assert single.split("This maze has")[0].replace("steps.", "steps per route.") == multi.split("This maze has")[0]
    goal = env.render_prompt(task, goal_weights=[0.1, 0.2, 0.3, 0.4])[0]["content"]
    assert goal.endswith(
        "- Reaching the exit (E): 0.10\n- Collecting Gold (G) tiles: 0.20\n"
        "- Collecting Diamond (D) tiles: 0.30\n- Avoiding Lava (L) tiles: 0.40\n\n"
        "Maximize your weighted score."
    )


def test_task_from_grid_scores_user_mazes():
    task = MazeEnv.task_from_grid(PAPER_EXAMPLE, 27)
    env = MazeEnv(train_size=1, test_size=1)
    assert task.payload == env.tasks("test")[0].payload
    with pytest.raises(ValueError, match="exactly one S and one E"):
        MazeEnv.task_from_grid(". .\n. E", 5)
    with pytest.raises(ValueError, match="rectangle"):
        MazeEnv.task_from_grid("S .\n. . E", 5)
    with pytest.raises(ValueError, match="unknown maze cell"):
        MazeEnv.task_from_grid("S X\n. E", 5)


def test_registry_gym_and_bad_config():
    env = vpo_core.make("maze-v1", test_size=5)
    assert len(env.tasks("test")) == 5
    with pytest.raises(ValueError, match="test_size must be an int in"):
        MazeEnv(test_size=500)
    import gymnasium

    genv = gymnasium.make("vpo/Maze-v1", split="test", mode="multi", m=3, disable_env_checker=True)
    assert genv.unwrapped.reward_space == gymnasium.spaces.Box(0.0, 1.0, (4,), np.float32)
    _, info = genv.reset(seed=0, options={"index": 0})
    ref = MazeEnv().reference_completion(MazeEnv().tasks("test")[0], mode="multi", m=3)
    _, reward, terminated, _, info = genv.step(ref)
    assert reward.tolist() == [1.0, 1.0, 1.0, 1.0]  # the three Pareto routes: each dimension's best is 1
    assert terminated
    assert info["candidate_rewards"].shape == (3, 4)
    assert (info["candidate_rewards"] @ info["w_star"]).max() == pytest.approx(0.75)  # best-of-3 under w*


# --------------------------------------------------------------------------------------- CLI
def test_cli_render_export_score(tmp_path, capsys):
    assert cli_main(["render", "split=test", "index=0"]) == 0
    assert "S . . . . . . D ." in capsys.readouterr().out
    out = tmp_path / "test.jsonl"
    assert cli_main(["export", "split=test", "mode=multi", f"out={out}", "env.test_size=4"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 4
    completions = tmp_path / "c.jsonl"
    completions.write_text(
        "\n".join(json.dumps({"index": r["index"], "completion": r["reference"]}) for r in rows) + "\n"
    )
    capsys.readouterr()
    assert cli_main(["score", f"completions={completions}", "mode=multi", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["fraction_of_optimum"] == pytest.approx(1.0)
    assert summary["best_at_k"]["best@3"] == pytest.approx(
        np.mean([solve(MazeEnv().tasks("test")[i].payload).best_score for i in range(4)])
    )
    completions.write_text('{"idx": 0}\n')
    with pytest.raises(SystemExit, match="expected"):
        cli_main(["score", f"completions={completions}"])
