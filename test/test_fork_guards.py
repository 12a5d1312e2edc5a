"""Guards: hazards that the series itself creates, tested on the patched
build. They pass on 2026.1.4 too, so they live here and not in a patch
(upstream's suite gets only tests that fail without their patch).
"""

from __future__ import annotations

import gc
import weakref

import numpy as np

import pyopencl as cl
from pyopencl.tools import (  # noqa: F401
    pytest_generate_tests_for_pyopencl as pytest_generate_tests,
)


def test_kept_invokers_make_no_reference_cycle(ctx_factory: cl.CtxFactory):
    # 0015 keeps invokers in the program: they must refer to no program,
    # which goes with its last reference, without the cycle collector
    ctx = ctx_factory()
    queue = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, """
        __kernel void k(__global long *x, long a)
        { x[get_global_id(0)] = a * x[get_global_id(0)]; }
        """).build()
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 16 * 8)
    knl = cl.Kernel(prg, "k")
    knl.set_scalar_arg_dtypes([None, np.int64])
    knl(queue, (16,), None, buf, 1)
    cl.Kernel(prg, "k")(queue, (16,), None, buf, np.int64(1))
    queue.finish()
    prg_ref = weakref.ref(prg)
    gc.disable()
    try:
        del prg, knl
        assert prg_ref() is None
    finally:
        gc.enable()


def test_kernel_subclass_launches_through_its_overrides(
        ctx_factory: cl.CtxFactory):
    # G launches a Kernel's valid call in C++, but only for Kernel itself:
    # a subclass's _set_arg_multi keeps being called, as on 2026.1.4
    ctx = ctx_factory()
    queue = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, """
        __kernel void k(__global int *x, int a) { x[get_global_id(0)] = a; }
        """).build()
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4)

    class CountingKernel(cl.Kernel):
        calls = 0

        def _set_arg_multi(self, indices_and_args):
            CountingKernel.calls += 1
            super()._set_arg_multi(indices_and_args)

    knl = CountingKernel(prg, "k")
    knl(queue, (1,), None, buf, np.int32(1))
    knl.set_args(buf, np.int32(2))
    assert CountingKernel.calls == 2
