"""A toy env with no paper recipe (two reward dimensions), for the generic path of the veRL adapter.

Imported by the tests as ``toy_count_env:CountEnv`` (the ``package.module:Class`` form of an env id).
"""

from __future__ import annotations

import re

import numpy as np

from vpo_core import Candidate, Message, RewardSpec, Task, TextEnv
from vpo_core.multi_answer import extract_numbered, render_numbered

_NUMBER = re.compile(r"-?\d+")


class CountEnv(TextEnv[int, int]):
    """Name the target number: (exact, close) with close = max(0, 1 - |n - t| / 10)."""

    env_id = "count-v1"
    reward_spec = RewardSpec.uniform(("exact", "close"), ("Naming the target exactly", "Being close to the target"))

    def _load_tasks(self, split):
        offset = 0 if split == "train" else 100
        return [Task(id=f"count-v1/{split}/{i}", split=split, index=i, payload=offset + i) for i in range(8)]

    def _render_prompt(self, task, mode, m):
        ask = "one number in <answer></answer>" if mode == "single" else f"{m} numbers in <answer_1>..<answer_{m}>"
        return [Message(role="user", content=f"The target is {task.payload}. Write {ask}.")]

    def _parse(self, task, completion, mode, m):
        if mode == "single":
            found = re.search(r"<answer>(.*?)</answer>", completion, re.DOTALL)
            bodies = [found.group(1) if found else None]
        else:
            bodies = extract_numbered(completion, "answer", m)
        out = []
        for i, body in enumerate(bodies):
            number = _NUMBER.fullmatch((body or "").strip())
            out.append(Candidate(index=i, text=body or "", answer=int(number.group()) if number else None))
        return out

    def reward(self, task, candidate):
        if candidate.answer is None:
            return np.zeros(2)
        gap = abs(candidate.answer - task.payload)
        return np.array([float(gap == 0), max(0.0, 1.0 - gap / 10.0)])

    def reference_completion(self, task, *, mode="single", m=1):
        if mode == "single":
            return f"<answer>{task.payload}</answer>"
        return render_numbered("answer", [str(task.payload)] * m)
