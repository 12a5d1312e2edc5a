"""CONTRIBUTING.md's loop, its fast steps run as written in a fresh clone:
unpack, a new patch committed, export, check failing with what to do,
pull-requests.ini updated, check passing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import upstream  # noqa: E402


PIN = upstream.read_pin(ROOT)
GUIDE = (ROOT / "CONTRIBUTING.md").read_text()
GIT_ENV = {"GIT_AUTHOR_NAME": "A Newcomer", "GIT_AUTHOR_EMAIL": "new@example.org",
           "GIT_COMMITTER_NAME": "A Newcomer",
           "GIT_COMMITTER_EMAIL": "new@example.org"}


def sh(cmd: str, cwd: Path) -> subprocess.CompletedProcess:
    """One of the guide's commands, checked to be there, run with bash."""
    assert cmd in GUIDE, f"CONTRIBUTING.md does not say {cmd!r}"
    return subprocess.run(["bash", "-c", cmd], cwd=cwd, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          env={**os.environ, **GIT_ENV}, check=False)


def test_new_patch_loop(tmp_path):
    if subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT,
                      capture_output=True, check=False).returncode != 0:
        pytest.skip("not a git checkout")
    clone = tmp_path / "pyopencl-fork"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    # what the first build or unpack would fetch with pip
    shutil.copy2(upstream.ensure_tarball(PIN), clone / PIN.tarball.relative_to(ROOT))
    n = len(PIN.series) + 1
    new = f"{n:04d}"

    proc = sh("python3 tools/series.py unpack", clone)
    assert proc.returncode == 0, proc.stdout
    tree = clone / "series-tree"
    # the edit: any of upstream's files
    assert "$EDITOR pyopencl/__init__.py" in GUIDE
    with open(tree / "pyopencl" / "__init__.py", "a") as f:
        f.write("\n# a newcomer's first patch\n")
    proc = sh('git commit -a -m "Program: what the patch does, in upstream\'s style"',
              tree)
    assert proc.returncode == 0, proc.stdout

    proc = sh("python3 tools/series.py export", clone)
    assert proc.returncode == 0, proc.stdout
    (patch,) = (clone / "subprojects" / "packagefiles" / "patches").glob(
        f"{new}-*.patch")

    # not in pull-requests.ini yet: check fails, naming the patch and
    # saying what to do
    proc = sh("python3 tools/series.py check", clone)
    assert proc.returncode != 0
    assert "every patch of the series must be in exactly one section" in proc.stdout
    assert f"In no section: {patch.name}." in proc.stdout
    assert "Add it to pull-requests.ini" in proc.stdout
    assert f"patches = {new}\n" in proc.stdout

    # the guide's section, numbered for this patch
    (section,) = re.findall(r"```ini\n(.*?)```", GUIDE, flags=re.DOTALL)
    section = re.sub(r"(?m)^ +", "", section)
    section = re.sub(r"patches = \d+", f"patches = {new}", section)
    ini = clone / "subprojects" / "packagefiles" / "pull-requests.ini"
    ini.write_text(ini.read_text() + "\n" + section)
    proc = sh("python3 tools/series.py stats --write UPSTREAM.md", clone)
    assert proc.returncode == 0, proc.stdout
    proc = sh("python3 tools/series.py check", clone)
    assert proc.returncode == 0, proc.stdout
    assert f"ok  {patch.name}\n" in proc.stdout
    assert f"ok  {patch.name} (pull request Z)" in proc.stdout

    proc = sh("git add subprojects UPSTREAM.md", clone)
    assert proc.returncode == 0, proc.stdout
    status = subprocess.run(["git", "status", "--porcelain"], cwd=clone,
                            capture_output=True, text=True, check=True).stdout
    assert f"A  subprojects/packagefiles/patches/{patch.name}" in status
    assert "M  subprojects/packagefiles/pull-requests.ini" in status
    assert "M  subprojects/pyopencl.wrap" in status
