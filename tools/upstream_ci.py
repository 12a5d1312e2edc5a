#!/usr/bin/env python3
"""Upstream PyOpenCL's CI jobs (its .github/workflows/ci.yml), run here on
the patched tree of the current series.

    python3 tools/upstream_ci.py [--jobs ruff,typos,...] [--list] [--dry-run]

Each job runs on the fork: the series unpacked by tools/series.py into
build/upstream-ci/tree, the fork built from this checkout (pip install of the
repository) into .venv-ci, each job's tools from PyPI. Beside it, the
"upstream" column: the lint jobs on the pristine sdist (the tree's
``upstream`` tag), the test jobs and the downstream suites (loopy, boxtree,
meshmode) with upstream's released wheel in .venv-ci-upstream. One table,
also written as JSON (build/upstream-ci/results.json). A job that cannot run
here says why and how to provide what it lacks: "not run", never a pass.
Exit status 1 if a job fails on the fork, else 0.

A downstream checkout (--boxtree PATH, ...) lists in its requirements.txt
the projects that upstream's CI installs from git; give checkouts of them
with --git-dep NAME=PATH (repeatable; installed with the project), else
they come from PyPI, which can be too old for the checkout. A suite that
fails at collection on both columns did not run: "not run" on both, with
that hint, never a result.

Two released clients, pyclesperanto-prototype 0.24.6 (its tests from a
checkout, --pyclesperanto PATH: its sdist has none) and silx 3.1.3
(silx.opencl's tests), run the same way and are compared per test: the
same outcome and the same warnings (category and count) on both columns,
or the difference, which fails the job; a test failing on both is listed.

Where this differs from upstream's CI, by necessity: no conda (Debian's PoCL
and ICD loader; pip for the rest); the lint jobs report what the series adds
over the pristine sdist (upstream lints its git main, not the release; its
basedpyright baseline is not in the sdist, so the pristine tree's own
findings are the baseline); the docs build offline (doc/conf.py downloads
inducer/sphinxconfig: give a local copy with --sphinxconfig; intersphinx off)
and is compared with the pristine docs built against upstream's wheel;
pytest runs with -n 2 (two cores), not -n 4.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import upstream  # noqa: E402


WORK = ROOT / "build" / "upstream-ci"
FORK_VENV = ROOT / ".venv-ci"
UPSTREAM_VENV = ROOT / ".venv-ci-upstream"
PIP = ["-m", "pip", "--disable-pip-version-check", "--no-input"]
PYTEST = ["-m", "pytest", "-p", "no:cacheprovider", "--durations=10",
          "--tb=native", "-rxsw"]
WARNING_FORK = "pyopencl.RepeatedKernelRetrievalWarning"
WARNING_UPSTREAM = "pyopencl.RepeatedKernelRetrieval"   # its name upstream
DOWNSTREAM = ("loopy", "boxtree", "meshmode")
# loopy's tests on two cores in a few minutes; --loopy-tests all: every file
DEFAULT_LOOPY_TESTS = ("test/test_target.py test/test_c_execution.py "
                       "test/test_reduction.py")
# loopy 2025.2 (its newest PyPI release) uses isl.Aff.is_equal, which
# islpy 2026.x no longer has: every kernel fails, on either PyOpenCL
PYPI_CONSTRAINTS = {"loopy": {"2025.2": ["islpy<2026"]}}
EXTRAS = {"loopy": "[pyopencl,fortran]", "boxtree": "", "meshmode": ""}


class NotAvailable(Exception):
    """A job's tool or source is missing; the message says how to provide it."""


# {{{ results and the table

@dataclass
class Result:
    status: str                      # pass, fail, not run
    detail: str = ""
    counts: dict[str, int] | None = None
    seconds: float = 0.0
    log: str | None = None
    collection_errors: list[str] = field(default_factory=list)

    def cell(self) -> str:
        s = self.status
        if self.counts is not None:
            c = self.counts
            s += f" {c['passed']}p/{c['failed'] + c['errors']}f/{c['skipped']}s"
        return s


@dataclass
class Row:
    job: str
    fork: Result
    upstream: Result | None = None
    versions: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    comparison: dict | None = None   # per test (the released clients' jobs)


def table(rows: list[Row]) -> str:
    head = ("job", "fork", "upstream", "time")
    body = [(r.job, r.fork.cell(), r.upstream.cell() if r.upstream else "-",
             f"{r.fork.seconds:.0f}s"
             + (f" / {r.upstream.seconds:.0f}s" if r.upstream else ""))
            for r in rows]
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(x, widths, strict=True)).rstrip()
             for x in [head, *body]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append("counts: passed/failed(+errors)/skipped; upstream: the "
                 "pristine sdist (lint jobs) or upstream's released wheel")
    for r in rows:
        for side, res in (("fork", r.fork), ("upstream", r.upstream)):
            if res and res.detail:
                lines.append(f"{r.job} [{side}]: {res.detail}")
        lines += [f"{r.job}: {n}" for n in r.notes]
        if r.versions:
            lines.append(f"{r.job} versions: " + ", ".join(
                f"{k}={v}" for k, v in sorted(r.versions.items())))
    return "\n".join(lines)

# }}}


# {{{ commands, virtual environments

def run(cmd, log: Path, cwd: Path = ROOT, env: dict | None = None,
        timeout: float | None = None) -> int:
    """Run *cmd*, appending its output to *log*; its exit status (124 on
    timeout)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as f:
        f.write(f"\n$ (cd {cwd}; {' '.join(map(str, cmd))})\n")
        f.flush()
        try:
            return subprocess.run([str(c) for c in cmd], cwd=cwd, stdout=f,
                                  stderr=subprocess.STDOUT, env=env,
                                  stdin=subprocess.DEVNULL, check=False,
                                  timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            f.write(f"\n*** timed out after {timeout} s\n")
            return 124


def extract(tf: tarfile.TarFile, dest: Path) -> None:
    if hasattr(tarfile, "data_filter"):   # Python >= 3.11.4
        tf.extractall(dest, filter="data")
    else:
        tf.extractall(dest)


def output(cmd, cwd: Path = ROOT) -> str:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          stdin=subprocess.DEVNULL, check=False).stdout


class Venv:
    """A virtual environment of this tool's; pyopencl in it is pinned by a
    constraint file, so that no job's install replaces it."""

    def __init__(self, path: Path, label: str) -> None:
        self.path, self.label = path, label
        self.python = path / "bin" / "python"
        self.constraints = WORK / f"constraints-{label}.txt"
        self.installed: set[str] = set()

    def create(self, pyopencl_spec: list[str], log: Path) -> None:
        if not self.python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(self.path)],
                           check=True)
        if run([self.python, *PIP, "install", "-q", *pyopencl_spec], log):
            raise NotAvailable(f"installing {' '.join(pyopencl_spec)} into "
                               f"{self.path} failed (see {log})")
        version = self.versions("pyopencl")["pyopencl"]
        self.constraints.write_text(f"pyopencl=={version}\n")

    def need(self, log: Path, *pkgs: str, extra: list[str] = ()) -> None:
        todo = [p for p in pkgs if p not in self.installed]
        if not todo:
            return
        if run([self.python, *PIP, "install", "-q", "-c", self.constraints,
                *extra, *todo], log):
            raise NotAvailable(f"pip could not install {' '.join(todo)} into "
                               f"{self.path} (see {log}); install them there "
                               "from PyPI")
        self.installed.update(todo)

    def versions(self, *dists: str) -> dict[str, str]:
        code = ("import sys, importlib.metadata as m\n"
                "for d in sys.argv[1:]:\n"
                "    try: print(d, m.version(d))\n"
                "    except m.PackageNotFoundError: pass\n")
        out = output([self.python, "-c", code, *dists])
        return dict(line.split(" ", 1) for line in out.splitlines())

    def bin(self, name: str) -> Path:
        return self.path / "bin" / name

