"""Array operations with the default allocator and with a MemoryPool, one
process: the numbers behind bench/results/array-profile.md's "Session 6"
(H200) and the how-to's scan example. Best of 3 rounds of N operations on
256 float32, the queue drained at the end of each round.

    python bench/pooled.py [N]
"""
from __future__ import annotations

import sys
import time

import numpy as np

import pyopencl as cl
import pyopencl.array as cla
import pyopencl.tools as clt
from pyopencl.scan import InclusiveScanKernel


def best_us(queue, f, n):
    best = float("inf")
    for _ in range(3):
        f()
        queue.finish()
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        queue.finish()
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
    return best


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    ctx = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(ctx)
    pool = clt.MemoryPool(clt.ImmediateAllocator(queue))
    scan = InclusiveScanKernel(ctx, np.float32, "a+b", neutral="0")

    print(f"pyopencl {cl.VERSION_TEXT}, {queue.device.name}, µs per operation")
    for name, allocator in [("default", None), ("MemoryPool", pool)]:
        a = cla.zeros(queue, 256, np.float32, allocator=allocator) + 1
        b = cla.empty_like(a)
        for op, f in [
                ("inclusive scan", lambda a=a, b=b: scan(a, b)),
                ("cumsum", lambda a=a: cla.cumsum(a)),
                ("sum", lambda a=a: cla.sum(a)),
                ("a + b", lambda a=a, b=b: a + b)]:
            print(f"{op:16s} {name:10s} {best_us(queue, f, n):8.2f}")


if __name__ == "__main__":
    main()
