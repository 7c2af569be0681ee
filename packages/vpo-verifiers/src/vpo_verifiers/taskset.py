"""verifiers 0.4's classes for a VPO env: the taskset, its task, and an in-process one-call chat harness.

`vf-eval vpo-verifiers --env.taskset.env maze-v1` loads this package through verifiers' own loader: the
package's ``__all__`` exports exactly one `Taskset` subclass (`VPOTaskset`), one `Harness` subclass
(`VPOChatHarness`, so the taskset's default harness) and one `Env` subclass (`VPOEnv`: verifiers' single-agent
env whose agent runs on the local subprocess runtime by default instead of a Prime sandbox, since the harness
executes nothing).

Each task is one prompt of the env's split, rendered by the env (`TextEnv.render_prompt`, the multi-answer
prompt for m > 1). Its rewards are the env's reward dimensions, named as in its `RewardSpec` and weighted by w*,
so a trace's ``reward`` (sum of weight x score) is the project's w*-reward; for m > 1 they are derived from the
(m, d) matrix as `SetReward` says, and the matrix itself is kept in ``trace.info["vpo"]``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any, Literal

from vpo_core.registry import DEFAULT_ENV
from vpo_core.types import Mode
from vpo_verifiers._core import EnvHandle, VPOScore, check_taskset_options, env_handle, score_reply

try:
    from pydantic import Field, model_validator
    from verifiers.v1.clients import ModelContext
    from verifiers.v1.configs.agent import AgentConfig
    from verifiers.v1.configs.harness import HarnessConfig
    from verifiers.v1.configs.task import TaskConfig
    from verifiers.v1.configs.taskset import TasksetConfig
    from verifiers.v1.dialects.chat import message_to_wire
    from verifiers.v1.env import Env
    from verifiers.v1.envs.single_agent import SingleAgentEnv, SingleAgentEnvConfig
    from verifiers.v1.harness import Harness
    from verifiers.v1.runtimes import ProgramResult, Runtime, SubprocessConfig
    from verifiers.v1.state import State
    from verifiers.v1.task import Task, TaskData
    from verifiers.v1.taskset import Taskset
    from verifiers.v1.trace import Trace
except ImportError as error:  # pragma: no cover - exercised only where verifiers is missing
    raise ImportError(
        "vpo_verifiers.taskset needs verifiers 0.4 (Python >= 3.11), which this environment lacks: "
        "`pip install 'vpo-verifiers[verifiers]'`, or in this repository "
        "`UV_PROJECT_ENVIRONMENT=packages/vpo-verifiers/.venv uv sync --locked --group verifiers` "
        f"({error})."
    ) from error

__all__ = [
    "VPOChatHarness",
    "VPOChatHarnessConfig",
    "VPOEnv",
    "VPOEnvConfig",
    "VPOTask",
    "VPOTaskData",
    "VPOTaskset",
    "VPOTasksetConfig",
]


class VPOTasksetConfig(TasksetConfig):
    """The taskset's settings, under ``--env.taskset.*`` on vf-eval's command line.

    Attributes:
        env: The env id (``maze-v1``; an unversioned name takes the latest version; ``package.module:Class`` for
            an env that is not installed as a plugin).
        options: The env's options (its ``env.<key>=`` fields, e.g. ``{"data_dir": "..."}``), JSON values.
        split: The split whose prompts become tasks.
        m: Answers per completion; m > 1 asks for them in VPO's multi-answer format.
        mode: ``single`` or ``multi``; unset means multi when m > 1 (multi with m = 1 is the one-answer multi
            prompt).
        set_reward: How an (m, d) matrix becomes named rewards: ``best`` or ``max`` (`vpo_verifiers.SetReward`).
    """

    env: str = DEFAULT_ENV
    options: dict[str, Any] = Field(default_factory=dict)
    split: str = "test"
    m: int = 1
    mode: Literal["single", "multi"] | None = None
    set_reward: Literal["best", "max"] = "best"

    @model_validator(mode="after")
    def _check(self) -> VPOTasksetConfig:
        check_taskset_options(self.env, self.options, self.split, self.mode, self.m, self.set_reward)
        return self

    @property
    def prompt_mode(self) -> Mode:
        """The prompt mode (`mode`, or multi when m > 1)."""
        return self.mode or ("multi" if self.m > 1 else "single")


class VPOTaskData(TaskData):
    """One task's wire data: the rendered prompt and everything needed to score a reply without the taskset.

    Attributes:
        env: The env id.
        options: The env's options.
        split: The env's split.
        index: The task's index in the split.
        mode: The prompt mode.
        m: Answers asked for.
        set_reward: See `vpo_verifiers.SetReward`.
    """

    env: str
    options: dict[str, Any] = Field(default_factory=dict)
    split: str
    index: int
    mode: Literal["single", "multi"] = "single"
    m: int = 1
    set_reward: Literal["best", "max"] = "best"


class VPOTask(Task[VPOTaskData, State, TaskConfig]):
    """One prompt of a VPO env; scores the reply once and reports the env's dimensions as named rewards."""

    def __init__(self, data: VPOTaskData, config: TaskConfig | None = None) -> None:
        super().__init__(data, config)
        self._scores: dict[str, asyncio.Future[VPOScore]] = {}

    @property
    def key(self) -> str:
        """The env's task id with the prompt settings: unique within a taskset, stable across runs."""
        d = self.data
        return f"{d.id}|{d.mode}|m={d.m}|{d.set_reward}"

    def _handle(self) -> EnvHandle:
        return env_handle(self.data.env, self.data.options)

    def reward_names(self) -> tuple[tuple[str, float], ...]:
        """The task's named rewards and their weights (w*), in the spec's order (d varies per task in env-lcb)."""
        handle = self._handle()
        spec = handle.env.spec_for(handle.task(self.data.split, self.data.index))
        return tuple(zip(spec.names, spec.w_star, strict=True))

    async def vpo_score(self, trace: Trace) -> VPOScore:
        """The reply's score, computed once per trace (in a worker thread) however many hooks ask for it.

        The reply is the last assistant message as the model wrote it (no strip: the env's parser sees the
        whole turn, as everywhere in the project); a trace without one scores the env's floor.
        """
        replies = trace.assistant_messages
        reply = (replies[-1].content or "") if replies else ""
        key = f"{trace.id}:{hash(reply)}"
        future = self._scores.get(key)
        if future is None:
            d = self.data
            handle = self._handle()
            future = self._scores[key] = asyncio.ensure_future(
                asyncio.to_thread(
                    lambda: score_reply(
                        handle, handle.task(d.split, d.index), reply, mode=d.mode, m=d.m, set_reward=d.set_reward
                    )
                )
            )
        try:
            score = await asyncio.shield(future)
        except BaseException:
            self._scores.pop(key, None)
            raise
        trace.info["vpo"] = score.info()
        return score

    def hooks(self, attr: str) -> list[Callable[..., Any]]:
        """The hooks verifiers finds, plus the env's: one weighted reward per dimension, and the VPO metrics.

        A reward or metric plugged through ``--env.taskset.task.rewards`` / ``.metrics`` under the same name
        replaces the env's (verifiers' rule for plugged functions).
        """
        fns = super().hooks(attr)
        if attr == "reward":
            ours = [_dimension_reward(self, i, name, weight) for i, (name, weight) in enumerate(self.reward_names())]
        elif attr == "metric":
            ours = [_metrics_hook(self)]
        else:
            return fns
        taken = {fn.__name__ for fn in fns}
        merged = [fn for fn in ours if fn.__name__ not in taken] + fns
        merged.sort(key=lambda fn: (-getattr(fn, f"{attr}_priority", 0), fn.__name__))
        return merged


