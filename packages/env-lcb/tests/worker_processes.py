"""What a sandbox worker's process tree holds, read from /proc (shared by the sandbox test modules)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["descendants", "leftovers", "seccomp_filters"]


def descendants(pid: int) -> list[int]:
    """Every descendant of `pid` (children of each of its threads, recursively), parents before children."""
    out, stack = [], [pid]
    while stack:
        current = stack.pop()
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                children = (task / "children").read_text().split()
            except OSError:
                continue
            for child in children:
                out.append(int(child))
                stack.append(int(child))
    return out


def seccomp_filters(pid: int) -> int:
    """The number of seccomp filters process `pid` runs under (``Seccomp_filters`` of its status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Seccomp_filters:"):
            return int(line.split()[1])
    return 0


def leftovers(pid: int) -> list[int]:
    """Descendants of a worker that ran a program: they hold the child filter on the zygote's (2 filters).

    The broker (no filter), the zygote and the spare it keeps cloned ahead of the next command (its
    filter only) are the worker itself; anything else ran, or was made by, untrusted code.
    """
    found = []
    for child in descendants(pid):
        try:
            if seccomp_filters(child) >= 2:
                found.append(child)
        except OSError:
            continue  # gone meanwhile
    return found
