"""The GPU smoke check (benchmarks/gpu_smoke) on CPU: its dry run, with only what the GPU machine has, and its size.

The check itself needs a CUDA machine (the device tool's); CI never has one. These tests run every code path of
`run.py` on CPU with a tiny model in an interpreter that sees only the GPU machine's packages (its image's list,
``target-packages.txt``, plus the wheels ``fetch_wheels.py`` carries), with vpo-core and env-maze not installed,
as there. They also check that what the device tool copies (the working tree) stays within its 64 MiB.
"""

import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from vpo_core.testing import load_script

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "benchmarks" / "gpu_smoke"
CARRIED = ("trl", "datasets", "dill", "multiprocess")  # fetch_wheels.PACKAGES
DEVICE_TREE_LIMIT = 64 * 2**20  # the device tool copies at most 64 MiB: working tree + carried paths
WHEELS_ALLOWANCE = 3 * 2**20  # the carried wheels, where they are not here (1.74 MiB on 2026-11-28)


def _load(name: str) -> ModuleType:
    return load_script(SMOKE / f"{name}.py", f"gpu_smoke_{name}")


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _target_packages() -> set[str]:
    lines = (SMOKE / "target-packages.txt").read_text().splitlines()
    return {_normalize(line) for line in lines if line.strip() and not line.startswith("#")}


@pytest.fixture(scope="module")
def target_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Python that sees only the GPU machine's packages and the carried ones, linked from this environment."""
    venv = tmp_path_factory.mktemp("target") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    allowed = _target_packages() | set(CARRIED)
    linked = set()
    for dist in importlib.metadata.distributions():
        if _normalize(dist.metadata["Name"]) not in allowed:
            continue
        for top in {Path(str(f)).parts[0] for f in dist.files or ()} - {".."}:
            if top.endswith(".pth") or (site / top).exists():
                continue
            (site / top).symlink_to(Path(str(dist.locate_file(top))))
        linked.add(_normalize(dist.metadata["Name"]))
    assert {"torch", "transformers", "accelerate", *CARRIED} <= linked
    python = venv / "bin" / "python"
    probe = subprocess.run(
        [str(python), "-c", "import vpo_core"],
        capture_output=True,
        text=True,
        env=_clean_env(),
    )
    assert "No module named 'vpo_core'" in probe.stderr, probe.stderr  # as on the GPU machine: not installed
    return python


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


@pytest.mark.slow
def test_the_dry_run_trains_with_both_engines_on_the_gpu_machines_packages(target_python: Path, tmp_path: Path) -> None:
    out = tmp_path / "gpu_smoke.json"
    run = subprocess.run(
        [str(target_python), str(SMOKE / "run.py"), "--quick", "--device", "cpu", "--out", str(out)],
        capture_output=True,
        text=True,
        env=_clean_env(),
        cwd=tmp_path,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-6000:]
    result = json.loads(out.read_text())
    assert result["schema"] == "vpo-gpu-smoke/1"
    assert result["ok"] is True
    assert result["device"]["type"] == "cpu"
    assert result["versions"]["vpo-core"] is None  # imported from packages/*/src, as on the GPU machine
    assert result["versions"]["torch"]
    assert result["versions"]["transformers"]
    assert result["versions"]["trl"]
    model = result["model"]
    assert model["architecture"] == "LlamaForCausalLM"
    assert model["vocab_size"] == 49152
    assert model["full_size"] is False
    assert 1e6 < model["parameters"] < 1e7
    assert model["dtype"] == "float32"
    settings = result["settings"]
    assert settings["m"] == 3
    assert settings["method"] == "vpo"
    assert settings["env"] == "maze-v1"
    budget = settings["prompts_per_step"] * settings["group_size"] * settings["max_new_tokens"]
    for engine in ("local", "trl"):
        part = result["engines"][engine]
        assert part["status"] == "ok", part
        assert part["steps_done"] == settings["steps"] == len(part["steps"]) == 2
        assert [step["step"] for step in part["steps"]] == [0, 1]
        for step in part["steps"]:
            assert step["seconds"] >= step["gen_seconds"] > 0
            assert 0 < step["generated_tokens"] <= budget  # random weights write to the budget
            assert step["gen_tokens_per_s"] == pytest.approx(step["generated_tokens"] / step["gen_seconds"], rel=0.02)
        assert part["step_seconds_median"] == part["steps"][1]["seconds"]  # the first step is the warm-up
        assert part["trained_dtype"] == "float32"
        assert part["peak_cuda_memory"] is None
    assert result["wall_seconds"] > 0
    assert "local: ok, 2 steps" in run.stdout
    assert "trl: ok, 2 steps" in run.stdout


