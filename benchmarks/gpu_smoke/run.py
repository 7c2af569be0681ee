"""GPU smoke check: the local engine and TRL train SmolLM2-sized policies on one GPU; one JSON of timings.

    bash benchmarks/gpu_smoke/run.sh                                   # GPU machine: $OUT/gpu_smoke.json
    uv run python benchmarks/gpu_smoke/run.py --quick --device cpu --out /tmp/gpu_smoke.json   # CPU dry run

A model of SmolLM2-135M-Instruct's architecture and size (30 layers, 134.5M parameters, its tokenizer
and chat template from ``smollm2-config/``) is built with random weights, in bfloat16 on CUDA (float32
on CPU), and saved as a Hugging Face folder in a scratch directory. Then, each in its own process with
its own share of the time budget, the engines train it on maze-v1 with ``method=vpo`` (multi, m = 3):

- ``local``: the local engine (`vpo_engines.local.train.run`, what ``apps/train.py model=<dir>
  device=cuda`` runs) for a few RL steps, no evaluation. Per step: generation, reward and update
  seconds (its ``metrics.jsonl``), generated tokens and tokens per second.
- ``trl``: `vpo_engines.trl.train.build_trainer` (``apps/train.py engine=trl``), TRL's
  GRPOTrainer with vpo-core's advantages, for the same RL steps. Per RL step: wall seconds (its
  optimizer steps, timed by a callback), generation seconds, generated tokens, and the rest
  (``update_seconds``: scoring, old and reference log-probs, the optimizer steps). Skipped, and said so
  in the JSON, where trl or datasets is not installed (`fetch_wheels.py` fetches them for the GPU
  machine).

The engines load the folder with transformers' default ``dtype="auto"``, so they train in the dtype it
was saved in (neither has a dtype option). Random weights all but never write EOS (1 token in 49153)
or the answer's closing tag, so completions run to the token budget: each step generates about
``prompts_per_step x group_size x max_new_tokens`` tokens (counted, not assumed), which makes steps
comparable.

The JSON (``--out``, default ``$OUT/gpu_smoke.json`` where ``OUT`` is set, else ``./gpu_smoke.json``)
holds the device, library versions, the model (parameters, dtype), the settings, and per engine its
status (ok, failed, timeout or skipped), per-step timings with medians over the steps after the first
(warm-up), peak CUDA memory, and the error's traceback where it failed; a failure of one engine is
recorded and the other still runs. Exit code 0 when no engine failed, 1 otherwise.

Needs only torch, transformers, numpy, tqdm and matplotlib (plus trl, datasets and accelerate for the
TRL part) and this working tree: where vpo-core and env-maze are not installed, their sources
(``packages/*/src``) are put on the path and maze-v1 is registered from env-maze's pyproject.toml.
Nothing is downloaded (Hugging Face libraries run offline).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CONFIG_DIR = HERE / "smollm2-config"
SOURCES = ("packages/vpo-core/src", "packages/vpo-engines/src", "packages/env-maze/src")
"""The workspace packages the two engines import (vpo-core, vpo-engines, and env-maze for maze-v1)."""
SCHEMA = "vpo-gpu-smoke/1"
ENGINES = ("local", "trl")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json")
OUTPUT_TAIL = 4000  # characters of an engine's output kept in the JSON where it failed


@dataclasses.dataclass(frozen=True)
class Settings:
    """What both engines run (the same RL steps, so their figures compare).

    Attributes:
        env: Env id.
        method: Training method.
        steps: RL steps (the first is reported apart: it includes CUDA's warm-up).
        prompts_per_step: Prompts per RL step (P).
        group_size: Rollouts per prompt (G); a step generates P·G completions.
        mini_batches: Optimizer steps per RL step.
        max_new_tokens: Token budget per completion (random weights always use all of it).
        tiny: Build a tiny model of the same architecture and tokenizer (`TINY`) instead of the real size.
        threads: torch CPU threads of the local engine (None: the machine's cores, at most 8).
    """

    env: str = "maze-v1"
    method: str = "vpo"
    steps: int = 5
    prompts_per_step: int = 8
    group_size: int = 8
    mini_batches: int = 2
    max_new_tokens: int = 256
    tiny: bool = False
    threads: int | None = None


QUICK = Settings(steps=2, prompts_per_step=2, group_size=2, mini_batches=2, max_new_tokens=8, tiny=True)
"""``--quick``: a CPU dry run of every code path (a tiny model, 2 steps of 2x2 rollouts of 8 tokens)."""
TINY = {
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 1,
    "num_key_value_heads": 1,
    "head_dim": 64,
}
"""The config fields `Settings.tiny` overrides: SmolLM2's architecture and 49152-token vocabulary, 3.2M parameters."""


# ------------------------------------------------------------------------------------ environment
def source_paths(scratch: Path) -> list[str]:
    """Paths that make vpo_core, vpo_engines, env_maze and the ``maze-v1`` entry point importable here, if they
    are not.

    Where vpo-core is not installed (the GPU machine runs no ``uv sync``), its and env-maze's sources
    are used, and a minimal ``.dist-info`` folder in `scratch` declares env-maze's ``vpo.envs`` entry
    points (read from its pyproject.toml), which is how `vpo_core.make` finds ``maze-v1``.

    Returns:
        The paths to prepend to ``sys.path`` (empty where everything is installed).
    """
    import importlib
    import importlib.util
    from importlib.metadata import entry_points

    installed = all(importlib.util.find_spec(name) is not None for name in ("vpo_core", "vpo_engines", "env_maze"))
    paths = [] if installed else [str(ROOT / src) for src in SOURCES]
    if any(ep.name == "maze-v1" for ep in entry_points(group="vpo.envs")):
        return paths
    tomllib = importlib.import_module("tomllib")  # Python >= 3.11 (TRL 1.16 needs it too)

    project = tomllib.loads((ROOT / "packages/env-maze/pyproject.toml").read_text())["project"]
    shim = scratch / "entry-points"
    info = shim / f"env_maze-{project['version']}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: env-maze\nVersion: {project['version']}\n")
    points = project["entry-points"]["vpo.envs"]
    (info / "entry_points.txt").write_text("[vpo.envs]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()))
    return [*paths, str(shim)]


def use_paths(paths: Sequence[str]) -> None:
    """Prepend `paths` to ``sys.path`` and to ``PYTHONPATH`` (for the engine processes)."""
    for path in reversed(paths):
        if path not in sys.path:
            sys.path.insert(0, path)
    if paths:
        old = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join([*paths, *([old] if old else [])])


def offline() -> None:
    """Hugging Face libraries never reach the network; no tracker starts."""
    for key in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY"):
        os.environ.setdefault(key, "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("WANDB_MODE", "disabled")


def versions() -> dict[str, str | None]:
    """Versions of Python and the libraries the run uses (None: not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in ("torch", "transformers", "accelerate", "trl", "datasets", "tokenizers", "numpy", "vpo-core"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    import torch

    out["cuda"] = torch.version.cuda
    try:
        out["git_commit"] = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out["git_commit"] = None  # the device tool copies the working tree without .git
    return out


def device_info(device: str) -> dict[str, Any]:
    """The device the run uses: its name, and for CUDA its memory and compute capability."""
    import torch

    info: dict[str, Any] = {"type": device, "cpu_cores": os.cpu_count(), "platform": platform.platform()}
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        info.update(
            name=props.name,
            count=torch.cuda.device_count(),
            memory_gib=round(props.total_memory / 2**30, 1),
            capability=f"{props.major}.{props.minor}",
            multiprocessors=props.multi_processor_count,
        )
    else:
        info["name"] = _cpu_name()
    return info


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


# ------------------------------------------------------------------------------------ the model
def build_model(config_dir: Path, out: Path, *, dtype_name: str, device: str, tiny: bool) -> dict[str, Any]:
    """Build SmolLM2's architecture from `config_dir` with random weights and save it with its tokenizer to `out`.

    Args:
        config_dir: ``config.json`` and the tokenizer files (``smollm2-config/``).
        out: The HF folder to write (config, safetensors weights in `dtype_name`, tokenizer, template).
        dtype_name: ``bfloat16`` or ``float32``.
        device: Where the weights are initialised (``cuda`` is faster for 134.5M parameters).
        tiny: Override the config's sizes with `TINY` (same architecture and vocabulary).

    Returns:
        The model's description for the JSON.

    Raises:
        FileNotFoundError: If `config_dir` lacks a file.
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    missing = [name for name in ("config.json", *TOKENIZER_FILES) if not (config_dir / name).is_file()]
    if missing:
        raise FileNotFoundError(
            f"{config_dir} lacks {', '.join(missing)}; regenerate it with benchmarks/gpu_smoke/make_config.py."
        )
    start = time.perf_counter()
    config = AutoConfig.from_pretrained(config_dir)
    if tiny:
        for key, value in TINY.items():
            setattr(config, key, value)
    dtype = getattr(torch, dtype_name)
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    parameters = sum(p.numel() for p in model.parameters())
    model.save_pretrained(out)
    for name in TOKENIZER_FILES:
        shutil.copyfile(config_dir / name, out / name)
    del model
    return {
        "config_dir": _relative(config_dir),
        "architecture": config.architectures[0] if config.architectures else config.model_type,
        "layers": int(config.num_hidden_layers),
        "full_size": not tiny,
        "hidden_size": int(config.hidden_size),
        "vocab_size": int(config.vocab_size),
        "parameters": parameters,
        "dtype": dtype_name,
        "weights": "random (torch seed 0)",
        "build_seconds": round(time.perf_counter() - start, 2),
    }


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


# ------------------------------------------------------------------------------------ figures
def _median(values: Sequence[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def summarize(steps: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over the steps after the first (the first pays CUDA's and the allocator's warm-up).

    Args:
        steps: One record per RL step with ``seconds``, ``gen_seconds`` and ``generated_tokens``.

    Returns:
        ``steps_done``, ``first_step_seconds``, ``step_seconds_median``, ``gen_seconds_median``,
        ``gen_tokens_per_s_median`` (generated tokens / generation seconds) and ``tokens_per_s_median``
        (generated tokens / whole step seconds); the medians fall back to the first step when it is the only one.
    """
    steady = steps[1:] or steps
    return {
        "steps_done": len(steps),
        "first_step_seconds": steps[0]["seconds"] if steps else None,
        "step_seconds_median": _median([s["seconds"] for s in steady]),
        "gen_seconds_median": _median([s["gen_seconds"] for s in steady]),
        "gen_tokens_per_s_median": _median([s["gen_tokens_per_s"] for s in steady]),
        "tokens_per_s_median": _median([s["generated_tokens"] / s["seconds"] for s in steady if s["seconds"] > 0]),
    }


def local_steps(metrics_file: Path, rollouts: int) -> list[dict[str, Any]]:
    """The local engine's steps from its ``metrics.jsonl`` (what a stopped run wrote so far)."""
    if not metrics_file.is_file():
        return []
    steps = []
    for line in metrics_file.read_text().splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        gen, reward, update = (record[f"timing_s/{k}"] for k in ("gen", "reward", "update_actor"))
        tokens = round(record["response_length/mean"] * rollouts)
        steps.append(
            {
                "step": record["step"],
                "seconds": round(gen + reward + update, 3),
                "gen_seconds": gen,
                "reward_seconds": reward,
                "update_seconds": update,
                "generated_tokens": tokens,
                "gen_tokens_per_s": round(tokens / gen, 1) if gen > 0 else None,
                "response_length_mean": record["response_length/mean"],
            }
        )
    return steps


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON-lines file (none if it does not exist)."""
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# ------------------------------------------------------------------------------------ engine parts (child processes)
def _cuda_sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def _reset_peak(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.reset_peak_memory_stats()


def _peak(device: str) -> dict[str, float] | None:
    if device != "cuda":
        return None
    import torch

    return {
        "allocated_gib": round(torch.cuda.max_memory_allocated() / 2**30, 3),
        "reserved_gib": round(torch.cuda.max_memory_reserved() / 2**30, 3),
    }


def run_local(model_dir: Path, work: Path, settings: Settings, device: str) -> dict[str, Any]:
    """The local engine on `model_dir`: `settings.steps` RL steps, no evaluation; its figures."""
    from vpo_engines.local import train
    from vpo_engines.local.config import TrainConfig

    config = TrainConfig(
        env=settings.env,
        method=settings.method,
        model=str(model_dir),
        out=str(work / "local-run"),
        device=device,
        threads=settings.threads or max(1, min(8, os.cpu_count() or 1)),
        steps=settings.steps,
        prompts_per_step=settings.prompts_per_step,
        group_size=settings.group_size,
        mini_batches=settings.mini_batches,
        max_new_tokens=settings.max_new_tokens,
        save_every=settings.steps,
        eval_tasks=0,
        seed=0,
    )
    _reset_peak(device)
    report = train.run(train.preflight(config))
    saved = json.loads((config.run_dir / "checkpoint" / "model" / "config.json").read_text())
    steps = local_steps(config.run_dir / "metrics.jsonl", settings.prompts_per_step * settings.group_size)
    return {
        "steps": steps,
        **summarize(steps),
        "trained_dtype": saved.get("dtype") or saved.get("torch_dtype"),
        "phase_seconds": report.get("phase_seconds"),
        "peak_cuda_memory": _peak(device),
    }


def run_trl(model_dir: Path, work: Path, settings: Settings, device: str) -> dict[str, Any]:
    """TRL's GRPOTrainer (the TRL adapter) on `model_dir` for `settings.steps` RL steps; its figures.

    Each RL step is `settings.mini_batches` optimizer steps (TRL's ``steps_per_generation``), the first
    of which generates the step's P·G completions. Steps are appended to ``trl-steps.jsonl`` in `work`
    as they end, so a timed-out part still reports the steps it finished.
    """
    import importlib.util

    missing = [name for name in ("trl", "datasets") if importlib.util.find_spec(name) is None]
    if missing:
        return {
            "status": "skipped",
            "error": f"{' and '.join(missing)} not installed; carry benchmarks/gpu_smoke/wheels (fetch_wheels.py)",
        }
    from vpo_engines.trl.train import TRLTrainConfig, build_trainer

    config = TRLTrainConfig(
        env=settings.env,
        method=settings.method,
        model=str(model_dir),
        out=str(work / "trl-run"),
        seed=0,
        steps=settings.steps,
        prompts_per_step=settings.prompts_per_step,
        group_size=settings.group_size,
        mini_batches=settings.mini_batches,
        max_new_tokens=settings.max_new_tokens,
        device=device,
    )
    trainer = build_trainer(config)
    log = TRLStepLog(work / "trl-steps.jsonl", mini_batches=settings.mini_batches, device=device)
    log.time_generation(trainer)
    trainer.add_callback(log.callback())
    _reset_peak(device)
    trainer.train()
    steps = read_jsonl(log.path)
    return {
        "steps": steps,
        **summarize(steps),
        "trained_dtype": str(trainer.model.dtype).removeprefix("torch."),
        "trl_logged_step_time": log.logged_step_time or None,
        "peak_cuda_memory": _peak(device),
    }


class TRLStepLog:
    """Per-RL-step figures of a TRL run, appended to a JSON-lines file as each RL step ends.

    Generation is timed by wrapping the trainer's ``_generate`` (`time_generation`), optimizer steps by a
    callback (`callback`); every `mini_batches` optimizer steps make one RL step, whose record holds its
    wall seconds, generation seconds, the rest (``update_seconds``), generated tokens and tokens per second.

    Attributes:
        path: The JSON-lines file the records are appended to.
        mini_batches: Optimizer steps per RL step.
        device: The torch device (CUDA is synchronized around each timed span).
        logged_step_time: TRL's own ``step_time`` log of each optimizer step (its training_step), seconds.
    """

    def __init__(self, path: Path, *, mini_batches: int, device: str) -> None:
        self.path = path
        self.mini_batches = mini_batches
        self.device = device
        self.logged_step_time: list[float] = []
        self._current: dict[str, Any] = {}
        self._reset()
        self._started = 0.0

    def _reset(self) -> None:
        self._current.update(seconds=0.0, gen_seconds=0.0, generated_tokens=0, optimizer_steps=0)

    def time_generation(self, trainer: Any) -> None:
        """Time `trainer`'s generation and count its tokens (an instance attribute: nothing else changes)."""
        generate = trainer._generate

        def timed_generate(prompts: list[Any]) -> Any:
            _cuda_sync(self.device)
            start = time.perf_counter()
            result = generate(prompts)
            _cuda_sync(self.device)
            self._current["gen_seconds"] += time.perf_counter() - start
            self._current["generated_tokens"] += sum(len(ids) for ids in result[1])  # completion ids per row
            return result

        trainer._generate = timed_generate

    def callback(self) -> Any:
        """A `transformers.TrainerCallback` that times each optimizer step into this log."""
        from transformers import TrainerCallback

        log = self

        class StepTimer(TrainerCallback):
            """Wall time of each optimizer step; every `mini_batches` of them make one RL step."""

            def on_log(self, *args: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
                if logs and "step_time" in logs:
                    log.logged_step_time.append(round(float(logs["step_time"]), 3))

            def on_step_begin(self, *args: Any, **kwargs: Any) -> None:
                log.step_began()

            def on_step_end(self, *args: Any, **kwargs: Any) -> None:
                log.step_ended()

        return StepTimer()

    def step_began(self) -> None:
        """An optimizer step begins: start its clock."""
        _cuda_sync(self.device)
        self._started = time.perf_counter()

    def step_ended(self) -> None:
        """An optimizer step ended: add its time; append the RL step's record after its last one."""
        _cuda_sync(self.device)
        self._current["seconds"] += time.perf_counter() - self._started
        self._current["optimizer_steps"] += 1
        if self._current["optimizer_steps"] == self.mini_batches:
            self._append()
            self._reset()

    def _append(self) -> None:
        """Append the finished RL step's record to `path`."""
        current = self._current
        gen, tokens = current["gen_seconds"], current["generated_tokens"]
        record = {
            "step": len(read_jsonl(self.path)),
            "seconds": round(current["seconds"], 3),
            "gen_seconds": round(gen, 3),
            "update_seconds": round(current["seconds"] - gen, 3),
            "generated_tokens": tokens,
            "gen_tokens_per_s": round(tokens / gen, 1) if gen > 0 else None,
        }
        with self.path.open("a") as handle:
            handle.write(json.dumps(record) + "\n")


PARTS: dict[str, Callable[[Path, Path, Settings, str], dict[str, Any]]] = {"local": run_local, "trl": run_trl}


def part_main(engine: str, model_dir: Path, work: Path, settings: Settings, device: str) -> int:
    """Run one engine's part and write ``<engine>.json`` in `work` (its traceback where it failed)."""
    start = time.perf_counter()
    try:
        result: dict[str, Any] = {"status": "ok", **PARTS[engine](model_dir, work, settings, device)}
    except BaseException as exc:  # recorded for the JSON; the parent process goes on with the other engine
        result = {"status": "failed", "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        try:
            result["peak_cuda_memory"] = _peak(device)
        except RuntimeError:  # a broken CUDA context cannot report its memory (torch raises RuntimeError)
            result["peak_cuda_memory"] = None
    result["seconds"] = round(time.perf_counter() - start, 2)
    (work / f"{engine}.json").write_text(json.dumps(result, indent=1))
    if result["status"] == "failed":
        print(result["traceback"], file=sys.stderr)
    return 0 if result["status"] != "failed" else 1


# ------------------------------------------------------------------------------------ the parent process
def run_part(
    engine: str, model_dir: Path, work: Path, settings: Settings, device: str, timeout: float
) -> dict[str, Any]:
    """Run an engine's part in its own process, echoing its output, stopped after `timeout` seconds.

    Returns:
        The part's result (``status`` ok, failed, timeout or skipped); a process that died or was stopped
        is reported with its last output and the steps it had finished.
    """
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--part",
        engine,
        "--model-dir",
        str(model_dir),
        "--work",
        str(work),
        "--device",
        device,
        "--settings",
        json.dumps(dataclasses.asdict(settings)),
    ]
    start = time.perf_counter()
    tail: deque[str] = deque(maxlen=200)
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,  # its own process group: a timeout stops TRL's workers too
    )

    def echo() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            tail.append(line)
            sys.stderr.write(f"[{engine}] {line}")
        sys.stderr.flush()

    reader = threading.Thread(target=echo, daemon=True)
    reader.start()
    try:
        code = process.wait(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        code = process.wait()
        timed_out = True
    reader.join(timeout=10)
    seconds = round(time.perf_counter() - start, 2)
    result_file = work / f"{engine}.json"
    if result_file.is_file() and not timed_out:
        result = json.loads(result_file.read_text())
    else:
        steps = (
            local_steps(work / "local-run" / "metrics.jsonl", settings.prompts_per_step * settings.group_size)
            if engine == "local"
            else read_jsonl(work / "trl-steps.jsonl")
        )
        reason = f"stopped after its {timeout:.3g} s share of the budget" if timed_out else f"exited with code {code}"
        result = {
            "status": "timeout" if timed_out else "failed",
            "error": f"the {engine} part {reason} before writing its result",
            "steps": steps,
            **summarize(steps),
        }
    result["process_seconds"] = seconds
    if result["status"] in ("failed", "timeout"):
        result["output_tail"] = "".join(tail)[-OUTPUT_TAIL:]
    return result


def default_out() -> Path:
    """``$OUT/gpu_smoke.json`` where the device tool sets OUT, else ``./gpu_smoke.json``."""
    return Path(os.environ["OUT"]) / "gpu_smoke.json" if os.environ.get("OUT") else Path("gpu_smoke.json")


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text}")
    return value


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, help="the JSON to write (default $OUT/gpu_smoke.json, else ./gpu_smoke.json)"
    )
    parser.add_argument(
        "--device", choices=("auto", "cuda", "cpu"), default="auto", help="auto: cuda if torch sees one"
    )
    parser.add_argument("--dtype", choices=("auto", "bfloat16", "float32"), default="auto", help="auto: bf16 on cuda")
    parser.add_argument("--quick", action="store_true", help=f"tiny settings for a CPU dry run: {QUICK}")
    parser.add_argument("--engines", default=",".join(ENGINES), help="comma-separated, of: local, trl")
    parser.add_argument("--budget", type=float, default=420.0, help="wall seconds for everything (default 420)")
    parser.add_argument("--config-dir", type=Path, default=CONFIG_DIR, help="config + tokenizer of the model")
    parser.add_argument("--keep", type=Path, help="keep the model and run directories in this folder")
    for field in dataclasses.fields(Settings):
        if field.type == "int":
            parser.add_argument(f"--{field.name.replace('_', '-')}", type=_positive, help=f"override {field.name}")
    parser.add_argument("--tiny", action="store_true", default=None, help="a tiny model (implied by --quick)")
    parser.add_argument(
        "--threads", type=_positive, help="torch CPU threads of the local engine (default: cores, <= 8)"
    )
    # an engine part, run by the parent in its own process
    parser.add_argument("--part", choices=ENGINES, help=argparse.SUPPRESS)
    parser.add_argument("--model-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--settings", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = [e for e in engines if e not in ENGINES]
    if unknown or not engines:
        parser.error(f"--engines takes a comma-separated list of {', '.join(ENGINES)}, got {args.engines!r}")
    args.engines = engines
    if not (math.isfinite(args.budget) and args.budget > 0):
        parser.error(f"--budget must be a number of seconds > 0, got {args.budget}")
    return args


def chosen_settings(args: argparse.Namespace) -> Settings:
    """The defaults, or `QUICK`, with the command line's overrides."""
    base = QUICK if args.quick else Settings()
    overrides = {
        f.name: getattr(args, f.name)
        for f in dataclasses.fields(Settings)
        if f.name not in ("env", "method") and getattr(args, f.name, None) is not None
    }
    return dataclasses.replace(base, **overrides)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    offline()
    if args.part:  # a child: the paths come through PYTHONPATH
        settings = Settings(**json.loads(args.settings))
        return part_main(args.part, args.model_dir, args.work, settings, args.device)
    started = time.perf_counter()
    settings = chosen_settings(args)
    out = args.out or default_out()
    scratch = Path(tempfile.mkdtemp(prefix="vpo-gpu-smoke-")) if args.keep is None else args.keep
    scratch.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "schema": SCHEMA,
        "ok": False,
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": [Path(sys.argv[0]).name, *(sys.argv[1:] if argv is None else argv)],
        "budget_seconds": args.budget,
        "settings": {**dataclasses.asdict(settings), "quick": args.quick},
        "engines": {},
    }
    try:
        use_paths(source_paths(scratch))
        import torch

        from vpo_core.methods import get_method

        result["settings"]["m"] = get_method(settings.method).resolve_m(None)

        device = args.device if args.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
        if device == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("--device cuda was asked for but torch sees no CUDA device; use --device cpu.")
        dtype = args.dtype if args.dtype != "auto" else ("bfloat16" if device == "cuda" else "float32")
        result.update(device=device_info(device), versions=versions())
        model_dir = scratch / "model"
        print(f"building the model ({dtype}, {device}) in {model_dir}", file=sys.stderr, flush=True)
        result["model"] = build_model(args.config_dir, model_dir, dtype_name=dtype, device=device, tiny=settings.tiny)
        for index, engine in enumerate(args.engines):
            remaining = args.budget - (time.perf_counter() - started)
            share = max(1.0, remaining / (len(args.engines) - index))  # at least a second, to record the start
            print(f"{engine}: up to {share:.0f} s", file=sys.stderr, flush=True)
            work = scratch / engine
            work.mkdir(exist_ok=True)
            result["engines"][engine] = run_part(engine, model_dir, work, settings, device, share)
        result["ok"] = all(part["status"] == "ok" for part in result["engines"].values())
    except Exception as exc:  # a failure before the engines (device, model): recorded, not lost
        result["error"] = f"{type(exc).__name__}: {exc}"
        result["traceback"] = traceback.format_exc()
    finally:
        result["wall_seconds"] = round(time.perf_counter() - started, 2)
        if args.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1) + "\n")
    print(headline(result))
    print(f"wrote {out}")
    failed = "error" in result or any(part["status"] in ("failed", "timeout") for part in result["engines"].values())
    return 1 if failed else 0


def headline(result: dict[str, Any]) -> str:
    """One line per engine: status, median step seconds, generation tokens/s, peak memory."""
    device = result.get("device", {})
    lines = [
        f"gpu smoke on {device.get('name', '?')} ({result.get('model', {}).get('dtype', '?')}, "
        f"{result.get('model', {}).get('parameters', 0) / 1e6:.1f}M parameters): ok={result['ok']}, "
        f"{result.get('wall_seconds', 0):.0f} s"
    ]
    if "error" in result:
        lines.append(f"  error: {result['error']}")
    for engine, part in result["engines"].items():
        peak = (part.get("peak_cuda_memory") or {}).get("allocated_gib")
        lines.append(
            f"  {engine}: {part['status']}, {part.get('steps_done', 0)} steps, step {part.get('step_seconds_median')} s "
            f"(first {part.get('first_step_seconds')} s), generation {part.get('gen_tokens_per_s_median')} tok/s, "
            f"peak {peak} GiB" + (f" — {part['error']}" if part.get("error") else "")
        )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
