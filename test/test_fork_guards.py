"""Guards: hazards that the series itself creates, tested on the patched
build. They pass on 2026.1.4 too, so they live here and not in a patch
(upstream's suite gets only tests that fail without their patch).
"""

from __future__ import annotations

import contextlib
import gc
import weakref

import numpy as np
import pytest

import pyopencl as cl
from pyopencl.tools import (  # noqa: F401
    pytest_generate_tests_for_pyopencl as pytest_generate_tests,
)


def test_kept_invokers_make_no_reference_cycle(ctx_factory: cl.CtxFactory):
    # 0016 keeps invokers in the program: they must refer to no program,
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
    # 0016 keeps invokers in the program: a kernel that takes other
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


def test_kept_invoker_refuses_what_upstream_refuses(ctx_factory: cl.CtxFactory):
    # 0016's key tells a byte-swapped type from the native one: after a
    # kernel of the program declared complex64, '>c8' is still refused with
    # TypeError, as on 2026.1.4
    ctx = ctx_factory()
    prg = cl.Program(
        ctx, "__kernel void k(__global float2 *o, float2 z) { o[0] = z; }").build()
    cl.Kernel(prg, "k").set_scalar_arg_dtypes([None, np.complex64])
    with pytest.raises(TypeError):
        cl.Kernel(prg, "k").set_scalar_arg_dtypes([None, np.dtype(">c8")])


def test_arg_size_warning_for_every_kernel(ctx_factory: cl.CtxFactory,
                                           monkeypatch: pytest.MonkeyPatch):
    # 0016 keeps invokers in the program, but not one whose arguments may
    # not fit a device (a warning), so that every new kernel warns again
    from pyopencl import invoker

    _queue, prg, _buf, _a = _kept_invokers_setup(ctx_factory)
    checked = []
    monkeypatch.setattr(invoker, "_check_arg_size",  # do not fit: warned
                        lambda name, *args: checked.append(name) or False)
    for _ in range(2):
        cl.Kernel(prg, "k").set_scalar_arg_dtypes([None, np.int64])
    assert checked == ["k"] * 4


def test_scan_temporaries_from_a_callable_allocator(ctx_factory: cl.CtxFactory):
    # 0022 allocates a scan's temporaries without arrays for pyopencl's
    # buffer allocators only: a user's callable still gets arrays' requests,
    # the same sizes in the same order, as on 2026.1.4
    import pyopencl.array as cl_array
    from pyopencl.scan import InclusiveScanKernel
    from pyopencl.tools import ImmediateAllocator

    ctx = ctx_factory()
    queue = cl.CommandQueue(ctx)
    immediate = ImmediateAllocator(queue)
    requested = []

    def allocator(nbytes):
        requested.append(nbytes)
        return immediate(nbytes)

    n = 10_000
    host = np.arange(n, dtype=np.int64) % 7
    x = cl_array.to_device(queue, host)
    y = cl_array.empty_like(x)
    InclusiveScanKernel(ctx, np.int64, "a+b", neutral="0")(
        x, y, allocator=allocator)
    assert np.array_equal(y.get(), np.cumsum(host))
    # the interval results, then the partial scan
    assert len(requested) == 2
    assert 0 < requested[0] < requested[1] == 8 * n


def test_scan_with_another_queue_or_svm_memory(ctx_factory: cl.CtxFactory):
    # 0022 takes a scan's temporaries as buffers only for a CommandQueue:
    # a context as the queue raises TypeError at the launch, as on
    # 2026.1.4 (not AttributeError at queue.context); and SVM memory of
    # another queue warns at each of the four temporaries' lines, so that
    # the default filters show four warnings, as on 2026.1.4
    import warnings

    import pyopencl.array as cl_array
    from pyopencl.array import InconsistentOpenCLQueueWarning
    from pyopencl.characterize import has_coarse_grain_buffer_svm
    from pyopencl.scan import GenericScanKernel
    from pyopencl.tools import SVMAllocator

    ctx = ctx_factory()
    queue = cl.CommandQueue(ctx)
    knl = GenericScanKernel(
        ctx, np.int32,
        arguments="__global int *ary, __global char *segflg, __global int *out",
        input_expr="ary[i]", scan_expr="across_seg_boundary ? b : (a+b)",
        neutral="0", is_segment_start_expr="segflg[i]",
        output_statement="out[i] = prev_item;")
    n = 5000
    x = cl_array.to_device(queue, np.arange(n, dtype=np.int32) % 5)
    flags = cl_array.to_device(queue, (np.arange(n) % 100 == 0).astype(np.int8))
    out = cl_array.empty_like(x)
    with pytest.raises(TypeError):
        knl(x, flags, out, queue=ctx)

    if not has_coarse_grain_buffer_svm(queue.device):
        pytest.skip("no coarse-grain SVM")
    # the memory is freed on the other queue: hold that queue until the
    # scans are done (the hazard that the warning is about)
    other = cl.CommandQueue(ctx)
    hold = cl.UserEvent(ctx)
    cl.enqueue_barrier(other, wait_for=[hold])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(2):
            knl(x, flags, out, allocator=SVMAllocator(ctx, queue=other))
    queue.finish()
    hold.set_status(cl.command_execution_status.COMPLETE)
    other.finish()
    lines = [w.lineno for w in caught
             if issubclass(w.category, InconsistentOpenCLQueueWarning)]
    assert len(lines) == len(set(lines)) == 4


