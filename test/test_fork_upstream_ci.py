"""`bootstrap.sh upstream-ci`: the job list, the dry run, missing sources.

Nothing here builds, downloads or runs a job: --list, --dry-run and the
function that resolves a downstream project's source.
"""

from __future__ import annotations

import json
import subprocess
import sys
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
    # examples, the downstream suites of loopy, boxtree and meshmode
    assert listed == list(upstream_ci.JOBS) == [
        "ruff", "typos", "basedpyright", "pytest", "docs", "examples",
        "loopy", "boxtree", "meshmode"]
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
    assert rows["docs"].startswith("not run: doc/conf.py downloads")
    assert "--sphinxconfig PATH" in rows["docs"]
    for job in ("ruff", "typos", "basedpyright", "pytest", "examples"):
        assert rows[job] == "would run"

    # a directory that is no checkout: said so; a checkout: taken
    rows = dry_run("--boxtree", tmp_path)
    assert rows["boxtree"] == (f"not run: {tmp_path} is not a checkout of "
                               "inducer/boxtree (no test/ directory)")
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
    proc = run("--jobs", "boxtree,meshmode", "--json", out,
               "--workdir", tmp_path / "work")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["job", "fork", "upstream", "time"]
    assert [line.split()[:3] for line in lines[2:4]] == [
        ["boxtree", "not", "run"], ["meshmode", "not", "run"]]
    assert "boxtree [fork]: pass --boxtree PATH to a checkout" in proc.stdout
    data = json.loads(out.read_text())
    assert [(j["job"], j["fork"]["status"]) for j in data["jobs"]] == [
        ("boxtree", "not run"), ("meshmode", "not run")]
    assert data["fork_version"] is None and data["series"] == []
    assert not (tmp_path / "work" / "tree").exists()


def test_bootstrap_names_the_command():
    proc = subprocess.run(["bash", str(ROOT / "bootstrap.sh")],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "bash bootstrap.sh upstream-ci [ARGS]" in proc.stdout
    assert "set -euo" not in proc.stdout
    assert "bash bootstrap.sh upstream-ci" in (ROOT / "README.md").read_text()
