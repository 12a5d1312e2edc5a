"""The fork's build: pin, patch series, version, install routes.

These run against the fork installed in the current environment and, for the
install routes, build it again from a clone of this repository.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import series  # noqa: E402

import upstream  # noqa: E402


PIN = upstream.read_pin(ROOT)
PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check"]


def run(cmd, **kwargs):
    kwargs.setdefault("text", True)
    kwargs.setdefault("stdout", subprocess.PIPE)
    kwargs.setdefault("stderr", subprocess.STDOUT)
    return subprocess.run([str(c) for c in cmd], check=False, **kwargs)


def copy_repo(dest: Path) -> Path:
    """The files of this checkout that a commit would take (tracked, and
    untracked ones git does not ignore, such as a new patch)."""
    files = run(["git", "ls-files", "-z", "--cached", "--others",
                 "--exclude-standard"], cwd=ROOT).stdout.split("\0")
    for f in filter(None, files):
        if (ROOT / f).exists():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, dest / f)
    return dest


def fork_version(repo: Path = ROOT) -> str:
    """The version a build of *repo* gets: meson.build's base label and the
    commit (tools/version.py)."""
    base = re.search(r"'([^']*\+fork\.\d+)'", (repo / "meson.build").read_text())
    assert base is not None
    return run([sys.executable, repo / "tools" / "version.py", base[1]],
               stderr=None).stdout.strip()


def installed_files(dist: str = "pyopencl") -> set[str]:
    return {str(f) for f in importlib.metadata.files(dist)
            if ".dist-info/" not in str(f) and "__pycache__" not in str(f)
            and not str(f).startswith("..")}


# {{{ pin and series

def test_pin_matches_project_version():
    # the upstream part of the fork's version is the pinned release
    version = importlib.metadata.version("pyopencl")
    assert version.split("+")[0] == PIN.version
    assert PIN.sha256 == (
        "6cb9544a004609061e86873fe36500da6c2101042e9c7b9c3b804a29a12b98bf")


def test_series_applies_without_fuzz():
    proc = run([sys.executable, ROOT / "tools" / "series.py", "check"])
    assert proc.returncode == 0, proc.stdout
    lines = proc.stdout.splitlines()
    # in order: no offset either
    whole = [ln for ln in lines if ln.startswith("ok  ") and "(pull request" not in ln]
    assert not [ln for ln in whole if "offset" in ln]
    assert len(whole) == len(PIN.diff_files) > 0
    # each pull request alone on its base: A, B, C, D, K, L, M, S, R and the
    # fixes J, E and F on the pristine release, P (A's helper) on A, Q (P's
    # how-to links it) on P, T (get_kernel) on Q, H on F, V on C; the
    # fork-only patch in none
    prs = series.read_pull_requests(PIN)
    assert {pr.name: pr.base for pr in prs} == {
        "fork-only": None, "A": "pristine", "P": "A", "Q": "P", "T": "Q",
        "J": "pristine", "B": "pristine", "F": "pristine",
        "E": "pristine", "C": "pristine", "D": "pristine",
        "K": "pristine", "L": "pristine", "M": "pristine", "H": "F",
        "S": "pristine", "R": "pristine", "V": "C"}
    for pr in prs:
        if pr.base is None:
            continue
        applied = [ln for ln in lines
                   if re.search(rf"\(pull request ({pr.name}|\S+, a base of "
                                rf"{pr.name})\)(, with an offset)?$", ln)]
        assert len(applied) == len(series.pr_patches(prs, pr)), pr.name
    assert "pull request A on the pristine release:" in lines
    assert "pull request P on A:" in lines
    assert "pull request Q on P:" in lines
    assert "pull request B on the pristine release:" in lines
    assert "pull request C on the pristine release:" in lines
    assert "pull request D on the pristine release:" in lines


def test_pull_requests_cover_the_series(tmp_path):
    # every patch in exactly one pull request, each a consecutive run
    prs = series.read_pull_requests(PIN)
    names = [p.name for pr in prs for p in pr.patches]
    assert names == [p.name for p in PIN.series]
    assert [p.name[:4] for p in next(pr for pr in prs
                                     if pr.name == "fork-only").patches] == ["0001"]

    # a gap is refused with a message saying so
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "subprojects", repo / "subprojects",
                    ignore=shutil.ignore_patterns("pyopencl-*"))
    ini = repo / "subprojects" / "packagefiles" / series.PR_FILE
    text = ini.read_text()
    ini.write_text(text.replace("patches = 0011\n", "patches = 0012\n"))
    proc = subprocess.run(
        [sys.executable, "-c",
         ("import sys; sys.path.insert(0, sys.argv[1]); import series, upstream; "
          "series.read_pull_requests(upstream.read_pin(upstream.Path(sys.argv[2])))"),
         str(ROOT / "tools"), str(repo)],
        capture_output=True, text=True, check=False)
    assert proc.returncode != 0
    assert "every patch of the series must be in exactly one section" in proc.stderr

    # so are bases that make a cycle (a message, not a RecursionError)
    i = text.index("[Q]")
    ini.write_text(text[:i] + text[i:].replace("base = P", "base = Q", 1))
    proc = subprocess.run(proc.args, capture_output=True, text=True, check=False)
    assert proc.returncode != 0
    assert "the bases make a cycle (Q -> Q)" in proc.stderr, proc.stderr


def test_upstream_md_line_counts_are_generated():
    # the table of line counts in UPSTREAM.md is what the command computes
    # from the patch files now
    text = (ROOT / "UPSTREAM.md").read_text()
    assert series.stats_in(text) == series.stats_table(PIN), (
        "UPSTREAM.md's line counts are stale: run "
        "tools/series.py stats --write UPSTREAM.md")


def test_upstream_md_headings_are_the_pull_request_titles():
    # each pull request's section in UPSTREAM.md is headed by its title in
    # pull-requests.ini, so that the two never name it differently
    text = (ROOT / "UPSTREAM.md").read_text()
    headings = re.findall(r"^## ([A-Z]): (.*)$", text, flags=re.MULTILINE)
    assert headings == [(pr.name, pr.title) for pr in
                        series.read_pull_requests(PIN) if pr.base is not None]


FAKE_PATCH = (
    "From 0 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] x\n\n"
    "- a list in the message\n+ not a line of the diff\n---\n"
    "diff --git a/src/a.cpp b/src/a.cpp\n--- a/src/a.cpp\n"
    "+++ b/src/a.cpp\n@@ -1,2 +1,2 @@\n ctx\n--x;\n+++x;\n+y;\n"
    "diff --git a/test/test_a.py b/test/test_a.py\n--- a/test/test_a.py\n"
    "+++ b/test/test_a.py\n@@ -1,2 +1,3 @@\n-def test_b(x): pass\n"
    "+def test_b(x, y): pass\n+def test_a(): pass\n"
    "diff --git a/test/test_c.py b/test/test_c.py\nnew file mode 100644\n"
    "--- /dev/null\n+++ b/test/test_c.py\n@@ -0,0 +1 @@\n"
    "+def test_c(ctx_factory): pass\n")


def test_tests_fail_takes_the_tests_a_patch_adds(tmp_path):
    # tests-fail: the functions a patch adds (not those it changes), and
    # the patch cut to its test/ files, new ones included
    patch = tmp_path / "0001-x.patch"
    patch.write_text(FAKE_PATCH)
    assert series.added_tests(patch) == {"test/test_a.py": ["test_a"],
                                         "test/test_c.py": ["test_c"]}
    cut = series.test_hunks(patch, tmp_path / "cut.patch").read_text()
    assert cut.startswith("From 0 ") and "src/a.cpp" not in cut
    assert cut.endswith(FAKE_PATCH[FAKE_PATCH.index("diff --git a/test/"):])
    assert series.verdict([("passed", ""), ("skipped", "")], False) == (
        False, "PASSES: needs attention")
    assert series.verdict([("passed", ""), ("failure", "assert 2 == 1")],
                          False) == (
        True, "fails as expected (1 of 2 cases: assert 2 == 1)")
    assert series.verdict([], True)[0] and not series.verdict([], False)[0]


def test_stats_count_hunk_lines_only(tmp_path):
    # not the commit message's lines, not the ---/+++ headers
    patch = tmp_path / "0001-x.patch"
    patch.write_text(FAKE_PATCH)
    assert series.line_counts(patch) == {
        "src/a.cpp": [2, 1], "test/test_a.py": [2, 1], "test/test_c.py": [1, 0]}


def test_every_patch_is_listed_in_order():
    patches = sorted(p.name for p in (PIN.packagefiles / "patches").glob("*.patch"))
    assert [Path(f).name for f in PIN.diff_files] == patches


def test_series_round_trip(tmp_path):
    # unpack -> export reproduces the series byte for byte
    repo = copy_repo(tmp_path / "repo")
    shutil.copy2(PIN.tarball, repo / PIN.tarball.relative_to(ROOT))
    series = repo / "tools" / "series.py"
    tree = tmp_path / "tree"
    assert run([sys.executable, series, "unpack", tree]).returncode == 0
    log = run(["git", "log", "--format=%s", "upstream..HEAD"], cwd=tree).stdout
    assert len(log.splitlines()) == len(PIN.diff_files)
    proc = run([sys.executable, series, "export", tree])
    assert proc.returncode == 0, proc.stdout
    for f in PIN.diff_files:
        assert (repo / "subprojects" / "packagefiles" / f).read_bytes() == (
            PIN.packagefiles / f).read_bytes(), f
    assert (repo / "subprojects" / "pyopencl.wrap").read_text() == (
        ROOT / "subprojects" / "pyopencl.wrap").read_text()

def test_rebase_onto_the_pinned_release_changes_nothing(tmp_path):
    # the scripted rebase procedure, run onto the release already pinned
    repo = copy_repo(tmp_path / "repo")
    shutil.copy2(PIN.tarball, repo / PIN.tarball.relative_to(ROOT))
    proc = run([sys.executable, repo / "tools" / "series.py", "rebase",
                PIN.version, "--sha256", PIN.sha256, tmp_path / "tree"])
    assert proc.returncode == 0, proc.stdout
    assert "re-pinned to" in proc.stdout
    # what comes after resolving a conflict: re-pin and export from the tree
    proc = run([sys.executable, repo / "tools" / "series.py", "rebase",
                PIN.version, "--sha256", PIN.sha256, "--continue",
                tmp_path / "tree"])
    assert proc.returncode == 0, proc.stdout
    for f in ["subprojects/pyopencl.wrap", "meson.build",
              *(f"subprojects/packagefiles/{d}" for d in PIN.diff_files)]:
        assert (repo / f).read_bytes() == (ROOT / f).read_bytes(), f


def test_rebase_refuses_a_wrong_hash(tmp_path):
    repo = copy_repo(tmp_path / "repo")
    shutil.copy2(PIN.tarball, repo / PIN.tarball.relative_to(ROOT))
    proc = run([sys.executable, repo / "tools" / "series.py", "rebase",
                PIN.version, "--sha256", "0" * 64, tmp_path / "tree"])
    assert proc.returncode == 1
    assert "sha256 mismatch" in proc.stdout
    assert (repo / "subprojects" / "pyopencl.wrap").read_bytes() == (
        ROOT / "subprojects" / "pyopencl.wrap").read_bytes()

# }}}


# {{{ fetching: wrong hash, failed download, stale trees

def test_wrong_hash_stops_with_both_hashes(tmp_path):
    repo = copy_repo(tmp_path / "repo")
    bad = repo / PIN.tarball.relative_to(ROOT)
    bad.write_bytes(b"not the release")
    proc = run([sys.executable, repo / "tools" / "upstream.py", "prepare"])
    assert proc.returncode == 1
    assert "sha256 mismatch" in proc.stdout
    assert PIN.sha256 in proc.stdout
    assert upstream.sha256_of(bad) in proc.stdout
    assert "Delete it" in proc.stdout


def test_wrong_hash_installs_nothing(tmp_path):
    repo = copy_repo(tmp_path / "repo")
    (repo / PIN.tarball.relative_to(ROOT)).write_bytes(b"not the release")
    target = tmp_path / "target"
    proc = run([*PIP, "install", "--no-deps", "--target", target, repo])
    assert proc.returncode != 0
    assert "sha256 mismatch" in proc.stdout
    assert not (target / "pyopencl").exists()


def test_failed_download_is_explained(tmp_path):
    repo = copy_repo(tmp_path / "repo")
    env = dict(os.environ, PIP_NO_INDEX="1",
               PIP_FIND_LINKS=str(tmp_path / "nothing-here"),
               PIP_CONFIG_FILE=os.devnull)
    proc = run([sys.executable, repo / "tools" / "upstream.py", "prepare"], env=env)
    assert proc.returncode == 1
    assert f"could not download the pinned upstream sdist pyopencl=={PIN.version}" \
        in proc.stdout
    assert "pip said" in proc.stdout
    # what to do says where pip takes the file from, not a folder of the
    # build's (under pip, a temporary one)
    assert "PIP_FIND_LINKS=" in proc.stdout
    assert str(repo / "subprojects") not in proc.stdout.replace(
        str(repo / "subprojects" / "packagefiles" / "tmp"), "")
    # nothing half-downloaded is left where the next build would look
    assert not (repo / PIN.tarball.relative_to(ROOT)).exists()
    assert not list((repo / "subprojects" / "packagefiles").glob("tmp*"))


@pytest.mark.parametrize("form", ["path", "url"])
def test_sdist_in_find_links_is_taken(tmp_path, form):
    # what the message above says to do, offline: no index, the sdist in
    # a folder of PIP_FIND_LINKS
    repo = copy_repo(tmp_path / "repo")
    links = tmp_path / "links"
    links.mkdir()
    shutil.copy2(upstream.ensure_tarball(PIN), links / PIN.filename)
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_CONFIG_FILE=os.devnull,
               PIP_FIND_LINKS=f"{tmp_path / 'nothing'} "
               + (str(links) if form == "path" else links.as_uri()))
    proc = run([sys.executable, repo / "tools" / "upstream.py", "prepare"], env=env)
    assert proc.returncode == 0, proc.stdout
    assert "upstream sdist from PIP_FIND_LINKS" in proc.stdout
    assert upstream.sha256_of(repo / PIN.tarball.relative_to(ROOT)) == PIN.sha256

    # a wrong file there stops the build as a wrong download does
    (repo / PIN.tarball.relative_to(ROOT)).unlink()
    (links / PIN.filename).write_bytes(b"not the release")
    proc = run([sys.executable, repo / "tools" / "upstream.py", "prepare"], env=env)
    assert proc.returncode == 1
    assert "sha256 mismatch" in proc.stdout
    assert not (repo / PIN.tarball.relative_to(ROOT)).exists()


@pytest.mark.slow
def test_failed_download_under_pip_is_said_once(tmp_path):
    # a git URL offline: the build fails at configure time, and says what
    # to do once
    if run(["git", "rev-parse", "HEAD"], cwd=ROOT).returncode != 0:
        pytest.skip("not a git checkout")
    if not all(importlib.util.find_spec(m) for m in ["mesonpy", "nanobind"]):
        pytest.skip("the build requirements are not installed here")
    clone = tmp_path / "clone"
    assert run(["git", "clone", "-q", ROOT, clone]).returncode == 0
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_CONFIG_FILE=os.devnull,
               PIP_FIND_LINKS=str(tmp_path / "nothing"))
    proc = run([*PIP, "install", "--no-build-isolation", "--no-deps",
                "--target", tmp_path / "target",
                f"git+file://localhost{clone}"], env=env)
    assert proc.returncode != 0
    assert proc.stdout.count("could not download the pinned upstream sdist") == 1, \
        proc.stdout[-3000:]
    assert proc.stdout.count("PIP_FIND_LINKS=") == 1


def test_stale_extracted_tree_is_dropped(tmp_path):
    repo = copy_repo(tmp_path / "repo")
    shutil.copy2(PIN.tarball, repo / PIN.tarball.relative_to(ROOT))
    pin = upstream.read_pin(repo)
    tool = repo / "tools" / "upstream.py"

    pin.extracted.mkdir()
    (pin.extracted / upstream.STAMP_NAME).write_text("an older series\n")
    assert run([sys.executable, tool, "prepare"]).returncode == 0
    assert not pin.extracted.exists()

    pin.extracted.mkdir()
    assert run([sys.executable, tool, "stamp"]).returncode == 0
    assert run([sys.executable, tool, "prepare"]).returncode == 0
    assert pin.extracted.exists()  # current series: kept

    patch = pin.packagefiles / pin.diff_files[0]
    patch.write_text(patch.read_text() + "\n")  # any change to the series
    assert run([sys.executable, tool, "prepare"]).returncode == 0
    assert not pin.extracted.exists()

# }}}


# {{{ version

def test_version_has_local_label():
    import pyopencl as cl
    version = importlib.metadata.version("pyopencl")
    # the commit, where the build had git (tools/version.py)
    assert re.fullmatch(re.escape(PIN.version) + r"\+fork\.\d+(\.g[0-9a-f]{7})?",
                        version)
    assert cl.VERSION_TEXT == version
    assert cl.VERSION == tuple(int(x) for x in PIN.version.split("."))
    assert cl.VERSION_STATUS == ""


def test_version_names_the_commit(tmp_path):
    # tools/version.py: the commit in a checkout; the base without git; an
    # sdist's PKG-INFO; the plain release as it is
    base = "2026.1.4+fork.7"
    tool = ["tools/version.py", base]
    repo = copy_repo(tmp_path / "repo")
    assert run([sys.executable, *tool], cwd=repo).stdout.strip() == base
    assert run(["git", "init", "-q"], cwd=repo).returncode == 0
    assert run(["git", "add", "-A"], cwd=repo).returncode == 0
    proc = run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit",
                "-q", "-m", "t"], cwd=repo)
    assert proc.returncode == 0, proc.stdout
    head = run(["git", "rev-parse", "HEAD"], cwd=repo).stdout.strip()
    assert run([sys.executable, *tool], cwd=repo).stdout.strip() == \
        f"{base}.g{head[:7]}"
    assert run([sys.executable, tool[0], "2026.1.4"],
               cwd=repo).stdout.strip() == "2026.1.4"
    sdist = copy_repo(tmp_path / "sdist")
    (sdist / "PKG-INFO").write_text(f"Metadata-Version: 2.4\nName: pyopencl\n"
                                    f"Version: {base}.gabcdef0\n")
    assert run([sys.executable, *tool], cwd=sdist).stdout.strip() == \
        f"{base}.gabcdef0"
    # a copy inside another repository is no checkout of the fork
    outer = tmp_path / "outer"
    outer.mkdir()
    (outer / "f").write_text("f")
    for cmd in [["init", "-q"], ["add", "f"],
                ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                 "-m", "t"]]:
        assert run(["git", *cmd], cwd=outer).returncode == 0
    inner = copy_repo(outer / "copy")
    assert run([sys.executable, *tool], cwd=inner).stdout.strip() == base


def test_downstream_constraints_accept_the_fork():
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version
    v = Version(importlib.metadata.version("pyopencl"))
    for spec in [">=2026.1", f"=={PIN.version}", "~=2026.1", ">=2024.1,<2027"]:
        assert SpecifierSet(spec).contains(v), spec

# }}}


# {{{ extras and licenses

def _toml(text: str) -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    return tomllib.loads(text)


def _from_pinned_sdist(name: str) -> bytes:
    with tarfile.open(upstream.ensure_tarball(PIN)) as tf:
        member = tf.extractfile(f"{PIN.directory}/{name}")
        assert member is not None
        return member.read()


def test_upstream_extras_as_upstream_declares_them():
    # pip install "pyopencl[pocl]" installs what it installs upstream's way;
    # the fork's own needs have a name upstream does not use
    theirs = _toml(_from_pinned_sdist("pyproject.toml").decode())[
        "project"]["optional-dependencies"]
    ours = _toml((ROOT / "pyproject.toml").read_text())[
        "project"]["optional-dependencies"]
    assert {"pocl", "oclgrind", "test"} <= set(theirs)
    assert {name: ours.get(name) for name in theirs} == theirs
    assert {"dev", "bench"} <= set(ours) - set(theirs)
    # and the installed fork offers them
    provided = importlib.metadata.metadata("pyopencl").get_all("Provides-Extra")
    assert set(theirs) <= set(provided)

# }}}


# {{{ what gets installed

def test_installed_files_equal_upstream_wheel(tmp_path):
    proc = run([*PIP, "download", "--no-deps", "--only-binary", ":all:",
                "--dest", tmp_path, f"pyopencl=={PIN.version}"])
    if proc.returncode != 0:
        pytest.skip("upstream wheel not available for this Python: "
                    + proc.stdout[-300:])
    (wheel,) = tmp_path.glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        theirs = {n for n in zf.namelist()
                  if ".dist-info/" not in n and not n.endswith("/")}
    # upstream's wheel bundles an ICD loader; the fork uses the system's
    bundled = {n for n in theirs if re.match(r"pyopencl/\.libs/libOpenCL", n)}
    assert bundled
    ours = installed_files()
    assert ours == theirs - bundled


def test_metadata_names_the_fork_and_its_license():
    # upstream as author, the fork as maintainer, the license as an SPDX
    # expression (core metadata 2.4, which pip show prints from pip 25.1 on);
    # no URL with a placeholder for a host the fork does not have
    meta = importlib.metadata.metadata("pyopencl")
    assert meta["License-Expression"] == "MIT"
    assert "Andreas Kloeckner" in meta["Author-Email"]
    assert "fork" in meta["Maintainer"]
    for url in meta.get_all("Project-URL") or []:
        assert "HOST" not in url and "OWNER" not in url, url
    text = (ROOT / "pyproject.toml").read_text()
    for label in ["Changelog", "Issues"]:
        assert f'# {label} = "https://HOST/OWNER/REPO' in text, label
    proc = run([*PIP, "show", "pyopencl"])
    from packaging.version import Version
    if Version(importlib.metadata.version("pip")) >= Version("25.1"):
        assert "License-Expression: MIT" in proc.stdout, proc.stdout

# }}}


# {{{ install routes

def _check_target(target: Path) -> None:
    code = ("import pyopencl as cl, sys; "
            "assert cl.__file__.startswith(sys.argv[1]), cl.__file__; "
            "print(cl.VERSION_TEXT, len(cl.get_platforms()))")
    proc = run([sys.executable, "-c", code, target],
               env=dict(os.environ, PYTHONPATH=str(target)), cwd=target)
    assert proc.returncode == 0, proc.stdout
    # clones of this checkout's HEAD
    assert proc.stdout.startswith(fork_version() + " ")


README_GIT_FORMS = re.findall(r'^pip install ("[^"]*git\+file[^"]*"|\S*git\+file\S*)',
                              (ROOT / "README.md").read_text(), flags=re.MULTILINE)


def test_readme_shows_git_forms():
    assert len(README_GIT_FORMS) == 2, README_GIT_FORMS


@pytest.mark.slow
@pytest.mark.parametrize("form", README_GIT_FORMS)
def test_install_from_git_url(tmp_path, form):
    # how downstream projects pin the fork: the README's forms, run by the
    # pip of a fresh virtual environment (not upgraded), as a new user has it
    if run(["git", "rev-parse", "HEAD"], cwd=ROOT).returncode != 0:
        pytest.skip("not a git checkout")
    clone = tmp_path / "clone"
    assert run(["git", "clone", "-q", ROOT, clone]).returncode == 0
    venv = tmp_path / "venv"
    assert run([shutil.which("python3") or sys.executable, "-m", "venv",
                venv]).returncode == 0
    target = tmp_path / "target"
    proc = run([venv / "bin" / "python", "-m", "pip", "install", "-q",
                "--disable-pip-version-check", "--no-deps", "--target", target,
                form.strip('"').replace("/path/to/clone", str(clone))])
    assert proc.returncode == 0, proc.stdout[-3000:]
    _check_target(target)


# {{{ a moved pin, and the pocl extra without system ICDs

def _unshare_works() -> bool:
    return (os.geteuid() == 0 and shutil.which("unshare") is not None
            and Path("/etc/OpenCL/vendors").is_dir()
            and run(["unshare", "-m", "true"]).returncode == 0)


needs_unshare = pytest.mark.skipif(
    not _unshare_works(),
    reason="needs root and unshare -m to hide /etc/OpenCL/vendors")


def run_without_system_icds(python, code: str, cwd: Path):
    """*code* run by *python* as on a machine without system ICDs: an empty
    folder bind-mounted over /etc/OpenCL/vendors in a private mount
    namespace (the loader's own variables unset, as a new user has them)."""
    empty = cwd / "no-vendors"
    empty.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if k not in ("OCL_ICD_VENDORS", "OPENCL_VENDOR_PATH")}
    return run(["unshare", "-m", "sh", "-c",
                'mount --bind "$0" /etc/OpenCL/vendors && exec "$1" -c "$2"',
                empty, python, code], env=env, cwd=cwd)


