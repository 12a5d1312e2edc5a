#!/usr/bin/env python3
"""Instructions per launch or array operation, counted by valgrind's callgrind.

Wall time on a small shared machine moves by tens of percent between runs;
instruction counts do not. For each path of bench/launch_overhead.py (its
launch paths, its array operations and its real-client operations, reikna's)
this runs the path N1 and N2 times in separate processes under
``valgrind --tool=callgrind`` (all threads, PoCL with one worker thread) and
prints (total(N2) - total(N1)) / (N2 - N1): start-up and clean-up cancel
out, and a plain run before them fills the on-disk kernel caches, so that
neither counted run compiles. An array operation is also given as a ratio
to the raw kept-kernel launch (kept_numpy) where both are counted, and
so is a real-client operation.

    python bench/instructions.py                   # this interpreter's pyopencl
    python bench/instructions.py --python .venv-upstream/bin/python
    python bench/instructions.py kept_numpy c_event
    python bench/instructions.py kept_numpy add fill sum
    python bench/instructions.py --main-thread elementwise_call add
    python bench/instructions.py --main-thread reikna_matmul32
    python bench/instructions.py --main-thread --repeat 5 generated_wait

--main-thread counts the Python thread only. On PoCL the kernel runs on
a worker thread, whose count moves by thousands of instructions between
identical runs (its scheduling and waiting); a change to host code is
best judged by the Python thread's count, which moves by a few hundred.
Where a launch waits for an event (generated_wait), what PoCL does on the
Python thread depends on where its worker thread is, so even that count
moves by up to about a thousand: --repeat K prints the median of K counts.
--main-thread also prints the Python thread's instructions in the own code
of the interpreter, PyOpenCL's extension and numpy (not in libc, whose
malloc shares its heap with PoCL's worker, the ICD loader or PoCL): what a
change to PyOpenCL changes, repeatable within a few dozen.

Needs valgrind (Debian: apt-get install valgrind). Takes about 30 s a path.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

# bench/, this script's folder, is the first entry of sys.path
import launch_overhead as lo


PATHS = [key for key, _label, _vs in lo.LAUNCH_PATHS]
ARRAY_OPS = [key for key, _label in lo.ARRAY_OPS]
REIKNA_OPS = [key for key, _label in lo.REIKNA_OPS]
ALL = PATHS + ARRAY_OPS + REIKNA_OPS


def run_path(name: str, launches: int) -> None:
    """Launch path *name* *launches* times (after a warm-up), in this
    process: what callgrind counts."""
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory() as tmp:
        setup = lo.launch_setup(Path(tmp))
        paths = (lo.array_setup(setup).paths if name in ARRAY_OPS
                 else lo.reikna_setup(setup).paths if name in REIKNA_OPS
                 else setup.paths)
        if name not in paths:
            raise SystemExit(f"{name}: not measured here: "
                             + "; ".join(setup.notes))
        run = paths[name]
        run(20)
        run(launches)


# a fixed hash seed: dict and set lookups take the same steps in every run
ENV = dict(os.environ, POCL_MAX_PTHREAD_COUNT="1", OPENBLAS_NUM_THREADS="1",
           PYTHONHASHSEED="0")


def warm_up(python: str, name: str) -> None:
    """One short run under valgrind first, so that both counted runs find
    the kernel already compiled in PoCL's and PyOpenCL's on-disk caches.
    (Under valgrind, PoCL sees another CPU than without it, and so
    another cache entry.)"""
    proc = subprocess.run(["valgrind", "--tool=none", python, __file__,
                           "--run", name, "1"], env=ENV,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{name}: the warm-up run failed:\n"
                         + proc.stderr.strip()[-1500:])


# the objects whose own instructions --main-thread also counts apart: the
# interpreter, PyOpenCL's extension and numpy's, not libc (whose malloc moves
# with PoCL's worker thread), the ICD loader (a wheel bundles its own) or PoCL
HOST_CODE = re.compile(r"libpython|/bin/python|/pyopencl/|/numpy/")


def host_code(out: Path) -> int:
    """The instructions that *out*, a callgrind output file, spends in the
    own code of the objects HOST_CODE matches (exclusive: not in what they
    call elsewhere). They repeat within a few dozen from run to run."""
    names: dict[str, str] = {}
    total, counted, after_call = 0, False, False
    with out.open() as f:
        for line in f:
            if line[:1].isdigit() or line[:1] in "+-*":
                # a cost line; the one after calls= is the call's inclusive cost
                if counted and not after_call:
                    total += int(line.split()[1])
                after_call = False
            elif line.startswith("ob="):
                m = re.match(r"ob=\((\d+)\)(?: (.*))?", line.strip())
                if m is None:
                    name = line[3:].strip()
                else:
                    if m.group(2):
                        names[m.group(1)] = m.group(2)
                    name = names.get(m.group(1), "")
                counted = (HOST_CODE.search(name) is not None
                           and "libOpenCL" not in name)
            elif line.startswith("cob="):
                m = re.match(r"cob=\((\d+)\) (.*)", line.strip())
                if m:
                    names[m.group(1)] = m.group(2)
            elif line.startswith("calls="):
                after_call = True
    return total


def count(python: str, name: str, launches: int,
          main_thread: bool = False) -> tuple[int, int]:
    """Instructions of *launches* runs of path *name* under callgrind: all,
    and those of host_code() (counted with main_thread only, else 0)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        env = ENV
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
             *(["--separate-threads=yes"] if main_thread else []),
             python, __file__, "--run", name, str(launches)],
            env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise SystemExit(f"{name}: the run under valgrind failed:\n"
                             + proc.stderr.strip()[-1500:])
        if main_thread:  # thread 1, the one that runs Python
            out = out.with_name(out.name + "-01")
        m = re.search(r"^(?:summary|totals): (\d+)", out.read_text(),
                      re.MULTILINE)
        if m is None:
            raise SystemExit(f"{name}: no instruction total in {out}")
        return int(m.group(1)), host_code(out) if main_thread else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", metavar="PATH",
                    help=f"paths to count (default: all of "
                    f"{', '.join(ALL)})")
    ap.add_argument("--python", default=sys.executable,
                    help="the interpreter whose pyopencl is measured")
    ap.add_argument("--launches", default="1000,3000",
                    help="N1,N2: launches in the two runs (default 1000,3000)")
    ap.add_argument("--repeat", type=int, default=1, metavar="K",
                    help="count each path K times (K pairs of runs) and "
                    "print the median, with the lowest and highest")
    ap.add_argument("--main-thread", action="store_true",
                    help="count the Python thread only (see above)")
    ap.add_argument("--run", nargs=2, metavar=("PATH", "N"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.run:
        run_path(args.run[0], int(args.run[1]))
        return 0

    unknown = [p for p in args.paths if p not in ALL]
    if unknown:
        ap.error(f"unknown path(s) {', '.join(unknown)}; "
                 f"known: {', '.join(ALL)}")
    try:
        n1, n2 = (int(x) for x in args.launches.split(","))
    except ValueError:
        ap.error(f"--launches takes two integers N1,N2, got {args.launches!r}")
    if not 0 < n1 < n2:
        ap.error("--launches needs 0 < N1 < N2")
    if args.repeat < 1:
        ap.error("--repeat needs K >= 1")
    if shutil.which("valgrind") is None:
        print("valgrind not found; on Debian: apt-get install valgrind",
              file=sys.stderr)
        return 1

    version = subprocess.run(
        [args.python, "-c", "import pyopencl; print(pyopencl.VERSION_TEXT)"],
        capture_output=True, text=True, check=True).stdout.strip()
    print(f"pyopencl {version} ({args.python}); instructions per launch "
          f"(array operations: per operation, ratio to {lo.ARRAY_VS})"
          + ("; Python thread only" if args.main_thread else "")
          + (f"; median of {args.repeat} (lowest-highest)"
             if args.repeat > 1 else ""))
    per_launch = {}
    for name in args.paths or ALL:
        warm_up(args.python, name)
        counts, host = [], []
        for _ in range(args.repeat):
            (a, a_host), (b, b_host) = (
                count(args.python, name, n, args.main_thread) for n in (n1, n2))
            counts.append((b - a) / (n2 - n1))
            host.append((b_host - a_host) / (n2 - n1))
        counts.sort()
        per_launch[name] = statistics.median(counts)
        line = f"  {name:22s} {per_launch[name] / 1000:8.1f}k"
        if name not in PATHS and lo.ARRAY_VS in per_launch:
            line += f" {per_launch[name] / per_launch[lo.ARRAY_VS]:6.2f}x"
        if args.repeat > 1:
            line += f" ({counts[0] / 1000:.1f}-{counts[-1] / 1000:.1f}k)"
        if args.main_thread:
            line += (f"  in Python, PyOpenCL, numpy "
                     f"{statistics.median(host) / 1000:.2f}k")
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
