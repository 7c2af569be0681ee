"""Parsing cost on adversarial completions: many unmatched opening tags (the shape a model can emit).

    OMP_NUM_THREADS=1 uv run python benchmarks/bench_parsers.py

Each env's parser on inputs of 0.25, 0.5 and 1 MB (linear parsing doubles its time per doubling of
the input), and, as the anchor, the lazy ``<t>(.*?)</t>`` regex search the parsers used before
(quadratic in the number of unmatched opening tags) on inputs 20× smaller.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from env_eureqa import parse_entities
from env_lcb import extract_code
from env_musique import parse_reply
from env_toolrl._parse import parse_reply as parse_tool_reply
from vpo_core.multi_answer import extract_numbered

CASES: list[tuple[str, Callable[[str], object], str]] = [
    ("vpo_core extract_numbered", lambda t: extract_numbered(t, "response", 3), "<response_1>"),
    ("env-musique parse_reply", parse_reply, "<support>"),
    ("env-toolrl parse_reply", parse_tool_reply, "<tool_call>"),
    ("env-eureqa parse_entities", parse_entities, "<entity_A>"),
    ("env-lcb extract_code", extract_code, "```python\n"),
]


def best_ms(fn: Callable[[str], object], text: str, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn(text)
        best = min(best, time.perf_counter() - start)
    return 1000 * best


def main() -> None:
    sizes = (250_000, 500_000, 1_000_000)
    print("| parser | " + " | ".join(f"{s / 1e6:.2f} MB (ms)" for s in sizes) + " |")
    print("|---|" + "---:|" * len(sizes))
    for name, fn, tag in CASES:
        cells = [f"{best_ms(fn, tag * (size // len(tag))):.1f}" for size in sizes]
        print(f"| {name} | " + " | ".join(cells) + " |")
    lazy = re.compile(r"<response_1>(.*?)</response_1>", re.DOTALL)
    small = (12_500, 25_000, 50_000)
    cells = [f"{best_ms(lazy.search, '<response_1>' * (size // 12), repeats=1):.1f}" for size in small]
    print(
        "\nanchor, the lazy regex on "
        + ", ".join(f"{s / 1e3:.1f} KB" for s in small)
        + ": "
        + " / ".join(cells)
        + " ms"
    )


if __name__ == "__main__":
    main()
