"""`MazeEnv`: the paper's designed-conflict maze as a vpo-core text environment (``maze-v1``)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from env_maze._demos import DEMONSTRATION_STYLES, demonstration_routes, render_demonstration
from env_maze._generate import SPLITS, split_mazes
from env_maze._maze import Maze
from env_maze._parse import extract_answer, parse_moves, split_routes
from env_maze._profile import PROFILE
from env_maze._prompts import multi_prompt, single_prompt
from env_maze._reward import reduced_walk, score_routes
from env_maze._solver import route_text, solve
from vpo_core import Candidate, Message, Mode, RewardSpec, Task, TextEnv
from vpo_core.env_options import check_fields
from vpo_core.errors import ConfigError
from vpo_core.multi_answer import render_numbered
from vpo_core.types import OutcomeTable

__all__ = ["MazeConfig", "MazeEnv"]

MAZE_SPEC = RewardSpec.uniform(
    ["completion", "gold", "diamond", "avoid_lava"],
    [
        "Reaching the exit (E)",
        "Collecting Gold (G) tiles",
        "Collecting Diamond (D) tiles",
        "Avoiding Lava (L) tiles",
    ],
)

Route = tuple[int, ...]


@dataclass(frozen=True)
class MazeConfig:
    """The options of maze-v1 (``env.<field>=`` on the command lines).

    Attributes:
        train_size: Number of train mazes (the paper: 1000, seeds from 42).
        test_size: Number of test mazes (the paper: 100, seeds from 4242).
        demonstrations: Warm-start style of `MazeEnv.demonstration`: ``"random"`` (independent random
            valid routes, the default) or ``"solver"`` (Pareto-first solver routes, an ablation).
    """

    train_size: int = 1000
    test_size: int = 100
    demonstrations: str = "random"

    def __post_init__(self) -> None:
        check_fields(self, env_id="maze-v1")  # a boolean is not a size: train_size=True is refused, not 1
        if self.demonstrations not in DEMONSTRATION_STYLES:
            raise ConfigError(f"demonstrations must be one of {DEMONSTRATION_STYLES}, got {self.demonstrations!r}.")
        for name, value, paper in (("train_size", self.train_size, 1000), ("test_size", self.test_size, 100)):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= paper:
                raise ConfigError(f"{name} must be an int in [1, {paper}] (the paper's split size), got {value!r}.")


class MazeEnv(TextEnv[Maze, Route]):
    """Navigate a 9×9 maze from S to E collecting gold and diamonds and avoiding lava.

    The reward is (completion, gold, diamond, avoid_lava) in [0, 1]^4 with w* = the uniform mean;
    the geometry lets a route reach one treasure corner within the budget but not both, so no route
    maxes every dimension. A candidate is a success when it reaches the maze's best achievable
    w*-score (found by the exact solver), not the unreachable 1.0.

    Options: `MazeConfig` (``MazeEnv(train_size=20)`` or ``MazeEnv(MazeConfig(train_size=20))``).
    """

    env_id = "maze-v1"
    reward_spec = MAZE_SPEC
    splits = tuple(SPLITS)  # the generator's splits: ("train", "test")
    profile = PROFILE
    config_cls = MazeConfig
    config: MazeConfig

    # --------------------------------------------------------------------------------- tasks
    def _load_tasks(self, split: str) -> list[Task[Maze]]:
        """The paper's mazes of a split (generated once per env by `tasks`, deterministic)."""
        mazes = split_mazes(split)[: self.config.train_size if split == "train" else self.config.test_size]
        return [self._task(split, i, maze) for i, maze in enumerate(mazes)]

    @staticmethod
    def _task(split: str, index: int, maze: Maze) -> Task[Maze]:
        return Task(id=f"maze-v1/{split}/{index}", split=split, index=index, payload=maze, metadata={"seed": maze.seed})

    @staticmethod
    def task_from_grid(grid: str, budget: int) -> Task[Maze]:
        """A task from a text grid (rows of space-separated cells, as in the prompt) and a budget.

        Raises:
            ValueError: If the grid is not a rectangle of known cells with one S and one E.
        """
        maze = Maze.from_text(grid, budget)
        # a content digest, the same in every process (Python's hash() of str is salted per process)
        canonical = json.dumps({"budget": budget, "rows": list(maze.rows)}, sort_keys=True, separators=(",", ":"))
        digest = hashlib.sha256(canonical.encode()).hexdigest()[:16]
        return Task(id=f"maze-v1/custom/{digest}", split="custom", index=0, payload=maze)

    # ------------------------------------------------------------------------------- prompts
    def _render_prompt(self, task: Task[Maze], mode: Mode, m: int) -> list[Message]:
        text = single_prompt(task.payload) if mode == "single" else multi_prompt(task.payload, m)
        return [Message(role="user", content=text)]

    # ------------------------------------------------------------------------------- parsing
    def _parse(self, task: Task[Maze], completion: str, mode: Mode, m: int) -> list[Candidate[Route]]:
        texts = [extract_answer(completion)] if mode == "single" else split_routes(completion, m)
        out = []
        for i, text in enumerate(texts):
            moves = parse_moves(text)
            out.append(Candidate(index=i, text=text, answer=moves, error=None if moves else "no moves"))
        return out

    def dedup_key(self, task: Task[Maze], candidate: Candidate[Route]) -> Hashable | None:
        """The route as the reward sees it (`reduced_walk`); empty routes are dropped.

        Two routes are the same answer when their walks (the cells entered up to E within the budget)
        have the same loop-erased path and collect the same items: moves after E, beyond the step
        budget or into walls, a detour into a cell and straight back, or a tour that returns to where
        it left without collecting anything new make a copy, not a new route (issues 22 and 37).
        """
        return reduced_walk(task.payload, candidate.answer) if candidate.answer else None

    # ------------------------------------------------------------------------------- rewards
    def reward(self, task: Task[Maze], candidate: Candidate[Route]) -> NDArray[np.float64]:
        """(completion, gold, diamond, avoid_lava) of one route, shape (4,)."""
        return self.rewards(task, [candidate])[0]

    def rewards(self, task: Task[Maze], candidates: Sequence[Candidate[Route]]) -> NDArray[np.float64]:
        """Rewards of several routes, simulated together, shape (k, 4)."""
        return score_routes(task.payload, [c.answer or () for c in candidates])

    def is_success(self, rewards: ArrayLike, task: Task[Maze] | None = None) -> NDArray[np.bool_]:
        """Reaching the maze's best achievable w*-score (needs the task; without it, w*-score 1)."""
        scores = self.reward_spec.scalarize(rewards)
        if task is None:
            return scores >= 1.0 - 1e-9
        return scores >= solve(task.payload).best_score - 1e-9

    def optimum(self, task: Task[Maze]) -> float:
        """The best achievable w*-score of the task (the ceiling of best@k)."""
        return solve(task.payload).best_score

    def pareto_front(self, task: Task[Maze]) -> NDArray[np.float64]:
        """The maze's Pareto-optimal reward vectors (exact solver), best w*-score first, shape (p, 4)."""
        return solve(task.payload).pareto_rewards.copy()

    def outcome_table(self, task: Task[Maze], *, invalid: int = 4) -> OutcomeTable:
        """Every achievable reward vector of the maze with a shortest route, plus routes that miss E.

        Outcomes come from the exact solver (best w*-score first). Each text is a single-answer
        completion ``<answer>MOVES</answer>`` that `score` scores to the stored vector (checked here).
        The invalid routes are the solver's routes without their last move (they stop one step short
        of E and score 0). Effort is the number of gold and diamond tiles a route collects, so a start
        tilted against effort makes the treasure corners rare (a direct S → E route has effort 0).

        Args:
            task: The maze.
            invalid: Number of routes that miss E, >= 0.

        Returns:
            The table: n = (achievable outcomes) + `invalid` rows, d = 4.

        Raises:
            ValueError: If `invalid` is negative or the maze has too few distinct routes for it.
        """
        if isinstance(invalid, bool) or not isinstance(invalid, int) or invalid < 0:
            raise ValueError(f"invalid must be an int >= 0, got {invalid!r}.")
        maze = task.payload
        solution = solve(maze)
        short: list[Route] = []
        for route in solution.routes:
            prefix = route[:-1]
            if prefix and prefix not in short:
                short.append(prefix)
            if len(short) == invalid:
                break
        if len(short) < invalid:
            raise ValueError(
                f"task {task.id} has only {len(short)} distinct routes that stop short of E; ask for fewer."
            )
        routes = list(solution.routes) + short
        rewards = score_routes(maze, routes)
        stored = np.concatenate([solution.rewards, np.zeros((len(short), 4))])
        if not np.array_equal(rewards, stored):  # pragma: no cover - the solver and the simulator disagree
            raise RuntimeError(f"task {task.id}: the simulator does not reproduce the solver's reward vectors.")
        n_valid = len(solution.routes)
        treasure = rewards[:, 1] * maze.count("G") + rewards[:, 2] * maze.count("D")
        return OutcomeTable(
            task_id=task.id,
            rewards=rewards,
            valid=np.arange(len(routes)) < n_valid,
            pareto=np.concatenate([solution.pareto, np.zeros(len(short), dtype=bool)]),
            effort=np.round(treasure),
            texts=tuple(f"<answer>{route_text(r)}</answer>" for r in routes),
        )

    # -------------------------------------------------------------------------- demonstrations
    def answer_stop(self, *, mode: Mode = "single", m: int = 1) -> str | None:
        """The closing tag of the last answer: ``</answer>`` (single) or ``</route_m>`` (multi)."""
        return "</answer>" if mode == "single" else f"</route_{m}>"

    def reference_completion(self, task: Task[Maze], *, mode: Mode = "single", m: int = 1) -> str | None:
        """A w*-optimal route (single) or m routes over distinct Pareto points, best first (multi)."""
        solution = solve(task.payload)
        if not solution.routes:
            return None
        if mode == "single":
            return f"<answer>{route_text(solution.routes[0])}</answer>"
        routes = list(solution.pareto_routes)
        routes = [routes[i % len(routes)] for i in range(m)]
        return render_numbered("route", [route_text(r) for r in routes])

    def demonstration(
        self, task: Task[Maze], *, mode: Mode = "single", m: int = 1, rng: np.random.Generator | None = None
    ) -> str | None:
        """A warm-start completion in the style of the env option ``demonstrations`` (see `env_maze._demos`)."""
        rng = np.random.default_rng([0, task.index]) if rng is None else rng
        n = 1 if mode == "single" else m
        routes = demonstration_routes(task.payload, style=self.config.demonstrations, n=n, rng=rng, index=task.index)
        return render_demonstration(routes, mode=mode, m=m)

    def demonstrations(self, task: Task[Maze], n: int, *, seed: int = 0) -> list[str]:
        """Up to n distinct valid routes (move words), for warm-starting small models.

        Pareto-optimal routes come first (best w*-score first), then other achievable outcomes in a
        seeded random order, so a demonstration set covers different trade-offs rather than n
        copies of one route. Every route reaches E within the budget.

        Args:
            task: The task.
            n: Number of routes wanted.
            seed: Seed of the order of the non-Pareto routes.

        Returns:
            Route texts such as ``"RIGHT RIGHT DOWN ..."`` (fewer than n when the maze has fewer
            distinct outcomes).
        """
        solution = solve(task.payload)
        pareto = [r for r, keep in zip(solution.routes, solution.pareto, strict=True) if keep]
        rest = [r for r, keep in zip(solution.routes, solution.pareto, strict=True) if not keep]
        order = np.random.default_rng([seed, task.index]).permutation(len(rest))
        routes = pareto + [rest[i] for i in order]
        return [route_text(r) for r in routes[:n]]