# }}}


# {{{ context: the trees and the venvs, made on first use

def series_stamp() -> str:
    """A hash of the pin and the series as this checkout has them now."""
    h = hashlib.sha256()
    pin = upstream.read_pin()
    for f in [upstream.WRAP, *pin.series]:
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:12]


class Context:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.work: Path = args.workdir
        self.logs = self.work / "logs"
        self.pin = upstream.read_pin()
        self.stamp = series_stamp()
        self._tree: Path | None = None
        self._fork: Venv | None = None
        self._upstream: Venv | None = None

    def log(self, job: str, side: str) -> Path:
        path = self.logs / f"{job}-{side}.log"
        if path.exists():
            path.unlink()
        return path

    def tree(self) -> Path:
        """The patched tree (tag ``upstream``: the pristine sdist)."""
        if self._tree is None:
            tree = self.work / "tree"
            if tree.exists():
                shutil.rmtree(tree)   # ours, with the last run's outputs
            log = self.logs / "setup.log"
            if run([sys.executable, ROOT / "tools" / "series.py", "unpack",
                    tree], log):
                raise NotAvailable(f"tools/series.py unpack failed (see {log})")
            pristine = self.work / "pristine"
            if pristine.exists():
                shutil.rmtree(pristine)
            pristine.mkdir(parents=True)
            archive = self.work / "pristine.tar"
            subprocess.run(["git", "-C", tree, "archive", "-o", archive,
                            "upstream"], check=True)
            with tarfile.open(archive) as tf:
                extract(tf, pristine)
            archive.unlink()
            self._tree = tree
        return self._tree

    def pristine(self) -> Path:
        self.tree()
        return self.work / "pristine"

    def fork(self) -> Venv:
        if self._fork is None:
            venv = Venv(FORK_VENV, "fork")
            print(f"building and installing the fork into {venv.path} "
                  "(about a minute)", file=sys.stderr)
            venv.create([str(ROOT)], self.logs / "setup-fork.log")
            self._fork = venv
        return self._fork

    def upstream(self) -> Venv:
        if self._upstream is None:
            venv = Venv(UPSTREAM_VENV, "upstream")
            venv.create(["--only-binary", "pyopencl",
                         f"pyopencl=={self.pin.version}"],
                        self.logs / "setup-upstream.log")
            self._upstream = venv
        return self._upstream

    def series(self) -> str:
        tree = self.tree()
        return output(["git", "-C", tree, "log", "--format=%h %s",
                       "upstream..HEAD"])

# }}}


# {{{ pytest

def junit_counts(xml: Path) -> dict[str, int] | None:
    if not xml.exists():
        return None
    c = Counter()
    for suite in ET.parse(xml).getroot().iter("testsuite"):
        for k in ("tests", "failures", "errors", "skipped"):
            c[k] += int(suite.get(k, 0))
    return {"passed": c["tests"] - c["failures"] - c["errors"] - c["skipped"],
            "failed": c["failures"], "errors": c["errors"],
            "skipped": c["skipped"]}


def collection_errors(xml: Path) -> list[str]:
    """Each test module that pytest could not collect, with the last line
    of its error (the exception)."""
    if not xml.exists():
        return []
    found = []
    for tc in ET.parse(xml).getroot().iter("testcase"):
        err = tc.find("error")
        if err is not None and err.get("message") == "collection failure":
            lines = [ln.strip() for ln in (err.text or "").splitlines()
                     if ln.strip()]
            found.append(f"{tc.get('name')}: "
                         + re.sub(r"^E\s+", "", lines[-1] if lines else "?"))
    return found


def failed_tests(xml: Path, limit: int = 8) -> list[str]:
    if not xml.exists():
        return []
    names = [f"{tc.get('classname')}::{tc.get('name')}"
             for tc in ET.parse(xml).getroot().iter("testcase")
             if tc.find("failure") is not None or tc.find("error") is not None]
    return names[:limit] + ([f"... {len(names) - limit} more"]
                            if len(names) > limit else [])


def pytest(venv: Venv, cwd: Path, targets: list[str], log: Path,
           extra: list[str] = (), env: dict | None = None) -> Result:
    xml = log.with_suffix(".xml")
    if xml.exists():
        xml.unlink()
    t = time.monotonic()
    rc = run([venv.python, *PYTEST, f"--junitxml={xml}", *extra, *targets],
             log, cwd=cwd, env=env)
    counts = junit_counts(xml)
    failed = failed_tests(xml)
    status = "pass" if rc == 0 else "fail"
    detail = f"pytest exit status {rc}" if rc else ""
    if failed:
        detail += "; failed: " + ", ".join(failed)
    return Result(status, detail.strip("; "), counts,
                  time.monotonic() - t, str(log), collection_errors(xml))

# }}}


# {{{ lint jobs: fork = patched tree, upstream = pristine sdist

def compare(new: Counter, old: Counter, what: str, show) -> tuple[str, str]:
    added = new - old
    if not added:
        return "pass", (f"nothing new over the pristine tree ({sum(old.values())} "
                        f"{what} there too)" if old else "")
    return "fail", f"{sum(added.values())} new {what}: " + "; ".join(
        show(k) for k in sorted(added))