POCL_CHECK = """
import numpy as np
import pyopencl as cl
(plat,) = cl.get_platforms()
ctx = cl.Context(plat.get_devices())
queue = cl.CommandQueue(ctx)
knl = cl.Program(ctx, "__kernel void twice(__global int *a)"
                 "{ a[get_global_id(0)] *= 2; }").build().get_kernel("twice")
a = np.arange(4, dtype=np.int32)
buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                hostbuf=a)
knl(queue, (4,), None, buf)
cl.enqueue_copy(queue, a, buf)
assert a.tolist() == [0, 2, 4, 6], a
# pip's PoCL, from pocl-binary-distribution in this environment
with open("/proc/self/maps") as maps:
    assert any("/pyopencl/.libs/libpocl" in ln for ln in maps), "not pip's PoCL"
print(plat.version)
"""

NO_PLATFORM_CHECK = """
import pyopencl as cl
try:
    cl.get_platforms()
except cl.LogicError as e:
    print(e)
"""


def check_pocl_extra(python, cwd: Path) -> None:
    """With pocl-binary-distribution installed: PoCL is the platform without
    system ICDs and runs a kernel; without it, upstream's message."""
    proc = run_without_system_icds(python, POCL_CHECK, cwd)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "PoCL" in proc.stdout, proc.stdout
    proc = run([python, "-m", "pip", "uninstall", "-q", "-y",
                "pocl-binary-distribution"])
    assert proc.returncode == 0, proc.stdout[-3000:]
    proc = run_without_system_icds(python, NO_PLATFORM_CHECK, cwd)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert proc.stdout.strip() == \
        "clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR", proc.stdout