def _dimension_reward(task: VPOTask, i: int, name: str, weight: float) -> Callable[..., Any]:
    async def reward(trace: Trace) -> float:
        return float((await task.vpo_score(trace)).named[i])

    reward.__name__ = reward.__qualname__ = name
    reward.reward = True  # type: ignore[attr-defined]  # the tags `@vf.reward(weight=...)` sets
    reward.reward_priority = 0  # type: ignore[attr-defined]
    reward._vf_weight = float(weight)  # type: ignore[attr-defined]
    return reward


def _metrics_hook(task: VPOTask) -> Callable[..., Any]:
    async def vpo(trace: Trace) -> dict[str, float]:
        return (await task.vpo_score(trace)).metrics()

    vpo.metric = True  # type: ignore[attr-defined]
    vpo.metric_priority = 0  # type: ignore[attr-defined]
    return vpo


class VPOTaskset(Taskset[VPOTask, VPOTasksetConfig]):
    """Every prompt of one split of a registered VPO env, as verifiers tasks (see the module docstring)."""

    def __init__(self, config: VPOTasksetConfig) -> None:
        super().__init__(config)
        self.env_handle = env_handle(config.env, config.options)

    def load(self) -> Any:
        """Yield one `VPOTask` per task of the split, in the env's order."""
        cfg = self.config
        env = self.env_handle.env
        mode = cfg.prompt_mode
        for task in env.tasks(cfg.split):
            messages = env.render_prompt(task, mode=mode, m=cfg.m)
            data = VPOTaskData(
                id=task.id,
                name=task.id,
                prompt=[dict(message) for message in messages],
                env=env.env_id,
                options=dict(cfg.options),
                split=cfg.split,
                index=task.index,
                mode=mode,
                m=cfg.m,
                set_reward=cfg.set_reward,
            )
            yield VPOTask(data, cfg.task)


