"""Launch one kernel on the default OpenCL device and print what happened."""

from __future__ import annotations

import numpy as np

import pyopencl as cl


def main() -> None:
    ctx = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(ctx)
    dev = ctx.devices[0]
    print(f"pyopencl {cl.VERSION_TEXT} on {dev.platform.name}: {dev.name}")

    prg = cl.Program(ctx, """
        __kernel void axpb(__global int *x, int a, int b)
        { int i = get_global_id(0); x[i] = a * x[i] + b; }
        """).build()
    knl = prg.get_kernel("axpb")

    x = np.arange(8, dtype=np.int32)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                    hostbuf=x)
    knl(queue, x.shape, None, buf, np.int32(3), np.int32(1))
    out = np.empty_like(x)
    cl.enqueue_copy(queue, out, buf)
    print("3*x+1 =", out.tolist())
    assert (out == 3 * x + 1).all()


if __name__ == "__main__":
    main()