README_POCL = re.search(r'"pyopencl\[pocl\] @ git\+[^"]*"',
                        (ROOT / "README.md").read_text())


@pytest.fixture(scope="module")
def moved_pin(tmp_path_factory):
    """A fresh virtual environment into which the README's line installed
    the fork from a clone pinned to one commit, then, with the pocl extra
    as the README says, pinned to the next (an empty commit). Yields the
    environment's python, the second commit and a scratch folder."""
    if run(["git", "rev-parse", "HEAD"], cwd=ROOT).returncode != 0:
        pytest.skip("not a git checkout")
    assert README_POCL, "the README names the pocl extra's install line"
    tmp = tmp_path_factory.mktemp("moved-pin")
    clone = tmp / "clone"
    assert run(["git", "clone", "-q", ROOT, clone]).returncode == 0
    commits = []
    for n in (1, 2):
        proc = run(["git", "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-q", "--allow-empty", "-m", f"pin {n}"],
                   cwd=clone)
        assert proc.returncode == 0, proc.stdout
        commits.append(run(["git", "rev-parse", "HEAD"], cwd=clone).stdout.strip())
    venv = tmp / "venv"
    assert run([shutil.which("python3") or sys.executable, "-m", "venv",
                venv]).returncode == 0
    python = venv / "bin" / "python"
    url = f"git+file://localhost{clone}"
    for line in [f"pyopencl @ {url}@{commits[0]}",
                 f"pyopencl[pocl] @ {url}@{commits[1]}"]:
        proc = run([python, "-m", "pip", "install", "-q",
                    "--disable-pip-version-check", line])
        assert proc.returncode == 0, proc.stdout[-3000:]
    yield python, commits[1], tmp


