"""The doc pages that the patch series changes build with Sphinx, offline,
without a single warning."""

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
    assert "RepeatedKernelRetrieval" in howto


def test_fork_docs_page_is_current():
    # docs/launch-overhead.txt, the series' how-to and new API for pip
    # users, is what tools/fork_docs.py renders from the patched tree now
    pytest.importorskip("sphinx")
    if not (upstream.read_pin(ROOT).extracted / "doc").is_dir():
        pytest.skip("no patched tree: build the fork first")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "fork_docs.py"), "--check"],
        capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "docs/launch-overhead.txt" in (ROOT / "README.md").read_text()


# {{{ the README

sys.path.insert(0, str(ROOT / "bench"))
import results_table  # noqa: E402


def test_readme_results_table_is_generated():
    # the README's table is what bench/results_table.py makes of the runs
    # its RUNS list names
    text = (ROOT / "README.md").read_text()
    assert results_table.table_in(text) == results_table.table(), (
        "README.md's results table is stale: run "
        "python3 bench/results_table.py --write README.md")


def test_results_table_runs_exist_and_are_listed():
    listing = (ROOT / "bench" / "results" / "README.md").read_text()
    for name, _note in results_table.RUNS:
        assert (results_table.RESULTS / name).is_file(), name
        assert f"`{name.removesuffix('.json')}." in listing, name


def test_results_table_headed_by_each_runs_device():
    # each column group is named by its run's "device" field, never typed
    head = results_table.table().splitlines()[0]
    for name, _note in results_table.RUNS:
        device = results_table.load(name)["fork"]["device"]
        label = results_table.device_label(device)
        assert f" {label} fork | {label} upstream | upstream / fork |" in head
    assert results_table.device_label(
        "NVIDIA H100 80GB HBM3 (NVIDIA CUDA)") == "H100"
    assert results_table.device_label(
        "pthread-skylake-avx512-AMD EPYC (Portable Computing Language)") == "PoCL"


def test_results_listing_names_every_file():
    # bench/results/README.md names each file kept there, and only those
    listing = (ROOT / "bench" / "results" / "README.md").read_text()
    for path in (ROOT / "bench" / "results").iterdir():
        if path.name != "README.md":
            stem = path.name.split(".")[0]
            assert f"`{stem}." in listing or f"`{path.name}`" in listing, path


def test_results_table_write(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("a\n<!-- results -->\nold\n<!-- /results -->\nb\n")
    results_table.write(readme)
    assert readme.read_text() == ("a\n<!-- results -->\n"
                                  + results_table.table()
                                  + "<!-- /results -->\nb\n")


README_PYTHON = re.findall(r"^```python\n(.*?)^```$",
                           (ROOT / "README.md").read_text(),
                           flags=re.MULTILINE | re.DOTALL)


def test_readme_snippets_run(tmp_path):
    # the README's Python blocks run on the fork: the #830 loop (with its
    # program) warns once; the kept kernel after the same program, and the
    # loop after the filter, run with warnings as errors; so does the loop
    # with the command line's filter by message
    assert len(README_PYTHON) == 3, README_PYTHON
    before, after, silence = README_PYTHON
    setup = before[:before.index("for _ in")]
    # each loop waits for its launches: a process that exits while PoCL's
    # worker still compiles a kernel can crash in LLVM at exit (2026.1.4 as
    # well; the fork's loop is fast enough to end before the compile does)
    for loop in [before, after]:
        assert loop.rstrip().endswith("queue.finish()"), loop

    def run(code: str, *opts: str) -> subprocess.CompletedProcess:
        script = tmp_path / "snippet.py"
        script.write_text(code)
        return subprocess.run([sys.executable, *opts, str(script)],
                              stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, check=False,
                              env={k: v for k, v in os.environ.items()
                                   if k != "PYTHONWARNINGS"})

    proc = run(before)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("RepeatedKernelRetrievalWarning") == 1, proc.stderr
    for code in [setup + after, silence + before]:
        proc = run(code, "-W", "error")
        assert proc.returncode == 0, proc.stderr
    opt = re.search(r'`python -W "([^"]*)" app\.py`',
                    (ROOT / "README.md").read_text())
    assert opt is not None
    proc = run(before, "-W", "error", "-W", opt.group(1))
    assert proc.returncode == 0, proc.stderr

# }}}


# {{{ the CHANGELOG

def test_changelog_versions_name_date_and_commit():
    # each version's heading gives its date and the commit that set its
    # version in meson.build, so that a version maps to a commit without
    # git log; where this clone has the commit, its meson.build agrees
    text = (ROOT / "CHANGELOG.md").read_text()
    heads = re.findall(r"^## (\S+) \((\d{4}-\d\d-\d\d), commit ([0-9a-f]{7,40})\)$",
                       text, flags=re.MULTILINE)
    versions = re.findall(r"^## (\d\S*)", text, flags=re.MULTILINE)
    assert [v for v, _, _ in heads] == versions
    for section in text.split("\n## ")[1:]:
        if section.startswith(tuple("0123456789")):
            body = section.split("\n", 1)[1].lstrip()
            assert body.startswith("**For users:**"), section[:80]
    if shutil.which("git") is None:
        return
    for version, date, commit in heads:
        proc = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{commit}:meson.build"],
            capture_output=True, text=True, check=False)
        if proc.returncode:
            continue  # a shallow clone
        # version: '...', or the base label that tools/version.py extends
        assert f"'{version}'" in proc.stdout, (version, commit)
        day = subprocess.run(
            ["git", "-C", str(ROOT), "log", "-1", "--format=%cs", commit],
            capture_output=True, text=True, check=True).stdout.strip()
        assert day == date, (version, commit, day)

# }}}