def job_ruff(ctx: Context) -> Row:
    venv, log = ctx.fork(), ctx.log("ruff", "fork")
    venv.need(log, "ruff")
    found = {}
    t = time.monotonic()
    for side, tree in (("fork", ctx.tree()), ("upstream", ctx.pristine())):
        out = output([venv.bin("ruff"), "check", "--output-format", "json",
                      "--exit-zero"], cwd=tree)
        try:
            found[side] = json.loads(out)
        except json.JSONDecodeError as e:
            raise NotAvailable(f"ruff gave no JSON in {tree}") from e
    key = lambda d: (os.path.basename(d["filename"]), d["code"], d["message"])  # noqa: E731
    places = {key(d): f"{os.path.relpath(d['filename'], ctx.tree())}:"
              f"{d['location']['row']}" for d in found["fork"]}
    fork_c = Counter(key(d) for d in found["fork"])
    up_c = Counter(key(d) for d in found["upstream"])
    status, detail = compare(fork_c, up_c, "findings",
                             lambda k: f"{places[k]} {k[1]} {k[2]}")
    seconds = time.monotonic() - t
    return Row("ruff", Result(status, detail, seconds=seconds, log=str(log)),
               Result("pass" if not up_c else "fail",
                      f"{sum(up_c.values())} findings" if up_c else ""),
               venv.versions("ruff"))


def typos_json(exe: Path, target: Path, config: Path | None = None) -> list[dict]:
    # "." from within: upstream's extend-exclude globs are relative
    cmd = [exe, "--format", "json", *(["--config", config] if config else []),
           "."]
    return [d for d in map(json.loads, output(cmd, cwd=target).splitlines())
            if d.get("type") == "typo"]


def job_typos(ctx: Context) -> Row:
    venv, log = ctx.fork(), ctx.log("typos", "fork")
    venv.need(log, "typos")
    tree, pristine, exe = ctx.tree(), ctx.pristine(), venv.bin("typos")
    t = time.monotonic()
    fork, up = typos_json(exe, tree), typos_json(exe, pristine)
    key = lambda d: (os.path.normpath(d["path"]), d["typo"])  # noqa: E731
    places = {key(d): f"{key(d)[0]}:{d['line_num']}" for d in fork}
    status, detail = compare(Counter(map(key, fork)), Counter(map(key, up)),
                             "typos", lambda k: f"{places[k]} {k[1]!r}")
    # the series' commit messages, one file each, with upstream's configuration
    msgs = ctx.work / "commit-messages"
    shutil.rmtree(msgs, ignore_errors=True)
    msgs.mkdir(parents=True)
    commits = output(["git", "-C", tree, "rev-list", "--reverse",
                      "upstream..HEAD"]).split()
    for i, c in enumerate(commits, 1):
        (msgs / f"{i:04d}.txt").write_text(
            output(["git", "-C", tree, "show", "-s", "--format=%B", c]))
    in_msgs = typos_json(exe, msgs, tree / "pyproject.toml")
    if in_msgs:
        status = "fail"
        names = {f"{i:04d}": p.name for i, p in
                 enumerate(ctx.pin.series, 1)}
        detail = (detail + "; " if detail else "") + "in commit messages: " + \
            "; ".join(f"{names.get(Path(d['path']).stem, d['path'])} message "
                      f"line {d['line_num']} {d['typo']!r}" for d in in_msgs)
    return Row("typos", Result(status, detail, seconds=time.monotonic() - t,
                               log=str(log)),
               Result("pass" if not up else "fail",
                      f"{len(up)} typos" if up else ""),
               venv.versions("typos"))


def job_basedpyright(ctx: Context) -> Row:
    venv, log = ctx.fork(), ctx.log("basedpyright", "fork")
    venv.need(log, "basedpyright", "pytest")
    exe, t = venv.bin("basedpyright"), time.monotonic()
    baseline = ctx.work / "basedpyright-baseline.json"
    if baseline.exists():
        baseline.unlink()
    # upstream's CI: basedpyright at upstream's baseline; the sdist has none,
    # so the pristine tree's own findings are the baseline
    run([exe, "--pythonpath", venv.python, "--writebaseline",
         "--baselinefile", baseline], log, cwd=ctx.pristine())
    if not baseline.exists():
        raise NotAvailable(f"basedpyright wrote no baseline (see {log})")
    n_base = sum(len(v) for v in json.loads(baseline.read_text())
                 .get("files", {}).values())
    out = output([exe, "--pythonpath", venv.python, "--outputjson",
                  "--baselinefile", baseline], cwd=ctx.tree())
    try:
        report = json.loads(out)
    except json.JSONDecodeError as e:
        raise NotAvailable(f"basedpyright gave no JSON (see {log})") from e
    diags = report["generalDiagnostics"]
    errors = [d for d in diags if d["severity"] == "error"]
    warnings = [d for d in diags if d["severity"] == "warning"]
    show = lambda d: (f"{os.path.relpath(d['file'], ctx.tree())}:"  # noqa: E731
                      f"{d['range']['start']['line'] + 1} {d.get('rule', '')} "
                      f"{d['message'].splitlines()[0]}")
    detail = (f"over the pristine baseline: {len(errors)} errors, "
              f"{len(warnings)} warnings")
    if errors or warnings:
        detail += ": " + "; ".join(map(show, (errors + warnings)[:25]))
    return Row("basedpyright",
               Result("fail" if errors else "pass", detail,
                      seconds=time.monotonic() - t, log=str(log)),
               Result("pass", f"{n_base} findings in the pristine tree, "
                      "taken as the baseline"),
               venv.versions("basedpyright"))

# }}}


# {{{ upstream's test suite, docs, examples

def pytest_targets(tree: Path) -> list[str]:
    """As ci-support's test_py_project: test/ and doc/*.rst without
    no-doctest (run from test/)."""
    rst = [f"../doc/{p.name}" for p in sorted((tree / "doc").glob("*.rst"))
           if "no-doctest" not in p.read_text()]
    return [".", *rst]


def job_pytest(ctx: Context) -> Row:
    row = Row("pytest", Result("not run"))
    sides = [("fork", ctx.tree(), ctx.fork)]
    if ctx.args.upstream_pytest:
        sides.append(("upstream", ctx.pristine(), ctx.upstream))
    for side, tree, make_venv in sides:
        venv = make_venv()
        log = ctx.log("pytest", side)
        venv.need(log, "pytest", "pytest-xdist", "mako")
        res = pytest(venv, tree / "test", pytest_targets(tree), log,
                     ["-n", str(ctx.args.workers), "--doctest-modules"])
        setattr(row, side, res)
        row.versions.update({f"{k} ({side})": v for k, v in
                             venv.versions("pyopencl", "pytest").items()})
    return row


