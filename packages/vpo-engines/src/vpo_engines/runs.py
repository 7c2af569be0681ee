"""`RunDir`: the one definition of a run directory's layout, shared by training and evaluation.

``vpo train`` writes it and ``vpo eval`` reads it, both only through this class (the TRL
engine names its run by the same `model_digest`).

Layout::

    config.json        the run's TrainConfig (identity fields must match to resume)
    metrics.jsonl      one JSON record per RL step, each tagged with the run id
    warmup_loss.json   the warm-up loss of every step
    warmup/            model/, state.pt, manifest.json: a warm-up in progress (removed once init_model is saved)
    init_model/        the warm-started (or given) model: the RL reference; its weights' digest is the run id
    checkpoint/        model/ (save_pretrained), state.pt (optimizer, step), manifest.json (step, run id)
    token_budget.json  the token budget per completion of RL and evaluation (vpo eval reuses it)
    eval_<name>.json   evaluation metrics of one model (``init``, ``final``), tagged with that model's digest
                       and the settings it was evaluated with
    report.md, report.json, training.png, best_at_k.png

Guarantees: the checkpoint (and the warm-up's, ``warmup/``) is replaced by a rename swap (``checkpoint.tmp``
written and fsynced, ``checkpoint`` -> ``checkpoint.old``, ``checkpoint.tmp`` -> ``checkpoint``), so a kill at
any point leaves a complete copy that `recover` restores; ``init_model`` is written the same way; every
artefact records the run id (the digest of ``init_model``'s weights), so artefacts of another model
are never reused (a stale ``eval_init.json`` is recomputed, a checkpoint of another init is refused);
an evaluation made with other settings (tasks, samples, seeds, sampling) is recomputed;
a truncated last line of ``metrics.jsonl`` (a kill mid-write) is dropped with a message; a corrupt
``state.pt``, a damaged evaluation file, truncated weights or a file where a folder belongs is
named with what to do (`RunDirError`).

A run directory never runs code: ``state.pt`` holds tensors and plain data only (dicts, lists,
tuples, strings, numbers; `save_checkpoint` and `save_warmup` refuse anything else) and is read with
``torch.load(weights_only=True)``, so a pickle of any other object, a tampered file or one written
by an older version that pickled such objects, is refused without being run.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
import shutil
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vpo_core.errors import RunDirError

__all__ = ["RunDir", "RunDirError", "check_weights", "model_digest"]

Log = Callable[[str], None]


def model_digest(model_dir: Path) -> str:
    """SHA-256 (first 16 hex digits) of a model directory's weight files: the model's identity.

    Raises:
        RunDirError: If the directory has no weight files or a ``*.safetensors`` file is truncated or damaged.
    """
    files = check_weights(model_dir)
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode())
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def check_weights(model_dir: Path, fix: str = "") -> list[Path]:
    """A model directory's weight files, each ``*.safetensors`` checked complete (header and data size).

    A safetensors file is an 8-byte little-endian header length N, N bytes of JSON naming each
    tensor's byte range, then the data: the file must end exactly where the last range does. Only
    the header is read, so the check costs no more than a stat.

    Args:
        model_dir: The model directory.
        fix: What to do, appended to the message.

    Returns:
        The weight files (``*.safetensors``, ``*.bin``), sorted.

    Raises:
        RunDirError: If there is none, or one is truncated or damaged (naming the file).
    """
    model_dir = Path(model_dir)
    if not model_dir.is_dir():
        raise RunDirError(f"{model_dir} is not a directory, so it holds no saved model. {fix}".strip())
    files = sorted(p for p in model_dir.iterdir() if p.suffix in (".safetensors", ".bin"))
    if not files:
        raise RunDirError(f"{model_dir} has no weight files (*.safetensors): it is not a saved model. {fix}".strip())
    for path in files:
        if path.suffix == ".safetensors":
            problem = _safetensors_problem(path)
            if problem is not None:
                raise RunDirError(f"{path} is truncated or damaged ({problem}). {fix}".strip())
    return files


def _safetensors_problem(path: Path) -> str | None:
    """Why `path` is not a complete safetensors file, or None if it is."""
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(8)
            if len(head) < 8:
                return f"{size} bytes, shorter than the 8-byte header length"
            (length,) = struct.unpack("<Q", head)
            if length > size - 8 or length > 100 << 20:
                return f"its header claims {length} bytes but the file has {size}"
            header = json.loads(handle.read(length))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return f"unreadable header: {type(exc).__name__}"
    if not isinstance(header, dict):
        return "its header is not a JSON object"
    end = 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        offsets = entry.get("data_offsets") if isinstance(entry, dict) else None
        if (
            not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(isinstance(o, int) and not isinstance(o, bool) and o >= 0 for o in offsets)
        ):
            return f"tensor {name[:80]!r} has no valid data_offsets"
        end = max(end, offsets[1])
    if size != 8 + length + end:
        return f"{size} bytes where its header describes {8 + length + end}"
    return None


_PLAIN = (str, int, float, bool, type(None))


def _check_plain(value: Any, where: str = "state") -> None:
    """Refuse state that ``torch.load(weights_only=True)`` would not read back (anything but tensors and plain data).

    Raises:
        TypeError: Naming the first value of another type (a programming error: convert it first).
    """
    import torch

    if isinstance(value, (*_PLAIN, torch.Tensor)):
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, _PLAIN):
                raise TypeError(f"{where} has a key of type {type(key).__name__}; save plain keys only.")
            _check_plain(item, f"{where}[{key!r}]")
        return
    if isinstance(value, list | tuple) and type(value) in (list, tuple):
        for index, item in enumerate(value):
            _check_plain(item, f"{where}[{index}]")
        return
    raise TypeError(
        f"{where} is a {type(value).__name__}: a run directory saves tensors and plain data only (loaded with "
        "weights_only=True); convert it to a tensor, list or number first."
    )


STATE_MISFIT_ERRORS: tuple[type[Exception], ...] = (ValueError, KeyError, TypeError, IndexError, RuntimeError)
"""What torch's ``load_state_dict`` (and a random generator's state setter) raise for a saved state that does not
fit: caught only around those calls, where the state comes from a run directory's file."""

