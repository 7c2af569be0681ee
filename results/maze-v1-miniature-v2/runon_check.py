"""Does a single-answer maze model's run-on text change its scores?

Samples 8 completions for each of the first 32 test mazes, finds those that reach the 128-token budget
(no closing ``</answer>``), and scores each one whole and cut at its first glued move word (``DOWNDOWN``,
where the run-on starts). Used in RESULTS.md ("GRPO's samples stop ending").

    uv run python results/maze-v1-miniature-v2/runon_check.py MODEL_DIR 0.7
"""

import re
import sys

import numpy as np

from vpo_core.registry import make
from vpo_engines.models.policy import answer_stops, load_policy

BUDGET = 128
GLUED = re.compile(r"(UP|DOWN|LEFT|RIGHT)(UP|DOWN|LEFT|RIGHT)")


def main(model_dir: str, temperature: float) -> None:
    """Print how many samples of `model_dir` at `temperature` reach the budget, and what cutting them changes."""
    env = make("maze-v1")
    tasks = env.tasks("test")[:32]
    policy = load_policy(model_dir)
    policy.stop_strings = answer_stops(env, "single", 1, True)
    prompts = [policy.prompt_text(env.render_prompt(t, mode="single", m=1)) for t in tasks]
    texts, _, responses = policy.generate(
        prompts, num_samples=8, max_new_tokens=BUDGET, temperature=temperature, seed=2
    )
    lengths = (responses != policy.tokenizer.pad_token_id).sum(1).numpy()
    at_budget = lengths >= BUDGET
    rewards = np.stack([env.score(tasks[i // 8], text, mode="single", m=1)[0] for i, text in enumerate(texts)])
    unchanged = gained = lost = 0
    for i in np.flatnonzero(at_budget):
        glued = GLUED.search(texts[i])
        cut = texts[i][: glued.start()] if glued else texts[i]
        cut_reward = env.score(tasks[i // 8], cut, mode="single", m=1)[0]
        unchanged += bool(np.allclose(rewards[i], cut_reward))
        gained += bool(rewards[i, 0] > cut_reward[0])
        lost += bool(rewards[i, 0] < cut_reward[0])
    print(f"T {temperature}: {int(at_budget.sum())} of {len(texts)} samples at the budget")
    print(f"  score unchanged when cut at the run-on: {unchanged}; reach E only through it: {gained}; lose E: {lost}")
    print(f"  reach E: at the budget {rewards[at_budget, 0].mean():.3f}, closed {rewards[~at_budget, 0].mean():.3f}")


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
