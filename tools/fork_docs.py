#!/usr/bin/env python3
"""The fork's docs for pip users, who get no patched ``doc/``: the how-to
"How to keep kernel launches cheap" and the entries of the new and changed
API, taken from the patched tree's ``doc/`` (the series' text) and rendered
by Sphinx as plain text into docs/launch-overhead.txt, which the README links;
and the series' examples/launch-overhead.py, copied as docs/launch-overhead.py
(a pip install has no examples).

    .venv/bin/python tools/fork_docs.py           # (re)write the file
    .venv/bin/python tools/fork_docs.py --check   # exit 1 if it is stale

Run it with the fork built (``bash bootstrap.sh test --co -q``): Sphinx's
autodoc imports the installed pyopencl for the docstrings, and the patched
tree (subprojects/pyopencl-VERSION/) must be there. After a change to the
series' docs or docstrings, run it again and commit the file;
test/test_fork_docs.py fails while it is stale.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import upstream  # noqa: E402


OUT = ROOT / "docs" / "launch-overhead.txt"
EXAMPLE = ROOT / "docs" / "launch-overhead.py"

HEAD = """\
The fork's documentation
========================

The how-to on launch overhead and the fork's new and changed API, from the
docs of the patched tree (the patch series), rendered by
``tools/fork_docs.py``: do not edit. The how-to's
``examples/launch-overhead.py`` is ``docs/launch-overhead.py`` beside this
file. Upstream's documentation of everything else:
https://documen.tician.de/pyopencl/

.. currentmodule:: pyopencl

"""


def block(lines: list[str], start: str) -> list[str]:
    """The directive or section that starts at the line matching *start*
    (a regular expression, anchored): up to the next line, not blank, that
    is indented no deeper than it. A section (a title underlined on the
    next line) runs to the next title of the same underline."""
    pat = re.compile(start)
    i = next(i for i, line in enumerate(lines) if pat.match(line))
    indent = len(lines[i]) - len(lines[i].lstrip())
    j = i + 1
    if lines[i].startswith(".. _"):
        # a section's label: the section follows it
        while not lines[j].strip():
            j += 1
        j += 1
    title = re.fullmatch(r"([=\-~^\"'`*+#])\1{2,}", lines[j].strip())
    j += 1
    while j < len(lines):
        line = lines[j]
        if title:
            under = lines[j + 1].strip() if j + 1 < len(lines) else ""
            if (line.strip() and under
                    and under == title.group(1) * len(under)
                    and len(under) >= len(line.strip())):
                # the next section's title, and its label above it
                while j > i and (not lines[j - 1].strip()
                                 or lines[j - 1].startswith(".. _")):
                    j -= 1
                break
        elif line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        j += 1
    while j > i and not lines[j - 1].strip():
        j -= 1
    return [*lines[i:j], ""]


def header(lines: list[str], start: str) -> list[str]:
    """A directive's lines up to its first blank line (its signatures and
    options), without its content."""
    i = next(i for i, line in enumerate(lines) if re.match(start, line))
    j = lines.index("", i)
    return [*lines[i:j], ""]


def source(doc: Path) -> str:
    """The page's reStructuredText, from the patched tree's *doc*: only
    what the series adds (the repository carries no upstream text), so not
    ``Program.kernel_name``, whose entry is upstream's with a paragraph
    added."""
    howto = (doc / "howto.rst").read_text().splitlines()
    program = (doc / "runtime_program.rst").read_text().splitlines()
    runtime = (doc / "runtime.rst").read_text().splitlines()
    queue = (doc / "runtime_queue.rst").read_text().splitlines()
    parts = [
        *block(howto, r"\.\. _launch-overhead:$"),
        "New and changed API",
        "-------------------",
        "",
        *header(program, r"\.\. class:: Program\b"),
        *block(program, r"    \.\. automethod:: get_kernel$"),
        *block(program, r"\.\. autoclass:: RepeatedKernelRetrievalWarning$"),
        *block(program, r"\.\. class:: RepeatedKernelRetrieval$"),
        *block(runtime, r"\.\. class:: ArgumentTypeError$"),
        *block(runtime, r"\.\. class:: ArgumentOverflowError$"),
        *header(queue, r"\.\. class:: CommandQueue\b"),
        *block(queue, r"    \.\. versionchanged:: 2026\.1\.5$"),
    ]
    return HEAD + "\n".join(parts)


def render() -> str:
    doc = upstream.read_pin(ROOT).extracted / "doc"
    if not doc.is_dir():
        sys.exit(f"{doc} is not there: build the fork first "
                 "(bash bootstrap.sh test --co -q)")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        (src / "index.rst").write_text(source(doc))
        proc = subprocess.run(
            [sys.executable, "-m", "sphinx", "-b", "text", "-W",
             "--keep-going", "-q", "-E", "-c", str(ROOT / "test" / "docs"),
             str(src), str(Path(tmp) / "text")],
            capture_output=True, text=True, check=False)
        if proc.returncode:
            sys.exit("sphinx failed:\n" + proc.stdout + proc.stderr)
        return (Path(tmp) / "text" / "index.txt").read_text()


def same(a: str, b: str) -> bool:
    # the words, not the wrapping: Sphinx versions may wrap differently
    return a.split() == b.split()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help=f"exit 1 if {OUT.relative_to(ROOT)} is stale")
    args = ap.parse_args(argv)
    text = render()
    example = (upstream.read_pin(ROOT).extracted / "examples"
               / EXAMPLE.name).read_text()
    if args.check:
        if (OUT.is_file() and same(OUT.read_text(), text)
                and EXAMPLE.is_file() and EXAMPLE.read_text() == example):
            return 0
        print(f"{OUT.parent.relative_to(ROOT)}/ is stale: run "
              f"{Path(sys.executable).name} tools/fork_docs.py", file=sys.stderr)
        return 1
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(text)
    EXAMPLE.write_text(example)
    print(f"wrote {OUT.relative_to(ROOT)}, {EXAMPLE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