_UNREADABLE_ERRORS: tuple[type[Exception], ...] = (RuntimeError, EOFError, OSError, ValueError, KeyError)
"""What ``torch.load`` raises for a truncated, corrupt or missing file (its zip reader: RuntimeError; a cut pickle:
EOFError; the file system: OSError; a damaged record: ValueError/KeyError)."""


def _load_state(path: Path, device: str, fix: str) -> Any:
    """``torch.load(path, weights_only=True)``: tensors and plain data; nothing in the file is run.

    Raises:
        RunDirError: If the file is missing, corrupt, or holds other objects (naming it and `fix`).
    """
    import torch

    try:
        return torch.load(path, map_location=device, weights_only=True)
    except pickle.UnpicklingError as exc:
        if "unsupported global" in str(exc).lower():  # torch refused a global: the file pickles objects
            raise RunDirError(
                f"{path} holds objects other than tensors and plain data, so it was not loaded (loading it could "
                f"run code): it is tampered with or was written by an older version. {fix}"
            ) from None
        raise RunDirError(f"{path} is corrupt or unreadable (UnpicklingError; nothing in it was run); {fix}") from None
    except _UNREADABLE_ERRORS as exc:
        raise RunDirError(f"{path} is corrupt or unreadable ({type(exc).__name__}); {fix}") from None


def _fsync_tree(root: Path) -> None:
    """Flush every file under `root`, then the directories (so a rename after it publishes complete data)."""
    for path in sorted(root.rglob("*")):
        if path.is_file():
            with path.open("rb") as handle:
                os.fsync(handle.fileno())
    for directory in [root, *sorted(p for p in root.rglob("*") if p.is_dir())]:
        _fsync_dir(directory)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