@pytest.mark.slow
def test_moved_pin_replaces_the_build(moved_pin):
    # each commit's build has a version of its own, so pip replaced the
    # first commit's build by the second's
    python, commit, _ = moved_pin
    code = ("import importlib.metadata as m, json; "
            "d = m.distribution('pyopencl'); "
            "print(d.version, json.loads(d.read_text('direct_url.json'))"
            "['vcs_info']['commit_id'])")
    proc = run([python, "-c", code])
    assert proc.returncode == 0, proc.stdout
    version, installed = proc.stdout.split()
    assert installed == commit
    assert re.fullmatch(re.escape(PIN.version) + r"\+fork\.\d+\.g"
                        + commit[:7], version), version


@needs_unshare
@pytest.mark.slow
def test_pocl_extra_gives_a_device_from_source(moved_pin):
    # the README's line with [pocl] on a machine without system ICDs: pip's
    # PoCL, as upstream's wheel gives it; without the extra, upstream's error
    python, _, tmp = moved_pin
    check_pocl_extra(python, tmp)

# }}}


@pytest.mark.slow
def test_fork_sdist_installs_without_fetching_upstream(tmp_path):
    # meson dist works from a git checkout (it packs the committed files)
    if run(["git", "rev-parse", "HEAD"], cwd=ROOT).returncode != 0:
        pytest.skip("not a git checkout")
    repo = tmp_path / "repo"
    assert run(["git", "clone", "-q", ROOT, repo]).returncode == 0
    shutil.copy2(PIN.tarball, repo / PIN.tarball.relative_to(ROOT))
    proc = run([sys.executable, "-m", "build", "--sdist", "--outdir",
                tmp_path / "dist", repo], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]
    (sdist,) = (tmp_path / "dist").glob("pyopencl-*.tar.gz")
    with tarfile.open(sdist) as tf:
        names = tf.getnames()
    top = names[0].split("/")[0]
    assert f"{top}/subprojects/packagefiles/{PIN.filename}" in names
    assert not any("/subprojects/pyopencl-" in n for n in names)

    # the licenses: the fork's, and upstream's from the pinned sdist
    upstream_license = _from_pinned_sdist("LICENSE")
    with tarfile.open(sdist) as tf:
        assert tf.extractfile(f"{top}/upstream/LICENSE").read() == upstream_license
        assert tf.extractfile(f"{top}/LICENSE").read() == \
            (ROOT / "LICENSE").read_bytes()
        pkg_info = tf.extractfile(f"{top}/PKG-INFO").read().decode()
    assert "License-File: upstream/LICENSE" in pkg_info
    # the commit's version, which a build from the sdist (no git) keeps
    assert f"\nVersion: {fork_version()}\n" in pkg_info

    # a wheel of it carries them in .dist-info/licenses/, as upstream's
    # wheel carries its LICENSE
    proc = run([*PIP, "wheel", "-v", "--no-deps", "-w", tmp_path / "wheels",
                sdist])
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "fetching upstream sdist" not in proc.stdout
    (wheel,) = (tmp_path / "wheels").glob("pyopencl-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        licenses = {n.partition(".dist-info/licenses/")[2]: zf.read(n)
                    for n in zf.namelist() if ".dist-info/licenses/" in n}
        metadata = next(zf.read(n).decode() for n in zf.namelist()
                        if n.endswith(".dist-info/METADATA"))
    assert licenses == {"upstream/LICENSE": upstream_license,
                        "LICENSE": (ROOT / "LICENSE").read_bytes()}
    assert "License-Expression: MIT" in metadata

    target = tmp_path / "target"
    proc = run([*PIP, "install", "--no-deps", "--target", target, wheel])
    assert proc.returncode == 0, proc.stdout[-3000:]
    _check_target(target)