SPHINX_DRIVER = r"""
import sys, urllib.request
srcdir, outdir, warnfile, sphinxconfig = sys.argv[1:5]
def urlopen(url, *args, **kwargs):
    url = getattr(url, "full_url", url)
    if url.endswith("/sphinxconfig.py"):
        return open(sphinxconfig, "rb")
    raise OSError(f"offline: {url}")
urllib.request.urlopen = urlopen
from sphinx.application import Sphinx
from sphinx.util.console import nocolor
nocolor()
with open(warnfile, "w") as warn:
    app = Sphinx(srcdir, srcdir, outdir, outdir + "/.doctrees", "html",
                 confoverrides={"intersphinx_mapping": {}, "nitpicky": True},
                 warning=warn, freshenv=True, keep_going=True)
    app.build()
sys.exit(app.statuscode)
"""


def doc_warnings(path: Path, tree: Path) -> Counter:
    text = path.read_text().replace(str(tree) + "/", "")
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    text = re.sub(r"\S*/site-packages/", "", text)   # each venv's
    return Counter(re.sub(r":\d+:", ":", line) for line in text.splitlines()
                   if "WARNING" in line or "ERROR" in line)


def need_sphinxconfig(args: argparse.Namespace) -> Path:
    conf = args.sphinxconfig
    if conf is None or not conf.is_file():
        raise NotAvailable(
            "doc/conf.py downloads inducer/sphinxconfig's sphinxconfig.py at "
            "build time and this machine may reach only PyPI: pass "
            "--sphinxconfig PATH to a copy of sphinxconfig.py "
            "(from a checkout of inducer/sphinxconfig)")
    return conf


def job_docs(ctx: Context) -> Row:
    conf = need_sphinxconfig(ctx.args)
    row, warns = Row("docs", Result("not run")), {}
    for side, tree, venv in (("fork", ctx.tree(), ctx.fork()),
                             ("upstream", ctx.pristine(), ctx.upstream())):
        log, t = ctx.log("docs", side), time.monotonic()
        # ci-support's build_docs; its Makefile makes constants.inc first
        venv.need(log, "furo", "sphinx-copybutton", "sphinx>=4.0.2")
        with open(tree / "doc" / "constants.inc", "w") as f:
            subprocess.run([venv.python, "make_constants.py"], cwd=tree / "doc",
                           stdout=f, check=False)
        out, wfile = ctx.work / f"docs-{side}", ctx.work / f"docs-{side}.warnings"
        shutil.rmtree(out, ignore_errors=True)
        rc = run([venv.python, "-c", SPHINX_DRIVER, tree / "doc", out, wfile,
                  conf.resolve()], log, cwd=tree / "doc")
        warns[side] = doc_warnings(wfile, tree) if wfile.exists() else Counter()
        n = sum(warns[side].values())
        setattr(row, side, Result(
            "pass" if rc == 0 else "fail",
            f"sphinx exit status {rc}, {n} warnings (-n, intersphinx off)",
            seconds=time.monotonic() - t, log=str(log)))
        row.versions.update({f"{k} ({side})": v for k, v in venv.versions(
            "sphinx", "furo", "sphinx-copybutton").items()})
    status, detail = compare(warns["fork"], warns["upstream"], "warnings",
                             str)
    if row.fork.status == "pass":
        row.fork.status = status
    row.fork.detail += "; " + (detail or "no warnings")
    row.notes.append("upstream's CI builds with -W: any warning fails it")
    return row


def job_examples(ctx: Context) -> Row:
    row = Row("examples", Result("not run"))
    for side, tree, venv in (("fork", ctx.tree(), ctx.fork()),
                             ("upstream", ctx.pristine(), ctx.upstream())):
        log, t = ctx.log("examples", side), time.monotonic()
        venv.need(log, "pillow", "cgen", "mako", "imageio")
        ex = tree / "examples"
        for gl in ex.glob("gl_*"):   # as upstream's CI: rm -f gl_*
            gl.unlink()
        ok, bad, took = [], [], {}
        for script in sorted(ex.rglob("*.py")):   # run_examples --no-require-main
            t1 = time.monotonic()
            rc = run([venv.python, script.name], log, cwd=script.parent,
                     timeout=ctx.args.example_timeout)
            took[script.name] = time.monotonic() - t1
            (ok if rc == 0 else bad).append(
                script.name + ("" if rc == 0 else f" (exit status {rc})"))
        slow = sorted(took, key=took.get, reverse=True)[:3]
        detail = "; ".join(
            [*(["failed: " + ", ".join(bad)] if bad else []),
             "slowest: " + ", ".join(f"{n} {took[n]:.0f}s" for n in slow)])
        setattr(row, side, Result(
            "fail" if bad else "pass", detail,
            {"passed": len(ok), "failed": len(bad), "errors": 0, "skipped": 0},
            time.monotonic() - t, str(log)))
    return row

# }}}


# {{{ downstream suites: loopy, boxtree, meshmode

def git_deps(source: Path) -> list[str]:
    """The projects that *source*'s requirements.txt installs from git, as
    upstream's CI does (ci-support installs requirements.txt), in its order;
    not PyOpenCL, which is the fork or upstream's wheel here."""
    req = source / "requirements.txt"
    if not req.is_file():
        return []
    names = []
    for line in req.read_text().splitlines():
        m = re.search(r"(?:^|\s)(?:([\w.-]+)\s*@\s*)?git\+(\S+)", line)
        if not m or line.lstrip().startswith("#"):
            continue
        url = m.group(2)
        egg = re.search(r"[#&]egg=([\w.-]+)", url)
        last = url.split("#")[0].rstrip("/").rsplit("/", 1)[-1]
        name = (m.group(1) or (egg.group(1) if egg else "")
                or re.sub(r"(\.git)?(@.*)?$", "", last)).lower()
        if name not in {"pyopencl", *names}:
            names.append(name)
    return names


def dep_checkouts(args: argparse.Namespace) -> dict[str, Path]:
    """--git-dep NAME=PATH, each PATH a checkout (a Python project)."""
    found = {}
    for spec in args.git_dep:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise NotAvailable(f"--git-dep {spec}: give NAME=PATH")
        path = Path(path).resolve()
        if not ((path / "pyproject.toml").is_file()
                or (path / "setup.py").is_file()):
            raise NotAvailable(f"--git-dep {spec}: {path} is not a checkout "
                               "of a Python project (no pyproject.toml or "
                               "setup.py)")
        found[name.lower()] = path
    return found


