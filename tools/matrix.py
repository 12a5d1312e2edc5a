#!/usr/bin/env python3
"""The fork on every CPython 3.10-3.13 this machine has.

usage: bash bootstrap.sh matrix [--list] [3.X ...] [-- PYTEST_ARGS]

For each CPython 3.10-3.13 found (or only the versions named), make the
virtual environment .venv-py3X (kept between runs), build and install the fork
with its dev extra into it with pip, then run the launch and retrieval
tests of the patched tree (test_wrapper.py) and test/test_fork_conformance.py
if it exists, with RepeatedKernelRetrievalWarning as an error.  At the end a
table: Python version, build, tests, result; the exit status is 1 if a version
that was found failed (or none was found).  Logs go to matrix-out/.

The builds share the patched tree subprojects/pyopencl-VERSION/, which a build
re-makes when the patch series changed (tools/upstream.py).  One after another
they reuse it; but a version during whose build or tests the series changed in
this checkout (an edit or a commit, while someone may be building) is marked
"series changed" and failed: run the matrix again.

Interpreters are looked for in pyenv's versions (`pyenv root`, $PYENV_ROOT,
~/.pyenv), newest patch release first, then as python3.X on PATH; each must
run and say it is CPython 3.X.  --list only says what was found.

bootstrap.sh does the building and testing; this script finds the
interpreters and writes the table:

  matrix.py list [3.X ...]     what was found, for people
  matrix.py find [3.X ...]     VERSION TAB FULL_VERSION TAB PYTHON, one a line
                               (the last two empty when not found); on stderr
                               what list says
  matrix.py series             the digest of the pin and the patch series
  matrix.py report RESULTS     the table from bootstrap.sh's results file
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


SUPPORTED = ("3.10", "3.11", "3.12", "3.13")

_PROBE = ("import sys; print(sys.implementation.name, "
          "'.'.join(map(str, sys.version_info[:3])))")


@dataclass(frozen=True)
class Found:
    version: str             # "3.12"
    full_version: str = ""   # "3.12.1"; empty when not found
    python: str = ""         # the interpreter; empty when not found


class UsageError(Exception):
    pass


# {{{ finding interpreters

def parse_versions(args: list[str]) -> list[str]:
    if not args:
        return list(SUPPORTED)
    versions = []
    for a in args:
        if a not in SUPPORTED:
            raise UsageError(f"{a!r} is not one of the supported Python "
                             f"versions {', '.join(SUPPORTED)}")
        if a not in versions:
            versions.append(a)
    return versions


def pyenv_roots() -> list[Path]:
    roots = []
    pyenv = shutil.which("pyenv")
    if pyenv:
        proc = subprocess.run([pyenv, "root"], capture_output=True, text=True,
                              check=False, timeout=30)
        if proc.returncode == 0 and proc.stdout.strip():
            roots.append(Path(proc.stdout.strip()))
    if os.environ.get("PYENV_ROOT"):
        roots.append(Path(os.environ["PYENV_ROOT"]))
    roots.append(Path.home() / ".pyenv")
    result = []
    for r in roots:
        if (r / "versions").is_dir() and r.resolve() not in {
                x.resolve() for x in result}:
            result.append(r)
    return result


def candidates(version: str) -> list[Path]:
    """Interpreters that may be CPython VERSION, the likeliest first."""
    name = f"python{version}"
    found: list[Path] = []
    # pyenv's, newest patch release first; only plain releases (no 3.13t,
    # no -dev, no conda or pypy)
    for root in pyenv_roots():
        releases = []
        for d in (root / "versions").iterdir():
            m = re.fullmatch(re.escape(version) + r"\.(\d+)", d.name)
            if m and (d / "bin" / name).exists():
                releases.append((int(m.group(1)), d / "bin" / name))
        found += [p for _, p in sorted(releases, reverse=True)]
    # then python3.X on PATH, in PATH's order (pyenv's shims run only the
    # version pyenv has selected; the probe drops the others)
    for d in os.environ.get("PATH", "").split(os.pathsep):
        p = Path(d or ".") / name
        if p.is_file() and os.access(p, os.X_OK):
            found.append(p)
    return found


def probe(python: Path) -> tuple[str, str] | None:
    """(implementation, X.Y.Z) of the interpreter, or None if it does not run."""
    try:
        proc = subprocess.run([str(python), "-c", _PROBE], capture_output=True,
                              text=True, check=False, timeout=60,
                              stdin=subprocess.DEVNULL)
    except OSError:
        return None
    if proc.returncode != 0 or len(proc.stdout.split()) != 2:
        return None
    impl, full = proc.stdout.split()
    return impl, full


def find(version: str) -> Found:
    for python in candidates(version):
        got = probe(python)
        if got is None:
            continue
        impl, full = got
        if impl == "cpython" and full.rsplit(".", 1)[0] == version:
            return Found(version, full, str(python))
    return Found(version)


def where_looked() -> str:
    roots = [str(r / "versions") for r in pyenv_roots()]
    return ", ".join([*roots, "PATH"]) if roots else "PATH (no pyenv)"


def series() -> str:
    """The digest of the pin and the patch series (shortened), which the
    stale-tree guard of tools/upstream.py compares."""
    from upstream import FetchError, read_pin, series_stamp
    try:
        return series_stamp(read_pin())[:12]
    except (FetchError, OSError) as e:   # the build will say more
        print(f"error: no patch series: {e}", file=sys.stderr)
        return "none"

# }}}


# {{{ the table

_SUMMARY = re.compile(r"^=+ (.*\bin [\d.]+s.*) =+$")
_COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|"
                    r"deselected|warnings?)\b")


def pytest_counts(log: str) -> dict[str, int] | None:
    """The counts of pytest's last summary line (`== 3 passed in 1.2s ==`)."""
    counts = None
    for line in log.splitlines():
        m = _SUMMARY.match(line.strip())
        if m:
            counts = {}
            for n, what in _COUNT.findall(m.group(1)):
                what = {"error": "errors", "warning": "warnings"}.get(what, what)
                counts[what] = counts.get(what, 0) + int(n)
    return counts


