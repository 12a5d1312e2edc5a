"""Guards: hazards that the series itself creates, tested on the patched
build. They pass on 2026.1.4 too, so they live here and not in a patch
(upstream's suite gets only tests that fail without their patch).
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

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


_KEPT_INVOKERS_SRC = """
    __kernel void k(__global long *x, long a
    #ifdef WITH_B
        , long b
    #endif
        )
    { x[get_global_id(0)] = a * x[get_global_id(0)]
    #ifdef WITH_B
        + b
    #endif
        ; }
    """


def _kept_invokers_setup(ctx_factory, options=""):
    ctx = ctx_factory()
    queue = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, _KEPT_INVOKERS_SRC).build(options)
    a = np.ones(16, dtype=np.int64)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                    hostbuf=a)
    return queue, prg, buf, a


def test_rebuilt_program_uses_no_stale_invoker(ctx_factory: cl.CtxFactory):
    # 0015 keeps invokers in the program: a kernel that takes other
    # arguments once its program is built again gets its own, also through
    # another wrapper of the same program
    queue, prg, buf, a = _kept_invokers_setup(ctx_factory)
    other = cl.Program.from_int_ptr(prg.int_ptr)
    for p in [prg, other]:
        knl = cl.Kernel(p, "k")
        knl(queue, (16,), None, buf, np.int64(1))
        knl.set_scalar_arg_dtypes([None, np.int64])
        knl(queue, (16,), None, buf, 1)
    queue.finish()
    del knl  # building again needs the kernels released
    prg._get_prg().build(b"-DWITH_B", None)
    for p in [prg, other]:
        knl = cl.Kernel(p, "k")
        knl(queue, (16,), None, buf, np.int64(1), np.int64(1))
        knl.set_scalar_arg_dtypes([None, np.int64, np.int64])
        knl(queue, (16,), None, buf, 1, 1)
    cl.enqueue_copy(queue, a, buf)
    assert (a == 5).all()


def test_arg_size_warning_for_every_kernel(ctx_factory: cl.CtxFactory,
                                           monkeypatch: pytest.MonkeyPatch):
    # 0015 keeps invokers in the program, but not one whose arguments may
    # not fit a device (a warning), so that every new kernel warns again
    from pyopencl import invoker

    _queue, prg, _buf, _a = _kept_invokers_setup(ctx_factory)
    checked = []
    monkeypatch.setattr(invoker, "_check_arg_size",  # do not fit: warned
                        lambda name, *args: checked.append(name) or False)
    for _ in range(2):
        cl.Kernel(prg, "k").set_scalar_arg_dtypes([None, np.int64])
    assert checked == ["k"] * 4
