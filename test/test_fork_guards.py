"""Guards: 2026.1.4's behaviour on paths the series changes, tested on the
patched build. They pass on 2026.1.4 too. A pull request carries the tests
that fail without it and those that pin a hazard it brings (a cache's key,
a slot's fallbacks: pull-requests.ini's ``pins``); these stay the fork's.
"""

from __future__ import annotations

import numpy as np
import pytest

import pyopencl as cl
from pyopencl.tools import (  # noqa: F401
    pytest_generate_tests_for_pyopencl as pytest_generate_tests,
)


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


def test_common_dtype_follows_promotion_state(ctx_factory: cl.CtxFactory):
    # 0019 keeps no result with a Python scalar where numpy (1.24 to 2.1)
    # can switch promotion at run time
    import pyopencl.array as cl_array
    from pyopencl.array import _get_common_dtype

    get_state = getattr(np, "_get_promotion_state", None)
    set_state = getattr(np, "_set_promotion_state", None)
    if get_state is None or set_state is None:
        pytest.skip("numpy cannot switch promotion")
    queue = cl.CommandQueue(ctx_factory())
    a = cl_array.zeros(queue, 4, np.int8)
    state = get_state()
    try:
        for new_state in ["weak", "legacy", "weak"]:
            set_state(new_state)
            assert (_get_common_dtype(a, 1000, queue)
                    == np.result_type(np.int8, 1000))
    finally:
        set_state(state)


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


# {{{ sub-devices

def test_queue_of_a_sub_device_outlives_its_device(ctx_factory: cl.CtxFactory):
    # a context and a queue made on a sub-device stay usable once the Device
    # that create_sub_devices returned is gone, to the end of the process:
    # on 2026.1.4 its second reference does it, which PoCL relies on (it
    # does not keep the sub-device for its context); a draft of E released
    # it, and the queue's device crashed. In a subprocess: a crash fails.
    import subprocess
    import sys

    dev = ctx_factory().devices[0]
    if (cl.get_cl_header_version() < (1, 2)
            or cl.device_partition_property.EQUALLY
            not in (dev.partition_properties or [])
            or dev.max_compute_units < 2):
        pytest.skip("the device cannot be partitioned equally")
    platform_index = cl.get_platforms().index(dev.platform)
    device_index = dev.platform.get_devices().index(dev)
    code = f"""if True:
        import gc
        import numpy as np
        import pyopencl as cl

        dev = cl.get_platforms()[{platform_index}].get_devices()[{device_index}]
        sub = dev.create_sub_devices([cl.device_partition_property.EQUALLY, 1])[0]
        ctx = cl.Context([sub])
        queue = cl.CommandQueue(ctx, device=sub)
        del sub
        gc.collect()
        assert queue.device.name == dev.name
        knl = cl.Program(ctx, "__kernel void one(__global int *x)"
                         "{{ x[get_global_id(0)] = 1; }}").build().one
        buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 64)
        knl(queue, (16,), None, buf)
        out = np.zeros(16, np.int32)
        cl.enqueue_copy(queue, out, buf)
        assert (out == 1).all()
        """
    result = subprocess.run([sys.executable, "-c", code],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, (result.returncode, result.stderr)

# }}}


def test_suite_adds_or_removes_no_environment_variable(tmp_path):
    # while PoCL's compiler thread may spawn the linker with environ (a kernel
    # an earlier test launched), a variable added or removed makes that spawn
    # fail with EFAULT and PoCL abort: conftest.py keeps pytest's
    # PYTEST_CURRENT_TEST set, so that pytest only replaces its value
    import os
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "envaudit.py").write_text(
        "import os, sys\n"
        "seen = []\n"
        "def hook(event, args):\n"
        "    if event == 'os.unsetenv' or (event == 'os.putenv'\n"
        "            and os.fsdecode(args[0]) not in os.environ):\n"
        "        seen.append((event, os.fsdecode(args[0])))\n"
        "def pytest_sessionstart(session):\n"
        "    sys.addaudithook(hook)\n"
        "def pytest_sessionfinish(session):\n"
        "    print('ENV-AUDIT', seen)\n")
    (tmp_path / "test_two.py").write_text(
        "def test_a():\n    pass\n\n\ndef test_b():\n    pass\n")
    root = Path(__file__).parent.parent
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
         "-p", "conftest", "-p", "envaudit", "--rootdir", str(tmp_path),
         str(tmp_path / "test_two.py")],
        env={**os.environ, "PYTHONPATH": f"{root}:{tmp_path}"},
        capture_output=True, text=True, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ENV-AUDIT []" in proc.stdout, proc.stdout