@dataclass(frozen=True)
class RunDir:
    """A local run directory.

    Attributes:
        path: The directory.
    """

    path: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))

    # ------------------------------------------------------------------------------ paths
    @property
    def config_file(self) -> Path:
        """``config.json``."""
        return self.path / "config.json"

    @property
    def metrics_file(self) -> Path:
        """``metrics.jsonl``."""
        return self.path / "metrics.jsonl"

    @property
    def warmup_loss_file(self) -> Path:
        """``warmup_loss.json``."""
        return self.path / "warmup_loss.json"

    @property
    def init_model(self) -> Path:
        """``init_model/``: the warm-started model (the RL reference)."""
        return self.path / "init_model"

    @property
    def checkpoint(self) -> Path:
        """``checkpoint/``."""
        return self.path / "checkpoint"

    @property
    def warmup_checkpoint(self) -> Path:
        """``warmup/``: a warm-up in progress (model/, state.pt, manifest.json with the steps done)."""
        return self.path / "warmup"

    @property
    def checkpoint_model(self) -> Path:
        """``checkpoint/model/``: the latest trained model."""
        return self.checkpoint / "model"

    @property
    def state_file(self) -> Path:
        """``checkpoint/state.pt``: optimizer state and step."""
        return self.checkpoint / "state.pt"

    @property
    def manifest_file(self) -> Path:
        """``checkpoint/manifest.json``: step and run id, written last (its presence marks a complete copy)."""
        return self.checkpoint / "manifest.json"

    @property
    def report_md(self) -> Path:
        """``report.md``."""
        return self.path / "report.md"

    @property
    def report_json(self) -> Path:
        """``report.json``."""
        return self.path / "report.json"

    @property
    def training_plot(self) -> Path:
        """``training.png``."""
        return self.path / "training.png"

    @property
    def best_at_k_plot(self) -> Path:
        """``best_at_k.png``."""
        return self.path / "best_at_k.png"

    @property
    def token_budget_file(self) -> Path:
        """``token_budget.json``: the token budget per completion the run sampled with (RL and evaluation)."""
        return self.path / "token_budget.json"

    def write_token_budget(self, max_new_tokens: int) -> None:
        """Record the run's resolved token budget (vpo eval evaluates its checkpoints with it)."""
        self.path.mkdir(parents=True, exist_ok=True)
        _write_atomic(self.token_budget_file, json.dumps({"max_new_tokens": int(max_new_tokens)}))

    def read_token_budget(self) -> int | None:
        """The recorded token budget, or None for a run that recorded none (older runs).

        Raises:
            RunDirError: If the file exists but does not hold a positive integer budget.
        """
        try:
            value = json.loads(self.token_budget_file.read_text()).get("max_new_tokens")
        except FileNotFoundError:
            return None
        except (json.JSONDecodeError, AttributeError):
            value = None
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise RunDirError(
                f"{self.token_budget_file} does not hold a token budget; delete it (evaluation then uses the "
                "env profile's budget) or pass max_new_tokens=."
            )
        return value

    def eval_file(self, name: str) -> Path:
        """``eval_<name>.json`` (``init``: the warm-started model, ``final``: after RL)."""
        return self.path / f"eval_{name}.json"

    def snapshot_model(self, step: int) -> Path:
        """``snapshots/step<N>/``: the model kept after RL step N (``keep_steps=``)."""
        return self.path / "snapshots" / f"step{step}"

    def save_snapshot(self, step: int) -> Path:
        """Copy the checkpoint's model to `snapshot_model(step)` (written beside it, then renamed).

        Returns:
            The snapshot's directory.
        """
        target = self.snapshot_model(step)
        tmp = target.with_name(target.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(self.checkpoint_model, tmp)
        _fsync_tree(tmp)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
        return target

    def model_dir(self, which: str = "final") -> Path:
        """The model of ``which``: ``final``, ``init`` or ``step<N>``.

        ``final`` is the checkpoint's, ``init`` the warm-started one, ``step<N>`` the snapshot kept
        after RL step N (``keep_steps=``).

        Raises:
            RunDirError: If that model was not saved (yet), or `which` names none of these.
        """
        if which in ("init", "final"):
            target = self.init_model if which == "init" else self.checkpoint_model
        elif re.fullmatch(r"step[0-9]+", which):
            target = self.snapshot_model(int(which.removeprefix("step")))
        else:
            raise RunDirError(f"unknown model {which!r} of {self.path}: use init, final or step<N> (keep_steps=).")
        self.check_folders()
        if not (target / "config.json").exists():
            raise RunDirError(f"{target} does not exist: has the run at {self.path} saved a checkpoint yet?")
        check_weights(target, f"Evaluate another model of {self.path} or train it again.")
        return target

    def check_folders(self) -> None:
        """Refuse a run directory where a file stands in place of one of its folders.

        Raises:
            RunDirError: Naming the file and what to do.
        """
        if self.path.exists() and not self.path.is_dir():
            raise RunDirError(f"{self.path} is a file, not a run directory; pass out=<new dir> for a new run.")
        folders = {
            self.checkpoint: "checkpoint",
            self.checkpoint_model: "checkpoint's model",
            self.warmup_checkpoint: "warm-up checkpoint",
            self.warmup_checkpoint / "model": "warm-up checkpoint's model",
            self.init_model: "warm-started model",
            self.path / "snapshots": "snapshots",
        }
        for folder, what in folders.items():
            if folder.exists() and not folder.is_dir():
                raise RunDirError(
                    f"{folder} is a file where the run's {what} folder belongs; move it away (or delete it) and "
                    f"run again, or pass out=<new dir> for a new run."
                )

    # ----------------------------------------------------------------------------- config
    def exists(self) -> bool:
        """Whether the directory holds a run (a ``config.json``)."""
        return self.config_file.exists()

    def read_config(self) -> dict[str, Any]:
        """The saved config.

        Raises:
            RunDirError: If it is missing or unreadable.
        """
        try:
            data = json.loads(self.config_file.read_text())
        except FileNotFoundError:
            raise RunDirError(f"{self.config_file} does not exist: {self.path} is not a local run directory.") from None
        except json.JSONDecodeError as exc:
            raise RunDirError(
                f"{self.config_file} is not valid JSON ({exc.msg}); restore it or start a new run."
            ) from None
        if not isinstance(data, dict):
            raise RunDirError(
                f"{self.config_file} holds a JSON {type(data).__name__}, not the run's config object; restore it "
                "or start a new run (out=<new dir>)."
            )
        return data

    def write_config(self, data: dict[str, Any]) -> None:
        """Write ``config.json`` atomically."""
        self.path.mkdir(parents=True, exist_ok=True)
        _write_atomic(self.config_file, json.dumps(data, indent=2))

    # ------------------------------------------------------------------------------ run id
    def run_id(self) -> str | None:
        """The digest of ``init_model``'s weights, or None before it is saved.

        Raises:
            RunDirError: If its weights are truncated or damaged.
        """
        if not (self.init_model / "config.json").exists():
            return None
        check_weights(
            self.init_model,
            "The warm-started model is the run's RL reference and identity: restore it, or pass out=<new dir> "
            "for a new run.",
        )
        return model_digest(self.init_model)

    def save_init_model(self, save: Callable[[Path], None]) -> str:
        """Save the warm-started model with `save(dir)` atomically; returns the new run id."""
        tmp = self.path / "init_model.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        save(tmp)
        _fsync_tree(tmp)
        shutil.rmtree(self.init_model, ignore_errors=True)
        os.replace(tmp, self.init_model)
        _fsync_dir(self.path)
        return model_digest(self.init_model)

    # ---------------------------------------------------------------------------- metrics
    def read_metrics(self, log: Log | None = None) -> list[dict[str, Any]]:
        """The per-step records, recovering a truncated last line (dropped, with a message to `log`).

        Raises:
            RunDirError: For an unreadable line other than the last (naming file and line).
        """
        if not self.metrics_file.exists():
            return []
        lines = self.metrics_file.read_text().split("\n")
        records: list[dict[str, Any]] = []
        complete = lines[:-1]  # text after the last newline is an unfinished write
        partial = lines[-1]
        for number, line in enumerate(complete, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                if number == len(complete) and not partial:
                    partial = line  # a last line whose newline was written but whose text was cut
                    break
                raise RunDirError(
                    f"{self.metrics_file} line {number} is not JSON; delete that line (or the file, to drop the "
                    "logged history) and run again."
                ) from None
            step = record.get("step") if isinstance(record, dict) else None
            if not isinstance(step, int) or isinstance(step, bool) or step < 0:
                raise RunDirError(
                    f"{self.metrics_file} line {number} is not a step record (a JSON object with a whole "
                    "'step' >= 0); delete that line (or the file, to drop the logged history) and run again."
                )
            records.append(record)
        if partial.strip():
            if log is not None:
                log(f"{self.metrics_file}: dropped a truncated last line (the run was stopped mid-write)")
            self.write_metrics(records)
        return records

    def write_metrics(self, records: list[dict[str, Any]]) -> None:
        """Replace ``metrics.jsonl`` with `records` (atomically)."""
        _write_atomic(self.metrics_file, "".join(json.dumps(r) + "\n" for r in records))

    def keep_metrics_before(self, step: int, run_id: str | None, log: Log | None = None) -> list[dict[str, Any]]:
        """Drop records of steps >= `step` or of another run id (they were logged after the last checkpoint)."""
        records = self.read_metrics(log)
        kept = [r for r in records if r.get("step", 0) < step and r.get("run_id", run_id) == run_id]
        if len(kept) != len(records):
            self.write_metrics(kept)
        return kept

    def append_metrics(self, record: dict[str, Any]) -> None:
        """Append one record (one line, flushed)."""
        with self.metrics_file.open("a") as handle:
            handle.write(json.dumps(record) + "\n")
            handle.flush()

    # -------------------------------------------------------------------------- evaluations
    def write_eval(self, name: str, payload: dict[str, Any], *, model: str, settings: dict[str, Any]) -> None:
        """Write ``eval_<name>.json`` tagged with the evaluated model's digest and the evaluation's settings.

        Args:
            name: ``init`` or ``final``.
            payload: ``metrics`` (name -> number) and ``curve`` (numbers).
            model: Digest of the evaluated model's weights.
            settings: What the evaluation depends on besides the model (tasks, samples, seeds, sampling):
                a JSON-ready dict, compared as written.
        """
        record = {**payload, "model": model, "settings": settings}
        _write_atomic(self.eval_file(name), json.dumps(record, indent=2))

    def read_eval(
        self, name: str, *, model: str, settings: dict[str, Any], log: Log | None = None
    ) -> dict[str, Any] | None:
        """``eval_<name>.json`` if it was made for the model with digest `model` under `settings`, else None.

        A file of another model or other settings (a stale evaluation, or one written before the
        settings were recorded) is removed, with a message to `log`: the caller evaluates again.

        Raises:
            RunDirError: If the file is damaged (not JSON, or not the record `write_eval` writes).
        """
        path = self.eval_file(name)
        if not path.exists():
            return None
        fix = f"delete {path} and run again to evaluate that model anew."
        try:
            data = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise RunDirError(f"{path} is not readable JSON ({type(exc).__name__}); {fix}") from None
        if not isinstance(data, dict) or not isinstance(data.get("model"), str):
            raise RunDirError(f"{path} is damaged (not an evaluation record with a 'model' digest); {fix}")
        if data["model"] != model:
            if log is not None:
                log(f"{path} belongs to another model; it will be recomputed")
            path.unlink()
            return None
        if data.get("settings") != settings:
            if log is not None:
                log(f"{path} was made with other settings ({data.get('settings')}); re-evaluating with {settings}")
            path.unlink()
            return None
        metrics, curve = data.get("metrics"), data.get("curve")
        if (
            not isinstance(metrics, dict)
            or not all(_is_number(v) for v in metrics.values())
            or not _is_number(metrics.get("mean_w_star"))
            or not isinstance(curve, list)
            or not all(_is_number(v) for v in curve)
        ):
            raise RunDirError(
                f"{path} is damaged ('metrics' must map names to numbers, 'mean_w_star' among them, and 'curve' "
                f"must be a list of numbers); {fix}"
            )
        return dict(data)

    # --------------------------------------------------------------------------- checkpoints
    def recover(self, log: Log | None = None) -> None:
        """Finish or undo a checkpoint swap that a kill interrupted (run before reading a checkpoint).

        Raises:
            RunDirError: If a file stands where one of the run's folders belongs (`check_folders`).
        """
        self.check_folders()
        for target in (self.checkpoint, self.warmup_checkpoint):
            tmp, old = target.with_name(target.name + ".tmp"), target.with_name(target.name + ".old")
            complete_tmp = (tmp / "manifest.json").exists()
            if not target.exists():
                for candidate, what in ((tmp, f"the new {target.name}"), (old, f"the previous {target.name}")):
                    if (candidate / "manifest.json").exists() and (candidate is tmp or not complete_tmp):
                        os.replace(candidate, target)
                        if log is not None:
                            log(f"recovered {what} of {self.path} (a run was stopped while replacing it)")
                        break
            for leftover in (tmp, old):
                if leftover.exists():
                    shutil.rmtree(leftover, ignore_errors=True)
        if (self.path / "init_model.tmp").exists():
            shutil.rmtree(self.path / "init_model.tmp", ignore_errors=True)

    def has_checkpoint(self) -> bool:
        """Whether a complete checkpoint exists."""
        return self.manifest_file.exists()

    def save_checkpoint(
        self, save_model: Callable[[Path], None], state: dict[str, Any], *, step: int, run_id: str
    ) -> None:
        """Replace the checkpoint atomically (write, fsync, rename swap).

        Args:
            save_model: Writes the model into the directory it is given.
            state: Saved with ``torch.save`` as ``state.pt``: tensors and plain data only.
            step: Steps done.
            run_id: The run id (digest of ``init_model``).
        """
        self._replace(self.checkpoint, save_model, state, {"step": step, "run_id": run_id})

    def _replace(
        self, target: Path, save_model: Callable[[Path], None], state: dict[str, Any], manifest: dict[str, Any]
    ) -> None:
        """Write model/, state.pt and manifest.json (last) beside `target`, fsync, then rename-swap it in."""
        import torch

        _check_plain(state)
        tmp, old = target.with_name(target.name + ".tmp"), target.with_name(target.name + ".old")
        shutil.rmtree(tmp, ignore_errors=True)
        save_model(tmp / "model")
        torch.save(state, tmp / "state.pt")
        (tmp / "manifest.json").write_text(json.dumps(manifest))
        _fsync_tree(tmp)
        shutil.rmtree(old, ignore_errors=True)
        if target.exists():
            os.replace(target, old)
        os.replace(tmp, target)
        _fsync_dir(self.path)
        shutil.rmtree(old, ignore_errors=True)

    # ------------------------------------------------------------------------ warm-up checkpoints
    def save_warmup(self, save_model: Callable[[Path], None], state: dict[str, Any]) -> None:
        """Replace ``warmup/`` atomically with the model and the warm-up state (its ``step``: steps done)."""
        self._replace(self.warmup_checkpoint, save_model, state, {"step": int(state["step"])})

    def read_warmup(self, device: str = "cpu") -> dict[str, Any] | None:
        """The saved warm-up state (optimizer, schedule, random states, losses, step), or None if there is none.

        Raises:
            RunDirError: If ``warmup/`` is damaged (naming it and what to do), its ``state.pt`` holds
                anything but tensors and plain data, or its model's weights are truncated.
        """
        import torch

        manifest = self.warmup_checkpoint / "manifest.json"
        if not manifest.exists():
            return None
        fix = f"delete {self.warmup_checkpoint} to restart the warm-up from its first step."
        try:
            step = json.loads(manifest.read_text()).get("step")
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError) as exc:
            raise RunDirError(f"{manifest} is corrupt or unreadable ({type(exc).__name__}); {fix}") from None
        state = _load_state(self.warmup_checkpoint / "state.pt", device, fix)
        if not isinstance(state, dict) or state.get("step") != step or not isinstance(step, int):
            raise RunDirError(f"{self.warmup_checkpoint}: its manifest and state.pt disagree on the step; {fix}")
        rng = state.get("rng")
        losses = state.get("losses")
        torch_rng = state.get("torch_rng")
        if (
            not isinstance(state.get("optimizer"), dict)
            or not isinstance(state.get("schedule"), dict)
            or not isinstance(rng, dict)
            or not isinstance(losses, list)
            or len(losses) != step
            or not all(_is_number(v) for v in losses)
            or not isinstance(torch_rng, torch.Tensor)
            or torch_rng.dtype != torch.uint8
            or torch_rng.shape != torch.get_rng_state().shape
        ):
            raise RunDirError(
                f"{self.warmup_checkpoint / 'state.pt'} is damaged (it must hold the warm-up's optimizer, schedule, "
                f"random states and one loss per step done); {fix}"
            )
        try:
            np.random.default_rng().bit_generator.state = rng  # the sampler's state must be one numpy accepts
        except (TypeError, ValueError, KeyError):
            raise RunDirError(f"{self.warmup_checkpoint / 'state.pt'} holds no valid random state; {fix}") from None
        check_weights(self.warmup_checkpoint / "model", fix)
        return dict(state)

    def drop_warmup(self) -> None:
        """Remove ``warmup/`` (the warm-up is done and ``init_model`` saved)."""
        shutil.rmtree(self.warmup_checkpoint, ignore_errors=True)

    def read_manifest(self) -> dict[str, Any]:
        """The checkpoint's step and run id.

        Raises:
            RunDirError: If it is unreadable.
        """
        fix = f"delete {self.checkpoint} to restart RL from the warm-started model, or pass out=<new dir>."
        try:
            data = json.loads(self.manifest_file.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise RunDirError(f"{self.manifest_file} is unreadable ({type(exc).__name__}); {fix}") from None
        step = data.get("step") if isinstance(data, dict) else None
        if not isinstance(step, int) or isinstance(step, bool) or step < 0 or not isinstance(data.get("run_id"), str):
            raise RunDirError(
                f"{self.manifest_file} is damaged (it must be a JSON object with a whole 'step' >= 0 and a "
                f"'run_id' string, got {str(data)[:200]}); {fix}"
            )
        return dict(data)

    @property
    def checkpoint_fix(self) -> str:
        """What to do about a damaged checkpoint (the end of its messages)."""
        return (
            f"delete {self.checkpoint} to restart RL from the warm-started model ({self.init_model}), or pass "
            "out=<new dir> for a new run."
        )

    def check_checkpoint_model(self) -> Path:
        """``checkpoint/model/``, its weights checked complete (`check_weights`).

        Raises:
            RunDirError: If they are missing, truncated or damaged.
        """
        check_weights(self.checkpoint_model, self.checkpoint_fix)
        return self.checkpoint_model

    def load_state(self, device: str = "cpu", *, step: int | None = None) -> dict[str, Any]:
        """``state.pt`` (optimizer state and step).

        Args:
            device: Where tensors are loaded.
            step: The manifest's step: the state must have been saved at that step (a manifest that
                claims steps the saved state never ran is refused).

        Raises:
            RunDirError: Naming the file and what to do if it is missing, corrupt or disagrees with the manifest.
        """
        state = _load_state(self.state_file, device, self.checkpoint_fix)
        fix = self.checkpoint_fix
        if not isinstance(state, dict) or not isinstance(state.get("optimizer"), dict):
            raise RunDirError(f"{self.state_file} holds no optimizer state; {fix}")
        if step is not None and state.get("step") != step:
            raise RunDirError(
                f"{self.manifest_file} claims {step} steps but {self.state_file} was saved after "
                f"{state.get('step')}: the checkpoint is inconsistent; {fix}"
            )
        return dict(state)


def _is_number(value: Any) -> bool:
    """Whether `value` is a JSON number (NaN included: an undefined metric), not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)
