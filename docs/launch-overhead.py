"""What launching a small kernel costs the host, per way of launching it.

Prints the time per launch of a kernel that does almost nothing, for
each way, and its ratio to a kept kernel: see the how-to
"How to keep kernel launches cheap" and issue #830. Run it with another
PyOpenCL release to compare.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import pyopencl as cl


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--launches", type=int, default=1000,
                        help="launches per way and round (default: 1000)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds, each way's best kept (default: 3)")
    args = parser.parse_args()

    ctx = cl.create_some_context()
    queue = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, """
        __kernel void axpb(__global int *x, int a, int b)
        { x[0] = a * x[0] + b; }
        """).build()
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4)
    a, b = np.int32(1), np.int32(0)

    knl = cl.Kernel(prg, "axpb")
    declared = cl.Kernel(prg, "axpb")
    declared.set_scalar_arg_dtypes([None, np.int32, np.int32])

    def set_args_enqueue():
        knl.set_args(buf, a, b)
        cl.enqueue_nd_range_kernel(queue, knl, (1,), None)

    ways = {
        "kept kernel, numpy scalars: knl(queue, ...)":
            lambda: knl(queue, (1,), None, buf, a, b),
        "kept kernel, declared scalar types, Python ints":
            lambda: declared(queue, (1,), None, buf, 1, 0),
        "knl.set_args(...), enqueue_nd_range_kernel(...)": set_args_enqueue,
        'cl.Kernel(prg, "axpb")(queue, ...) every launch':
            lambda: cl.Kernel(prg, "axpb")(queue, (1,), None, buf, a, b),
        "prg.axpb(queue, ...) every launch (its warning filtered)":
            lambda: prg.axpb(queue, (1,), None, buf, a, b),
        }

    best = dict.fromkeys(ways, float("inf"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.RepeatedKernelRetrieval)
        for _ in range(args.rounds):
            # every way in each round, so that all are timed alike
            for way, launch in ways.items():
                launch()
                queue.finish()
                start = time.perf_counter()
                for _ in range(args.launches):
                    launch()
                queue.finish()
                best[way] = min(best[way],
                                (time.perf_counter() - start) / args.launches)

    print(f"{queue.device.name} ({queue.device.platform.name}), "
          f"pyopencl {cl.VERSION_TEXT}")
    kept = next(iter(best.values()))
    for way, t in best.items():
        print(f"{t * 1e6:9.2f} us {t / kept:6.1f}x  {way}")


if __name__ == "__main__":
    main()
