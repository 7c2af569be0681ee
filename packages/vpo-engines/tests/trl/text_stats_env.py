"""A toy env whose rewards vary with any text, so a random model's completions get distinct reward vectors.

Imported by the tests as ``text_stats_env:TextStatsEnv`` (the ``package.module:Class`` form of an env id). A
completion's text is cut into m equal parts, one candidate each; a candidate's rewards are (the share of
letters, the share of spaces): both in [0, 1], and two texts of the same length rarely tie.
"""

from __future__ import annotations

import numpy as np

from vpo_core import Candidate, Message, RewardSpec, Task, TextEnv


class TextStatsEnv(TextEnv[int, str]):
    """Two text statistics of each candidate as its rewards."""

    env_id = "text-stats-v1"
    reward_spec = RewardSpec(
        names=("letters", "spaces"),
        w_star=(0.7, 0.3),
        low=(0.0, 0.0),
        high=(1.0, 1.0),
        descriptions=("Share of letters", "Share of spaces"),
    )

    def _load_tasks(self, split):
        return [Task(id=f"text-stats-v1/{split}/{i}", split=split, index=i, payload=i) for i in range(8)]

    def _render_prompt(self, task, mode, m):
        return [Message(role="user", content=f"Write {m} short texts about the number {task.payload}.")]

    def _parse(self, task, completion, mode, m):
        size = max(1, -(-len(completion) // m))
        parts = [completion[i * size : (i + 1) * size] for i in range(m)]
        return [Candidate(index=i, text=part, answer=part) for i, part in enumerate(parts)]

    def reward(self, task, candidate):
        text = candidate.text
        if not text:
            return np.zeros(2)
        return np.array([sum(c.isalpha() for c in text) / len(text), text.count(" ") / len(text)])