# }}}


# {{{ bootstrap without root

@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root and setpriv to act as another user")
def test_bootstrap_without_root_names_missing_packages():
    # pytest's tmp_path is private to root; another user needs a place
    with tempfile.TemporaryDirectory() as tmp:
        _bootstrap_without_root(Path(tmp))


def _bootstrap_without_root(tmp_path: Path) -> None:
    # a dpkg-query that knows no package: everything is missing
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "dpkg-query").write_text("#!/bin/sh\nexit 1\n")
    (fake_bin / "dpkg-query").chmod(0o755)
    script = tmp_path / "bootstrap.sh"
    shutil.copy2(ROOT / "bootstrap.sh", script)
    tmp_path.chmod(0o755)
    proc = run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                "bash", script, "test"],
               env={"PATH": f"{fake_bin}:/usr/bin:/bin", "HOME": str(tmp_path)})
    assert proc.returncode == 1, proc.stdout
    assert "missing Debian packages:" in proc.stdout
    for pkg in ["opencl-headers", "ocl-icd-opencl-dev", "pocl-opencl-icd",
                "clinfo"]:
        assert pkg in proc.stdout
    assert "apt-get install -y" in proc.stdout
    assert not (tmp_path / ".venv").exists()

# }}}


# {{{ upstream's build switches: Meson options, with upstream's env variables

