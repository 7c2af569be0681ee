"""Scoring throughput of env-musique and its answer-F1 path against a plain per-call official metric.

    uv run python packages/env-musique/benchmarks/bench_musique.py

The anchor is the MuSiQue/SQuAD metric as usually written: normalise both strings on every call
(regexes compiled on the fly), Counter overlap, max over answer and aliases.
"""

from __future__ import annotations

import re
import string
import time
from collections import Counter
from pathlib import Path

from env_musique import MusiqueEnv, answer_f1

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"


def official_normalize(s: str) -> str:
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def official_f1(prediction: str, gold: str) -> float:
    pred, ref = official_normalize(prediction).split(), official_normalize(gold).split()
    common = Counter(pred) & Counter(ref)
    same = sum(common.values())
    if not pred or not ref:
        return float(pred == ref)
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def timed(fn) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    env = MusiqueEnv(data_dir=DATA, test_per_hop=2)
    tasks = env.tasks("test") + env.tasks("train")
    predictions = ["Green Bay Packers", "the Packers", "Lyon, France", "J. S. Bach", "1999", "no idea at all"]
    pairs = [(t.payload.answers, p) for t in tasks for p in predictions] * 200
    ours = timed(lambda: [answer_f1(p, golds) for golds, p in pairs])
    anchor = timed(lambda: [max(official_f1(p, g) for g in golds) for golds, p in pairs])
    replies = [
        (t, f"<support>{', '.join(map(str, t.payload.support[:2]))}</support><answer>{p}</answer>")
        for t in tasks
        for p in predictions
    ] * 50
    full = timed(lambda: [env.reward(t, env.parse(t, r)[0]) for t, r in replies])
    print("| what | per second |")
    print("|---|---:|")
    print(f"| answer F1 (ours: cached gold tokens, precompiled normaliser) | {len(pairs) / ours:,.0f} |")
    print(f"| answer F1, plain per-call official metric (anchor) | {len(pairs) / anchor:,.0f} |")
    print(f"| ratio | {anchor / ours:.2f}× |")
    print(f"| parse + full 5-dim reward | {len(replies) / full:,.0f} candidates/s |")


if __name__ == "__main__":
    main()
