#!/usr/bin/env python3
"""Where an array operation's time goes beyond its kernel launch (issue 36).

For each array operation of bench/launch_overhead.py that CuPy has too, this
times, in one process and interleaved (each piece's best of --repeats
rounds), the operation and the pieces it is made of, from the bare enqueue
up: the enqueue of its kernel with the arguments set once (the pyopencl
C++ floor: clEnqueueNDRangeKernel and the Event object), the kernel called
with the operation's arguments, the array layer's runner without the
result's allocation or event bookkeeping, and the whole operation. With
CuPy and a CUDA device there, CuPy's same operation and its pieces run in
the same process. Prints a table in µs per operation.

    python bench/breakdown.py                 # this interpreter's pyopencl
    python bench/breakdown.py --json out.json --repeats 30

bench/offline_h200.sh runs it on the H200 with BENCH=breakdown.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

# bench/, this script's folder, is the first entry of sys.path
import launch_overhead as lo


def pieces(setup, pool) -> list[tuple[str, str, object]]:
    """(row, piece, run(count)) of the fork's side, in the order printed."""
    import numpy as np

    import pyopencl as cl
    import pyopencl.array as cl_array
    from pyopencl.elementwise import ElementwiseKernel, get_axpbyz_kernel

    queue, ctx = setup.queue, setup.ctx
    loop = setup.py_loop
    rng = np.random.default_rng(1234)
    ha = rng.random(lo.ARRAY_N, dtype=np.float32)
    a = cl_array.to_device(queue, ha)
    b = cl_array.to_device(queue, ha)
    c = cl_array.empty_like(a)
    ap = cl_array.to_device(queue, ha, allocator=pool)
    bp = cl_array.to_device(queue, ha, allocator=pool)
    cp = cl_array.empty_like(ap)
    acc = cl_array.to_device(queue, ha)
    one = np.float32(1)
    n = np.int32(lo.ARRAY_N)

    def sizes(knl):
        if hasattr(a, "_get_kernel_sizes"):
            return a._get_kernel_sizes(queue, knl)
        return a._get_sizes(queue, knl.get_work_group_info(
            cl.kernel_work_group_info.WORK_GROUP_SIZE, queue.device))

    ek = ElementwiseKernel(ctx, "float *a, float *b, float *c",
                           "c[i] = a[i] + b[i]", "bench_add")
    ek_knl = ek.get_kernel(False)[0]
    gs, ls = sizes(ek_knl)
    ek_knl(queue, gs, ls, a, b, c, n)  # its arguments, set once
    ax_knl = get_axpbyz_kernel(ctx, a.dtype, a.dtype, a.dtype,
                               x_is_scalar=False, y_is_scalar=False)
    ax_args = (cp, one, ap, one, bp, n)
    ax_knl(queue, gs, ls, *ax_args)

    def iadd():
        nonlocal acc
        acc += b

    def enqueue(knl):
        return loop(lambda: cl.enqueue_nd_range_kernel(queue, knl, gs, ls))

    return [
        ("kept raw launch", "C loop, event per launch",
         setup.paths.get("c_event")),
        ("kept raw launch", "kept kernel, numpy scalars",
         setup.paths["kept_numpy"]),
        ("ElementwiseKernel call", "enqueue only, arguments set once",
         enqueue(ek_knl)),
        ("ElementwiseKernel call", "its kernel(queue, gs, ls, a, b, c, n)",
         loop(lambda: ek_knl(queue, gs, ls, a, b, c, n))),
        ("ElementwiseKernel call", "the same, wait_for=[]",
         loop(lambda: ek_knl(queue, gs, ls, a, b, c, n, wait_for=[]))),
        ("ElementwiseKernel call", "ek(a, b, c)", loop(lambda: ek(a, b, c))),
        ("ElementwiseKernel call", "alone: ek.get_kernel(False)",
         loop(lambda: ek.get_kernel(False))),
        ("ElementwiseKernel call", "alone: its launch sizes, a._get_*sizes",
         loop(lambda: sizes(ek_knl))),
        ("c = a + b, pooled", "enqueue only, arguments set once",
         enqueue(ax_knl)),
        ("c = a + b, pooled", "its kernel(queue, gs, ls, c, 1, a, 1, b, n)",
         loop(lambda: ax_knl(queue, gs, ls, *ax_args, wait_for=None))),
        ("c = a + b, pooled", "a._axpbyz(c, 1, a, 1, b): runner, no result",
         loop(lambda: ap._axpbyz(cp, one, ap, one, bp))),
        ("c = a + b, pooled", "alone: empty_like(a), the result",
         loop(lambda: cl_array.empty_like(ap))),
        ("c = a + b, pooled", "alone: get_axpbyz_kernel(..., x_is_scalar=...)",
         loop(lambda: get_axpbyz_kernel(ctx, a.dtype, a.dtype, a.dtype,
                                        x_is_scalar=False,
                                        y_is_scalar=False))),
        ("c = a + b, pooled", "alone: a.dtype.type(1)",
         loop(lambda: a.dtype.type(1))),
        ("c = a + b, pooled", "a + b", loop(lambda: ap + bp)),
        ("a += b", "a._axpbyz(a, 1, a, 1, b): runner, no add_event",
         loop(lambda: acc._axpbyz(acc, one, acc, one, b))),
        ("a += b", "a._axpbyz(c, 1, a, 1, b): the same, out not an input",
         loop(lambda: acc._axpbyz(c, one, acc, one, b))),
        ("a += b", "a += b", loop(iadd)),
        ("sum", "sum(a), a from a MemoryPool", loop(lambda: cl_array.sum(ap))),
        ("sum", "sum(a)", loop(lambda: cl_array.sum(a))),
        ("cumsum", "cumsum(a), a from a MemoryPool",
         loop(lambda: cl_array.cumsum(ap))),
        ("cumsum", "cumsum(a)", loop(lambda: cl_array.cumsum(a))),
    ]


