"""Reading dataset files as untrusted input, and loading Hub datasets reproducibly and offline-safely.

Dataset envs share three needs that have nothing domain-specific in them:

* **Local files** (JSONL, parquet) are read directly, not through the ``datasets`` cache, so what is
  loaded is what is on disk now (``datasets`` keys its cache of a local folder on paths, and kept
  serving old rows after a file was edited). A file that cannot be read raises `DataError` naming the
  file and, for JSONL, the line.
* **Rows** are checked field by field with `RowReader`: a missing field or a value of the wrong type
  raises `DataError` naming the file, the row, the field and what the upstream format expects,
  instead of a bare ``KeyError``/``TypeError`` deep inside task construction.
* **Hub datasets** load through ``datasets.load_dataset`` at a given revision, but first check that
  the Hub can be reached (or that offline mode is on), so that a missing dataset fails in seconds
  with the ``hf download`` command and the local-folder alternative, not after ~25 s of retries.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import re
import socket
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from vpo_core.errors import DataFileError

__all__ = [
    "DataError",
    "RowReader",
    "check_type",
    "file_record",
    "hf_download_command",
    "hub_commit",
    "hub_data_source",
    "hub_offline",
    "hub_unreachable_reason",
    "load_checked_rows",
    "load_hub_split",
    "read_jsonl",
    "read_parquet",
    "report_filtered",
]

_log = logging.getLogger(__name__)
_SHA = re.compile(r"[0-9a-f]{40}")
_TRUE = {"1", "true", "yes", "on"}
_Checked = TypeVar("_Checked")


class DataError(DataFileError):
    """A data file or row does not have the upstream format; the message names where and what is expected.

    A `vpo_core.errors.DataFileError` (so also a ValueError): the engines' commands report it in one line.
    """


# ------------------------------------------------------------------------------------------ files
def read_jsonl(path: str | os.PathLike[str], *, expected: str) -> list[dict[str, Any]]:
    """The objects of a JSON Lines file, one per non-blank line, read from disk now.

    Args:
        path: The file.
        expected: What one line of the upstream format holds (used in error messages).

    Returns:
        The rows, in file order.

    Raises:
        FileNotFoundError: If the file does not exist.
        DataError: If the file is empty, not UTF-8, a line is not valid JSON (e.g. a truncated last
            line) or not a JSON object.
    """
    path = Path(path)
    raw = path.read_bytes()
    if not raw.strip():
        raise DataError(f"{path} is empty; expected one JSON object per line ({expected}).")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad_line = raw[: exc.start].count(b"\n") + 1
        raise DataError(f"{path}, line {bad_line}: not UTF-8 text ({exc.reason}); expected JSON Lines.") from exc
    rows: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (ValueError, RecursionError) as exc:
            hint = " (the file looks truncated: download it again)" if number == text.count("\n") + 1 else ""
            raise DataError(
                f"{path}, line {number}: not valid JSON ({exc}){hint}; expected one JSON object per line ({expected})."
            ) from exc
        if not isinstance(value, dict):
            raise DataError(f"{path}, line {number}: a JSON {type(value).__name__}, expected an object ({expected}).")
        rows.append(value)
    return rows


def read_parquet(path: str | os.PathLike[str], *, expected: str) -> list[dict[str, Any]]:
    """The rows of a parquet file as dicts (nested lists and structs as Python lists and dicts).

    Args:
        path: The file.
        expected: The upstream schema (used in error messages).

    Returns:
        The rows, in file order.

    Raises:
        FileNotFoundError: If the file does not exist.
        DataError: If the file is empty, truncated or not parquet.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist.")
    if path.stat().st_size == 0:
        raise DataError(f"{path} is empty (0 bytes); expected a parquet file ({expected}).")
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise DataError(
            f"{path} is not a readable parquet file ({type(exc).__name__}: {exc}); it may be truncated or "
            f"another format: download it again ({expected})."
        ) from exc
    return table.to_pylist()


