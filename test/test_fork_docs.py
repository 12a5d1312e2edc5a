"""The doc pages that the patch series changes build with Sphinx, offline,
without a single warning."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import upstream  # noqa: E402


CHANGED_PAGES = ["runtime_program.rst", "howto.rst"]


def test_changed_pages_build_without_warnings(tmp_path):
    pytest.importorskip("sphinx")
    doc = upstream.read_pin(ROOT).extracted / "doc"
    if not doc.is_dir():
        pytest.skip(f"{doc} not there: build the fork first")

    src = tmp_path / "src"
    src.mkdir()
    for page in [*CHANGED_PAGES, "subst.rst"]:
        shutil.copy2(doc / page, src / page)
    (src / "index.rst").write_text(
        "Changed pages\n=============\n\n.. toctree::\n\n"
        + "".join(f"    {p[:-4]}\n" for p in CHANGED_PAGES))

    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going",
         "-q", "-c", str(ROOT / "test" / "docs"), str(src),
         str(tmp_path / "html")],
        capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not proc.stderr.strip(), proc.stderr

    html = (tmp_path / "html" / "runtime_program.html").read_text()
    for name in ["get_kernel", "RepeatedKernelRetrievalWarning"]:
        assert (f'id="pyopencl.{name}' in html
                or f"pyopencl.Program.{name}" in html), name
    howto = (tmp_path / "html" / "howto.html").read_text()
    assert 'id="launch-overhead"' in howto
    assert "the-warnings-filter" in howto
