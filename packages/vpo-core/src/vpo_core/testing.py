"""`check_env`: the conformance suite every environment package runs in its tests.

It checks the promises of the protocol on a handful of tasks per split: deterministic tasks, disjoint
splits, prompts in both modes, total parsing (garbage, empty, truncated and huge text) into exactly m
candidates, finite in-bounds deterministic rewards, zero reward for empty completions, oracle
completions that succeed, and pickling (Ray ships envs between processes).

Parsers are also fuzzed with hostile completions built from the env's own markers (the tags and code
fences of its rendered prompt and reference completion, see `adversarial_completions`): huge numbers,
hundreds of thousands of unmatched opening tags, deep nesting, NUL bytes and lone surrogates. Each
must parse and score within a bounded number of linear scans, so a parser quadratic in its input
fails the check.

The cost of a parse is counted in scans, not seconds: the CPU time of parsing and scoring one
completion, less the env's fixed cost per call (the same on the empty completion), divided by the CPU
time of one regular-expression scan over `fuzz_chars` characters measured in the same process (the
minimum of 5). A loaded or slow machine slows both alike, so the count does not depend on it the way
a bound in seconds does; a count over the bound is measured again before it fails. (A hardware
instruction counter would be exact, but virtual machines and containers rarely expose one.)
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import math
import os
import pickle
import re
import string
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from vpo_core.env import TextEnv
from vpo_core.registry import list_envs, resolve_env_class
from vpo_core.spec import RewardSpec
from vpo_core.types import Mode, Task

__all__ = [
    "EnvCheckError",
    "adversarial_completions",
    "check_completion",
    "check_env",
    "empty_offline_hub",
    "hostile_completions",
    "interpreter_default_limits",
    "linear_scan_seconds",
    "load_script",
    "markers",
]

_SCAN = re.compile(r"<[^<>]*>")
"""The unit of work: one scan of a text for tags (`linear_scan_seconds`)."""


class EnvCheckError(AssertionError):
    """A conformance check failed; the message names the check, the task and what was seen."""


def _fail(message: str) -> None:
    raise EnvCheckError(message)


def _payload_digest(task: Task[Any]) -> str:
    return hashlib.sha256(pickle.dumps(task.payload, protocol=4)).hexdigest()


def _garbage(rng: np.random.Generator, n: int) -> list[str]:
    alphabet = [*string.printable, "é", "漢", "🙂", "\u200b", "\x00", "—", "\ud800"]
    texts = ["".join(rng.choice(alphabet, size=int(rng.integers(1, 400)))) for _ in range(n)]
    texts += ["<", "</", "<>", "{", "[[[", "\\", "\n" * 50, "\x00", "\udfff", "```"]
    return texts


_TAG = re.compile(r"</?[A-Za-z_][\w.:-]{0,40}\s*>")
_FENCE = re.compile(r"`{3,}[\w+-]{0,20}")
_HUGE_NUMBERS = ("9" * 5000, "-" + "9" * 5000, "1e999999", "0." + "0" * 5000 + "1")


def markers(*texts: str | None) -> list[str]:
    """The structural markers of an env's format, found in its own prompt and reference completion.

    Markers are XML-like tags (``<a>``, ``</b_2>``) and Markdown code fences (three or more
    backticks and an info string). They are what a parser searches for, so they are what adversarial
    inputs are built from, without `check_env` knowing any domain.

    Args:
        texts: Prompts and completions (None entries are skipped).

    Returns:
        The distinct markers, sorted.
    """
    found: set[str] = set()
    for text in texts:
        if text:
            found.update(_TAG.findall(text))
            found.update(_FENCE.findall(text))
    return sorted(found)


def _closing(marker: str) -> str | None:
    if marker.startswith("</") or not marker.startswith("<"):
        return None
    return "</" + marker[1:]


def adversarial_completions(marks: Sequence[str], reference: str | None, size: int) -> list[tuple[str, str]]:
    """Hostile completions built from an env's own markers: the shapes that broke parsers before.

    * many unmatched opening markers (a lazy ``<t>(.*?)</t>`` search is quadratic in them);
    * huge numbers (``int()`` refuses over 4,300 digits; floats overflow) inside every marker, alone,
      as JSON and inside the reference;
    * deep nesting of the markers and of brackets (recursive parsers hit the recursion limit);
    * NUL bytes and lone surrogates around every marker of the reference.

    Args:
        marks: The env's markers (see `markers`).
        reference: A reference completion, or None.
        size: Approximate length of the large inputs, in characters.

    Returns:
        (name, text) pairs.
    """
    openers = [mk for mk in marks if not mk.startswith("</")] or ["<"]
    body = reference or ""
    out: list[tuple[str, str]] = []
    unit = "".join(openers)
    out.append(("unmatched opening markers", unit * _times(size, len(unit))))
    for mk in openers[:8]:
        out.append((f"unmatched {mk!r}", mk * _times(size, len(mk)) + (_closing(mk) or "")[:1]))
        out.append(
            (f"unmatched {mk!r} then one closed", mk * _times(size // 2, len(mk)) + mk + body + (_closing(mk) or ""))
        )
    if reference:
        out.append(("reference with every opening marker repeated", _replace_all(reference, openers, 200)))
    for number in _HUGE_NUMBERS:
        parts = [number]
        for mk in openers:
            close = _closing(mk) or ""
            parts += [
                f"{mk}{number}{close}",
                f'{mk}{{"name": "x", "value": {number}}}{close}',
                f"{mk}[{number}]{close}",
            ]
        out.append((f"huge number {number[:8]}...", "\n".join(parts)))
        if reference:
            out.append((f"reference with digits replaced by {number[:8]}...", re.sub(r"\d+", number, reference)))
    depth = max(1, min(size // 8, 5000))
    for mk in openers[:8]:
        close = _closing(mk) or ""
        out.append((f"{mk!r} nested {depth} deep", mk * depth + body + close * depth))
    for left, right in ("[]", "{}", "()"):
        nest = left * depth + right * depth
        out.append(
            (f"{left} nested {depth} deep", "".join(f"{mk}{nest}{_closing(mk) or ''}" for mk in openers[:4]) + nest)
        )
    if reference:
        out.append(("reference with NUL bytes", _replace_all(reference, openers, 1, suffix="\x00")))
        out.append(("reference with lone surrogates", _replace_all(reference, openers, 1, suffix="\ud800\udfff")))
    return out


def _times(size: int, unit: int) -> int:
    return max(1, -(-size // unit))


def _replace_all(text: str, marks: Sequence[str], times: int, suffix: str = "") -> str:
    for mk in marks:
        text = text.replace(mk, mk * times + suffix)
    return text


def _sample_tasks(tasks: Sequence[Task[Any]], max_tasks: int) -> list[Task[Any]]:
    if len(tasks) <= max_tasks:
        return list(tasks)
    idx = np.unique(np.linspace(0, len(tasks) - 1, max_tasks).round().astype(int))
    return [tasks[int(i)] for i in idx]


def _check_spec(spec: RewardSpec, where: str) -> None:
    if not isinstance(spec, RewardSpec):
        _fail(f"{where}: reward spec must be a vpo_core.RewardSpec, got {type(spec).__name__}.")
    if np.any(spec.low_array != 0.0) and not np.all(spec.low_array <= 0.0):
        _fail(f"{where}: reward lower bounds must be <= 0 so that the zero vector (unparseable) is in bounds.")


def _check_rewards(env: TextEnv[Any, Any], task: Task[Any], rewards: Any, k: int, where: str) -> np.ndarray:
    spec = env.spec_for(task)
    r = np.asarray(rewards)
    if r.shape != (k, spec.dim):
        _fail(f"{where}: rewards of task {task.id} have shape {r.shape}, expected ({k}, {spec.dim}).")
    if r.dtype != np.float64:
        _fail(f"{where}: rewards of task {task.id} have dtype {r.dtype}, expected float64.")
    if not np.all(np.isfinite(r)):
        _fail(f"{where}: rewards of task {task.id} are not finite: {r!r}.")
    if np.any(r < spec.low_array - 1e-12) or np.any(r > spec.high_array + 1e-12):
        _fail(f"{where}: rewards of task {task.id} leave the bounds [{spec.low}, {spec.high}]: {r!r}.")
    return r


def _check_parse(env: TextEnv[Any, Any], task: Task[Any], text: str, mode: str, m: int, where: str) -> np.ndarray:
    try:
        candidates = env.parse(task, text, mode=mode, m=m)  # type: ignore[arg-type]
    except Exception as exc:
        _fail(
            f"{where}: parse raised {type(exc).__name__}: {exc} on task {task.id} (mode={mode}, m={m}) "
            f"for input {text[:80]!r}...; parsers must be total."
        )
        raise  # unreachable, keeps type checkers happy
    if len(candidates) != m:
        _fail(f"{where}: parse returned {len(candidates)} candidates for m={m} on task {task.id}.")
    try:
        raw = env.rewards(task, candidates)
    except Exception as exc:
        _fail(
            f"{where}: rewards raised {type(exc).__name__}: {exc} on task {task.id} (mode={mode}, m={m}) "
            f"for input {text[:80]!r}; rewards of parsed candidates must always be defined."
        )
        raise
    rewards = _check_rewards(env, task, raw, m, where)
    again = env.rewards(task, env.parse(task, text, mode=mode, m=m))  # type: ignore[arg-type]
    if not np.array_equal(rewards, again):
        _fail(f"{where}: rewards of task {task.id} are not deterministic for input {text[:80]!r}.")
    training = np.asarray(env.dedupe_rewards(task, candidates, raw))
    if training.shape != rewards.shape:
        _fail(f"{where}: dedupe_rewards shape {training.shape} differs from rewards shape {rewards.shape}.")
    return rewards


def check_completion(env: TextEnv[Any, Any], task: Task[Any], text: str, *, mode: Mode, m: int) -> np.ndarray:
    """Parse and score one completion with the conformance suite's checks; the rewards if they pass.

    `text` must parse into exactly `m` candidates whose rewards have shape ``(m, dim)``, dtype float64,
    are finite, inside the spec's bounds and the same on a second parse, with `training_rewards` of
    the same shape. For an env's own property tests, e.g. over `hostile_completions`.

    Returns:
        The rewards, shape ``(m, dim)``.

    Raises:
        EnvCheckError: Naming the check that failed, the task and the input.
    """
    return _check_parse(env, task, text, mode, m, "check_completion")


def hostile_completions(pieces: Sequence[str], *, max_pieces: int = 25) -> Any:
    """A hypothesis strategy (``SearchStrategy[tuple[str, Mode, int]]``) of ``(text, mode, m)`` for property tests of a parser (see `check_completion`).

    `text` joins up to `max_pieces` pieces, each one of `pieces` (an env's tags, separators, huge numbers,
    NUL bytes, ...) or up to 30 characters of random text; `mode` is single (m = 1) or multi (m in 1..4).

    Raises:
        ImportError: If hypothesis is not installed (it is a test dependency, not one of vpo-core's).
    """
    from hypothesis import strategies as st

    text = st.lists(st.one_of(st.text(max_size=30), st.sampled_from(list(pieces))), max_size=max_pieces).map("".join)
    modes = st.sampled_from(["single", "multi"])
    return st.tuples(text, modes, st.integers(1, 4)).map(lambda c: (c[0], c[1], 1 if c[1] == "single" else c[2]))


def empty_offline_hub(monkeypatch: Any, home: str | os.PathLike[str]) -> None:
    """Point the Hugging Face libraries at an empty cache under `home`, offline, for the rest of a test.

    What a user without network and without a downloaded copy sees: a Hub dataset env must then fail
    with a message naming both ways to get its data (download, or a local folder).

    Args:
        monkeypatch: pytest's ``monkeypatch`` fixture (it restores the environment after the test).
        home: An empty folder to use as ``HF_HOME``.
    """
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(Path(home) / "datasets"))


def load_script(path: str | os.PathLike[str], name: str) -> ModuleType:
    """The Python file `path` imported as module `name`, once per process (later calls return that module).

    For tests of scripts that belong to no package (``apps/*.py``, benchmark scripts). The module is
    registered in ``sys.modules`` before it runs, as a dataclass defined in it looks its module up while
    the class is built; if running it fails, the name is unregistered and the error propagates.

    Args:
        path: The file.
        name: The module name (unique per file: a second file under the same name gets the first's module).

    Raises:
        ImportError: If `path` cannot be loaded as a Python module.
    """
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"{path} cannot be imported as a Python module (is it a .py file?)")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    return sys.modules[name]


def _cpu_seconds(fn: Callable[[], object], repeats: int = 1) -> float:
    """The least of `repeats` runs of `fn`, each the smaller of its wall-clock and process CPU time.

    Wall time leaves out the env's worker threads (counted in CPU time), CPU time leaves out the time
    the process waits for a core on a loaded machine; the minimum of several runs leaves out the
    interruptions. Load can only add time, so the least is the closest to the work itself.
    """
    best = math.inf
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        best = min(best, time.perf_counter() - wall, time.process_time() - cpu)
    return best


def linear_scan_seconds(chars: int, repeats: int = 5) -> float:
    """Seconds of one linear scan over `chars` characters here and now: check_env's unit of parse cost.

    The scan is a compiled regular expression finding every tag of a text of 64-character tagged lines
    (``<t>xxx...</t>``), the work a linear tag parser does; measured `repeats` times, the least kept.

    Args:
        chars: Length of the scanned text.
        repeats: Measurements.

    Returns:
        Seconds (> 0).
    """
    line = "<t>" + "x" * 56 + "</t>\n"
    text = (line * (chars // len(line) + 1))[: max(1, chars)]
    return max(_cpu_seconds(lambda: _SCAN.findall(text), repeats), 1e-9)


@contextlib.contextmanager
def interpreter_default_limits() -> Iterator[None]:
    """Python's default limits for the duration: 4,300 digits per int/str conversion, recursion 1,000.

    A parser that crashes under them crashes in a fresh interpreter (a Ray reward worker), whatever
    limits the checking process has raised (a LiveCodeBench-style grader raises both).
    """
    saved = sys.get_int_max_str_digits(), sys.getrecursionlimit()
    sys.set_int_max_str_digits(4300)
    sys.setrecursionlimit(1000)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(saved[0])
        sys.setrecursionlimit(saved[1])


def check_env(
    env: TextEnv[Any, Any],
    *,
    max_tasks: int = 4,
    m: int = 3,
    seed: int = 0,
    make_fresh: Callable[[], TextEnv[Any, Any]] | None = None,
    splits: Sequence[str] | None = None,
    fuzz_chars: int = 200_000,
    max_scans: float = 10_000,
) -> None:
    """Run the conformance suite on an environment.

    Args:
        env: The environment instance (configured, e.g. with a fixture `data_dir`).
        max_tasks: Tasks examined per split (spread evenly over the split).
        m: Number of answers used for multi-mode checks.
        seed: Seed for the garbage inputs.
        make_fresh: Builds a second, independent instance with the same config (defaults to a pickle
            round trip) to check that tasks are identical across constructions.
        splits: Splits to check (default: the env's `splits`).
        fuzz_chars: Length of the large adversarial completions (see `adversarial_completions`).
        max_scans: Most work a parse plus its rewards may take on one adversarial completion, in
            linear scans of `fuzz_chars` characters (`linear_scan_seconds`, measured in the same
            run), beyond the env's fixed cost per call. A linear tag parser takes a few scans and a
            reward model that tokenizes the whole completion ~2,000; the lazy ``<t>(.*?)</t>``
            search on 200,000 characters of unmatched tags takes ~35,000 (and ~5,000 at 30,000
            characters: the count of a quadratic parser grows with the length). The default is the
            old bound of 5 s at 200,000 characters on a 2-core machine (0.5 ms a scan), now
            independent of the machine's speed and load.

    Raises:
        EnvCheckError: On the first failed check, with a message naming it.
    """
    where = type(env).__name__
    if not isinstance(env, TextEnv):
        _fail(f"{where} is not a vpo_core.TextEnv.")
    env_id = getattr(env, "env_id", None)
    if not isinstance(env_id, str) or not env_id:
        _fail(f"{where}.env_id must be a non-empty string, got {env_id!r}.")
    if env_id in list_envs() and resolve_env_class(env_id) is not type(env):
        _fail(f"{where}: the entry point {env_id!r} resolves to {resolve_env_class(env_id)!r}, not {type(env)!r}.")
    _check_spec(env.reward_spec, where)

    try:
        clone = pickle.loads(pickle.dumps(env))
    except Exception as exc:
        _fail(f"{where} does not pickle ({type(exc).__name__}: {exc}); Ray ships envs between processes.")
    fresh = make_fresh() if make_fresh is not None else clone

    if not (isinstance(max_scans, int | float) and math.isfinite(max_scans) and max_scans > 0):
        raise ValueError(f"max_scans must be a finite number > 0, got {max_scans!r}.")
    rng = np.random.default_rng(seed)
    garbage = _garbage(rng, 6)
    digests: dict[str, str] = {}
    ids: dict[str, str] = {}
    for split in splits if splits is not None else env.splits:
        tasks = env.tasks(split)
        if len(tasks) == 0:
            _fail(f"{where}: split {split!r} has no tasks.")
        again = fresh.tasks(split)
        if len(again) != len(tasks):
            _fail(f"{where}: split {split!r} has {len(tasks)} tasks in one construction, {len(again)} in another.")
        for task in _sample_tasks(tasks, max_tasks):
            if task.split != split or tasks[task.index].id != task.id:
                _fail(f"{where}: task {task.id} has split={task.split!r} index={task.index} inside split {split!r}.")
            twin = again[task.index]
            if twin.id != task.id or _payload_digest(twin) != _payload_digest(task):
                _fail(f"{where}: task {split}[{task.index}] differs between two constructions.")
            digest = _payload_digest(task)
            if digest in digests and digests[digest] != split:
                _fail(f"{where}: task {task.id} of split {split!r} also appears in split {digests[digest]!r}.")
            if task.id in ids and ids[task.id] != split:
                _fail(f"{where}: task id {task.id} is used in splits {ids[task.id]!r} and {split!r}.")
            digests[digest] = split
            ids[task.id] = split
            with interpreter_default_limits():
                _check_task(env, clone, task, m, garbage, where, fuzz_chars, max_scans)


def _check_task(
    env: TextEnv[Any, Any],
    clone: TextEnv[Any, Any],
    task: Task[Any],
    m: int,
    garbage: list[str],
    where: str,
    fuzz_chars: int,
    max_scans: float,
) -> None:
    spec = env.spec_for(task)
    _check_spec(spec, where)
    for mode, k in (("single", 1), ("multi", m)):
        messages = env.render_prompt(task, mode=mode, m=k)  # type: ignore[arg-type]
        if not messages or messages[-1]["role"] != "user" or not all(msg["content"].strip() for msg in messages):
            _fail(
                f"{where}: render_prompt({task.id}, mode={mode}) must give non-empty messages ending with a user turn."
            )
        weights = np.full(spec.dim, 1.0 / spec.dim)
        goal = env.render_prompt(task, mode=mode, m=k, goal_weights=weights)  # type: ignore[arg-type]
        if "Maximize your weighted score." not in goal[-1]["content"]:
            _fail(f"{where}: the goal-conditioning suffix is missing from the last user message of {task.id}.")
        if env.render_prompt(task, mode=mode, m=k) != messages:  # type: ignore[arg-type]
            _fail(f"{where}: render_prompt({task.id}, mode={mode}) is not deterministic.")

        wall, cpu = time.perf_counter(), time.process_time()
        empty = _check_parse(env, task, "", mode, k, where)
        overhead = min(time.perf_counter() - wall, time.process_time() - cpu)  # the env's fixed cost per call
        if np.any(empty != 0.0):
            _fail(f"{where}: an empty completion must score all zeros on task {task.id}, got {empty!r}.")
        for text in garbage:
            _check_parse(env, task, text, mode, k, where)
        if np.any(env.is_success(empty, task)):
            _fail(f"{where}: an empty completion counts as a success on task {task.id}.")

        reference = env.reference_completion(task, mode=mode, m=k)  # type: ignore[arg-type]
        marks = markers(*(msg["content"] for msg in messages), reference)
        shapes = adversarial_completions(marks, reference, fuzz_chars)
        _check_parse_costs(env, task, mode, k, shapes, where, fuzz_chars, max_scans, overhead)
        if reference is None:
            continue
        rewards = _check_parse(env, task, reference, mode, k, where)
        if not np.any(env.is_success(rewards, task)):
            _fail(f"{where}: reference_completion of {task.id} (mode={mode}) is not a success: rewards {rewards!r}.")
        for cut in (len(reference) // 3, len(reference) // 2, len(reference) - 1):
            _check_parse(env, task, reference[:cut], mode, k, where)
        _check_parse(env, task, reference * 200, mode, k, where)
        cloned = clone.score(task, reference, mode=mode, m=k)  # type: ignore[arg-type]
        if not np.array_equal(cloned, rewards):
            _fail(f"{where}: a pickled copy scores the reference completion of {task.id} differently.")


def _check_parse_costs(
    env: TextEnv[Any, Any],
    task: Task[Any],
    mode: str,
    k: int,
    shapes: Sequence[tuple[str, str]],
    where: str,
    fuzz_chars: int,
    max_scans: float,
    overhead: float,
) -> None:
    """Check each shape's parse (`_check_parse`) and that its cost stays within `max_scans` linear scans.

    `overhead` is the cost of the same check on the empty completion: the env's fixed cost per call
    (a reward model's forward pass, a sandbox's start), which is not growth and is not counted.
    """

    def parse(text: str, label: str) -> Callable[[], object]:
        return lambda: _check_parse(env, task, text, mode, k, label)

    unit = linear_scan_seconds(fuzz_chars)
    for name, text in shapes:
        label = f"{where} [{name}]"
        cost = _cpu_seconds(parse(text, label))
        if (cost - overhead) / unit <= max_scans:
            continue
        # over the bound: measure the unit and the parse again (load only adds time) before failing
        unit = max(unit, linear_scan_seconds(fuzz_chars))
        cost = min(cost, _cpu_seconds(parse(text, label)))
        scans = (cost - overhead) / unit
        if scans > max_scans:
            _fail(
                f"{label}: parsing and scoring {len(text):,} characters took {scans:,.0f} linear scans of "
                f"{fuzz_chars:,} characters on task {task.id} (mode={mode}), over the bound of {max_scans:,g}; "
                "parsers must be linear in the completion (a lazy `<t>(.*?)</t>` regex restarts at every "
                "unmatched opening tag)."
            )
