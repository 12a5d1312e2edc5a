#!/usr/bin/env python3
"""Edit the patch series as code.

    tools/series.py unpack [DIR]   pinned sdist -> git tree in DIR, series applied
    tools/series.py export [DIR]   commits upstream..HEAD of DIR -> the series
    tools/series.py check [--test] every patch applies to the pristine sdist,
                                   in order, with no fuzz and no offset, and
                                   each pull request of pull-requests.ini
                                   applies alone to its base without fuzz (the pristine
                                   release or another pull request); --test
                                   also builds each pull request on its base
                                   and runs upstream's whole suite (--jobs N:
                                   N pull requests at once; --quick: the test
                                   files the pull request touches and
                                   test_wrapper.py, as bisect's default)
    tools/series.py rebase VERSION --sha256 HASH [DIR]
                                   move the series onto another upstream
                                   release: fetch and verify its sdist,
                                   unpack it into DIR, git am --3way the
                                   series; on success re-pin (wrap file,
                                   meson.build version) and export; after
                                   a conflict, resolve it there and run the
                                   same command with --continue
    .venv/bin/python tools/series.py bisect [--full]
                                   the fork builds and passes tests with
                                   each prefix of the series (patch 1, 1-2,
                                   ...): the series is bisectable. Quick by
                                   default (the test files each patch
                                   touches, plus test_wrapper.py); --full
                                   runs upstream's whole suite each time
    .venv/bin/python tools/series.py tests-fail [--patch NNNN] [--runs N]
                                   each test function a patch adds fails
                                   without that patch's code: for each
                                   patch that adds ``def test_...`` in
                                   test/test_*.py, build the patches
                                   before it plus only its test/ hunks,
                                   run just the functions it adds (every
                                   parametrization; a collection error
                                   counts as failing) and report, in a
                                   table, each that passes there. Exit
                                   status 1 if one does. About a build
                                   per patch; --patch NNNN: that one only;
                                   --runs N: each test N times, failing
                                   in every run (not by chance)
    tools/series.py stats [--write UPSTREAM.md]
                                   raw added and removed lines of the
                                   patch files ('+'/'-' hunk lines), per
                                   pull request and for the series: in
                                   all, tests (test/), the rest, C++
                                   (src/), Python, docs, examples; the
                                   largest patch. --write: into the file,
                                   between <!-- series-stats --> and
                                   <!-- /series-stats --> (a test compares)

DIR defaults to ``series-tree`` (ignored by git). ``unpack`` makes one
commit of the pristine sdist (tagged ``upstream``) and one commit per patch
(``git am``), so editing a patch is editing code: change files, ``git commit
--amend`` or ``git rebase -i upstream``, then ``export``. ``export``
rewrites ``subprojects/packagefiles/patches/`` and the ``diff_files`` line
of ``subprojects/pyopencl.wrap``.
"""

from __future__ import annotations

import argparse
import configparser
import contextlib
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent))
import upstream


PATCH_DIR = "patches"
PR_FILE = "pull-requests.ini"
DEFAULT_TREE = upstream.ROOT / "series-tree"
GIT_ID = ["-c", "user.name=Seed 33c39583",
          "-c", "user.email=seed-33c39583@users.noreply.github.com",
          "-c", "commit.gpgsign=false", "-c", "core.autocrlf=false"]


def git(tree: Path, *args: str, capture: bool = False) -> str:
    proc = subprocess.run(["git", *GIT_ID, *args], cwd=tree, check=True,
                          text=True,
                          stdout=subprocess.PIPE if capture else None)
    return proc.stdout if capture else ""


def extract_pristine(pin: upstream.Pin, dest: Path) -> None:
    """Unpack the verified sdist's top directory as *dest*."""
    tarball = upstream.ensure_tarball(pin)
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(tarball) as tf:
        if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4
            tf.extractall(tmp, filter="data")
        else:
            tf.extractall(tmp)  # the sdist's hash was verified
        (top,) = Path(tmp).iterdir()
        shutil.move(str(top), dest)


