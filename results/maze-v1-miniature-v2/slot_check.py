"""Do a multi-answer maze model's mis-closed slots change its scores?

Samples 4 completions (T = 1.0, 384 tokens) for each of the first 16 test mazes and scores each one as
written and with every route cut at the first closing tag of any route (``</route_j>``), the end a reader
would give a slot closed with the wrong tag. Used in RESULTS.md ("Random start").

    uv run python results/maze-v1-miniature-v2/slot_check.py MODEL_DIR
"""

import re
import sys

import numpy as np

from vpo_core.registry import make
from vpo_engines.models.policy import answer_stops, load_policy

M = 3
OPEN = re.compile(r"<route_(\d)>", re.IGNORECASE)
ANY_CLOSE = re.compile(r"</route_\d>", re.IGNORECASE)


def cut_slots(text: str) -> str:
    """`text` with each slot's first block closed at the first closing tag after it, later blocks of a slot dropped."""
    parts, seen = [], set()
    for opening in OPEN.finditer(text):
        slot = opening.group(1)
        if slot in seen:
            continue
        seen.add(slot)
        close = ANY_CLOSE.search(text, opening.end())
        body = text[opening.end() : close.start() if close else len(text)]
        parts.append(f"<route_{slot}>{body}</route_{slot}>")
    return "\n".join(parts) if parts else text


def main(model_dir: str) -> None:
    """Print how often slots are mis-closed in samples of `model_dir` and what closing them changes."""
    env = make("maze-v1")
    tasks = env.tasks("test")[:16]
    policy = load_policy(model_dir)
    policy.stop_strings = answer_stops(env, "multi", M, True)
    prompts = [policy.prompt_text(env.render_prompt(t, mode="multi", m=M)) for t in tasks]
    texts, _, responses = policy.generate(prompts, num_samples=4, max_new_tokens=384, temperature=1.0, seed=3)
    lengths = (responses != policy.tokenizer.pad_token_id).sum(1).numpy()
    whole = np.stack([env.score(tasks[i // 4], t, mode="multi", m=M) for i, t in enumerate(texts)])
    cut = np.stack([env.score(tasks[i // 4], cut_slots(t), mode="multi", m=M) for i, t in enumerate(texts)])
    repeated = sum(len(OPEN.findall(t)) > M for t in texts)
    changed = ~np.isclose(whole, cut).all(axis=2)  # (samples, M)
    print(f"{len(texts)} samples, mean length {lengths.mean():.0f} tokens; {repeated} with more than {M} route blocks")
    print(f"  routes whose score changes when slots are closed at the first closing tag: {int(changed.sum())}")
    print(f"  of them reaching E only as written: {int(((whole[..., 0] > 0) & (cut[..., 0] == 0)).sum())}")
    best_whole = whole[..., 0].max(1)
    best_cut = cut[..., 0].max(1)
    print(f"  completions with some route reaching E: as written {best_whole.mean():.3f}, closed {best_cut.mean():.3f}")


if __name__ == "__main__":
    main(sys.argv[1])
