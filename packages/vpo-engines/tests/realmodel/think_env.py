"""A two-dimension env whose format reward needs a think block, as ToolRL's does; it counts `rewards` calls.

Imported by the tests as ``think_env:ThinkEnv`` (the ``package.module:Class`` form of an env id), so the
reward manager and the apps build it like any env. Targets: 7 on the train split, 7 then 5 alternating
on the test split.
"""

from __future__ import annotations

import re
from typing import ClassVar

import numpy as np

from vpo_core import Candidate, EnvProfile, Generation, Message, RewardSpec, Task, TextEnv
from vpo_core.multi_answer import extract_numbered

THINK = re.compile(r"<think>\n.*?\n</think>\n\n", re.DOTALL)


class ThinkEnv(TextEnv[int, tuple[int, bool]]):
    """Name the target: (format: the turn opens with a think block, correct: the number is the target)."""

    env_id = "think-v1"
    reward_spec = RewardSpec.uniform(
        ("format", "correct"), ("Opening the turn with a think block", "Naming the target")
    )
    profile = EnvProfile(
        train=Generation(max_new_tokens_single=24, max_new_tokens_multi=40),
        eval=Generation(temperature=0.7, max_new_tokens_single=24, max_new_tokens_multi=40),
        eval_samples=4,
        chat_template_kwargs={"enable_thinking": False},
    )
    calls: ClassVar[int] = 0
    """`rewards` calls made on any instance (the tests reset it)."""

    def _load_tasks(self, split):
        targets = [7] * 4 if split == "train" else [7, 5, 7, 5]
        return [Task(id=f"think-v1/{split}/{i}", split=split, index=i, payload=t) for i, t in enumerate(targets)]

    def _render_prompt(self, task, mode, m):
        ask = "one number in <answer></answer>" if mode == "single" else f"{m} numbers in <answer_1>..<answer_{m}>"
        return [Message(role="user", content=f"Guess the target. Write {ask}.")]

    def _parse(self, task, completion, mode, m):
        formatted = THINK.match(completion) is not None
        bodies = [(re.search(r"<answer>(.*?)</answer>", completion) or [None, None])[1]] if mode == "single" else None
        if bodies is None:
            bodies = extract_numbered(completion, "answer", m)
        out = []
        for i, body in enumerate(bodies):
            text = (body or "").strip()
            answer = (int(text), formatted) if text.isdigit() else None
            out.append(Candidate(index=i, text=text, answer=answer))
        return out

    def reward(self, task, candidate):
        if candidate.answer is None:
            return np.zeros(2)
        value, formatted = candidate.answer
        return np.array([float(formatted), float(value == task.payload)])

    def rewards(self, task, candidates):
        type(self).calls += 1
        return super().rewards(task, candidates)
