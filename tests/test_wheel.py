"""The built wheel installs into a fresh virtual environment and runs from outside the repository, so a
knowledge file missing from the wheel fails here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Both tests share one built wheel: under xdist (`make test` runs --dist loadgroup) they run on one worker.
pytestmark = pytest.mark.xdist_group("wheel")
# What a build leaves in a checkout, and hidden folders (git, the venv, tools' caches): not part of the
# source a wheel is built from.
NOT_SOURCE = shutil.ignore_patterns(".*", "build", "dist", "*.egg-info", "__pycache__")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    # Built from a copy of the checkout: setuptools writes build/ and *.egg-info beside the sources, which
    # must not change the checkout while other tests (or an editable install) use it.
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCE, symlinks=True)
    dist = work / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(dist),
            str(source),
        ],
        check=True,
        cwd=work,
    )
    wheel = next(dist.glob("gpu_advisor-*.whl"))
    env_dir = work / "env"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    purelib = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(purelib)
    # What pip does at install: compile the bytecode, so runs under PYTHONDONTWRITEBYTECODE never recompile.
    subprocess.run(
        [str(python), "-m", "compileall", "-q", str(purelib / "advisor"), str(purelib / "tui")], check=True
    )
    # The wheel's dependencies come from this test's environment (no network): a .pth line adds its
    # site-packages after the fresh one, so the installed wheel, not the source tree, provides advisor.
    deps = sysconfig.get_paths()["purelib"]
    (purelib / "zz_dependencies.pth").write_text(deps + "\n")
    script = env_dir / "bin" / "gpu-advisor"
    script.write_text(f"#!{python}\nimport sys\nfrom advisor.cli.main import main\nsys.exit(main())\n")
    script.chmod(0o755)
    return env_dir


def _run(env_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(
        [str(env_dir / "bin" / "gpu-advisor"), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


@pytest.mark.slow
def test_wheel_ships_every_knowledge_file(installed: Path, tmp_path: Path) -> None:
    probe = subprocess.run(
        [
            str(installed / "bin" / "python"),
            "-c",
            "import advisor, knowledge; print(advisor.__file__); print(knowledge.__file__)",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    )
    assert str(ROOT) not in probe.stdout  # imported from the installed wheel
    shipped = {p.name for p in (ROOT / "knowledge").iterdir() if p.suffix in (".toml", ".csv", ".json")}
    installed_dir = Path(probe.stdout.splitlines()[1]).parent
    assert shipped <= {p.name for p in installed_dir.iterdir()}


@pytest.mark.slow
def test_installed_cli_runs_outside_the_repository(installed: Path, tmp_path: Path) -> None:
    gpus = _run(installed, "gpus", cwd=tmp_path)
    assert gpus.returncode == 0, gpus.stderr
    assert "h100-sxm" in gpus.stdout
    rec = _run(
        installed,
        "recommend",
        "--model",
        "llama-2-70b",
        "--workload",
        "finetune",
        "--budget",
        "20000",
        "--format",
        "json",
        cwd=tmp_path,
    )
    assert rec.returncode == 0, rec.stderr
    plans = json.loads(rec.stdout)["plans"]
    assert plans and "learned from" in json.loads(rec.stdout)["efficiency_source"]
    assert _run(installed, "checklist", "oom", cwd=tmp_path).returncode == 0