def collection_not_run(project: str, row: Row, from_pypi: list[str]) -> bool:
    """Both columns failed at collection: the suite did not run, whatever
    PyOpenCL it had (commonly a dependency from PyPI that is older than the
    checkout needs). Makes both "not run" with the hint; True if so."""
    sides = [row.fork, row.upstream]
    if not all(r is not None and r.collection_errors for r in sides):
        return False
    hint = (f"pass --git-dep NAME=PATH with checkouts of {project}'s git "
            f"dependencies (its requirements.txt; from PyPI here: "
            f"{', '.join(from_pypi)})" if from_pypi else
            f"check the versions of {project}'s dependencies")
    for res in sides:
        c = res.counts or {}
        res.detail = (
            f"{len(res.collection_errors)} test modules failed at collection "
            f"on both columns, so the suite did not run: {hint}; "
            + "; ".join(res.collection_errors[:3])
            + (f" (besides: {c.get('passed', 0)} passed, "
               f"{c.get('failed', 0) + c.get('errors', 0) - len(res.collection_errors)}"
               f" failed)" if c else ""))
        res.status, res.counts = "not run", None
    return True


def resolve_source(args: argparse.Namespace, project: str) -> tuple[str, Path | None]:
    """Where *project*'s source comes from: ("checkout", path) or ("pypi",
    None) for loopy; NotAvailable with the hint otherwise."""
    path = getattr(args, project)
    if path is not None:
        if not (path / "test").is_dir():
            raise NotAvailable(f"{path} is not a checkout of inducer/{project} "
                               "(no test/ directory)")
        return "checkout", path.resolve()
    if project == "loopy":
        return "pypi", None
    raise NotAvailable(f"pass --{project} PATH to a checkout of "
                       f"inducer/{project} (its PyPI releases are years old)")


def fetch_sdist(ctx: Context, project: str) -> tuple[Path, str]:
    """The newest PyPI sdist of *project*, unpacked; and its version."""
    dest = ctx.work / "sdists"
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    log = ctx.logs / f"{project}-source.log"
    if run([ctx.fork().python, *PIP, "download", "-q", "--no-deps",
            "--no-binary", ":all:", "-d", dest, project], log):
        raise NotAvailable(f"pip download {project} failed (see {log}); pass "
                           f"--{project} PATH to a checkout")
    (sdist,) = dest.glob(f"{project}-*.tar.gz")
    with tarfile.open(sdist) as tf:
        extract(tf, dest)
    version = sdist.name[len(project) + 1:-len(".tar.gz")]
    return dest / f"{project}-{version}", version


def tripped(log: Path) -> list[str]:
    """Where a run with the retrieval warning as an error tripped on it."""
    text = log.read_text(errors="replace") if log.exists() else ""
    hits = re.findall(r"^.*RepeatedKernelRetrieval\w*: .*$", text, re.MULTILINE)
    return sorted({h.strip() for h in hits})[:10]


def warning_kinds(log: Path) -> dict[str, int]:
    text = log.read_text(errors="replace") if log.exists() else ""
    part = text.split("warnings summary", 1)[-1] if "warnings summary" in text else ""
    return dict(Counter(re.findall(r"^\s+\S+:\d+: (\w+Warning):", part,
                                   re.MULTILINE)))


def job_downstream(ctx: Context, project: str) -> Row:
    kind, path = resolve_source(ctx.args, project)
    row = Row(project, Result("not run"))
    if kind == "pypi":
        path, version = fetch_sdist(ctx, project)
        source = f"PyPI sdist {project}=={version}"
    else:
        version = output(["git", "-C", path, "rev-parse", "--short", "HEAD"]
                         ).strip() or "?"
        source = f"checkout {path} ({version})"
    given = dep_checkouts(ctx.args)
    wanted = git_deps(path)
    deps = [given[n] for n in wanted if n in given]
    from_pypi = [n for n in wanted if n not in given]
    constraints = PYPI_CONSTRAINTS.get(project, {}).get(version, []) \
        if kind == "pypi" else []
    tests = getattr(ctx.args, f"{project}_tests") or (
        DEFAULT_LOOPY_TESTS if project == "loopy" else "all")
    targets = ["."] if tests == "all" else [
        str((path / t).resolve()) for t in tests.split()]
    k = ["-k", ctx.args.k] if ctx.args.k else []
    row.notes.append(f"source: {source}; tests: {tests}"
                     + (f"; -k {ctx.args.k}" if ctx.args.k else "")
                     + (f"; constraints: {' '.join(constraints)}"
                        if constraints else ""))
    if wanted:
        row.notes.append("git dependencies (requirements.txt): " + ", ".join(
            f"{n} ({'checkout ' + str(given[n]) if n in given else 'PyPI'})"
            for n in wanted))
    for side, venv, name in (("fork", ctx.fork(), WARNING_FORK),
                             ("upstream", ctx.upstream(), WARNING_UPSTREAM)):
        log = ctx.log(project, side)
        spec = f"{path}{EXTRAS[project]}"
        for d in [*map(str, deps), spec]:
            venv.installed.discard(d)   # a new copy of the source each run
        venv.need(log, *map(str, deps), spec, "pytest", "pytest-xdist",
                  extra=[x for c in constraints for x in ("-c", _cfile(ctx, c))])
        xdist = ["-n", str(ctx.args.workers)] if ctx.args.workers > 1 else []
        res = pytest(venv, path / "test", targets, log,
                     [*xdist, *k, "-W", f"error::{name}"])
        hits = tripped(Path(res.log))
        if hits:
            row.notes.append(f"[{side}] trips on -W error::{name}: "
                             + " | ".join(hits) + "; run again without it")
            log2 = ctx.log(project, side + "-nowarn")
            res = pytest(venv, path / "test", targets, log2, [*xdist, *k])
        else:
            row.notes.append(f"[{side}] passes -W error::{name} (no "
                             "RepeatedKernelRetrieval warning)")
        kinds = warning_kinds(Path(res.log))
        if kinds:
            row.notes.append(f"[{side}] warnings: " + ", ".join(
                f"{w} x{n}" for w, n in sorted(kinds.items())))
        setattr(row, side, res)
        row.versions.update({f"{d} ({side})": v for d, v in venv.versions(
            "pyopencl", project, "islpy", "pymbolic", "pytools", "genpy",
            "cgen", "codepy", "numpy", "pytest", "arraycontext", "modepy",
            "pytato").items()})
    collection_not_run(project, row, from_pypi)
    return row


def _cfile(ctx: Context, spec: str) -> Path:
    f = ctx.work / f"constraint-{re.sub(r'[^A-Za-z0-9]+', '_', spec)}.txt"
    f.write_text(spec + "\n")
    return f

# }}}


# {{{ released clients: pyclesperanto-prototype, silx (per test, with warnings)

@dataclass
class Client:
    dist: str            # the distribution installed, pinned
    version: str
    extras: tuple[str, ...] = ()
    pyargs: str | None = None   # its tests inside the installed package
    hint: str = ""              # where its tests come from otherwise
    ascent: bool = False        # scipy.datasets.ascent, a stand-in


