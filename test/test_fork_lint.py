"""The series adds no lint or type findings to upstream's, under upstream's
own configuration (its pyproject.toml: ruff rules, basedpyright settings),
and the _cl.pyi stubs name only what the built module has."""

from __future__ import annotations

import ast
import collections
import json
import re
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
    # upstream's CI checks its tests too (an execution environment of their
    # own in its pyproject.toml)
    files = changed

    def parse(out):
        return collections.Counter(
            (e["file"].split(PIN.directory + "/")[-1].split("/tree/")[-1],
             e.get("rule", e["message"][:60]))
            for e in json.loads(out)["generalDiagnostics"]
            # the trees are not built: an import of pyopencl._cl finds only
            # its stub here, which it does not where upstream's CI built it
            if e["severity"] == "error"
            and e.get("rule") != "reportMissingModuleSource")

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


# {{{ the lines the series adds quote no measurements of machines

# times with units, instruction counts, "about a microsecond", hardware;
# a unit only after a number where it is also an ordinary word ("us")
MACHINE_NUMBERS = [
    ("time", r"\d\s*(?:µs|μs|us|ns|ms)\b"),
    ("time", r"µs|μs"),
    ("time", r"\b(?:micro|milli|nano)-?seconds?\b"),
    ("instruction count", r"\b\d+(?:\.\d+)?k\b"),
    ("instruction count", r"\b\d[\d,.]*\s*k?\s+(?:\w+\s+)?instructions?\b"),
    ("instruction count", r"\binstructions? (?:per|a) (?:launch|call|operation)"),
    ("cost phrase", (r"\b(?:costs?|takes?|saves?)\s+about\s+"
                     r"(?:a|an|one|as much as|\d)\b")),
    ("hardware", (r"\b(?:[AHBLVT]\d{2,3}|MI\d{2,3}[A-Z]?|RTX\s?\d{3,4}|"
                  r"GTX\s?\d{3,4}|Xeon|EPYC|Ryzen|Core i\d|Tesla|Quadro|"
                  r"GeForce|Radeon|Arc A\d{3})\b")),
    ("hardware", r"\b(?:NVIDIA|Nvidia|AMD|Intel)\s+(?:GPU|CPU|card|H\d+|A\d+)s?\b"),
    ("hardware", r"\b\d+-core\b"),
    ("ratio", (r"\b\d+(?:\.\d+)?\s?(?:x|%)\s+(?:faster|slower|cheaper|more|"
               r"less|the cost|as (?:fast|slow|much))\b")),
]


def machine_number_hits(patch: Path) -> list[str]:
    """What *patch* adds that quotes a machine's numbers: its added lines
    (diff hunks only, not the commit message), less lines identical to a
    line it removes (upstream's own lines that it only moves)."""
    hits = []
    for path, section in series.diff_sections(patch)[1]:
        hunks = section.partition("\n@@")[2].splitlines()
        removed = {ln[1:].strip() for ln in hunks if ln.startswith("-")}
        for ln in hunks:
            if not ln.startswith("+") or ln[1:].strip() in removed:
                continue
            for what, pattern in MACHINE_NUMBERS:
                m = re.search(pattern, ln[1:])
                if m:
                    hits.append(f"{patch.name[:4]} {path}: {what} "
                                f"{m.group(0)!r}: {ln[1:].strip()}")
                    break
    return hits


def test_machine_number_patterns():
    def flags(line):
        return [w for w, p in MACHINE_NUMBERS if re.search(p, line)]
    for line in ["# 6.4 µs per launch", "costs 2us a call", "about 40 ns",
                 "a taken catch costs about a microsecond", "13.6k per launch",
                 "saves 2,000 instructions", "11.1k instructions per launch",
                 "on an H200", "an NVIDIA GPU", "a 2-core VM",
                 "20x slower than ctypes",
                 "a device query costs about as much as a launch"]:
        assert flags(line), line
    for line in ["status = 'us'", "for us", "ms = np.zeros(3)",
                 "args = knl(queue, (64,), None)", "the kernel's instructions",
                 "64K ints", "cl.Buffer(ctx, mf.READ_ONLY, 4 * n)",
                 "nanobind 2.13", "# {{{ test_invokers", "x86-64",
                 "cl_kernel knl", "a1 = a.astype(np.int64)",
                 "a 2x2 block", "i % 2 == 0", "(64x64)"]:
        assert not flags(line), line


def test_patches_quote_no_machine_numbers():
    """The code, docs, examples and tests that the series adds name no
    times, instruction counts or hardware: such numbers belong to the
    commit message that measured them, or to the fork's bench/results."""
    hits = [h for p in PIN.series for h in machine_number_hits(p)]
    assert not hits, "\n".join(["the series adds machine numbers:", *hits])

# }}}