def init_tree(pin: upstream.Pin, tree: Path) -> None:
    """A git repository in *tree* holding the pristine sdist, tagged
    ``upstream``, and our Meson build, untracked and ignored there, so that
    the tree builds in place: meson setup _build && ninja -C _build."""
    tree.parent.mkdir(parents=True, exist_ok=True)
    extract_pristine(pin, tree)
    git(tree, "init", "-q", "-b", "series")
    git(tree, "add", "-A", "-f")
    git(tree, "commit", "-q", "-m", f"upstream PyOpenCL {pin.version} sdist")
    git(tree, "tag", "upstream")
    overlay = pin.packagefiles / pin.patch_directory
    with open(tree / ".git" / "info" / "exclude", "a") as exclude:
        exclude.write("/_build/\n")
        for f in sorted(overlay.iterdir()):
            shutil.copy2(f, tree / f.name)
            exclude.write(f"/{f.name}\n")


def unpack(pin: upstream.Pin, tree: Path) -> None:
    if tree.exists():
        dirty = (tree / ".git").exists() and git(
            tree, "status", "--porcelain", capture=True).strip()
        if dirty:
            sys.exit(f"error: {tree} has uncommitted changes; commit and "
                     "export them, or remove the directory")
        shutil.rmtree(tree)
    init_tree(pin, tree)
    if pin.series:
        git(tree, "am", "-q", "--whitespace=nowarn",
            *[str(p) for p in pin.series])
    print(f"{tree}: upstream {pin.version} + {len(pin.series)} patches")


def set_diff_files(pin: upstream.Pin, names: list[str]) -> None:
    wrap = pin.root / "subprojects" / "pyopencl.wrap"
    text = wrap.read_text()
    value = ",".join(f"\n  {n}" for n in names)
    new, n = re.subn(r"^diff_files\s*=.*?(?=^\S|\Z)",
                     f"diff_files ={value}\n", text, flags=re.MULTILINE | re.DOTALL)
    if n != 1:
        sys.exit(f"error: no diff_files line in {wrap}")
    wrap.write_text(new)


def export(pin: upstream.Pin, tree: Path) -> None:
    if git(tree, "status", "--porcelain", capture=True).strip():
        sys.exit(f"error: {tree} has uncommitted changes; commit them first")
    outdir = pin.packagefiles / PATCH_DIR
    with tempfile.TemporaryDirectory() as tmp:
        git(tree, "format-patch", "-q", "--no-signature", "--zero-commit",
            "--no-stat", "-N", "-o", tmp, "upstream..HEAD")
        new = sorted(Path(tmp).glob("*.patch"))
        if outdir.exists():
            shutil.rmtree(outdir)
        outdir.mkdir(parents=True)
        for p in new:
            shutil.copy2(p, outdir / p.name)
    set_diff_files(pin, [f"{PATCH_DIR}/{p.name}" for p in new])
    print(f"exported {len(new)} patches to {outdir}")


