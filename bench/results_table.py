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


# The runs the table shows, one column group each: (file in bench/results/,
# a note printed under the table, or ""). Each column group is headed by
# the run's device (its json's "device" field, see device_label). A new run:
# copy its bench-out/launch_overhead.json into bench/results/ and change its
# line here, then run --write README.md.
RUNS = [
    ("h100-fork19.json",
     "`bench/offline_h200.sh --processes 3` on a GPU machine without network"),
    ("pocl-fork17.json",
     ("`bash bootstrap.sh bench` in a fresh clone; a 2-core VM with other "
      "jobs running: read it for direction")),
]

# the rows: (section of a run's json, key, label); a run without the entry
# shows "-" (a real client that was not installed)
ROWS = [
    ("launch", "c_event", "the same launch from C"),
    ("launch", "c_create", "the same from C, `clCreateKernel` at each launch"),
    ("launch", "retrieve_attr", "`prg.knl(queue, ...)` every launch (#830)"),
    ("launch", "kept_numpy",
     "kept kernel `knl(queue, ...)`, numpy scalar arguments"),
    ("launch", "kept_dtypes",
     "kept kernel, scalar types declared by `knl.set_scalar_arg_dtypes`"),
    ("array", "elementwise_call", "`ElementwiseKernel` call"),
    ("array", "add", "`c = a + b`"),
    ("array", "sum", "`cl.array.sum(a)`"),
    ("array", "cumsum", "`cl.array.cumsum(a)`"),
    ("reikna", "reikna_fft256", "reikna 0.9: FFT, 256 complex64"),
    ("reikna", "reikna_matmul32", "reikna 0.9: MatrixMul, 32x32 float32"),
    ("clients", "silx_normalize256",
     "silx 3.1: `ImageProcessing.normalize`, 256x256"),
]

RESULTS = Path(__file__).resolve().parent / "results"
BEGIN, END = "<!-- results -->", "<!-- /results -->"


def load(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())["runs"]


def device_label(device: str) -> str:
    """A column's heading from a run's "device" field, "NAME (PLATFORM)":
    PoCL for PoCL's devices (named after the CPU), else the first word of
    the name with a digit in it ("NVIDIA H100 80GB HBM3" gives "H100"),
    else the whole name."""
    name, _, platform = device.rpartition(" (")
    if platform.rstrip(")") == "Portable Computing Language":
        return "PoCL"
    name = name or device
    return next((w for w in name.split() if any(c.isdigit() for c in w)),
                name)


def us(run: dict, column: str, section: str, key: str) -> float | None:
    entry = run[column].get(section, {}).get(key)
    return None if entry is None else entry["us"]


def table() -> str:
    runs = [(device_label(run["fork"]["device"]), name, note, run)
            for name, note in RUNS for run in [load(name)]]
    head = "| µs per call |"
    rule = "| --- |"
    for heading, _name, _note, _run in runs:
        head += f" {heading} fork | {heading} upstream | upstream / fork |"
        rule += " ---: | ---: | ---: |"
    lines = [head, rule]
    for section, key, label in ROWS:
        row = f"| {label} |"
        for _heading, _name, _note, run in runs:
            fork = us(run, "fork", section, key)
            up = us(run, "upstream", section, key)
            if fork is None or up is None:
                row += " - | - | - |"
            else:
                row += f" {fork:.2f} | {up:.2f} | {up / fork:.1f}x |"
        lines.append(row)
    lines.append("")
    if any(" - |" in line for line in lines):
        lines.append("-: not in that run (a real client not installed there).")
        lines.append("")
    for heading, name, note, run in runs:
        fork, up = run["fork"], run["upstream"]
        procs = fork.get("processes")
        # the #830 loop against the C loop that creates a kernel per launch
        fork_x, up_x = (us(run, col, "launch", "retrieve_attr")
                        / us(run, col, "launch", "c_create")
                        for col in ["fork", "upstream"])
        lines.append(
            f"{heading}: `bench/results/{name}`, pyopencl {fork['pyopencl']} "
            f"against {up['pyopencl']} on {fork['device']}, Python "
            f"{fork['python']}"
            + (f", best of {procs} processes per column" if procs and procs > 1
               else ", one process per column" if procs else "")
            + (f"; {note}" if note else "")
            + f"; `prg.knl` every launch costs {fork_x:.1f}x the C loop "
            f"with `clCreateKernel` on the fork, {up_x:.1f}x on upstream.")
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
