"""The search's own record of one problem and arm: every model call and every evaluation, on disk.

Two append-only JSON-lines files in the run's state directory, written by whichever process makes the
call or the evaluation (OpenEvolve runs them in worker processes), each line under an exclusive file
lock so that lines from different processes never interleave:

* ``calls.jsonl``: ``call`` (the prompt, the completions as whole assistant turns, the chat template's
  pre-fill they start with, the m candidate programs, token usage),
  ``call_error`` (the endpoint failed; no candidates), ``abort`` (too many failures in a row).
* ``evals.jsonl``: ``eval`` (a program's sha256, rewards, verdicts, feedback, score, success) or
  ``eval_error``.

The curves, the best program and resuming all read these files, so nothing the model produced is lost
when a run stops, whatever OpenEvolve had checkpointed.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Ledger", "program_hash"]


def program_hash(program: str) -> str:
    """sha256 of a program's text (the key that joins calls and evaluations)."""
    return hashlib.sha256(program.encode("utf-8", "surrogatepass")).hexdigest()


def _append(path: Path, record: dict[str, Any]) -> None:
    line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        view = memoryview(line)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)  # closing releases the lock


def _read_after(path: Path, offset: int) -> tuple[list[dict[str, Any]], int]:
    """The complete JSON-lines records of `path` after byte `offset`, and the offset to read on from."""
    if not path.exists():
        return [], offset
    with open(path, "rb") as handle:
        handle.seek(offset)
        data = handle.read()
    end = data.rfind(b"\n") + 1  # a line still being written is read next time
    records = []
    for line in data[:end].splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records, offset + end


def _read(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    records = []
    with open(path, encoding="utf-8", errors="surrogateescape") as handle:
        for line in handle:
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut short by a killed process: that record was never complete
    return records


@dataclass(frozen=True)
class Ledger:
    """The call and evaluation records of one search (one problem, one arm).

    Args:
        root: The run's state directory.
    """

    root: Path

    @property
    def calls_path(self) -> Path:
        """``calls.jsonl``."""
        return self.root / "calls.jsonl"

    @property
    def evals_path(self) -> Path:
        """``evals.jsonl``."""
        return self.root / "evals.jsonl"

    def next_ticket(self) -> int:
        """A number no other call of this search, in any process or run, has drawn (0, 1, 2, ...)."""
        fd = os.open(self.root / "tickets", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            raw = os.read(fd, 64).strip()
            ticket = int(raw) if raw else 0
            os.lseek(fd, 0, os.SEEK_SET)
            os.ftruncate(fd, 0)
            os.write(fd, str(ticket + 1).encode())
            os.fsync(fd)
            return ticket
        finally:
            os.close(fd)

    def add_call(self, record: dict[str, Any]) -> None:
        """Append a ``call``, ``call_error`` or ``abort`` record (the time is added)."""
        _append(self.calls_path, {"time": time.time(), **record})

    def add_eval(self, record: dict[str, Any]) -> None:
        """Append an ``eval`` or ``eval_error`` record (the time is added)."""
        _append(self.evals_path, {"time": time.time(), **record})

    def calls(self) -> list[dict[str, Any]]:
        """Every record of ``calls.jsonl``, in order."""
        return _read(self.calls_path)

    def calls_after(self, offset: int) -> tuple[list[dict[str, Any]], int]:
        """The complete ``calls.jsonl`` records written after byte `offset`, and the offset to read on from."""
        return _read_after(self.calls_path, offset)

    def evals_after(self, offset: int) -> tuple[list[dict[str, Any]], int]:
        """The complete ``evals.jsonl`` records written after byte `offset`, and the offset to read on from."""
        return _read_after(self.evals_path, offset)

    def completed_calls(self) -> list[dict[str, Any]]:
        """The successful model calls, in order (one search iteration each)."""
        return [r for r in self.calls() if r.get("kind") == "call"]

    def solved(self) -> bool:
        """Whether a candidate of a completed model call passed its full evaluation (hidden dimensions included)."""
        evaluations = self.evaluations()
        for call in self.completed_calls():
            for program in call["candidates"]:
                record = None if program is None else evaluations.get(program_hash(program))
                if record is not None and record["success"]:
                    return True
        return False

    def evaluations(self) -> dict[str, dict[str, Any]]:
        """The latest successful evaluation of each program, by `program_hash`."""
        return {r["hash"]: r for r in _read(self.evals_path) if r.get("kind") == "eval"}