def apply_cleanly(tree: Path, patches: list[Path],
                  label: Callable[[Path], str] = lambda p: "",
                  offset: bool = False) -> int:
    """Apply *patches* to *tree* with patch(1), refusing any fuzz, and any
    offset unless *offset*; *label* says what each patch is there for.
    Returns the number of patches that did not apply cleanly."""
    bad = 0
    for p in patches:
        label_p = label(p)
        if not p.exists():
            print(f"MISSING: {p}")
            bad += 1
            continue
        proc = subprocess.run(
            ["patch", "-p1", "--fuzz=0", "--no-backup-if-mismatch",
             "-i", str(p)], cwd=tree, text=True, check=False,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out = proc.stdout
        refused = r"fuzz|FAILED|reject" if offset else r"offset|fuzz|FAILED|reject"
        if proc.returncode or re.search(refused, out):
            print(f"DOES NOT APPLY CLEANLY{label_p}: {p.name}\n{out}")
            bad += 1
        else:
            moved = ", with an offset" if re.search("offset", out) else ""
            print(f"ok  {p.name}{label_p}{moved}")
    return bad


@dataclass
class PullRequest:
    name: str
    title: str
    patches: list[Path]
    base: str | None  # None: fork-only; "pristine" or other pull requests
    # tests that pin a hazard the pull request brings (a cache, a slot): they
    # may pass without its code, as on the release
    pins: frozenset[str] = frozenset()


def read_pull_requests(pin: upstream.Pin) -> list[PullRequest]:
    """The pull requests of pull-requests.ini, each checked to be a
    consecutive run of the series; every patch in exactly one of them."""
    ini = pin.packagefiles / PR_FILE
    cp = configparser.ConfigParser(interpolation=None)
    if not cp.read(ini):
        sys.exit(f"error: {ini} is missing")
    by_number = {p.name[:4]: p for p in pin.series}
    prs, seen = [], []
    for name in cp.sections():
        sec = cp[name]
        first, _, last = sec["patches"].strip().partition("-")
        last = last or first
        numbers = [f"{n:04d}" for n in range(int(first), int(last) + 1)]
        missing = [n for n in numbers if n not in by_number]
        if missing:
            sys.exit(f"error: {ini}: [{name}] names patches that are not in "
                     f"the series: {', '.join(missing)}")
        base = sec.get("base") if name != "fork-only" else None
        for b in (base or "").split():
            if b != "pristine" and b not in cp:
                sys.exit(f"error: {ini}: [{name}] has an unknown base {b!r}")
        prs.append(PullRequest(name, sec.get("title", name),
                               [by_number[n] for n in numbers], base,
                               frozenset(sec.get("pins", "").split())))
        seen += numbers
    unlisted = [n for n in sorted(by_number) if n not in seen]
    twice = sorted({n for n in seen if seen.count(n) > 1})
    if unlisted or twice:
        msg = (f"error: {ini}: every patch of the series must be in exactly "
               "one section.\n")
        if twice:
            msg += f"In more than one section: {', '.join(twice)}: keep each in one.\n"
        if unlisted:
            names = ", ".join(by_number[n].name for n in unlisted)
            # a letter no section has yet, from the end of the alphabet
            free = next((c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBA"
                         if c not in cp), "NEW")
            msg += (
                f"In no section: {names}.\n"
                f"Add it to {PR_FILE}, then run check again: extend the range "
                "of the pull request it belongs to (patches = FIRST-LAST, "
                "consecutive numbers; in series-tree/, git rebase -i upstream "
                "moves a commit next to its pull request's, then export), or "
                "give it a section of its own:\n\n"
                f"[{free}]\ntitle = what it does\npatches = {unlisted[0]}\n"
                "base = pristine\n\n"
                "(base: pristine, or the pull requests it needs, such as F; a "
                "patch never sent upstream goes into [fork-only])")
        sys.exit(msg.rstrip())
    by_name = {pr.name: pr for pr in prs}

    def bases_of(pr: PullRequest, path: tuple[str, ...]) -> None:
        for b in (pr.base or "").split():
            if b == "pristine":
                continue
            if b in (*path, pr.name):
                cycle = " -> ".join((*path, pr.name, b))
                sys.exit(f"error: {ini}: the bases make a cycle ({cycle}): "
                         "a pull request's base must come before it")
            bases_of(by_name[b], (*path, pr.name))

    for pr in prs:
        bases_of(pr, ())
    return prs


def pr_patches(prs: list[PullRequest], pr: PullRequest) -> list[Path]:
    """The patches of *pr* on top of those of its bases (in series order)."""
    by_name = {p.name: p for p in prs}
    patches = set(pr.patches)
    for b in (pr.base or "").split():
        if b != "pristine":
            patches.update(pr_patches(prs, by_name[b]))
    return sorted(patches, key=lambda p: p.name)


def check(pin: upstream.Pin, test: bool = False, jobs: int = 1,
          full: bool = True) -> int:
    """Apply each patch with patch(1) and refuse any fuzz: the whole
    series in order, also without offset, then each pull request alone on
    its base."""
    listed = {pin.packagefiles / f for f in pin.diff_files}
    present = set((pin.packagefiles / PATCH_DIR).glob("*.patch"))
    bad = 0
    for p in sorted(present - listed):
        print(f"NOT LISTED in diff_files: {p.name}")
        bad += 1
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        extract_pristine(pin, tree)
        bad += apply_cleanly(tree, pin.series)

    prs = read_pull_requests(pin)
    owner = {q: o.name for o in prs for q in o.patches}
    for pr in prs:
        if pr.base is None:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            tree = Path(tmp) / "tree"
            extract_pristine(pin, tree)
            on = "the pristine release" if pr.base == "pristine" else pr.base
            print(f"pull request {pr.name} on {on}:")
            # alone, a pull request may land at an offset (as on any
            # branch that moved), never with fuzz
            bad += apply_cleanly(
                tree, pr_patches(prs, pr),
                label=lambda q, pr=pr: (
                    f" (pull request {pr.name})" if q in pr.patches
                    else f" (pull request {owner[q]}, a base of {pr.name})"),
                offset=True)
    if test and not bad:
        # each pull request in a scratch directory of its own: on a machine
        # with many cores, several at once
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(jobs) as pool:
            bad += sum(pool.map(
                lambda pr: build_and_test(
                    pin, pr_patches(prs, pr), full=full,
                    label=f"pull request {pr.name} ({pr.title})",
                    touching=pr.patches),
                [pr for pr in prs if pr.base is not None]))
    return 1 if bad else 0


def rebase(pin: upstream.Pin, tree: Path, version: str, sha256: str,
           resume: bool = False) -> int:
    """Re-apply the series onto another release and re-pin to it."""
    if not re.fullmatch(r"[0-9][0-9a-z.]*", version):
        sys.exit(f"error: {version!r} does not look like a release version")
    new = upstream.Pin(
        root=pin.root, version=version, filename=f"pyopencl-{version}.tar.gz",
        sha256=sha256.lower(), directory=f"pyopencl-{version}",
        patch_directory=pin.patch_directory, diff_files=pin.diff_files)
    upstream.ensure_tarball(new)  # downloads and verifies against --sha256

    if resume:
        if (tree / ".git" / "rebase-apply").exists():
            sys.exit(f"error: git am is still under way in {tree}; finish it "
                     "(git am --continue) first")
    else:
        if tree.exists():
            shutil.rmtree(tree)
        init_tree(new, tree)
        proc = subprocess.run(
            ["git", *GIT_ID, "am", "-q", "--3way", "--whitespace=nowarn",
             *[str(p) for p in pin.series]], cwd=tree, check=False)
        if proc.returncode:
            print(f"\nThe series does not apply cleanly to {version}. In "
                  f"{tree}: resolve the conflict, git add the files and\n"
                  "git am --continue until the series is in; then run the\n"
                  "same command with --continue to re-pin and export.",
                  file=sys.stderr)
            return 1

    # re-pin: the wrap file and the upstream part of the fork's version
    wrap = pin.root / "subprojects" / "pyopencl.wrap"
    text = wrap.read_text()
    for key, value in [("directory", new.directory),
                       ("source_filename", new.filename),
                       ("source_hash", new.sha256)]:
        text = re.sub(rf"^{key}\s*=.*$", f"{key} = {value}", text, flags=re.MULTILINE)
    wrap.write_text(text)
    # a new upstream release starts the fork's revisions anew at 1; the
    # same release keeps its revision
    meson_build = pin.root / "meson.build"
    if version != pin.version:
        meson_build.write_text(re.sub(
            r"'[^']*\+fork\.\d+'", f"'{version}+fork.1'",
            meson_build.read_text()))
    export(upstream.read_pin(pin.root), tree)
    print(f"re-pinned to {version}; build and run the tests next")
    return 0


def need_test_modules() -> None:
    need = ["pytest", "numpy", "pytools", "platformdirs", "mako"]
    missing = [m for m in need if subprocess.run(
        [sys.executable, "-c", f"import {m}"], capture_output=True,
        check=False).returncode]
    if missing:
        sys.exit(f"error: building and testing needs a Python with "
                 f"{', '.join(missing)}; run this with the fork's virtual "
                 "environment: .venv/bin/python tools/series.py ... (make "
                 "one with: python3 -m venv .venv && .venv/bin/pip install "
                 "'.[dev]')")


@dataclass
class Built:
    tmp: Path     # the scratch directory: pytest's rootdir
    target: Path  # the installed fork, for PYTHONPATH
    tree: Path    # the patched tree, whose test/ is upstream's suite

    def pytest(self, *args: str) -> subprocess.CompletedProcess:
        env = dict(os.environ, PYTHONPATH=str(self.target))
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             *args], cwd=self.tmp, env=env, capture_output=True, text=True,
            check=False)


