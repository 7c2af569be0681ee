"""docs/adding-a-method.md end to end: its code blocks, run in fresh processes, reach both engines.

The page's ``# file: NAME.py`` blocks are written into a temporary directory put on ``PYTHONPATH``, next to
a minimal ``.dist-info`` that declares the page's ``verl.plugins`` entry point (exactly what installing the
package that holds them provides to `importlib.metadata`, as in test_scaffold.py). Each ``# check: ...``
block then runs in its own interpreter, followed by this file's brute-force checks of the new method
(``rloo_best``: best-of-m under w* with a leave-one-out baseline) on that engine.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "adding-a-method.md"
BLOCK = re.compile(r"^```(python|toml)\n(.*?)^```", re.S | re.M)

LOCAL_BRUTE_FORCE = """
rng = np.random.default_rng(0)
w = np.array([0.3, 0.7])
r = rng.integers(0, 3, size=(5, 4, 3, 2)) / 2.0  # (B, G, m, d)
got = compute_advantages(RolloutBatch.of(r, w_star=w), AdvantageConfig.parse("rloo_best", seed=7))
for b in range(5):
    best = [max(sum(wi * ri for wi, ri in zip(w, answer)) for answer in rollout) for rollout in r[b]]
    for i in range(4):
        others = [best[j] for j in range(4) if j != i]
        assert abs(got[b, i] - (best[i] - sum(others) / len(others))) < 1e-12, (b, i, got[b, i])
ones = RolloutBatch.of(np.ones((2, 4, 3, 2)), w_star=w)
np.testing.assert_allclose(compute_advantages(ones, AdvantageConfig.parse("rloo_best")), 0.0, atol=1e-12)
print("local engine: brute force ok")
"""

VERL_BRUTE_FORCE = """
from vpo_engines.verl.plugin import check
from vpo_core.advantages import AdvantageConfig, RolloutBatch, rollout_scalars

check()
rng = np.random.default_rng(1)
n, width = 12, 5
uid = np.array([f"g{i % 3}" for i in rng.permutation(n)], dtype=object)  # groups interleaved
lengths = torch.as_tensor(rng.integers(1, width + 1, size=n))
mask = (torch.arange(width)[None, :] < lengths[:, None]).float()
rewards = torch.zeros(n, width)
rewards[torch.arange(n), lengths - 1] = torch.as_tensor(rng.random(n).round(3), dtype=torch.float32)
adv, returns = estimator(token_level_rewards=rewards, response_mask=mask, index=uid, config=None)
x = rewards.sum(-1).double().numpy()
for i in range(n):
    others = [x[j] for j in range(n) if uid[j] == uid[i] and j != i]
    want = torch.tensor(x[i] - sum(others) / len(others), dtype=torch.float32) * mask[i]
    torch.testing.assert_close(adv[i], want)
assert torch.equal(adv, returns)
# the reward workers' half: the plugin imported the objective, so vpo's reward manager can score the method
one = np.array([[[[1.0, 0.0], [0.5, 1.0], [0.0, 0.0]]]])  # one group, one rollout, (m=3, d=2)
assert rollout_scalars(RolloutBatch.of(one, w_star=[0.5, 0.5]), AdvantageConfig.parse("rloo_best")).tolist() == [[0.75]]
print("veRL: brute force ok")
"""


def _blocks() -> list[tuple[str, str]]:
    return [(lang, code) for lang, code in BLOCK.findall(DOC.read_text())]


def _labelled(prefix: str) -> dict[str, str]:
    out = {}
    for lang, code in _blocks():
        first = code.splitlines()[0]
        if lang == "python" and first.startswith(prefix):
            out[first[len(prefix) :].strip()] = code
    return out


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> dict[str, str]:
    """A directory with the page's modules and their entry point, as the environment of a subprocess."""
    root = tmp_path_factory.mktemp("rloo")
    for name, code in _labelled("# file:").items():
        (root / name).write_text(code)
    tables = [tomllib.loads(code)["project"]["entry-points"] for lang, code in _blocks() if lang == "toml"]
    (plugins,) = [table["verl.plugins"] for table in tables if "verl.plugins" in table]
    dist = root / "rloo_method-0.1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rloo-method\nVersion: 0.1.0\n")
    lines = "".join(f"{name} = {target}\n" for name, target in plugins.items())
    (dist / "entry_points.txt").write_text(f"[verl.plugins]\n{lines}")
    paths = [str(root), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(paths))


def _run(code: str, env: dict[str, str]) -> str:
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out.stdout


def test_the_page_has_the_blocks_this_test_runs():
    assert sorted(_labelled("# file:")) == ["rloo_method.py", "rloo_verl_plugin.py"]
    assert sorted(_labelled("# check:")) == ["the local engine", "veRL"]


def test_the_new_method_reaches_the_local_engine(site):
    out = _run(_labelled("# check:")["the local engine"] + LOCAL_BRUTE_FORCE, site)
    assert "brute force ok" in out


@pytest.mark.verl
def test_the_new_method_reaches_verl_through_its_plugin_entry_point(site):
    pytest.importorskip("verl", reason="veRL is opt-in: `uv sync --group verl` (CI installs it)")
    out = _run(_labelled("# check:")["veRL"] + VERL_BRUTE_FORCE, site)
    assert "brute force ok" in out


def test_the_example_module_passes_ruff(site):
    root = Path(site["PYTHONPATH"].split(os.pathsep)[0])
    ruff = Path(sys.executable).parent / "ruff"
    if not ruff.exists():
        pytest.skip("ruff is not installed next to this interpreter")
    files = [str(root / name) for name in _labelled("# file:")]
    out = subprocess.run(
        [str(ruff), "check", "--config", str(ROOT / "pyproject.toml"), *files], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stdout + out.stderr