def test_common_dtype_cache_keys(ctx_factory: cl.CtxFactory):
    # 0019 keeps promotion results per dtype: int64 and longlong (uint64 and
    # ulonglong) are equal dtypes that promote to themselves, structured
    # dtypes that are equal can differ in alignment, and numpy 1.24 to 2.1
    # can switch promotion at run time
    import pyopencl.array as cl_array
    from pyopencl.array import _get_common_dtype

    context = ctx_factory()
    queue = cl.CommandQueue(context)

    for pair in [(np.longlong, np.int64), (np.int64, np.longlong),
                 (np.ulonglong, np.uint64), (np.uint64, np.ulonglong)]:
        for dtype in pair:
            a = cl_array.zeros(queue, 4, dtype)
            for result in [a + a, a + 1, a * a, cl_array.maximum(a, a)]:
                assert result.dtype.char == np.dtype(dtype).char

    fields = [("x", np.int32), ("y", np.float32)]
    for align in [True, False, True]:
        a = cl_array.Array(queue, 4, np.dtype(fields, align=align))
        assert _get_common_dtype(a, a, queue).isalignedstruct == align

    # numpy 1.24 to 2.1
    get_state = getattr(np, "_get_promotion_state", None)
    set_state = getattr(np, "_set_promotion_state", None)
    if get_state is not None and set_state is not None:
        a = cl_array.zeros(queue, 4, np.int8)
        state = get_state()
        try:
            for new_state in ["weak", "legacy", "weak"]:
                set_state(new_state)
                assert (_get_common_dtype(a, 1000, queue)
                        == np.result_type(np.int8, 1000))
        finally:
            set_state(state)


def test_common_dtype_matches_result_type(ctx_factory: cl.CtxFactory):
    # 0019 keeps results of _get_common_dtype per dtype and scalar type:
    # they are np.result_type's for every builtin dtype with every other and
    # with Python and numpy scalars, whichever value of a type came first
    # (cold cache, warm cache, cold again with the scalars in reverse order)
    import warnings

    import pyopencl.array as cl_array
    from pyopencl.array import DoubleDowncastWarning, _get_common_dtype
    from pyopencl.characterize import has_double_support

    queue = cl.CommandQueue(ctx_factory())
    double = has_double_support(queue.device)
    downcast = {np.dtype(np.float64): np.dtype(np.float32),
                np.dtype(np.complex128): np.dtype(np.complex64)}

    arrays = []
    for char in np.typecodes["All"]:
        with contextlib.suppress(Exception):
            arrays.append(cl_array.Array(queue, 4, np.dtype(char)))
    assert len(arrays) > 20

    scalars = [
        0, 1, -1, 127, 128, 255, 256, -129, 2**31, -2**31 - 1, 2**32, 2**63 - 1,
        2**63, 2**64 - 1, 2**64, 2**100, -2**100,
        0.5, -1.5, 1e300, float("inf"), float("nan"),
        1j, complex(1e300, 1), True, False,
        np.uint64(2**64 - 1), np.int64(-2**63), np.longdouble(1),
        *[np.dtype(char).type(1) for char in np.typecodes["AllInteger"]
          + np.typecodes["AllFloat"] + "?"],
        ]

    def outcome(f):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DoubleDowncastWarning)
            try:
                return f()
            except Exception as e:  # noqa: BLE001
                return type(e)

    def expected(a, b):
        # the pyopencl arrays themselves, as 2026.1.4 does
        result = outcome(lambda: np.result_type(a, b))
        if isinstance(result, np.dtype) and not double:
            result = downcast.get(result, result)
        return result

    def check(scalars):
        for a in arrays:
            for b in [*arrays, *scalars]:
                result = outcome(lambda: _get_common_dtype(a, b, queue))  # noqa: B023
                want = expected(a, b)
                assert result == want, (a.dtype, b, result, want)
                # int64 and longlong are equal dtypes, yet each its own
                assert getattr(result, "char", None) == getattr(want, "char", None)

    cache = getattr(cl_array, "_COMMON_DTYPE_CACHE", {})
    cache.clear()
    check(scalars)
    check(scalars)
    cache.clear()
    check(scalars[::-1])