def reuse_compiled(tmp: str) -> list[str]:
    """pip options under which prefixes that share their C++ share its
    compiled objects: where ccache is installed (meson uses it) and this
    Python has the build requirements, build without isolation, so that
    every include path but the scratch directory's (which CCACHE_BASEDIR
    makes relative) stays the same from build to build."""
    have = all(importlib.util.find_spec(m) for m in
               ["mesonpy", "mesonbuild", "nanobind", "numpy"])
    return ["--no-build-isolation"] if have and shutil.which("ccache") else []


@contextlib.contextmanager
def built_fork(pin: upstream.Pin, patches: list[Path], label: str):
    """Build the fork with *patches* in place of the series, in a scratch
    directory. *patches* are files of the series or others (such as a patch
    cut to its test hunks), applied in the order given. Yields a
    :class:`Built`, or None if the build failed (said so on stdout)."""
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        files = subprocess.run(["git", "ls-files", "-z"], cwd=pin.root,
                               check=True, capture_output=True,
                               text=True).stdout.split("\0")
        for f in filter(None, files):
            if (pin.root / f).exists():
                (repo / f).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(pin.root / f, repo / f)
        shutil.copy2(upstream.ensure_tarball(pin),
                     repo / pin.tarball.relative_to(pin.root))
        names = []
        for p in patches:
            if not p.is_relative_to(pin.packagefiles):
                shutil.copy2(p, repo / pin.packagefiles.relative_to(pin.root)
                             / PATCH_DIR / p.name)
                p = pin.packagefiles / PATCH_DIR / p.name
            names.append(str(p.relative_to(pin.packagefiles)))
        set_diff_files(upstream.read_pin(repo), names)
        if pin.series[0] not in patches:
            # without the fork-only patch 0001, upstream's version.py
            # refuses the local label +fork.N: build as the plain release
            meson_build = repo / "meson.build"
            meson_build.write_text(re.sub(
                r"('[^'+]*)\+fork\.\d+'", r"\1'",
                meson_build.read_text()))
        target = Path(tmp) / "target"
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps",
             "--disable-pip-version-check", *reuse_compiled(tmp),
             "--target", str(target), str(repo)],
            capture_output=True, text=True, check=False,
            env={**os.environ, "CCACHE_BASEDIR": tmp,
                 "CCACHE_NOHASHDIR": "true"})
        if proc.returncode:
            print(f"BUILD FAILS: {label}:\n{proc.stdout[-2000:]}"
                  f"{proc.stderr[-2000:]}")
            yield None
        else:
            yield Built(Path(tmp), target, upstream.read_pin(repo).extracted)