CLIENTS = {
    "pyclesperanto": Client(
        "pyclesperanto-prototype", "0.24.6",
        hint=("its sdist ships no tests (MANIFEST.in: recursive-exclude "
              "tests *): pass --pyclesperanto PATH to a checkout of "
              "clEsperanto/pyclesperanto_prototype (tag 0.24.6), whose "
              "tests/ run against the release installed from PyPI")),
    # silx's tests (sift's most of all) take their image from
    # scipy.datasets.ascent, which downloads it (pooch, GitHub); without a
    # network, a stand-in image of the same shape and dtype, the same on both
    # columns (scipy is here as scikit-image's requirement; without it those
    # tests skip)
    "silx": Client("silx", "3.1.3", extras=("opencl",), pyargs="silx.opencl",
                   ascent=True),
}
# what the environments have and keep: installed with --no-deps (the
# pyclesperanto-prototype release pins numpy<2), their other requirements
# from the release's metadata
KEPT = {"pyopencl", "numpy"}

# a pytest plugin: each test's outcome and the warnings recorded in it, as
# JSON where $UPSTREAM_CI_RECORD says (the controller writes it, with xdist)
RECORD_PLUGIN = r'''
import json, os, re
from collections import Counter

_tests, _warnings = {}, {}


def ascent_stand_in():
    """In place of scipy.datasets.ascent (a 512x512 uint8 photograph that
    pooch downloads): a fixed image with structure at several scales."""
    import numpy as np
    y, x = np.mgrid[0:512, 0:512].astype(np.float64)
    img = (128 + 50 * np.sin(x / 17.0) * np.cos(y / 23.0)
           + 30 * np.sin((x + 2 * y) / 41.0)
           + 40 * ((x - 300) ** 2 + (y - 200) ** 2 < 60 ** 2)
           - 40 * (abs(x - 120) + abs(y - 380) < 50)
           + np.random.default_rng(1234).normal(0, 4, (512, 512)))
    return np.clip(img, 0, 255).astype(np.uint8)


def pytest_configure(config):
    if os.environ.get("UPSTREAM_CI_ASCENT"):
        try:
            import scipy.datasets
        except ImportError:
            return
        scipy.datasets.ascent = ascent_stand_in
RANK = {"passed": 0, "skipped": 1, "xfailed": 1, "xpassed": 2, "failed": 3,
        "error": 4}


def _key(nodeid):
    # the same test in either venv: no path up to site-packages
    return re.sub(r"^.*?site-packages/", "", nodeid)


def _message(report):
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message.splitlines()[0] if crash.message else ""
    if isinstance(report.longrepr, tuple):       # a skip: (file, line, why)
        return str(report.longrepr[-1])
    lines = [ln for ln in str(report.longrepr or "").splitlines() if ln.strip()]
    return lines[-1].strip() if lines else ""


def _set(nodeid, outcome, message):
    t = _tests.setdefault(_key(nodeid), {"outcome": "passed", "message": ""})
    if RANK[outcome] > RANK[t["outcome"]]:
        t["outcome"], t["message"] = outcome, message[:300]


def pytest_runtest_logreport(report):
    xfail = hasattr(report, "wasxfail")
    if report.failed:
        _set(report.nodeid, "failed" if report.when == "call" else "error",
             _message(report))
    elif report.skipped:
        _set(report.nodeid, "xfailed" if xfail else "skipped", _message(report))
    elif report.when == "call":
        _set(report.nodeid, "xpassed" if xfail else "passed", "")


def pytest_collectreport(report):
    if report.failed:
        _set(report.nodeid or "<collection>", "error", _message(report))


def pytest_warning_recorded(warning_message, when, nodeid, location):
    cat = warning_message.category
    c = _warnings.setdefault(_key(nodeid) or f"<{when}>", Counter())
    c[f"{cat.__module__}.{cat.__qualname__}"] += 1
    first = str(warning_message.message).splitlines()
    _warnings.setdefault("<messages>", {}).setdefault(
        f"{cat.__module__}.{cat.__qualname__}", first[0][:200] if first else "")


def pytest_sessionfinish(session):
    if hasattr(session.config, "workerinput"):   # an xdist worker
        return
    with open(os.environ["UPSTREAM_CI_RECORD"], "w") as f:
        json.dump({"tests": _tests, "warnings": _warnings}, f, indent=1)
'''


def canonical_warning(name: str) -> str:
    """A warning category as both columns name it: the fork's
    RepeatedKernelRetrievalWarning is upstream's RepeatedKernelRetrieval
    (the old name is its alias in the fork)."""
    if name == WARNING_FORK:
        return WARNING_UPSTREAM
    return name


def read_record(path: Path) -> dict:
    """The plugin's record: tests {id: {outcome, message}}, warnings {id:
    Counter of canonical categories}, messages {category: first message}."""
    data = json.loads(path.read_text())
    warns = data.get("warnings", {})
    messages = {canonical_warning(k): v
                for k, v in warns.pop("<messages>", {}).items()}
    return {"tests": data.get("tests", {}),
            "warnings": {t: Counter({canonical_warning(k): n
                                     for k, n in c.items()})
                         for t, c in warns.items()},
            "messages": messages}


def show_warnings(c: Counter) -> str:
    return ", ".join(f"{k} x{n}" for k, n in sorted(c.items())) or "none"


def compare_records(fork: dict, up: dict) -> dict:
    """Per test: the same outcome and the same warnings (category and count)
    on both columns, or the difference. A test failing on both is listed,
    not a difference."""
    differences, both_failed = [], []
    outcomes = Counter()
    bad = {"failed", "error"}
    for t in sorted(set(fork["tests"]) | set(up["tests"])):
        f = fork["tests"].get(t, {"outcome": "not collected", "message": ""})
        u = up["tests"].get(t, {"outcome": "not collected", "message": ""})
        if f["outcome"] != u["outcome"]:
            differences.append(
                f"{t}: fork {f['outcome']}"
                + (f" ({f['message']})" if f["outcome"] in bad else "")
                + f", upstream {u['outcome']}"
                + (f" ({u['message']})" if u["outcome"] in bad else ""))
            continue
        outcomes[f["outcome"]] += 1
        if f["outcome"] in bad:
            both_failed.append(f"{t} ({f['outcome']}: {f['message']})")
    for t in sorted(set(fork["warnings"]) | set(up["warnings"])):
        f = fork["warnings"].get(t, Counter())
        u = up["warnings"].get(t, Counter())
        if f != u:
            differences.append(f"{t}: warnings fork {show_warnings(f)}, "
                               f"upstream {show_warnings(u)}")
    totals = {side: sum((c for c in rec["warnings"].values()), Counter())
              for side, rec in (("fork", fork), ("upstream", up))}
    return {"same": dict(outcomes), "differences": differences,
            "failed_on_both": both_failed,
            "warnings": {k: dict(v) for k, v in totals.items()}}


