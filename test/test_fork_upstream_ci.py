"""`bootstrap.sh upstream-ci`: the job list, the dry run, missing sources.

Nothing here builds, downloads or runs a job: --list, --dry-run and the
function that resolves a downstream project's source.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "upstream_ci.py"
sys.path.insert(0, str(ROOT / "tools"))
import upstream_ci  # noqa: E402


def run(*args, cwd=ROOT):
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)],
                          capture_output=True, text=True, check=False,
                          cwd=cwd, stdin=subprocess.DEVNULL)


def dry_run(*args) -> dict[str, str]:
    proc = run("--dry-run", *args)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split("\t") for line in proc.stdout.splitlines()]
    assert all(len(r) == 2 for r in rows), proc.stdout
    return dict(rows)


def test_list_matches_the_jobs_run():
    proc = run("--list")
    assert proc.returncode == 0, proc.stderr
    listed = [line.split()[0] for line in proc.stdout.splitlines()]
    # upstream's ci.yml: ruff, typos, basedpyright, pytest (PoCL), docs,
    # examples, the downstream suites of loopy, boxtree and meshmode; then
    # two released clients' own tests
    assert listed == list(upstream_ci.JOBS) == [
        "ruff", "typos", "basedpyright", "pytest", "docs", "examples",
        "loopy", "boxtree", "meshmode", "pyclesperanto", "silx"]
    # a dry run of all jobs has one row per job, in the same order
    assert list(dry_run()) == listed
    assert list(dry_run("--jobs", "typos,loopy")) == ["typos", "loopy"]


def test_unknown_job_is_refused():
    proc = run("--jobs", "ruff,nosuchjob")
    assert proc.returncode == 2
    assert "unknown jobs: nosuchjob" in proc.stderr


def test_missing_checkouts_are_not_run_with_the_hint(tmp_path):
    rows = dry_run()
    for project in ("boxtree", "meshmode"):
        assert rows[project] == (
            f"not run: pass --{project} PATH to a checkout of "
            f"inducer/{project} (its PyPI releases are years old)")
    assert rows["loopy"] == "would run"   # its PyPI sdist ships its tests
    assert rows["silx"] == "would run"    # its tests are in the package
    # pyclesperanto-prototype's sdist has none
    assert rows["pyclesperanto"].startswith(
        "not run: pyclesperanto-prototype==0.24.6: its sdist ships no tests")
    assert "pass --pyclesperanto PATH to a checkout" in rows["pyclesperanto"]
    assert rows["docs"].startswith("not run: doc/conf.py downloads")
    assert "--sphinxconfig PATH" in rows["docs"]
    for job in ("ruff", "typos", "basedpyright", "pytest", "examples"):
        assert rows[job] == "would run"

    # a directory that is no checkout: said so; a checkout: taken
    rows = dry_run("--boxtree", tmp_path, "--pyclesperanto", tmp_path)
    assert rows["boxtree"] == (f"not run: {tmp_path} is not a checkout of "
                               "inducer/boxtree (no test/ directory)")
    assert rows["pyclesperanto"] == (
        f"not run: {tmp_path} is not a checkout of pyclesperanto-prototype "
        "(no tests/ directory)")
    (tmp_path / "test").mkdir()
    args = upstream_ci.parse_args(["--meshmode", str(tmp_path)])
    assert upstream_ci.resolve_source(args, "meshmode") == ("checkout", tmp_path)
    assert upstream_ci.resolve_source(args, "loopy") == ("pypi", None)
    with pytest.raises(upstream_ci.NotAvailable, match="--boxtree PATH"):
        upstream_ci.resolve_source(args, "boxtree")


def test_not_run_jobs_are_rows_of_the_table_and_json(tmp_path):
    """A job that cannot run is a "not run" row, in the table and the JSON,
    and does not fail the command; nothing is built for it."""
    out = tmp_path / "results.json"
    proc = run("--jobs", "boxtree,meshmode,pyclesperanto", "--json", out,
               "--workdir", tmp_path / "work")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["job", "fork", "upstream", "time"]
    assert [line.split()[:3] for line in lines[2:5]] == [
        ["boxtree", "not", "run"], ["meshmode", "not", "run"],
        ["pyclesperanto", "not", "run"]]
    assert "boxtree [fork]: pass --boxtree PATH to a checkout" in proc.stdout
    assert ("pyclesperanto [fork]: pyclesperanto-prototype==0.24.6: its sdist "
            "ships no tests") in proc.stdout
    data = json.loads(out.read_text())
    assert [(j["job"], j["fork"]["status"]) for j in data["jobs"]] == [
        ("boxtree", "not run"), ("meshmode", "not run"),
        ("pyclesperanto", "not run")]
    assert data["fork_version"] is None and data["series"] == []
    assert not (tmp_path / "work" / "tree").exists()


def test_bootstrap_names_the_command():
    proc = subprocess.run(["bash", str(ROOT / "bootstrap.sh")],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "bash bootstrap.sh upstream-ci [ARGS]" in proc.stdout
    assert "set -euo" not in proc.stdout
    assert "bash bootstrap.sh upstream-ci" in (ROOT / "README.md").read_text()


def test_git_dependencies_of_a_checkout(tmp_path):
    # what upstream's CI installs from git: the checkout's requirements.txt
    (tmp_path / "requirements.txt").write_text(
        "numpy\n"
        "git+https://github.com/inducer/pyopencl.git#egg=pyopencl\n"
        "git+https://github.com/inducer/islpy\n"
        "# git+https://github.com/inducer/sumpy\n"
        "git+https://github.com/inducer/loopy.git@main#egg=loopy\n"
        "arraycontext @ git+https://github.com/inducer/arraycontext.git\n")
    assert upstream_ci.git_deps(tmp_path) == ["islpy", "loopy", "arraycontext"]
    assert upstream_ci.git_deps(tmp_path / "none") == []

    # --git-dep NAME=PATH: a checkout of a Python project, else not run
    dep = tmp_path / "arraycontext"
    dep.mkdir()
    args = upstream_ci.parse_args(["--git-dep", f"arraycontext={dep}"])
    with pytest.raises(upstream_ci.NotAvailable, match="is not a checkout"):
        upstream_ci.dep_checkouts(args)
    (dep / "pyproject.toml").write_text("")
    assert upstream_ci.dep_checkouts(args) == {"arraycontext": dep}
    (tmp_path / "test").mkdir()
    rows = dry_run("--boxtree", tmp_path, "--git-dep", "arraycontext")
    assert rows["boxtree"] == "not run: --git-dep arraycontext: give NAME=PATH"


def test_collection_failure_on_both_columns_is_not_run(tmp_path):
    """A downstream suite that neither PyOpenCL could collect did not run:
    "not run" on both columns, with the hint, never a result."""
    xml = tmp_path / "report.xml"
    xml.write_text(
        '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite '
        'name="pytest" errors="2" failures="0" skipped="0" tests="3">'
        '<testcase classname="" name="test.test_tree">'
        '<error message="collection failure">Traceback:\n'
        "test/test_tree.py:3: in &lt;module&gt;\n    import arraycontext\n"
        "E   ImportError: cannot import name 'ArrayContextFactory'</error>"
        '</testcase><testcase classname="" name="test.test_fmm">'
        '<error message="collection failure">E   ImportError: x</error>'
        '</testcase><testcase classname="test.test_misc" name="test_a" />'
        "</testsuite></testsuites>")
    errors = upstream_ci.collection_errors(xml)
    assert errors == [("test.test_tree: ImportError: cannot import name "
                       "'ArrayContextFactory'"), "test.test_fmm: ImportError: x"]
    assert upstream_ci.junit_counts(xml) == {
        "passed": 1, "failed": 0, "errors": 2, "skipped": 0}

    def failed_at_collection():
        return upstream_ci.Result("fail", "pytest exit status 2",
                                  upstream_ci.junit_counts(xml),
                                  collection_errors=list(errors))

    row = upstream_ci.Row("boxtree", failed_at_collection(),
                          failed_at_collection())
    assert upstream_ci.collection_not_run("boxtree", row, ["arraycontext"])
    for res in (row.fork, row.upstream):
        assert res.status == "not run" and res.counts is None
        assert res.detail.startswith(
            "2 test modules failed at collection on both columns, so the "
            "suite did not run: pass --git-dep NAME=PATH with checkouts of "
            "boxtree's git dependencies (its requirements.txt; from PyPI "
            "here: arraycontext); test.test_tree: ImportError")
        assert res.detail.endswith("(besides: 1 passed, 0 failed)")
    line = upstream_ci.table([row]).splitlines()[2]
    assert line.split()[:5] == ["boxtree", "not", "run", "not", "run"]

    # on one column only, the failure is a result: the fork's, here
    row = upstream_ci.Row("boxtree", failed_at_collection(), upstream_ci.Result(
        "pass", "", {"passed": 3, "failed": 0, "errors": 0, "skipped": 0}))
    assert not upstream_ci.collection_not_run("boxtree", row, [])
    assert (row.fork.status, row.upstream.status) == ("fail", "pass")
    assert row.fork.cell() == "fail 1p/2f/0s"


# {{{ the released clients' jobs: per test, with warnings

CLIENT_TESTS = """
import warnings
import pytest