def build_and_test(pin: upstream.Pin, patches: list[Path], full: bool,
                   label: str, touching: list[Path] | None = None) -> int:
    """Build the fork with *patches* in place of the series and run the
    tests: upstream's whole suite (full), or the test files that the
    patches *touching* (default: the last) touch plus test_wrapper.py.
    Returns 1 on failure."""
    with built_fork(pin, patches, label) as built:
        if built is None:
            return 1
        tree = built.tree
        if full:
            tests = [str(tree / "test")]
        else:
            touched = [t for q in touching or patches[-1:] for t in re.findall(
                r"^\+\+\+ b/(test/test_\S+\.py)$", q.read_text(),
                flags=re.MULTILINE)]
            tests = sorted({str(tree / t) for t in
                            [*touched, "test/test_wrapper.py"]})
        proc = built.pytest(
            # fails in this environment (test/upstream-known-failures.txt);
            # by name, whatever rootdir pytest picks for the tree
            "-k", "not test_xdg_cache_home",
            *tests)
        last = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
        status = "ok  " if proc.returncode == 0 else "FAIL"
        print(f"{status} {label}: {last}", flush=True)
        if proc.returncode:
            print(proc.stdout[-3000:])
            return 1
        return 0


# {{{ tests-fail: each test a patch adds fails without the patch's code

def diff_sections(patch: Path) -> tuple[str, list[tuple[str, str]]]:
    """*patch* as its head (commit message) and its ``diff --git``
    sections, each with the path it changes."""
    head, *sections = re.split(r"^(?=diff --git )", patch.read_text(),
                               flags=re.MULTILINE)
    return head, [(re.match(r"diff --git a/(\S+)", s).group(1), s)
                  for s in sections]