def report_comparison(row: Row, cmp: dict, limit: int = 12) -> None:
    """The fork's column fails on a difference only; the notes say it."""
    same = cmp["same"]
    n = sum(same.values())
    row.notes.append(
        f"per test: {n} with the same outcome on both ("
        + ", ".join(f"{k} {v}" for k, v in sorted(same.items())) + "), "
        f"{len(cmp['differences'])} differences")
    fails = cmp["failed_on_both"]
    if fails:
        row.notes.append(
            f"failed on both ({len(fails)}, not the fork's): "
            + "; ".join(fails[:limit])
            + (f"; ... {len(fails) - limit} more (results.json)"
               if len(fails) > limit else ""))
    w = cmp["warnings"]
    row.notes.append(
        "warnings (per test, category and count): "
        + ("the same on every test" if not any(
            "warnings" in d for d in cmp["differences"]) else "DIFFER")
        + f"; fork {show_warnings(Counter(w['fork']))}; upstream "
        f"{show_warnings(Counter(w['upstream']))}")
    diffs = cmp["differences"]
    if diffs:
        row.fork.status = "fail"
        row.fork.detail = (f"{len(diffs)} differences from upstream's wheel: "
                           + "; ".join(diffs[:limit])
                           + (f"; ... {len(diffs) - limit} more (results.json)"
                              if len(diffs) > limit else ""))
    else:
        row.fork.status = "pass"
        row.fork.detail = (f"the same outcome and warnings as upstream's "
                           f"wheel on each of {n} tests"
                           + (f" ({len(fails)} fail on both)" if fails else ""))
    row.comparison = cmp


def client_source(args: argparse.Namespace, project: str) -> Path | None:
    """The tests' directory of *project* (None: they are in the installed
    package); NotAvailable with the hint."""
    client = CLIENTS[project]
    if client.pyargs:
        return None
    path = getattr(args, project)
    if path is None:
        raise NotAvailable(f"{client.dist}=={client.version}: {client.hint}")
    if not (path / "tests").is_dir():
        raise NotAvailable(f"{path} is not a checkout of {client.dist} (no "
                           "tests/ directory)")
    return path.resolve() / "tests"


def dist_requirements(venv: Venv, dist: str, extras: tuple[str, ...]) -> list[str]:
    """*dist*'s requirements from its installed metadata, with the wanted
    extras' and without KEPT."""
    code = ("import sys, json, importlib.metadata as m\n"
            "print(json.dumps(m.requires(sys.argv[1]) or []))\n")
    reqs = []
    for r in json.loads(output([venv.python, "-c", code, dist]) or "[]"):
        req, _, marker = (x.strip() for x in r.partition(";"))
        extra = re.search(r"""extra\s*==\s*["']([\w.-]+)["']""", marker)
        if extra:
            if extra.group(1) not in extras:
                continue
            marker = ""
        name = re.match(r"[A-Za-z0-9_.-]+", req).group(0)
        if re.sub(r"[-_.]+", "-", name).lower() in KEPT:
            continue
        reqs.append(req + (f"; {marker}" if marker else ""))
    return reqs


def job_client(ctx: Context, project: str) -> Row:
    client = CLIENTS[project]
    tests = client_source(ctx.args, project)
    row = Row(project, Result("not run"))
    pin = f"{client.dist}=={client.version}"
    selection = getattr(ctx.args, f"{project}_tests", None) or "all"
    if tests is not None:
        # a copy of the checkout's tests/ only: the installed release is
        # what they import
        copy = ctx.work / f"{project}-tests"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(tests, copy)
        cwd = copy
        targets = ["."] if selection == "all" else selection.split()
        source = f"tests/ of {tests.parent}"
    else:
        cwd = ctx.work / f"{project}-run"
        cwd.mkdir(parents=True, exist_ok=True)
        targets = ["--pyargs", client.pyargs]
        source = f"the installed package's {client.pyargs} tests"
    # this checkout's pytest configuration and conftest.py stay out
    (cwd / "pytest.ini").write_text("[pytest]\n")
    k = ["-k", ctx.args.k] if ctx.args.k else []
    row.notes.append(f"{pin} from PyPI (--no-deps; its requirements but "
                     f"{' and '.join(sorted(KEPT))}); tests: {source}"
                     + ("" if selection == "all" else f" {selection}")
                     + ("; scipy.datasets.ascent: a stand-in image (no "
                        "network)" if client.ascent else "")
                     + (f"; -k {ctx.args.k}" if ctx.args.k else ""))
    plugin = ctx.work / "plugin"
    plugin.mkdir(parents=True, exist_ok=True)
    (plugin / "upstream_ci_record.py").write_text(RECORD_PLUGIN)
    records = {}
    for side, venv in (("fork", ctx.fork()), ("upstream", ctx.upstream())):
        log = ctx.log(project, side)
        venv.need(log, pin, extra=["--no-deps"])
        kept = [_cfile(ctx, f"{d}=={v}") for d, v in
                venv.versions(*sorted(KEPT)).items()]
        venv.need(log, *dist_requirements(venv, client.dist, client.extras),
                  "pytest",
                  extra=[x for c in kept for x in ("-c", c)])
        record = log.with_suffix(".record.json")
        if record.exists():
            record.unlink()
        # one process, no binary cache: a program's build warns (a
        # CompilerWarning where the build log is not empty) in the test that
        # builds it first, the same test on both columns
        env = dict(os.environ, PYTHONPATH=str(plugin), PYOPENCL_NO_CACHE="1",
                   UPSTREAM_CI_RECORD=str(record),
                   UPSTREAM_CI_ASCENT="1" if client.ascent else "")
        res = pytest(venv, cwd, targets, log,
                     ["-p", "upstream_ci_record", "-p", "no:xdist",
                      "--continue-on-collection-errors", *k],
                     env=env)
        setattr(row, side, res)
        row.versions.update({f"{d} ({side})": v for d, v in venv.versions(
            "pyopencl", client.dist, "numpy", "pytest").items()})
        if not record.exists():
            res.status = "not run"
            res.detail = f"pytest wrote no record (see {log}); {res.detail}"
            return row
        records[side] = read_record(record)
    if not any(records["fork"]["tests"].values()) and not any(
            records["upstream"]["tests"].values()):
        for res in (row.fork, row.upstream):
            res.status, res.detail = "not run", "no tests collected on either column"
        return row
    report_comparison(row, compare_records(records["fork"],
                                           records["upstream"]))
    # the upstream column: its own run, whose failures are listed above
    row.upstream.status = "pass" if row.upstream.counts and not (
        row.upstream.counts["failed"] + row.upstream.counts["errors"]) else \
        "fail"
    return row

