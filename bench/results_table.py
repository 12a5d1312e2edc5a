#!/usr/bin/env python3
"""The README's results table, made from runs of bench/launch_overhead.py
kept in bench/results/ (each a copy of its bench-out/launch_overhead.json).

    python3 bench/results_table.py                    # print the table
    python3 bench/results_table.py --write README.md  # between its markers

--write replaces what stands between the lines ``<!-- results -->`` and
``<!-- /results -->``; test/test_fork_docs.py checks that the README holds
what this prints.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path


# The runs the table shows, one column group each: (heading, file in
# bench/results/, a note printed under the table, or ""). A new run: copy
# its bench-out/launch_overhead.json into bench/results/ and change its
# line here, then run --write README.md.
RUNS = [
    ("H200", "h200-fork15.json",
     "fork.15 still launched in C++, which has since left the series"),
    ("PoCL", "pocl-fork17.json",
     ("`bash bootstrap.sh bench` in a fresh clone; a 2-core VM with other "
      "jobs running: read it for direction")),
]

# the rows: (section of a run's json, key, label)
ROWS = [
    ("launch", "c_event", "the same launch from C"),
    ("launch", "kept_numpy", "kept kernel: `knl(queue, ...)`"),
    ("launch", "retrieve_attr", "`prg.knl(queue, ...)` every launch (#830)"),
    ("array", "elementwise_call", "`ElementwiseKernel` call"),
    ("array", "add", "`c = a + b`"),
    ("array", "sum", "`cl.array.sum(a)`"),
    ("array", "cumsum", "`cl.array.cumsum(a)`"),
]

RESULTS = Path(__file__).resolve().parent / "results"
BEGIN, END = "<!-- results -->", "<!-- /results -->"


def load(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())["runs"]


def table() -> str:
    runs = [(heading, name, note, load(name)) for heading, name, note in RUNS]
    head = "| µs per call |"
    rule = "| --- |"
    for heading, _name, _note, _run in runs:
        head += f" {heading} fork | {heading} upstream | upstream / fork |"
        rule += " ---: | ---: | ---: |"
    lines = [head, rule]
    for section, key, label in ROWS:
        row = f"| {label} |"
        for _heading, _name, _note, run in runs:
            fork = run["fork"][section][key]["us"]
            up = run["upstream"][section][key]["us"]
            row += f" {fork:.2f} | {up:.2f} | {up / fork:.1f}x |"
        lines.append(row)
    lines.append("")
    for heading, name, note, run in runs:
        fork, up = run["fork"], run["upstream"]
        procs = fork.get("processes")
        lines.append(
            f"{heading}: `bench/results/{name}`, pyopencl {fork['pyopencl']} "
            f"against {up['pyopencl']} on {fork['device']}, Python "
            f"{fork['python']}"
            + (f", best of {procs} processes per column" if procs and procs > 1
               else ", one process per column" if procs else "")
            + (f"; {note}" if note else "") + ".")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def table_in(text: str) -> str:
    m = re.search(f"^{re.escape(BEGIN)}\n(.*?)^{re.escape(END)}$", text,
                  flags=re.MULTILINE | re.DOTALL)
    if m is None:
        raise ValueError(f"no {BEGIN} ... {END} lines")
    return m.group(1)


def write(path: Path) -> None:
    text = path.read_text()
    old = table_in(text)
    i = text.index(BEGIN + "\n" + old) + len(BEGIN) + 1
    path.write_text(text[:i] + table() + text[i + len(old):])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", type=Path, metavar="FILE",
                    help="replace the table between FILE's markers")
    args = ap.parse_args(argv)
    if args.write:
        write(args.write)
        print(f"wrote the results table into {args.write}")
    else:
        sys.stdout.write(table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