def cupy_pieces() -> list[tuple[str, str, object]]:
    """CuPy's side: its same operations and the pieces it has."""
    import cupy
    import numpy as np

    device = cupy.cuda.Device()
    synced = SimpleNamespace(finish=device.synchronize)

    def loop(body):
        return lo.timed_loop(body, synced)

    raw = cupy.RawKernel(lo.CUPY_KERNEL_SRC, lo.KERNEL_NAME)
    buf = cupy.zeros(lo.LAUNCH_N, dtype=cupy.int32)
    ln = np.int32(lo.LAUNCH_N)
    ha = np.random.default_rng(1234).random(lo.ARRAY_N, dtype=np.float32)
    a, b = cupy.asarray(ha), cupy.asarray(ha)
    c = cupy.empty_like(a)
    acc = cupy.asarray(ha)
    ek = cupy.ElementwiseKernel("float32 a, float32 b", "float32 c",
                                "c = a + b", "bench_add")

    def iadd():
        nonlocal acc
        acc += b

    return [
        ("kept raw launch", "CuPy RawKernel",
         loop(lambda: raw((1,), (lo.LAUNCH_N,), (buf, np.int32(1), ln)))),
        ("ElementwiseKernel call", "CuPy ek(a, b, c)",
         loop(lambda: ek(a, b, c))),
        ("c = a + b, pooled", "CuPy cupy.add(a, b, out=c): no result",
         loop(lambda: cupy.add(a, b, out=c))),
        ("c = a + b, pooled", "CuPy alone: empty_like(a), the result",
         loop(lambda: cupy.empty_like(a))),
        ("c = a + b, pooled", "CuPy a + b", loop(lambda: a + b)),
        ("a += b", "CuPy a += b", loop(iadd)),
        ("sum", "CuPy sum(a)", loop(lambda: cupy.sum(a))),
        ("cumsum", "CuPy cumsum(a)", loop(lambda: cupy.cumsum(a))),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--launches", type=int, default=2000,
                    help="calls per timing of a piece (default %(default)s)")
    ap.add_argument("--repeats", type=int, default=15,
                    help="rounds, each timing every piece once; each piece "
                    "keeps its best round")
    ap.add_argument("--no-cupy", dest="cupy", action="store_false")
    ap.add_argument("--json", type=Path, help="write the results here too")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")

    from pyopencl.tools import ImmediateAllocator, MemoryPool

    tmp = tempfile.TemporaryDirectory()
    setup = lo.launch_setup(Path(tmp.name))
    pool = MemoryPool(ImmediateAllocator(setup.queue))
    todo = [p for p in pieces(setup, pool) if p[2] is not None]
    why_no_cupy = lo.cupy_absent() if args.cupy else "--no-cupy"
    if why_no_cupy is None:
        todo += cupy_pieces()
    best = [float("inf")] * len(todo)
    for _row, _piece, run in todo:
        run(10)  # builds and caches each kernel
    for _ in range(args.repeats):
        for i, (_row, _piece, run) in enumerate(todo):
            best[i] = min(best[i], run(args.launches) / args.launches)
    tmp.cleanup()

    import pyopencl as cl
    dev = setup.queue.device
    print(f"# {cl.VERSION_TEXT}, Python {sys.version.split()[0]}, "
          f"{dev.name} ({dev.platform.name}); {lo.ARRAY_N} float32 "
          f"elements; best of {args.repeats} rounds of {args.launches} calls"
          f"; {time.strftime('%Y-%m-%d')}")
    if why_no_cupy:
        print(f"# {why_no_cupy}")
    print("\n| operation | piece | µs |\n| --- | --- | ---: |")
    rows = []
    for (row, piece, _run), t in zip(todo, best, strict=True):
        us = 1e6 * t
        print(f"| {row} | {piece} | {us:.2f} |")
        rows.append({"operation": row, "piece": piece, "us": us})
    if args.json:
        args.json.write_text(json.dumps({
            "pyopencl": cl.VERSION_TEXT, "device": dev.name,
            "python": sys.version.split()[0], "launches": args.launches,
            "repeats": args.repeats, "pieces": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