class RepeatedKernelRetrievalWarning(UserWarning):
    pass


RepeatedKernelRetrievalWarning.__module__ = "pyopencl"


@pytest.fixture
def broken():
    raise RuntimeError("no device")


def test_pass():
    warnings.warn("twice", UserWarning)
    warnings.warn("twice, elsewhere", UserWarning)


def test_fail():
    assert 1 == 2, "one is not two"


def test_error(broken):
    pass


def test_skip():
    pytest.skip("no GPU")


@pytest.mark.xfail(reason="known")
def test_xfail():
    raise ValueError


def test_retrieval():
    warnings.warn("retrieved again", RepeatedKernelRetrievalWarning)

"""


def test_record_plugin_gives_each_outcome_and_its_warnings(tmp_path):
    """The plugin the released clients' jobs run pytest with: each test's
    outcome (with the error's first line) and the warnings recorded in it;
    the fork's RepeatedKernelRetrievalWarning read as upstream's name."""
    (tmp_path / "plugin").mkdir()
    (tmp_path / "plugin" / "upstream_ci_record.py").write_text(
        upstream_ci.RECORD_PLUGIN)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "run" / "test_client.py").write_text(CLIENT_TESTS)
    record = tmp_path / "record.json"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path / "plugin"),
           "UPSTREAM_CI_RECORD": str(record)}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p",
         "upstream_ci_record", "-p", "no:xdist", "-q", "."],
        cwd=tmp_path / "run", env=env, capture_output=True, text=True,
        check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    rec = upstream_ci.read_record(record)
    assert {t: r["outcome"] for t, r in rec["tests"].items()} == {
        "test_client.py::test_pass": "passed",
        "test_client.py::test_fail": "failed",
        "test_client.py::test_error": "error",
        "test_client.py::test_skip": "skipped",
        "test_client.py::test_xfail": "xfailed",
        "test_client.py::test_retrieval": "passed"}
    assert rec["tests"]["test_client.py::test_fail"]["message"] == (
        "AssertionError: one is not two")
    assert rec["tests"]["test_client.py::test_error"]["message"] == (
        "RuntimeError: no device")
    assert rec["warnings"] == {
        "test_client.py::test_pass": {"builtins.UserWarning": 2},
        "test_client.py::test_retrieval": {upstream_ci.WARNING_UPSTREAM: 1}}
    assert rec["messages"][upstream_ci.WARNING_UPSTREAM] == "retrieved again"

    # silx's tests: scipy.datasets.ascent's stand-in (no network here), one
    # image, the same in every process
    sys.path.insert(0, str(tmp_path / "plugin"))
    try:
        import upstream_ci_record
    finally:
        sys.path.pop(0)
    img = upstream_ci_record.ascent_stand_in()
    assert img.shape == (512, 512) and img.dtype.name == "uint8"
    assert 20 < img.std() and (img == upstream_ci_record.ascent_stand_in()).all()
    assert upstream_ci.CLIENTS["silx"].ascent


def record(tests: dict, warnings: dict | None = None) -> dict:
    return {"tests": {t: {"outcome": o, "message": m}
                      for t, (o, m) in tests.items()},
            "warnings": {t: Counter(c) for t, c in (warnings or {}).items()},
            "messages": {}}


def test_same_outcomes_pass_and_failures_on_both_are_listed():
    tests = {"t.py::a": ("passed", ""), "t.py::b": ("failed", "E: broken"),
             "t.py::c": ("skipped", "no GPU")}
    # the fork's warning under its new name counts as upstream's
    assert upstream_ci.canonical_warning(upstream_ci.WARNING_FORK) == \
        upstream_ci.WARNING_UPSTREAM
    warns = {"t.py::a": {upstream_ci.WARNING_UPSTREAM: 2}}
    cmp = upstream_ci.compare_records(record(tests, warns),
                                      record(tests, warns))
    assert cmp["differences"] == []
    assert cmp["same"] == {"passed": 1, "failed": 1, "skipped": 1}
    assert cmp["failed_on_both"] == ["t.py::b (failed: E: broken)"]
    row = upstream_ci.Row("silx", upstream_ci.Result("fail"),
                          upstream_ci.Result("fail"))
    upstream_ci.report_comparison(row, cmp)
    assert row.fork.status == "pass"
    assert row.fork.detail == ("the same outcome and warnings as upstream's "
                               "wheel on each of 3 tests (1 fail on both)")
    assert "failed on both (1, not the fork's): t.py::b (failed: E: broken)" \
        in row.notes
    assert row.comparison is cmp


def test_a_different_outcome_or_warning_fails_the_job():
    up = record({"t.py::a": ("passed", ""), "t.py::b": ("passed", ""),
                 "t.py::c": ("passed", "")},
                {"t.py::b": {"builtins.UserWarning": 1},
                 "t.py::c": {upstream_ci.WARNING_UPSTREAM: 1}})
    fork = record({"t.py::a": ("error", "TypeError: bad arg"),
                   "t.py::b": ("passed", ""), "t.py::c": ("passed", "")},
                  {"t.py::b": {"builtins.UserWarning": 2},
                   "t.py::c": {upstream_ci.WARNING_UPSTREAM: 1}})
    cmp = upstream_ci.compare_records(fork, up)
    assert cmp["differences"] == [
        "t.py::a: fork error (TypeError: bad arg), upstream passed",
        ("t.py::b: warnings fork builtins.UserWarning x2, upstream "
         "builtins.UserWarning x1")]
    # a test only one column ran is a difference too
    del up["tests"]["t.py::c"]
    cmp = upstream_ci.compare_records(fork, up)
    assert "t.py::c: fork passed, upstream not collected" in cmp["differences"]
    row = upstream_ci.Row("silx", upstream_ci.Result("pass"),
                          upstream_ci.Result("pass"))
    upstream_ci.report_comparison(row, cmp)
    assert row.fork.status == "fail"
    assert row.fork.detail.startswith("3 differences from upstream's wheel: "
                                      "t.py::a: fork error")
    assert any("warnings (per test, category and count): DIFFER" in n
               for n in row.notes)


def test_client_requirements_keep_numpy_and_pyopencl():
    """A client's requirements from its installed metadata, as its job
    installs them after the release itself (--no-deps): no numpy (nor
    pyopencl), no extras but the wanted ones."""
    venv = upstream_ci.Venv(Path(sys.prefix), "this")
    venv.python = Path(sys.executable)
    reqs = upstream_ci.dist_requirements(venv, "matplotlib", ())
    names = {r.split(">")[0].split("=")[0].split(";")[0].strip().lower()
             for r in reqs}
    assert "numpy" not in names and "pyparsing" in names
    assert not any("extra" in r for r in reqs)

# }}}