def _configure(tmp_path, *options, env=None):
    # the venv's own meson (test extra), which sees its nanobind and numpy
    meson = Path(sys.executable).parent / "meson"
    if not meson.exists():
        pytest.skip("meson not installed in this environment")
    repo = tmp_path / "repo"
    if not repo.exists():
        copy_repo(repo)
        shutil.copy2(PIN.tarball, repo / PIN.tarball.relative_to(ROOT))
    build = tmp_path / f"build{len(list(tmp_path.glob('build*')))}"
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("PYOPENCL_", "CL_"))}
    return run([meson, "setup", build, repo,
                "-Dpython.install_env=auto", *options],
               env={**clean, **(env or {})}, cwd=tmp_path)


def _summary(out: str) -> dict[str, str]:
    return dict(re.findall(r"^\s*(trace|enable_gl|use_shipped_ext|"
                           r"pretend_cl_version)\s*:\s*(\S*)\s*$",
                           out, flags=re.MULTILINE))


def test_build_switches_and_their_env_variables(tmp_path):
    proc = _configure(tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert _summary(proc.stdout) == {
        "trace": "false", "enable_gl": "false", "use_shipped_ext": "false",
        "pretend_cl_version": ""}

    # upstream's environment variables are honoured ...
    proc = _configure(tmp_path, env={"PYOPENCL_TRACE": "1",
                                     "PYOPENCL_USE_SHIPPED_EXT": "ON",
                                     "PYOPENCL_PRETEND_CL_VERSION": "1.2"})
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert _summary(proc.stdout) == {
        "trace": "true", "enable_gl": "false", "use_shipped_ext": "true",
        "pretend_cl_version": "1.2"}

    # ... and an explicit option wins over them
    proc = _configure(tmp_path, "-Dpyopencl:trace=disabled",
                      env={"PYOPENCL_TRACE": "1"})
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert _summary(proc.stdout)["trace"] == "false"

    proc = _configure(tmp_path, "-Dpyopencl:pretend_cl_version=12")
    assert proc.returncode != 0
    assert 'pretend_cl_version must look like MAJOR.MINOR, got "12"' in proc.stdout

    proc = _configure(tmp_path, "-Dpyopencl:cl_libname=NoSuchOpenCL")
    assert proc.returncode != 0
    assert "OpenCL headers and ICD loader not found" in proc.stdout
    assert "libNoSuchOpenCL" in proc.stdout

# }}}


# {{{ wheels

WHEEL_CHECK = """
import warnings
import numpy as np
import pyopencl as cl
ctx = cl.create_some_context(interactive=False)
queue = cl.CommandQueue(ctx)
prg = cl.Program(ctx, "__kernel void k(__global int *a) { a[0] = 1; }").build()
buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4)
prg.k(queue, (1,), None, buf)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    prg.k(queue, (1,), None, buf)
a = np.zeros(1, np.int32)
cl.enqueue_copy(queue, a, buf)
assert a[0] == 1
assert [w.category for w in caught] == [cl.RepeatedKernelRetrievalWarning]
print(cl.__file__)
"""


@pytest.fixture(scope="module")
def fork_wheel(tmp_path_factory):
    """bootstrap.sh wheels for this Python, once: its dist folder."""
    if run(["git", "rev-parse", "HEAD"], cwd=ROOT).returncode != 0:
        pytest.skip("not a git checkout (the sdist step packs the commits)")
    ver = "{}.{}".format(*sys.version_info[:2])
    dist = tmp_path_factory.mktemp("wheels") / "dist"
    proc = run(["bash", ROOT / "bootstrap.sh", "wheels", ver], cwd=ROOT,
               env=dict(os.environ, FORK_DIST=str(dist)))
    assert proc.returncode == 0, proc.stdout[-3000:]
    return dist


@pytest.mark.slow
def test_wheel_installs_without_a_compiler(tmp_path, fork_wheel):
    # bootstrap.sh wheels for this Python: a manylinux wheel with the ICD
    # loader bundled, installed from the file alone, with no build tools on
    # PATH, into a fresh environment that has the run requirements
    ver = "{}.{}".format(*sys.version_info[:2])
    dist = fork_wheel
    tag = f"cp{ver.replace('.', '')}"
    (wheel,) = dist.glob(f"pyopencl-*-{tag}-{tag}-manylinux_*_x86_64.whl")
    assert f"pyopencl-{fork_version()}-" in wheel.name
    (sdist,) = dist.glob("pyopencl-*.tar.gz")
    sums = (dist / "SHA256SUMS").read_text()
    assert wheel.name in sums and sdist.name in sums
    with zipfile.ZipFile(wheel) as zf:
        assert [n for n in zf.namelist() if "libOpenCL" in n]
        # auditwheel keeps the licenses (.dist-info/licenses/); the bundled
        # ICD loader's is added, and named in METADATA
        licenses = {n.partition(".dist-info/licenses/")[2]
                    for n in zf.namelist()
                    if ".dist-info/licenses/" in n and not n.endswith("/")}
        assert licenses == {"LICENSE", "upstream/LICENSE", "ocl-icd/copyright"}
        (meta,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        assert "License-File: ocl-icd/copyright" in zf.read(meta).decode()
    show = run([Path(sys.executable).parent / "auditwheel", "show", wheel])
    assert "manylinux_" in show.stdout, show.stdout

    venv = tmp_path / "venv"
    assert run([sys.executable, "-m", "venv", venv]).returncode == 0
    vpip = [venv / "bin" / "python", "-m", "pip", "-q",
            "--disable-pip-version-check", "install"]
    proc = run([*vpip, "numpy", "pytools", "platformdirs", "typing_extensions"])
    assert proc.returncode == 0, proc.stdout[-3000:]
    proc = run([*vpip, "--no-index", "--no-deps", wheel],
               env=dict(os.environ, PATH=str(venv / "bin")))
    assert proc.returncode == 0, proc.stdout[-3000:]
    # PoCL itself links each kernel with the system's ld: the run keeps PATH
    proc = run([venv / "bin" / "python", "-c", WHEEL_CHECK], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert str(venv) in proc.stdout



@needs_unshare
@pytest.mark.slow
def test_wheel_pocl_extra_gives_a_device(tmp_path, fork_wheel):
    # the wheel (its bundled loader is ocl-icd as the system's, which does
    # not look into pyopencl/.libs) with the pocl extra, on a machine without
    # system ICDs: pip's PoCL; without the extra, upstream's error
    (wheel,) = fork_wheel.glob("pyopencl-*.whl")
    venv = tmp_path / "venv"
    assert run([sys.executable, "-m", "venv", venv]).returncode == 0
    python = venv / "bin" / "python"
    proc = run([python, "-m", "pip", "install", "-q",
                "--disable-pip-version-check", f"{wheel}[pocl]"])
    assert proc.returncode == 0, proc.stdout[-3000:]
    check_pocl_extra(python, tmp_path)

# }}}