def added_tests(patch: Path) -> dict[str, list[str]]:
    """The test functions *patch* adds, by test file: the ``def test_``
    lines it adds in test/test_*.py, less those it also removes there
    (a changed signature adds no test)."""
    found: dict[str, list[str]] = {}
    for path, section in diff_sections(patch)[1]:
        if not re.fullmatch(r"test/test_\w+\.py", path):
            continue
        added = re.findall(r"^\+def (test_\w+)", section, flags=re.MULTILINE)
        removed = set(re.findall(r"^-def (test_\w+)", section,
                                 flags=re.MULTILINE))
        new = [n for n in added if n not in removed]
        if new:
            found[path] = new
    return found


def test_hunks(patch: Path, dest: Path) -> Path:
    """*patch* cut to its sections for files under test/, as *dest*."""
    head, sections = diff_sections(patch)
    dest.write_text(head + "".join(s for path, s in sections
                                   if path.startswith("test/")))
    return dest


def junit_outcomes(report: Path) -> dict[str, list[tuple[str, str]]]:
    """Outcome and message of each test case of a pytest junit report, by
    function name (parameters dropped); a collection error is under ""."""
    out: dict[str, list[tuple[str, str]]] = {}
    if not report.exists():
        return out
    for case in ET.parse(report).getroot().iter("testcase"):
        found = [c for c in case if c.tag in {"failure", "error", "skipped"}]
        kind = found[0].tag if found else "passed"
        message = found[0].get("message", "") if found else ""
        name = ("" if message == "collection failure"
                else case.get("name", "").split("[")[0])
        out.setdefault(name, []).append((kind, message))
    return out


def verdict(outcomes: list[tuple[str, str]],
            collection_error: bool) -> tuple[bool, str]:
    """(as expected, what to say) for one added test function run on the
    tree without its patch's code."""
    if collection_error:
        return True, "fails as expected (collection error)"
    if not outcomes:
        return False, "NOT COLLECTED: needs attention"
    failing = [m for k, m in outcomes if k in {"failure", "error"}]
    if failing:
        why = " ".join(failing[0].split())
        why = why[:77] + "..." if len(why) > 80 else why
        return True, (f"fails as expected ({len(failing)} of {len(outcomes)} "
                      f"cases: {why})")
    if all(k == "skipped" for k, _ in outcomes):
        return False, "SKIPPED: needs attention"
    return False, "PASSES: needs attention"


def run_added_test(built: Built, path: str, name: str,
                   runs: int = 1) -> tuple[bool, str]:
    """Run test function *name* of *path* (every parametrization) in a
    pytest process of its own, so that a crash is its own, *runs* times;
    its verdict: as expected only if it failed in every run."""
    results = [run_added_test_once(built, path, name) for _ in range(runs)]
    failed = [text for ok, text in results if ok]
    if len(failed) == runs:
        return True, failed[0] + (f" (in all {runs} runs)" if runs > 1 else "")
    if failed:
        return False, (f"PASSES in {runs - len(failed)} of {runs} runs: "
                       "needs attention")
    return results[0]


def run_added_test_once(built: Built, path: str, name: str) -> tuple[bool, str]:
    report = built.tmp / "junit.xml"
    report.unlink(missing_ok=True)
    proc = built.pytest(f"--junitxml={report}", f"{built.tree / path}::{name}")
    if proc.returncode < 0:
        return True, ("fails as expected (the test process died of "
                      f"{signal.Signals(-proc.returncode).name})")
    outcomes = junit_outcomes(report)
    ok, text = verdict(outcomes.get(name, []), "" in outcomes)
    if not outcomes:
        last = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
        text += f" (pytest exit status {proc.returncode}: {last})"
    return ok, text


