"""The wheel is complete: built from the checkout, installed into a fresh venv, `goodput demo --sample` runs from
a folder outside the checkout, reading only the installed package's SQL, taxonomy, catalogs, schemas and sample.

Offline: the wheel is built with the running venv's setuptools (no build isolation, no download), installed
without dependencies, and the fresh venv borrows the running venv's site-packages (the dependencies) through a
.pth line (which adds the folder, but runs none of its .pth files: a development install of goodput there is not
seen). The venv's own site-packages comes first, so goodput is imported from the wheel; the test asserts it."""
import importlib.util
import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tests.conftest import REPO

# what a build does not need (and what must not be copied: caches, warehouses, the VCS)
NOT_BUILT = ("tests", "bench", "docs", "data", "out", "build", ".*", "*.egg-info", "__pycache__", "*.duckdb*")
PROBE = ("import json, analysis, sql, samples; from analysis import fingerprints, package_files; "
         "print(json.dumps([analysis.__file__, sql.__file__, str(package_files.demo_source()), fingerprints.code_version()]))")


def _run(cmd, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kwargs)
    assert result.returncode == 0, f"{cmd}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def _venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv with goodput's wheel (and nothing of the checkout) installed in it."""
    for tool in ("pip", "setuptools"):
        if importlib.util.find_spec(tool) is None:
            pytest.skip(f"{tool} is not installed in this venv: the wheel cannot be built offline")
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"  # a copy: a build writes build/ and *.egg-info beside pyproject.toml
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(*NOT_BUILT))
    _run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation", "--no-index",
          "-q", "-w", str(root / "dist")], cwd=root)
    (wheel,) = (root / "dist").glob("goodput-*.whl")
    venv = root / "venv"
    _run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(venv)])
    python = _venv_python(venv)
    purelib = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip())
    (purelib / "goodput-test-deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q",
          str(wheel)], cwd=root)
    return venv


def _env() -> dict:
    """The caller's environment without what would point goodput back at the checkout or at another warehouse."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("GOODPUT_")}
    return {**env, "GOODPUT_TORCH_THREADS": "1"}


def test_the_installed_package_reads_its_own_files(installed, tmp_path):
    python = _venv_python(installed)
    files = json.loads(_run([str(python), "-c", PROBE], cwd=tmp_path, env=_env()).stdout)
    for path in files[:3]:
        assert Path(path).resolve().is_relative_to(installed.resolve()), (path, installed)
        assert not Path(path).resolve().is_relative_to(REPO), path
    assert Path(files[2], "slurm", "sacct-2024-03-01.txt").is_file()  # the demo's sample shipped
    assert len(files[3]) == 64  # the code hash is computed from the installed package's files


def test_goodput_demo_sample_runs_from_outside_the_checkout(installed, tmp_path):
    goodput = installed / ("Scripts/goodput.exe" if os.name == "nt" else "bin/goodput")
    db, out = tmp_path / "demo.duckdb", tmp_path / "out"
    result = _run([str(goodput), "demo", "--sample", "--db", str(db), "--out", str(out), "-q"], cwd=tmp_path,
                  env=_env())
    assert "samples/demo_source" in result.stdout.replace(os.sep, "/")
    (report,) = (out / "reports").glob("reliability-*.html")
    assert "<html" in report.read_text()[:500].lower()
    con = duckdb.connect(str(db), read_only=True)
    try:
        jobs, ingested = con.execute("SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM ingested_files)").fetchone()
    finally:
        con.close()
    assert jobs > 0 and ingested > 0