# {{{ a launch goes through the invoker and the overrides it looks up, as on 2026.1.4

_FLOAT_INT_SRC = """
    __kernel void fab(__global float *x, float a, int b)
    { int i = get_global_id(0); x[i] = a * x[i] + b; }
    """


def _fab(ctx_factory):
    ctx = ctx_factory()
    queue = cl.CommandQueue(ctx)
    knl = cl.Program(ctx, _FLOAT_INT_SRC).build().get_kernel("fab")
    knl.set_scalar_arg_dtypes([None, np.float32, np.int32])
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 * 8)
    return queue, knl, buf


def test_refused_launch_warns_once(ctx_factory: cl.CtxFactory):
    import warnings
    queue, knl, buf = _fab(ctx_factory)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(TypeError):
            knl(queue, (8,), None, buf, np.complex64(1), "x")
    assert [w.category for w in caught] == [np.exceptions.ComplexWarning]


def test_refused_launch_converts_once(ctx_factory: cl.CtxFactory):
    queue, knl, buf = _fab(ctx_factory)

    class Index:
        calls = 0

        def __index__(self):
            Index.calls += 1
            return 1

    knl(queue, (8,), None, buf, 1.0, Index())
    assert Index.calls == 1
    knl.set_scalar_arg_dtypes([None, np.int32, np.int32])
    with pytest.raises(TypeError):
        knl(queue, (8,), None, buf, Index(), "0")
    assert Index.calls == 2


@pytest.mark.parametrize("where", ["instance", "class"])
@pytest.mark.parametrize("declared", [False, True])
def test_launch_uses_set_arg_multi_overrides(ctx_factory: cl.CtxFactory,
                                             monkeypatch: pytest.MonkeyPatch,
                                             where, declared):
    queue, knl, buf = _fab(ctx_factory)
    if not declared:
        knl = knl.program.get_kernel("fab")
    calls = []

    for name in ["_set_arg_multi", "_set_arg_buf_pack_multi"]:
        orig = getattr(cl.Kernel, name)

        def counted(*args, orig=orig, name=name):
            calls.append(name)
            return orig(*args)

        if where == "instance":
            monkeypatch.setattr(
                knl, name, lambda a, counted=counted: counted(knl, a),
                raising=False)
        else:
            monkeypatch.setattr(cl.Kernel, name, counted)

    a = 2.0 if declared else np.float32(2)
    b = 1 if declared else np.int32(1)
    knl(queue, (8,), None, buf, a, b)
    knl.set_args(buf, a, b)
    expected = (["_set_arg_multi", "_set_arg_buf_pack_multi"] if declared
                else ["_set_arg_multi"])
    assert calls == 2 * expected


def test_launch_uses_replaced_getattribute(ctx_factory: cl.CtxFactory,
                                          monkeypatch: pytest.MonkeyPatch):
    # a __getattribute__ set on Kernel sees what the invoker looks up on the
    # kernel, as on 2026.1.4
    queue, knl, buf = _fab(ctx_factory)
    knl(queue, (8,), None, buf, 2.0, 1)
    seen = []

    def getattribute(self, name):
        seen.append(name)
        return object.__getattribute__(self, name)

    monkeypatch.setattr(cl.Kernel, "__getattribute__", getattribute)
    knl(queue, (8,), None, buf, 2.0, 1)
    knl.set_args(buf, 2.0, 1)
    monkeypatch.undo()
    assert seen.count("_set_arg_multi") == 2


def test_launch_uses_replaced_enqueue_nd_range_kernel(
        ctx_factory: cl.CtxFactory, monkeypatch: pytest.MonkeyPatch):
    queue, knl, buf = _fab(ctx_factory)
    calls = []
    orig = cl._cl.enqueue_nd_range_kernel

    def counted(*args):
        calls.append(len(args))
        return orig(*args)

    monkeypatch.setattr(cl._cl, "enqueue_nd_range_kernel", counted)
    knl(queue, (8,), None, buf, 2.0, 1)
    assert calls == [8]

# }}}


# {{{ property lists