def tests_fail(pin: upstream.Pin, only: list[str], runs: int = 1) -> int:
    """For each patch that adds test functions: build the patches before
    it plus that patch's test hunks alone, run the functions it adds, and
    report each that passes there. A patch of tests alone tests the code
    of the patches of its pull request before it: those are left out
    too. A test that its pull request's ``pins`` names pins a hazard the
    pull request brings and may pass there."""
    need_test_modules()
    prs = read_pull_requests(pin)
    rows: list[tuple[str, str, str]] = []
    attention = 0
    for k, patch in enumerate(pin.series):
        tests = added_tests(patch)
        if not tests or (only and patch.name[:4] not in only):
            continue
        pr = next(pr for pr in prs if patch in pr.patches)
        if all(path.startswith("test/") for path, _ in diff_sections(patch)[1]):
            k = pin.series.index(pr.patches[0])
        with tempfile.TemporaryDirectory() as tmp:
            cut = test_hunks(patch, Path(tmp) / patch.name)
            with built_fork(pin, [*pin.series[:k], cut],
                            label=f"{patch.name[:4]} test hunks") as built:
                for path, n in [(f, n) for f, ns in tests.items()
                                for n in ns]:
                    ok, text = (False, "BUILD FAILS") if built is None \
                        else run_added_test(built, path, n, runs)
                    if n in pr.pins and built is not None and not ok \
                            and text.startswith("PASSES"):
                        ok, text = True, "passes, as it may: pins a hazard"
                    rows.append((patch.name[:4], f"{path}::{n}", text))
                    attention += not ok
                    print(f"{patch.name[:4]}  {path}::{n}  {text}", flush=True)
    if not rows:
        print("no patch of the series adds test functions"
              + (f" among {', '.join(only)}" if only else ""))
        return 1 if only else 0
    print("\n| patch | test | without the patch's code |\n| --- | --- | --- |")
    for r in rows:
        print("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
    print(f"\n{len(rows)} added test functions, {attention} need attention")
    return 1 if attention else 0

# }}}


# {{{ stats: line counts of the patch files

STATS_BEGIN, STATS_END = "<!-- series-stats -->", "<!-- /series-stats -->"
# the columns after "all": where a changed file lies; "rest" is all but tests
STATS_PARTS = [("tests `test/`", "test/"), ("rest", ""),
               ("C++ `src/`", "src/"), ("Python `pyopencl/`", "pyopencl/"),
               ("docs `doc/`", "doc/"), ("`examples/`", "examples/")]


def line_counts(patch: Path) -> dict[str, list[int]]:
    """Raw added and removed lines of *patch* (hunk lines starting with
    '+' or '-'; no headers, no commit message), by changed file."""
    counts: dict[str, list[int]] = {}
    for path, section in diff_sections(patch)[1]:
        _, _, hunks = section.partition("\n@@")
        c = counts.setdefault(path, [0, 0])
        for line in hunks.splitlines():
            if line[:1] in "+-" and line:
                c[line[0] == "-"] += 1
    return counts


def stats_table(pin: upstream.Pin) -> str:
    """Per pull request of pull-requests.ini and for the series: added and
    removed lines of the patch files, in all and by part, and the largest
    patch (most changed lines, added plus removed)."""
    per_patch = {p: line_counts(p) for p in pin.series}

    def cells(patches: list[Path]) -> list[str]:
        def sum_(pred) -> list[int]:
            return [sum(c[i] for p in patches
                        for f, c in per_patch[p].items() if pred(f))
                    for i in (0, 1)]
        parts = [sum_(lambda f: True)] + [
            sum_(lambda f, d=d: not f.startswith("test/")) if not d
            else sum_(lambda f, d=d: f.startswith(d)) for _, d in STATS_PARTS]
        changed = {p: sum(map(sum, per_patch[p].values())) for p in patches}
        big = max(patches, key=changed.get)
        return [f"+{a} -{r}" for a, r in parts] + [
            f"{big.name[:4]}: {changed[big]}"]

    prs = read_pull_requests(pin)
    head = ["pull request", "patches", "all",
            *(name for name, _ in STATS_PARTS), "largest patch"]
    rows = [[pr.name, f"{pr.patches[0].name[:4]}-{pr.patches[-1].name[:4]}"
             if len(pr.patches) > 1 else pr.patches[0].name[:4],
             *cells(pr.patches)] for pr in prs]
    rows.append(["series", f"{len(pin.series)}", *cells(pin.series)])
    right = "| --- | --- |" + " ---: |" * (len(head) - 2)
    return "\n".join([
        "| " + " | ".join(head) + " |", right,
        *("| " + " | ".join(r) + " |" for r in rows),
        "", textwrap.fill(
            "Raw lines of the patch files, added and removed (`+` and `-` "
            "lines of the hunks), by where the changed file lies (rest: all "
            "but `test/`); largest patch: most changed lines, added plus "
            "removed. Generated by `tools/series.py stats --write "
            "UPSTREAM.md`; `test/test_fork_build.py` checks it.", 75)])


def stats_in(text: str) -> str | None:
    """The generated table between the markers of *text*, or None."""
    m = re.search(re.escape(STATS_BEGIN) + r"\n(.*?)\n?"
                  + re.escape(STATS_END), text, flags=re.DOTALL)
    return m.group(1).strip() if m else None


def stats(pin: upstream.Pin, write: Path | None) -> int:
    table = stats_table(pin)
    if write is None:
        print(table)
        return 0
    text = write.read_text()
    if stats_in(text) is None:
        sys.exit(f"error: {write} has no {STATS_BEGIN} ... {STATS_END} "
                 "markers to write the table between")
    new = re.sub(re.escape(STATS_BEGIN) + r".*?" + re.escape(STATS_END),
                 lambda _: f"{STATS_BEGIN}\n{table}\n{STATS_END}", text,
                 count=1, flags=re.DOTALL)
    if new != text:
        write.write_text(new)
        print(f"wrote the table into {write}")
    else:
        print(f"{write}: the table is up to date")
    return 0

# }}}


def bisect(pin: upstream.Pin, full: bool) -> int:
    """Build the fork with each prefix of the series and test it."""
    need_test_modules()
    bad = 0
    for k in range(1, len(pin.series) + 1):
        bad += build_and_test(pin, pin.series[:k], full,
                              label=f"after {pin.series[k - 1].name}")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action",
                    choices=["unpack", "export", "check", "rebase", "bisect",
                             "tests-fail", "stats"])
    ap.add_argument("operands", nargs="*", metavar="[VERSION] [DIR]",
                    help="rebase: the release to move onto; unpack, export, "
                    f"rebase: the scratch tree (default {DEFAULT_TREE.name})")
    ap.add_argument("--sha256", help="rebase: the new release's sdist hash")
    ap.add_argument("--continue", dest="resume", action="store_true",
                    help="rebase: re-pin and export after resolving conflicts")
    ap.add_argument("--full", action="store_true",
                    help="bisect: run upstream's whole suite for each prefix")
    ap.add_argument("--write", type=Path, metavar="FILE",
                    help="stats: write the table between the markers "
                    f"{STATS_BEGIN} and {STATS_END} of FILE")
    ap.add_argument("--patch", action="append", default=[], metavar="NNNN",
                    help="tests-fail: this patch only (repeatable)")
    ap.add_argument("--runs", type=int, default=1, metavar="N",
                    help="tests-fail: run each added test N times; it must "
                    "fail in every run (a test that fails by chance, such "
                    "as by a race, passes in some)")
    ap.add_argument("--test", action="store_true",
                    help="check: also build each pull request on its base "
                    "and run upstream's whole suite")
    ap.add_argument("--quick", action="store_true",
                    help="check --test: the test files each pull request "
                    "touches and test_wrapper.py, not the whole suite")
    ap.add_argument("--jobs", type=int, default=1, metavar="N",
                    help="check --test: build and test N pull requests at "
                    "once")
    args = ap.parse_intermixed_args()
    operands = list(args.operands)
    args.version = operands.pop(0) if args.action == "rebase" and operands else None
    if len(operands) > 1 or (operands and args.action in {
            "check", "bisect", "tests-fail", "stats"}):
        ap.error(f"unexpected arguments: {' '.join(operands)}")
    args.tree = Path(operands[0]) if operands else DEFAULT_TREE
    try:
        pin = upstream.read_pin()
        if args.action == "unpack":
            unpack(pin, args.tree.resolve())
        elif args.action == "export":
            export(pin, args.tree.resolve())
        elif args.action == "rebase":
            if not args.version or not args.sha256:
                ap.error("rebase needs VERSION and --sha256 HASH")
            return rebase(pin, args.tree.resolve(), args.version, args.sha256,
                          args.resume)
        elif args.action == "bisect":
            return bisect(pin, args.full)
        elif args.action == "stats":
            return stats(pin, args.write)
        elif args.action == "tests-fail":
            return tests_fail(pin, [n.zfill(4) for n in args.patch],
                              args.runs)
        else:
            if args.test:
                need_test_modules()
            return check(pin, args.test, args.jobs, full=not args.quick)
    except upstream.FetchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
