"""The series adds no lint or type findings to upstream's, under upstream's
own configuration (its pyproject.toml: ruff rules, basedpyright settings),
and the _cl.pyi stubs name only what the built module has."""

from __future__ import annotations

import ast
import collections
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import series  # noqa: E402
import upstream  # noqa: E402


PIN = upstream.read_pin(ROOT)


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    patched = PIN.extracted
    if not (patched / "pyopencl").is_dir():
        pytest.skip(f"{patched} not there: build the fork first")
    stamp = patched / upstream.STAMP_NAME
    if (not stamp.exists()
            or stamp.read_text().strip() != upstream.series_stamp(PIN)):
        pytest.skip(f"{patched} was built from another patch series: "
                    "build the fork again (it would lint a stale tree)")
    pristine = tmp_path_factory.mktemp("pristine") / "tree"
    series.extract_pristine(PIN, pristine)
    changed = []
    for p in sorted((patched / "pyopencl").rglob("*.py*")) + sorted(
            (patched / "test").glob("*.py")):
        rel = p.relative_to(patched)
        old = pristine / rel
        if p.suffix in {".py", ".pyi"} and (
                not old.exists() or old.read_bytes() != p.read_bytes()):
            changed.append(str(rel))
    assert changed
    return pristine, patched, changed


def _findings(cmd, cwd, parse):
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                          check=False)
    return parse(proc.stdout)


def test_ruff_adds_nothing(trees):
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if not Path(ruff).exists():
        pytest.skip("ruff not installed")
    pristine, patched, changed = trees

    def parse(out):
        return collections.Counter(
            (e["filename"].rsplit("/tree/", 1)[-1].split(PIN.directory + "/")[-1],
             e["code"] or e["message"])
            for e in json.loads(out or "[]"))

    def run(tree):
        files = [f for f in changed if (tree / f).exists()]
        return _findings([ruff, "check", "--output-format", "json", *files],
                         tree, parse)

    old, new = run(pristine), run(patched)
    added = {k: n - old.get(k, 0) for k, n in new.items() if n > old.get(k, 0)}
    assert not added, added


def test_basedpyright_adds_no_errors(trees):
    bp = shutil.which("basedpyright") or str(
        Path(sys.executable).parent / "basedpyright")
    if not Path(bp).exists():
        pytest.skip("basedpyright not installed")
    pristine, patched, changed = trees
    files = [f for f in changed if f.startswith("pyopencl/")]

    def parse(out):
        return collections.Counter(
            (e["file"].split(PIN.directory + "/")[-1].split("/tree/")[-1],
             e.get("rule", e["message"][:60]))
            for e in json.loads(out)["generalDiagnostics"]
            if e["severity"] == "error")

    def run(tree):
        return _findings([bp, "--outputjson",
                          *[f for f in files if (tree / f).exists()]],
                         tree, parse)

    old, new = run(pristine), run(patched)
    added = {k: n - old.get(k, 0) for k, n in new.items() if n > old.get(k, 0)}
    assert not added, added


def test_stubs_name_only_what_the_module_has():
    from pyopencl import _cl
    stub = ast.parse((PIN.extracted / "pyopencl" / "_cl.pyi").read_text())
    for cls in stub.body:
        if isinstance(cls, ast.ClassDef) and cls.name in {"Kernel", "_Program"}:
            runtime = getattr(_cl, cls.name)
            for node in cls.body:
                names = []
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names = [node.name]
                elif isinstance(node, ast.AnnAssign) and isinstance(
                        node.target, ast.Name):
                    names = [node.target.id]
                elif isinstance(node, ast.Assign):
                    names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                for name in names:
                    if name in {"__init__", "__eq__", "__hash__"}:
                        continue
                    assert hasattr(runtime, name) or name in {
                        # info attributes, added at import by _monkeypatch
                        "function_name", "num_args", "reference_count",
                        "context", "program", "attributes",
                        }, f"{cls.name}.{name} in _cl.pyi but not in _cl"