class VPOChatHarnessConfig(HarnessConfig):
    """The chat harness's settings (``--env.agent.harness.*``).

    Attributes:
        request_timeout: Seconds one model call may take before the rollout fails.
    """

    request_timeout: float = Field(600.0, gt=0)


class VPOChatHarness(Harness[VPOChatHarnessConfig]):
    """One chat completion per rollout, made in-process: the prompt's messages, the model's one reply.

    verifiers' own chat harnesses (``null``, ``bash``) run a program through ``uv`` that installs its
    dependencies first (network); this one only calls the rollout's interception endpoint, which applies the
    run's model and sampling settings and records the turn in the trace.
    """

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(
        self,
        ctx: ModelContext,
        trace: Trace,
        runtime: Runtime,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: TaskData,
    ) -> ProgramResult:
        """Send the prompt to ``endpoint`` once; the trace records the reply (see `Harness.launch`)."""
        system, prompt = self.resolve_prompt(data)
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        elif prompt is not None:
            messages.extend(message_to_wire(message) for message in prompt)
        body = {"model": ctx.model, "messages": messages}
        post = functools.partial(
            _post_json, f"{endpoint.rstrip('/')}/chat/completions", body, secret, self.config.request_timeout
        )
        status, text = await asyncio.to_thread(post)
        if status != 200:
            return ProgramResult(exit_code=1, stdout="", stderr=f"chat completion failed ({status}): {text[-2000:]}")
        return ProgramResult(exit_code=0, stdout=text, stderr="")


class VPOEnvConfig(SingleAgentEnvConfig):
    """`SingleAgentEnvConfig` whose agent defaults to the local subprocess runtime (``--env.agent.runtime.*``).

    The chat harness runs no program, so a remote sandbox (verifiers' default, which needs a Prime login and a
    tunnel) would only cost a round trip; ``--env.agent.runtime.type prime`` still picks one.
    """

    agent: AgentConfig = AgentConfig(runtime=SubprocessConfig())


class VPOEnv(SingleAgentEnv, Env[VPOEnvConfig]):
    """verifiers' single-agent env (one ``agent`` seat over the taskset) with `VPOEnvConfig`'s local default."""


def _post_json(url: str, body: dict[str, Any], secret: str, timeout: float) -> tuple[int, str]:
    """POST a JSON body with a bearer token; returns (HTTP status, body text), status 0 on a transport error."""
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {secret}"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return int(response.status), response.read().decode(errors="replace")
    except urllib.error.HTTPError as error:
        return int(error.code), error.read().decode(errors="replace")
    except (urllib.error.URLError, OSError) as error:
        return 0, f"{type(error).__name__}: {error}"