# }}}


JOBS = {
    "ruff": (job_ruff, ("ruff check, upstream's configuration; new findings "
                        "over the pristine sdist")),
    "typos": (job_typos, ("typos (PyPI), upstream's [tool.typos]; what the "
                          "series adds, and its commit messages")),
    "basedpyright": (job_basedpyright, ("basedpyright over a baseline of the "
                                        "pristine tree's findings")),
    "pytest": (job_pytest, ("upstream's test/ and doc/*.rst doctests on PoCL "
                            "beside the pristine tests on upstream's wheel")),
    "docs": (job_docs, ("sphinx build of doc/ (needs --sphinxconfig), "
                        "warnings vs the pristine docs")),
    "examples": (job_examples, ("every examples/*.py but gl_*, as "
                                "run_examples --no-require-main")),
    **{p: ((lambda ctx, p=p: job_downstream(ctx, p)),
           (f"{p}'s test suite, fork vs upstream's wheel"
            + (" (PyPI sdist or --loopy PATH)" if p == "loopy"
               else f" (needs --{p} PATH)")))
       for p in DOWNSTREAM},
    **{p: ((lambda ctx, p=p: job_client(ctx, p)),
           f"{CLIENTS[p].dist}=={CLIENTS[p].version}'s tests per test, "
           "fork vs upstream's wheel"
           + (" (needs --pyclesperanto PATH)" if not CLIENTS[p].pyargs else ""))
       for p in CLIENTS},
}


# {{{ main

def plan(args: argparse.Namespace, name: str) -> str | None:
    """Why job *name* cannot run, without building or downloading anything;
    None if it would run."""
    try:
        if name in DOWNSTREAM:
            resolve_source(args, name)
            dep_checkouts(args)
        elif name in CLIENTS:
            client_source(args, name)
        elif name == "docs":
            need_sphinxconfig(args)
    except NotAvailable as e:
        return str(e)
    return None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="bash bootstrap.sh upstream-ci", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="list the jobs")
    ap.add_argument("--jobs", default=",".join(JOBS),
                    help="comma-separated jobs to run (default: all)")
    ap.add_argument("--dry-run", action="store_true",
                    help="say what would run and what cannot; build nothing")
    ap.add_argument("--json", type=Path, default=None,
                    help="where to write the results (default: "
                    "build/upstream-ci/results.json)")
    ap.add_argument("--workdir", type=Path, default=WORK, help=argparse.SUPPRESS)
    for p in DOWNSTREAM:
        ap.add_argument(f"--{p}", type=Path, metavar="PATH",
                        help=f"a checkout of inducer/{p}")
        ap.add_argument(f"--{p}-tests", metavar="'FILE ...'",
                        help="test files relative to the source, or 'all'"
                        + (f" (default: {DEFAULT_LOOPY_TESTS})"
                           if p == "loopy" else " (default: all)"))
    ap.add_argument("--pyclesperanto", type=Path, metavar="PATH",
                    help="a checkout of clEsperanto/pyclesperanto_prototype "
                    "(its tests/: the release's sdist has none)")
    ap.add_argument("--pyclesperanto-tests", metavar="'FILE ...'",
                    help="test files relative to its tests/, or 'all' "
                    "(default: all)")
    ap.add_argument("--git-dep", action="append", default=[],
                    metavar="NAME=PATH",
                    help="a checkout of a git dependency of the downstream "
                    "projects (one that a checkout's requirements.txt "
                    "installs from git, e.g. arraycontext=../arraycontext), "
                    "installed with each project that lists it; repeatable")
    ap.add_argument("-k", help="pytest -k for the downstream suites "
                    "and the released clients' tests")
    ap.add_argument("--workers", type=int, default=2,
                    help="pytest-xdist workers (default 2; upstream's CI: 4)")
    ap.add_argument("--no-upstream-pytest", dest="upstream_pytest",
                    action="store_false",
                    help="pytest job: the fork only, not also the pristine "
                    "tests on upstream's wheel (half the time)")
    ap.add_argument("--example-timeout", type=float, default=600)
    ap.add_argument("--sphinxconfig", type=Path, metavar="PATH",
                    help="a local copy of inducer/sphinxconfig's "
                    "sphinxconfig.py, for the docs job")
    args = ap.parse_args(argv)
    chosen = [j.strip() for j in args.jobs.split(",") if j.strip()]
    unknown = [j for j in chosen if j not in JOBS]
    if unknown:
        ap.error(f"unknown jobs: {', '.join(unknown)} (--list lists them)")
    # in JOBS' order: the lint jobs see the tree before others write in it
    args.selected = [j for j in JOBS if j in chosen]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        for name, (_, what) in JOBS.items():
            print(f"{name:13} {what}")
        return 0
    rows: list[Row] = []
    if args.dry_run:
        for name in args.selected:
            why = plan(args, name)
            rows.append(Row(name, Result(f"not run: {why}" if why else
                                         "would run")))
        print("\n".join(f"{r.job}\t{r.fork.status}" for r in rows))
        return 0
    ctx, start = Context(args), time.monotonic()
    for name in args.selected:
        print(f"=== {name}", file=sys.stderr)
        t = time.monotonic()
        try:
            row = JOBS[name][0](ctx)
        except NotAvailable as e:
            row = Row(name, Result("not run", str(e)))
        except Exception as e:   # noqa: BLE001 (a broken job is a failed one)
            row = Row(name, Result("fail", f"the job itself failed: {e!r}"))
        row.fork.seconds = row.fork.seconds or time.monotonic() - t
        rows.append(row)
        print(f"    {row.fork.cell()} ({time.monotonic() - t:.0f} s)",
              file=sys.stderr)
    text = table(rows)
    print(text)
    total = time.monotonic() - start
    print(f"total {total:.0f} s")
    stamp = series_stamp()
    if stamp != ctx.stamp:
        print(f"warning: the series changed during the run ({ctx.stamp} -> "
              f"{stamp}): the jobs may have seen different series",
              file=sys.stderr)
    out = args.json or args.workdir / "results.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    info = {"upstream_version": ctx.pin.version,
            "fork_version": ctx._fork.versions("pyopencl").get("pyopencl")
            if ctx._fork else None,
            "series": ctx.series().splitlines() if ctx._tree else [],
            "series_stamp": ctx.stamp,
            "series_changed_during_run": stamp != ctx.stamp,
            "total_seconds": round(total, 1),
            "jobs": [asdict(r) for r in rows]}
    out.write_text(json.dumps(info, indent=2) + "\n")
    print(f"wrote {out}")
    return 1 if any(r.fork.status == "fail" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())

# }}}

# vim: foldmethod=marker