@dataclass(frozen=True)
class Row:
    python: str
    build: str
    tests: str
    result: str
    series: tuple[str, ...] = ()   # the patch series before and after


def result_row(line: str) -> Row:
    """One line of bootstrap.sh's results file, as a row of the table.

    Its tab-separated fields: VERSION FULL_VERSION PYTHON BUILD_STATUS SECONDS
    TESTS_STATUS TESTS_LOG SERIES, empty where they do not apply (not found,
    no build); SERIES is the series digest before the build and after the
    tests, separated by a space.
    """
    version, full, python, build_rc, seconds, tests_rc, log_path, series = (
        [*line.rstrip("\n").split("\t"), *[""] * 8][:8])
    if not python:
        return Row(version, "-", "-", "not found")
    label = full or version
    before, _, after = series.partition(" ")
    changed = before != after
    stamps = (before, after) if changed else (before,)
    build = f"{'ok' if build_rc == '0' else 'FAIL'} {seconds} s"
    if build_rc != "0":
        return Row(label, build, "not run",
                   "FAIL (series changed)" if changed else "FAIL", stamps)
    try:
        counts = pytest_counts(Path(log_path).read_text(errors="replace"))
    except OSError:
        counts = None
    if counts is None:
        tests = f"no pytest summary (exit status {tests_rc or '?'})"
    else:
        tests = ", ".join(f"{counts.get(k, 0)} {k}"
                          for k in ("passed", "failed", "skipped"))
        if counts.get("errors"):
            tests += f", {counts['errors']} errors"
    ok = tests_rc == "0" and counts is not None and counts.get("passed", 0) > 0
    result = "ok" if ok and not changed else "FAIL"
    return Row(label, build, tests,
               result + (" (series changed)" if changed else ""), stamps)


def format_table(rows: list[Row]) -> str:
    cells = [(r.python, r.build, r.tests, r.result)
             for r in [Row("Python", "build", "tests", "result"), *rows]]
    widths = [max(len(c[i]) for c in cells) for i in range(4)]

    def line(row: tuple[str, ...]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in
                                 zip(row, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(cells[0]), rule, *map(line, cells[1:])])


def report(results: Path) -> int:
    rows = [result_row(line) for line in results.read_text().splitlines()
            if line.strip()]
    print(format_table(rows))
    found = [r for r in rows if r.result != "not found"]
    missing = [r.python for r in rows if r.result == "not found"]
    if missing:
        print(f"not found: Python {', '.join(missing)} "
              f"(looked in {where_looked()})")
    if not found:
        print("error: no CPython of the versions asked for was found",
              file=sys.stderr)
        return 1
    series = {s for r in found for s in r.series}
    if len(series) == 1:
        print(f"built from patch series {series.pop()} (tools/matrix.py series)")
    else:
        print("the patch series changed during the run: " + ", ".join(
            f"{r.python} {' -> '.join(r.series)}" for r in found))
    if any("series changed" in r.result for r in found):
        print("the patch series changed (in this checkout) while a version was "
              "built or tested: run the matrix again", file=sys.stderr)
    failed = [r.python for r in found if r.result != "ok"]
    if failed:
        print(f"FAILED: Python {', '.join(failed)}; logs in "
              f"{results.parent}/", file=sys.stderr)
        return 1
    return 0

# }}}


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if args else 2
    action, rest = args[0], args[1:]
    try:
        if action in ("find", "list"):
            for f in map(find, parse_versions(rest)):
                said = (f"Python {f.version}: "
                        + (f"{f.python} ({f.full_version})" if f.python
                           else f"not found (looked in {where_looked()})"))
                if action == "list":
                    print(said)
                else:
                    print(said, file=sys.stderr)
                    print(f"{f.version}\t{f.full_version}\t{f.python}")
        elif action == "series":
            print(series())
        elif action == "report":
            if len(rest) != 1:
                raise UsageError("report takes the results file")
            return report(Path(rest[0]))
        else:
            raise UsageError(f"unknown action {action!r}")
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