def test_property_lists_ending_in_a_zero_name(ctx_factory: cl.CtxFactory):
    # 0013 refuses a property name without its value: a list that ends in
    # a 0 name, as OpenCL's C API takes it, is no such name (2026.1.4 made
    # each of these; an earlier 0012 refused them)
    ctx = ctx_factory()
    if ctx._get_cl_version() < (2, 0) or cl.get_cl_header_version() < (2, 0):
        pytest.skip("properties as a sequence need OpenCL 2.0")

    props = cl.command_queue_info.PROPERTIES
    profiling = cl.command_queue_properties.PROFILING_ENABLE
    coords = cl.sampler_info.NORMALIZED_COORDS
    assert cl.CommandQueue(ctx, properties=[props, 0, 0]).properties == 0
    assert cl.CommandQueue(
        ctx, properties=[props, profiling, 0]).properties == profiling
    assert cl.CommandQueue(ctx, properties=[0]).properties == 0
    # what follows the 0 name is not read
    assert cl.CommandQueue(
        ctx, properties=[props, profiling, 0, props]).properties == profiling
    cl.Sampler(ctx, [coords, 1, 0])  # pyright: ignore[reportCallIssue, reportArgumentType]
    cl.Sampler(ctx, [0])  # pyright: ignore[reportCallIssue, reportArgumentType]
    cl.Sampler(ctx, [0, coords])  # pyright: ignore[reportCallIssue, reportArgumentType]

# }}}


# {{{ a kernel call is Kernel.__call__'s, whatever replaces or bypasses it

_MANY_ARGS = 20


def _many_args_kernel(ctx):
    params = ", ".join(f"int x{i}" for i in range(_MANY_ARGS))
    total = " + ".join(f"x{i}" for i in range(_MANY_ARGS))
    prg = cl.Program(ctx, f"""
        __kernel void many(__global int *out, {params})
        {{ out[get_global_id(0)] = {total}; }}
        """).build()
    return cl.Kernel(prg, "many")


def test_kernel_call_arguments_and_keywords(ctx_factory: cl.CtxFactory):
    ctx = ctx_factory()
    queue = cl.CommandQueue(ctx)
    knl = _many_args_kernel(ctx)
    out = np.zeros(4, np.int32)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, out.nbytes)
    args = [np.int32(i) for i in range(_MANY_ARGS)]
    evt = knl(queue, (4,), None, buf, *args)
    evt = knl(queue, (4,), None, buf, *args, wait_for=[evt], g_times_l=False)
    evt = cl.Kernel.__call__(knl, queue, (4,), None, buf, *args,
                             wait_for=[evt])
    assert isinstance(evt, cl.Event)
    cl.enqueue_copy(queue, out, buf)
    assert (out == sum(range(_MANY_ARGS))).all()
    with pytest.raises(TypeError):
        knl(queue, (4,), None, buf, *args, bogus=1)
    with pytest.raises(TypeError):
        knl(queue, (4,), None, buf, *args[:-1])


def test_kernel_call_replaced_on_class_and_subclass(
        ctx_factory: cl.CtxFactory, monkeypatch: pytest.MonkeyPatch):
    ctx = ctx_factory()
    queue = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, _FLOAT_INT_SRC).build()
    knl = cl.Kernel(prg, "fab")
    knl.set_scalar_arg_dtypes([None, np.float32, np.int32])
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 * 8)
    calls = []

    class Sub(cl.Kernel):
        def __call__(self, *args, **kwargs):
            calls.append("sub")
            return super().__call__(*args, **kwargs)

    sub = Sub(prg, "fab")
    sub.set_scalar_arg_dtypes([None, np.float32, np.int32])
    assert isinstance(sub(queue, (8,), None, buf, 2.0, 1), cl.Event)
    assert calls == ["sub"]

    orig = cl.Kernel.__call__

    def replaced(self, *args, **kwargs):
        calls.append("class")
        return orig(self, *args, **kwargs)

    monkeypatch.setattr(cl.Kernel, "__call__", replaced)
    knl(queue, (8,), None, buf, 2.0, 1)
    assert calls == ["sub", "class"]
    monkeypatch.undo()
    x = np.arange(8, dtype=np.float32)
    cl.enqueue_copy(queue, buf, x)
    knl(queue, (8,), None, buf, 2.0, 1)
    cl.enqueue_copy(queue, x, buf)
    assert calls == ["sub", "class"]
    assert (x == 2 * np.arange(8) + 1).all()


def test_kernel_call_before_init(ctx_factory: cl.CtxFactory):
    class NoInit(cl.Kernel):
        def __init__(self):
            pass

    for knl in [cl.Kernel.__new__(cl.Kernel), NoInit()]:
        with (pytest.warns(RuntimeWarning, match="uninitialized instance"),
              pytest.raises(TypeError)):
            knl(1, 2)

# }}}
