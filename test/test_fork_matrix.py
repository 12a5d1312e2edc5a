"""`bootstrap.sh matrix`: finding the interpreters, the table, the exit status.

Nothing here builds the fork: the interpreters are stand-ins (scripts that run
this test's Python) in a temporary pyenv root or PATH.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parent.parent
MATRIX = ROOT / "tools" / "matrix.py"
sys.path.insert(0, str(ROOT / "tools"))
import matrix  # noqa: E402


HERE = "{}.{}".format(*sys.version_info[:2])
OTHERS = [v for v in matrix.SUPPORTED if v != HERE]


def run(cmd, env=None, cwd=ROOT):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                          check=False, env=env, cwd=cwd,
                          stdin=subprocess.DEVNULL)


def script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(0o755)
    return path


def stand_in(path: Path) -> Path:
    """An interpreter at PATH that is this test's Python."""
    return script(path, f'exec "{sys.executable}" "$@"\n')


def clean_env(tmp_path: Path, path: list[Path]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYENV_ROOT", "PYENV_VERSION")}
    return {**env, "PATH": os.pathsep.join(map(str, path)),
            "HOME": str(tmp_path / "home")}


def found(stdout: str) -> dict[str, str]:
    rows = [line.split("\t") for line in stdout.splitlines()]
    assert all(len(r) == 3 for r in rows), stdout
    return {v: py for v, _full, py in rows}


needs_supported = pytest.mark.skipif(
    HERE not in matrix.SUPPORTED, reason=f"Python {HERE} is not in the matrix")


def test_help():
    proc = run(["bash", ROOT / "bootstrap.sh", "matrix", "--help"])
    assert proc.returncode == 0, proc.stderr
    assert "usage: bash bootstrap.sh matrix" in proc.stdout
    assert ".venv-py3X" in proc.stdout
    # the script's usage names the subcommand
    proc = run(["bash", ROOT / "bootstrap.sh"])
    assert proc.returncode == 2
    assert "bash bootstrap.sh matrix" in proc.stdout
    assert "set -euo" not in proc.stdout


def test_unsupported_version_stops_before_anything(tmp_path):
    proc = run(["bash", ROOT / "bootstrap.sh", "matrix", "3.9"])
    assert proc.returncode == 2
    assert "'3.9' is not one of the supported Python versions" in proc.stderr
    assert not (ROOT / ".venv-py39").exists()


@needs_supported
def test_finds_pyenv_versions_newest_first(tmp_path):
    bin_ = tmp_path / "bin"
    pyenv_root = tmp_path / "pyenv"
    script(bin_ / "pyenv", f'[ "$1" = root ] && echo "{pyenv_root}"\n')
    name = f"python{HERE}"
    versions = pyenv_root / "versions"
    stand_in(versions / f"{HERE}.1" / "bin" / name)
    stand_in(versions / f"{HERE}.7" / "bin" / name)
    stand_in(versions / f"{HERE}.10t" / "bin" / name)   # free-threaded: not taken
    script(versions / f"{HERE}.12" / "bin" / name, "exit 1\n")   # broken
    # another version's name that runs this Python: not taken for that version
    stand_in(bin_ / f"python{OTHERS[0]}")
    env = clean_env(tmp_path, [bin_])

    proc = run([sys.executable, MATRIX, "find"], env=env)
    assert proc.returncode == 0, proc.stderr
    got = found(proc.stdout)
    assert list(got) == list(matrix.SUPPORTED)
    assert got[HERE] == str(versions / f"{HERE}.7" / "bin" / name)
    for v in OTHERS:
        assert got[v] == ""
        assert f"Python {v}: not found (looked in {versions}, PATH)" in proc.stderr

    proc = run([sys.executable, MATRIX, "list", HERE], env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"Python {HERE}: {versions / f'{HERE}.7'}")


@needs_supported
def test_finds_python_on_path_without_pyenv(tmp_path):
    bin_ = tmp_path / "bin"
    stand_in(bin_ / f"python{HERE}")
    env = clean_env(tmp_path, [bin_])
    proc = run([sys.executable, MATRIX, "find", OTHERS[0], HERE], env=env)
    assert proc.returncode == 0, proc.stderr
    assert found(proc.stdout) == {OTHERS[0]: "", HERE: str(bin_ / f"python{HERE}")}
    assert f"Python {OTHERS[0]}: not found (looked in PATH (no pyenv))" \
        in proc.stderr


def test_pytest_counts():
    log = ("..F\n= 1 failed, 9 passed, 2 skipped, 1 deselected, "
           "3 warnings, 1 error in 1.23s =\n")
    assert matrix.pytest_counts(log) == {
        "failed": 1, "passed": 9, "skipped": 2, "deselected": 1,
        "warnings": 3, "errors": 1}
    assert matrix.pytest_counts("==== 26 passed in 3.33s ====") == {"passed": 26}
    assert matrix.pytest_counts("Traceback ...\n") is None


def test_report(tmp_path):
    ok_log = tmp_path / "ok.log"
    ok_log.write_text("==== 24 passed, 2 skipped in 3.33s ====\n")
    bad_log = tmp_path / "bad.log"
    bad_log.write_text("==== 1 failed, 25 passed in 3.33s ====\n")
    results = tmp_path / "results.tsv"

    def report(*lines: str):
        results.write_text("".join(line + "\n" for line in lines))
        return run([sys.executable, MATRIX, "report", results])

    ok = f"3.12\t3.12.1\t/py3.12\t0\t61\t0\t{ok_log}\tabc abc"
    proc = report("3.10\t\t\t\t\t\t", ok)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split("|")[1:-1] == [
        " Python ", " build   ", " tests                          ", " result    "]
    assert "| 3.10   | -       | -" in lines[2]
    assert lines[2].endswith("| not found |")
    assert lines[3] == ("| 3.12.1 | ok 61 s | 24 passed, 0 failed, 2 skipped "
                        "| ok        |")
    assert "not found: Python 3.10" in proc.stdout
    assert "built from patch series abc" in proc.stdout

    proc = report(ok, "3.11\t3.11.7\t/py3.11\t1\t40\t\t\tabc abc",
                  f"3.13\t3.13.0\t/py3.13\t0\t70\t1\t{bad_log}\tabc abc")
    assert proc.returncode == 1
    assert "| 3.11.7 | FAIL 40 s | not run " in proc.stdout
    assert "| 3.13.0 | ok 70 s   | 25 passed, 1 failed, 0 skipped | FAIL   |" \
        in proc.stdout
    assert "FAILED: Python 3.11.7, 3.13.0" in proc.stderr

    # passed, but the series changed under it: not to be trusted
    proc = report(ok, f"3.13\t3.13.0\t/py3.13\t0\t70\t0\t{ok_log}\tabc def")
    assert proc.returncode == 1
    assert "24 passed, 0 failed, 2 skipped | FAIL (series changed) |" in proc.stdout
    assert "series changed during the run: 3.12.1 abc, 3.13.0 abc -> def" \
        in proc.stdout
    assert "run the matrix again" in proc.stderr

    proc = report("3.10\t\t\t\t\t\t", "3.11\t\t\t\t\t\t")
    assert proc.returncode == 1
    assert "no CPython of the versions asked for was found" in proc.stderr


@needs_supported
def test_bootstrap_matrix_without_building(tmp_path):
    # bootstrap.sh's loop in a copy of the repository: one version that is
    # found but cannot make a virtual environment (a failed build, quickly),
    # the others not found
    repo = tmp_path / "repo"
    for f in ["bootstrap.sh", "tools/matrix.py", "tools/upstream.py"]:
        (repo / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, repo / f)
    shutil.copytree(ROOT / "subprojects", repo / "subprojects",
                    ignore=shutil.ignore_patterns("pyopencl-*"))
    bin_ = tmp_path / "bin"
    for tool in ["sed", "tr", "grep", "id", "dirname", "mkdir", "tee", "cat"]:
        found_tool = shutil.which(tool)
        assert found_tool, tool
        (bin_ / tool).parent.mkdir(parents=True, exist_ok=True)
        (bin_ / tool).symlink_to(found_tool)
    stand_in(bin_ / "python3")
    script(bin_ / "dpkg-query", "echo 'install ok installed'\n")
    script(bin_ / "apt-get", "exit 1\n")
    # answers python -c (the version probe), fails for -m venv
    script(bin_ / f"python{HERE}",
           f'[ "$1" = -c ] && exec "{sys.executable}" "$@"\n'
           'echo "no venv here" >&2; exit 3\n')
    env = clean_env(tmp_path, [bin_])

    proc = run([shutil.which("bash"), repo / "bootstrap.sh", "matrix"],
               env=env, cwd=repo)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "no venv here" in (repo / "matrix-out" / f"py{HERE.replace('.', '')}"
                              "-build.log").read_text()
    table = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
             for line in proc.stdout.splitlines() if line.startswith("| 3.")}
    assert set(table) == set(matrix.SUPPORTED) - {HERE} | {
        ".".join(map(str, sys.version_info[:3]))}
    for v in OTHERS:
        assert table[v] == ["-", "-", "not found"]
    (row,) = (r for k, r in table.items() if k.startswith(HERE + "."))
    assert row[0].startswith("FAIL ") and row[1:] == ["not run", "FAIL"]
    series = run([sys.executable, MATRIX, "series"]).stdout.strip()
    assert f"built from patch series {series}" in proc.stdout
    assert not (repo / f".venv-py{HERE.replace('.', '')}" / "bin" / "python").exists()