def test_an_engine_out_of_time_is_recorded_with_the_steps_it_finished(tmp_path: Path) -> None:
    run = _load("run")
    model = tmp_path / "model"  # a model folder whose files never open: either engine waits until it is stopped
    model.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        os.mkfifo(model / name)
    for engine in ("local", "trl"):
        work = tmp_path / engine
        done = {"step": 0, "seconds": 2.5, "gen_seconds": 2.0, "generated_tokens": 32, "gen_tokens_per_s": 16.0}
        if engine == "local":  # what the local engine's metrics.jsonl holds after one step
            record = {
                "step": 0,
                "timing_s/gen": 2.0,
                "timing_s/reward": 0.1,
                "timing_s/update_actor": 0.4,
                "response_length/mean": 8.0,
            }
            (work / "local-run").mkdir(parents=True)
            (work / "local-run" / "metrics.jsonl").write_text(json.dumps(record) + "\n")
        else:  # what run_trl's step timer appends
            work.mkdir()
            (work / "trl-steps.jsonl").write_text(json.dumps(done) + "\n")
        part = run.run_part(engine, model, work, run.QUICK, "cpu", 0.5)
        assert part["status"] == "timeout"
        assert (
            part["error"] == f"the {engine} part stopped after its 0.5 s share of the budget before writing its result"
        )
        assert part["steps_done"] == 1
        assert part["steps"][0]["seconds"] == 2.5
        assert part["steps"][0]["generated_tokens"] == 32
        assert part["step_seconds_median"] == 2.5
        assert "output_tail" in part
        assert part["process_seconds"] < 60


def test_a_failing_engine_part_records_its_traceback(tmp_path: Path) -> None:
    run = _load("run")
    work = tmp_path / "work"
    work.mkdir()
    code = run.part_main("local", tmp_path / "no-such-model", work, run.QUICK, "cpu")
    assert code == 1
    result = json.loads((work / "local.json").read_text())
    assert result["status"] == "failed"
    assert "model=" in result["error"]
    assert "is not a directory" in result["error"]
    assert "Traceback (most recent call last)" in result["traceback"]
    assert "preflight" in result["traceback"]


def test_the_smoke_folder_and_the_tree_fit_the_device_tools_64_mib() -> None:
    try:
        listing = subprocess.run(
            ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the files the device tool copies are unknown")
    files = [ROOT / name for name in listing.decode().split("\0") if name]
    sizes = {path: path.stat().st_size for path in files if path.is_file() and not path.is_symlink()}
    smoke = sum(size for path, size in sizes.items() if SMOKE in path.parents)
    assert smoke < 2 * 2**20, f"benchmarks/gpu_smoke holds {smoke / 2**20:.2f} MiB; keep it under 2 MiB"
    assert (SMOKE / "smollm2-config" / "tokenizer.json").stat().st_size < 2 * 2**20
    assert not list((SMOKE / "smollm2-config").glob("*.safetensors")), "the folder must hold no weights"
    wheels = sorted((SMOKE / "wheels").glob("*.whl"))
    carried = sum(path.stat().st_size for path in wheels) if wheels else WHEELS_ALLOWANCE
    total = sum(sizes.values()) + carried
    by_top: dict[str, int] = {}
    for path, size in sizes.items():
        top = path.relative_to(ROOT).parts[0]
        by_top[top] = by_top.get(top, 0) + size
    largest = ", ".join(f"{k} {v / 2**20:.1f} MiB" for k, v in sorted(by_top.items(), key=lambda kv: -kv[1])[:4])
    assert total < DEVICE_TREE_LIMIT, (
        f"the device tool would copy {total / 2**20:.1f} MiB (tree + {carried / 2**20:.1f} MiB of wheels), over its "
        f"64 MiB: the GPU smoke check could not run. Largest: {largest}."
    )


@pytest.mark.real_model
def test_the_committed_config_folder_is_the_converted_checkpoints(smollm2: Path) -> None:
    make_config = _load("make_config")
    assert make_config.stale_files(smollm2, SMOKE / "smollm2-config") == [], "run benchmarks/gpu_smoke/make_config.py"
    written = json.loads((SMOKE / "smollm2-config" / "tokenizer.json").read_text())
    assert written == json.loads((smollm2 / "tokenizer.json").read_text())  # compacted, the same value