def file_record(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Path, size and sha256 of a file, for a run's record of exactly which data it read."""
    path = Path(path)
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return {"path": str(path), "bytes": path.stat().st_size, "sha256": digest.hexdigest()}


# ------------------------------------------------------------------------------------------- rows
class RowReader:
    """Typed access to one row, raising `DataError` that names the source, the row and the field.

    Args:
        row: The row (any value: a non-dict row is itself an error).
        source: Where the row comes from (a file path, or ``repo@revision (split)``).
        index: Row number in the source (0-based; reported as is).
        expected: One-line description of the upstream row format, appended to every error.
    """

    def __init__(self, row: Any, source: str, index: int, expected: str) -> None:
        self.source, self.index, self.expected = source, index, expected
        if not isinstance(row, Mapping):
            raise DataError(f"{self.where}: a {type(row).__name__}, expected an object ({expected}).")
        self.row = row

    @property
    def where(self) -> str:
        """``<source>, row <index>``."""
        return f"{self.source}, row {self.index}"

    def fail(self, field: str, problem: str, expected: str | None = None) -> DataError:
        """The error for `field`, worded ``<where>, field '<field>': <problem>; expected <expected>.``."""
        return DataError(f"{self.where}, field {field!r}: {problem}; expected {expected or self.expected}.")

    def error_for(self, field: str, expected: str | None = None) -> Callable[[str], DataError]:
        """`fail` for `field` with the problem left open: the ``error`` argument of `check_type`."""
        return functools.partial(self.fail, field, expected=expected)

    def get(self, field: str, kinds: type | tuple[type, ...], expected: str, *, default: Any = ...) -> Any:
        """The value of `field`, checked against `kinds`.

        Args:
            field: Field name.
            kinds: Accepted Python type(s) (``bool`` is never accepted as an ``int``).
            expected: What the upstream format holds there, e.g. ``"a list of strings"``.
            default: Value for a missing or null field; without it, the field is required.

        Returns:
            The value.

        Raises:
            DataError: If the field is missing (and required) or has another type.
        """
        if field not in self.row or self.row[field] is None:
            if default is not ...:
                return default
            if field in self.row:
                raise self.fail(field, "missing (null)", expected)
            present = ", ".join(sorted(map(str, self.row))) or "none"
            raise self.fail(field, f"missing (fields present: {present})", expected)
        value = self.row[field]
        return check_type(value, kinds, lambda problem: self.fail(field, problem, expected))


def check_type(value: Any, kinds: type | tuple[type, ...], error: Callable[[str], DataError]) -> Any:
    """`value` if it is an instance of `kinds` (a bool is not an int; None is "missing"), else raise ``error(problem)``."""
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    if value is None and type(None) not in kinds:
        raise error("missing")
    if isinstance(value, bool) and bool not in kinds:
        raise error(f"a bool ({value!r})")
    if not isinstance(value, kinds):
        shown = repr(value)
        raise error(f"a {type(value).__name__} ({shown[:60]}{'…' if len(shown) > 60 else ''})")
    return value


def report_filtered(logger: logging.Logger, what: str, total: int, dropped: Mapping[str, int]) -> None:
    """Log how many rows a filter dropped, by reason (nothing when none were)."""
    n = sum(dropped.values())
    if n:
        reasons = ", ".join(f"{count} {reason}" for reason, count in dropped.items() if count)
        logger.warning("%s: %d of %d rows skipped (%s).", what, n, total, reasons)


# -------------------------------------------------------------------------------------------- hub
def hub_offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` or ``HF_DATASETS_OFFLINE`` is set (read now, not at import)."""
    return any(os.environ.get(name, "").strip().lower() in _TRUE for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


def _endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


def hub_unreachable_reason(timeout_s: float = 3.0) -> str | None:
    """Why the Hub cannot be reached, or None if a TCP connection to it (or its proxy) opens.

    One connection attempt with a short timeout, instead of the HTTP client's retries with backoff.
    """
    url = urllib.parse.urlsplit(_endpoint())
    proxy = urllib.request.getproxies().get(url.scheme or "https")
    if proxy and not urllib.request.proxy_bypass(url.hostname or ""):
        url = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    host, port = url.hostname, url.port or (443 if url.scheme == "https" else 80)
    if not host:
        return f"HF_ENDPOINT={_endpoint()!r} names no host"
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except OSError as exc:
        return f"cannot connect to {host}:{port} ({type(exc).__name__}: {exc})"


def hf_download_command(
    repo_id: str, revision: str, local_dir: str, include: Sequence[str] = (), *, repo_type: str = "dataset"
) -> str:
    """The ``hf download`` command (huggingface_hub ≥ 1.0) that fetches a dataset into a local folder."""
    patterns = "".join(f" --include '{pattern}'" for pattern in include)
    return f"hf download {repo_id} --repo-type {repo_type} --revision {revision}{patterns} --local-dir {local_dir}"


def hub_commit(repo_id: str, revision: str) -> str | None:
    """The commit a Hub revision resolves to, from the local Hugging Face cache, or None if unknown.

    A 40-hex revision is its own commit. Otherwise the cache's ``refs/<revision>`` file is read (it is
    written by every download through ``huggingface_hub``); nothing goes over the network.
    """
    if _SHA.fullmatch(revision):
        return revision
    try:
        from huggingface_hub import constants
    except ImportError:  # pragma: no cover - datasets depends on huggingface_hub
        return None
    cache = Path(os.environ.get("HF_HUB_CACHE", constants.HF_HUB_CACHE))
    ref = cache / f"datasets--{repo_id.replace('/', '--')}" / "refs" / revision
    try:
        commit = ref.read_text().strip()
    except OSError:
        return None
    return commit if _SHA.fullmatch(commit) else None


def load_hub_split(
    repo_id: str,
    *,
    split: str,
    revision: str,
    how_to_get: Callable[[str], str],
    name: str | None = None,
) -> list[dict[str, Any]]:
    """The rows of one split of a Hub dataset, through ``datasets.load_dataset``, failing fast offline.

    Args:
        repo_id: Dataset id on the Hub.
        split: Split name.
        revision: Branch, tag or commit.
        how_to_get: Builds the error message from a one-line reason (download command, local folder).
        name: Dataset config name, if any.

    Returns:
        The rows.

    Raises:
        FileNotFoundError: If the dataset cannot be loaded (offline without a cached copy, Hub
            unreachable, unknown id, revision or split), with `how_to_get`'s message.
    """
    import datasets

    offline = hub_offline()
    if not offline:
        reason = hub_unreachable_reason()
        if reason is not None:
            raise FileNotFoundError(
                how_to_get(
                    f"the Hub ({_endpoint()}) cannot be reached: {reason}. If the dataset was downloaded before, "
                    "run with HF_HUB_OFFLINE=1 to use the cached copy"
                )
            )
    what = f"{repo_id}{'' if name is None else f' ({name})'} split {split!r} at revision {revision!r}"
    try:
        with _offline_mode(offline):
            dataset = datasets.load_dataset(repo_id, name=name, split=split, revision=revision)
    except (ConnectionError, OSError, ValueError) as exc:
        mode = " in offline mode (HF_HUB_OFFLINE=1), so only a cached copy could be used" if offline else ""
        raise FileNotFoundError(how_to_get(f"loading {what} failed{mode}: {type(exc).__name__}: {exc}")) from exc
    _log.info("loaded %s (%d rows)", what, len(dataset))
    return list(dataset)


def load_checked_rows(
    split: str,
    local: Path | None,
    hub_id: str,
    revision: str,
    *,
    expected: str,
    how_to_get: Callable[[str], str],
    check: Callable[[RowReader], _Checked],
) -> list[_Checked]:
    """The rows of one upstream split in file (or Hub) order, each checked against the upstream format.

    Reads `local` (a ``.jsonl`` or ``.parquet`` file, from disk now) when given, else the Hub split
    (`load_hub_split`); each row goes through `check` as a `RowReader` named after its source.

    Args:
        split: The upstream split (the Hub's split name).
        local: The split's local file, or None to load it from the Hub.
        hub_id: Dataset id on the Hub.
        revision: Branch, tag or commit on the Hub.
        expected: One-line description of the upstream row format (for every error).
        how_to_get: Builds the error message from a one-line reason (download command, local folder).
        check: Turns a row into what the env keeps; raises `DataError` (`RowReader.fail`) on a defect.

    Returns:
        ``[check(row) for row in split]``.

    Raises:
        FileNotFoundError: If `local` is missing, or the Hub cannot be reached without a cached copy.
        DataError: If the file is empty, truncated or unreadable, or a row does not have the format.
    """
    if local is not None:
        if not local.is_file():
            raise FileNotFoundError(how_to_get(f"{local} does not exist"))
        jsonl = local.suffix == ".jsonl"
        raw, source = (read_jsonl if jsonl else read_parquet)(local, expected=expected), str(local)
        empty = f"{expected}, one per line" if jsonl else f"{expected} rows"
    else:
        raw = load_hub_split(hub_id, split=split, revision=revision, how_to_get=how_to_get)
        source, empty = f"{hub_id}@{revision} ({split})", f"{expected} rows"
    if not raw:
        raise DataError(f"{source} has no rows; expected {empty}.")
    return [check(RowReader(row, source, i, expected)) for i, row in enumerate(raw)]


def hub_data_source(
    env_id: str, *, hub_id: str, revision: str, data_dir: str | None, files: Sequence[Path]
) -> dict[str, Any]:
    """Where a Hub dataset env's rows come from, for a run's config.

    Args:
        env_id: The env's registered id.
        hub_id: Dataset id on the Hub.
        revision: Branch, tag or commit on the Hub.
        data_dir: The local folder read instead of the Hub, or None.
        files: The local files the env reads from `data_dir` (those that exist are recorded).

    Returns:
        ``{env_id, hub_id, revision, commit, data_dir, files}``: `commit` is the one the local cache
        resolved `revision` to (`hub_commit`; None when `data_dir` is read), `files` the `file_record`
        of each existing file.
    """
    return {
        "env_id": env_id,
        "hub_id": hub_id,
        "revision": revision,
        "commit": None if data_dir is not None else hub_commit(hub_id, revision),
        "data_dir": data_dir,
        "files": [file_record(path) for path in files if path.is_file()],
    }


@contextlib.contextmanager
def _offline_mode(offline: bool) -> Iterator[None]:
    """Make ``datasets`` and ``huggingface_hub`` honour an offline flag set after they were imported.

    Both read ``HF_HUB_OFFLINE`` once, at import; without this, setting it later (as a notebook or a
    test does) still sends requests, each retried with backoff.
    """
    if not offline:
        yield
        return
    import datasets.config
    from huggingface_hub import constants

    saved = [(module, name, getattr(module, name)) for module, name in _offline_flags(datasets.config, constants)]
    try:
        for module, name, _ in saved:
            setattr(module, name, True)
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


def _offline_flags(*modules: Any) -> list[tuple[Any, str]]:
    return [
        (module, name)
        for module in modules
        for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
        if hasattr(module, name)
    ]
