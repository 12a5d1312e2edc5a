#!/usr/bin/env python3
"""Kernel launch overhead: PyOpenCL's ways against ctypes and a C loop.

Every path launches the same 3-argument kernel (one buffer, two int32
scalars) with a small global size, so that launch cost dominates. Each is
reported in microseconds per launch (best of interleaved rounds, the queue
drained inside the timing) and as a ratio to the matching C loop measured in
the same run. Array operations on 256-element float32 arrays
(ElementwiseKernel, ``a + b``, ``a += b``, ``a * 2.0``, ``a.fill(0)``,
``a.fill(0)`` with its event dropped, to show what ``Array.add_event``'s
bookkeeping costs, ``sum``, ReductionKernel, a scan, ``cumsum``) are timed
in the same rounds,
each as microseconds per operation and as a ratio to the raw kept-kernel
launch, and checked against numpy; so are three operations of a real
client, reikna 0.9 (two FFTs and a matrix product, built once, which
launch kept kernels as ``kernel(queue, global_size, local_size, *args)``),
shown beside upstream's as a ratio upstream/fork; so are two more released
clients, a pyclesperanto-prototype 0.24.6 pipeline (a blur, a threshold, a
weighted sum, the sum of all pixels) on 64x64 and 256x256 float32 images
and silx 3.1.3's ``ImageProcessing.normalize`` (three kernels), each
output compared byte for byte between the columns. The clients are
installed on first use into each column's virtual environment
(``--no-real-clients`` skips all of them). The #830 workload, a
bitonic sort with a swap-pairs kernel, runs in each dispatch style and is
checked against numpy's sort.

Where CuPy and a CUDA device are there (``--no-cupy`` skips it), a third
column, "cupy", times the same array operations as CuPy writes them, on
arrays of the same size, and a raw launch of the same kernel (a
``cupy.RawKernel``, numpy scalars); the array table gives each as fork /
CuPy.

Each column is measured in a fresh subprocess of its own, started the same
way: this environment's pyopencl and, by default, a second virtual
environment holding upstream's released wheel (made on first use); one
table shows both. Output: a table on stdout, a JSON file and a PNG bar
chart.

The device is the one PYOPENCL_CTX selects (PoCL, or the first device, by
default).
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from types import SimpleNamespace


HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

KERNEL_NAME = "swap_pairs_kernel"
KERNEL_SRC = """
__kernel void swap_pairs_kernel(__global int *arr, int x, int n)
{
    int i = get_global_id(0);
    int j = i ^ x;
    if (i < j && j < n && arr[j] < arr[i]) {
        int tmp = arr[i];
        arr[i] = arr[j];
        arr[j] = tmp;
    }
}
"""
LAUNCH_N = 64  # global size (and array length) for the per-launch paths

# (key, label, the C loop it is compared with)
LAUNCH_PATHS = [
    ("c_event", "C loop, event per launch", "c_event"),
    ("c_noevent", "C loop, no event", "c_event"),
    ("c_create", "C loop, clCreateKernel per launch", "c_create"),
    ("ctypes", "ctypes calls, event per launch", "c_event"),
    ("retrieve_attr", "prg.knl(...) every launch", "c_create"),
    ("retrieve_get_kernel", "prg.get_kernel(name)(...) every launch", "c_create"),
    ("kept_numpy", "kept kernel, numpy scalars", "c_event"),
    ("kept_dtypes", "kept kernel, set_scalar_arg_dtypes + ints", "c_event"),
    ("set_args_enqueue", "set_args + enqueue_nd_range_kernel", "c_event"),
    ("set_arg_enqueue", "set_arg per argument + enqueue_nd_range_kernel",
     "c_event"),
    # as code generators (loopy) write a launch: the arguments set by
    # _set_arg_multi and _set_arg_buf_pack_multi, then the binding's
    # enqueue_nd_range_kernel with positional options, waiting for the
    # launch before (with an event to wait for, what PoCL does on the
    # Python thread moves with its worker thread; the same without one
    # repeats)
    ("generated_wait", "generated code: _set_arg_multi, enqueue, wait_for",
     "c_event"),
    ("generated", "generated code: _set_arg_multi, enqueue", "c_event"),
]
SORT_STYLES = [
    ("c", "C loop"),
    ("ctypes", "ctypes"),
    ("830", "#830 code: prg.knl(...) every launch"),
    ("kept_numpy", "kept kernel, numpy scalars"),
    ("kept_dtypes", "kept kernel, set_scalar_arg_dtypes"),
    ("set_args_enqueue", "set_args + enqueue_nd_range_kernel"),
]
RETRIEVAL_PATHS = {"c_create", "retrieve_attr", "retrieve_get_kernel"}

ARRAY_N = 256  # float32 elements of each array of the array operations
# (key, label); each is compared with the raw kept-kernel launch ARRAY_VS
# of its own column ("ratio") and of the fork's column of the same run
# ("ratio_fork": the targets are against the fork's raw launch)
ARRAY_OPS = [
    ("elementwise_call", "ElementwiseKernel call (a, b, c)"),
    ("add", "c = a + b"),
    ("add_pooled", "c = a + b, arrays from a MemoryPool"),
    ("iadd", "a += b"),
    ("mul_scalar", "a * 2.0"),
    ("fill", "a.fill(0)"),
    ("fill_unkept", "a.fill(0); a.events.clear()"),
    ("sum", "cl.array.sum(a)"),
    ("reduction_kernel", "ReductionKernel dot(a, b)"),
    ("scan_kernel", "GenericScanKernel, inclusive sum"),
    ("cumsum", "cl.array.cumsum(a)"),
]
ARRAY_VS = "kept_numpy"

# CuPy's column: its raw launch of the same kernel (translated to CUDA),
# the key of its entry in "launch", and the operations of ARRAY_OPS that
# CuPy has as they are (no event list to drop, no GenericScanKernel); both
# a + b rows are CuPy's a + b, which allocates from its default memory pool
CUPY_VS = "raw_kernel"
CUPY_KERNEL_SRC = """
extern "C" __global__ void swap_pairs_kernel(int *arr, int x, int n)
{
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    int j = i ^ x;
    if (i < j && j < n && arr[j] < arr[i]) {
        int tmp = arr[i];
        arr[i] = arr[j];
        arr[j] = tmp;
    }
}
"""
CUPY_OPS = ["elementwise_call", "add", "add_pooled", "iadd", "mul_scalar",
            "fill", "sum", "reduction_kernel", "cumsum"]

# (key, label): a real client's operations, built once, timed as ARRAY_OPS
REIKNA_REQ = "reikna==0.9.0"
REIKNA_OPS = [
    ("reikna_fft256", "FFT, 256 complex64"),
    ("reikna_fft64x64", "FFT, 64x64 complex64"),
    ("reikna_matmul32", "MatrixMul, 32x32 float32"),
]
# two more real clients, their released versions: installed with --no-deps
# (pyclesperanto-prototype 0.24.6 pins numpy<2) and then their other
# requirements, numpy and pyopencl kept as the environment has them
CLIENT_REQS = ["pyclesperanto-prototype==0.24.6", "silx==3.1.3"]
CLIENT_DEPS = ["toolz", "scikit-image!=0.20.0,>=0.18.0", "matplotlib",
               "transforms3d", "packaging", "h5py>=3", "fabio", "pydantic>=2",
               "filelock"]
CLIENT_OPS = [
    ("cle_pipeline64", "pyclesperanto: blur, >, add, sum; 64x64"),
    ("cle_pipeline256", "pyclesperanto: blur, >, add, sum; 256x256"),
    ("silx_normalize256", "silx ImageProcessing.normalize, 256x256"),
]
CLIENT_IMPORTS = "import pyclesperanto_prototype, silx.opencl.image"


def sort_launches(n: int) -> list[int]:
    """The x argument of each launch of the bitonic sort of n = 2**k ints."""
    xs = []
    k = 2
    while k <= n:
        xs.append(k - 1)
        j = k >> 1
        while j > 0:
            xs.append(j)
            j >>= 1
        k <<= 1
    return xs


# {{{ the C loop

class CLoop:
    """bench/launch_loop.c, compiled at run time as a shared library against
    the system's libOpenCL and called with the benchmark's own handles."""

    def __init__(self, lib_path: Path) -> None:
        lib = ctypes.CDLL(str(lib_path))
        vp = ctypes.c_void_p
        self.launch_loop = lib.launch_loop
        self.launch_loop.argtypes = [vp, vp, vp, ctypes.c_char_p, vp,
                                     ctypes.c_int, ctypes.c_long, ctypes.c_int32]
        self.launch_loop.restype = ctypes.c_double
        self.bitonic_sort = lib.bitonic_sort
        self.bitonic_sort.argtypes = [vp, vp, vp, ctypes.c_int32]
        self.bitonic_sort.restype = ctypes.c_double

    @staticmethod
    def checked(t: float) -> float:
        if t < 0:
            raise RuntimeError(f"C loop: OpenCL error {int(t)}")
        return t


def build_c_loop(workdir: Path) -> tuple[CLoop | None, str]:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None, "no C compiler found (set CC)"
    lib = workdir / "launch_loop.so"
    # the same variables as PyOpenCL's build, for OpenCL outside the system
    flags = [f"-I{os.environ['CL_INC_DIR']}"] if os.environ.get("CL_INC_DIR") else []
    if os.environ.get("CL_LIB_DIR"):
        flags += [f"-L{os.environ['CL_LIB_DIR']}",
                  f"-Wl,-rpath,{os.environ['CL_LIB_DIR']}"]
    proc = subprocess.run(
        [cc, "-O2", "-shared", "-fPIC", *flags, "-o", str(lib),
         str(HERE / "launch_loop.c"), "-lOpenCL"],
        capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return None, "C loop did not compile: " + proc.stderr.strip()[-500:]
    return CLoop(lib), ""

# }}}


# {{{ ctypes

class CtypesCL:
    def __init__(self) -> None:
        name = ctypes.util.find_library("OpenCL") or "libOpenCL.so.1"
        lib = ctypes.CDLL(name)
        self.set_arg = lib.clSetKernelArg
        self.set_arg.argtypes = [ctypes.c_void_p, ctypes.c_uint,
                                 ctypes.c_size_t, ctypes.c_void_p]
        self.enqueue = lib.clEnqueueNDRangeKernel
        self.enqueue.argtypes = [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint,
            ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t),
            ctypes.POINTER(ctypes.c_size_t), ctypes.c_uint, ctypes.c_void_p,
            ctypes.c_void_p]
        self.release_event = lib.clReleaseEvent
        self.release_event.argtypes = [ctypes.c_void_p]

    def launcher(self, knl, queue, buf, gsize: int):
        knl_p = ctypes.c_void_p(knl.int_ptr)
        queue_p = ctypes.c_void_p(queue.int_ptr)
        mem = ctypes.c_void_p(buf.int_ptr)
        gs = (ctypes.c_size_t * 1)(gsize)
        set_arg, enqueue, release = self.set_arg, self.enqueue, self.release_event
        size_mem = ctypes.sizeof(mem)
        mem_ref = ctypes.byref(mem)
        evt = ctypes.c_void_p()
        evt_ref = ctypes.byref(evt)

        def launch(x: int, n: int) -> None:
            xa, na = ctypes.c_int32(x), ctypes.c_int32(n)
            if (set_arg(knl_p, 0, size_mem, mem_ref)
                    or set_arg(knl_p, 1, 4, ctypes.byref(xa))
                    or set_arg(knl_p, 2, 4, ctypes.byref(na))
                    or enqueue(queue_p, knl_p, 1, None, gs, None, 0, None,
                               evt_ref)):
                raise RuntimeError("OpenCL call through ctypes failed")
            release(evt)

        # the OpenCL handles above live as long as these objects
        launch.keep_alive = (knl, queue, buf)
        return launch

# }}}


# {{{ measurement in this interpreter

def timed_loop(body, queue):
    """A path: seconds for *count* calls of *body*, *queue* finished."""
    def run(count):
        t0 = time.perf_counter()
        for _ in range(count):
            body()
        queue.finish()
        return time.perf_counter() - t0
    return run


def generated_launch(cl, queue, knl, buf, gs, wait: bool):
    """A launch of KERNEL_SRC's kernel as generated host code makes it
    (loopy's, for one): arguments by index through _set_arg_multi and
    _set_arg_buf_pack_multi, the enqueue with positional options, and, if
    *wait*, a wait_for list of the last launch's event."""
    last = [None]

    def launch():
        knl._set_arg_multi((0, buf))
        knl._set_arg_buf_pack_multi((1, b"i", 1, 2, b"i", LAUNCH_N))
        wait_for = [last[0]] if wait and last[0] is not None else None
        last[0] = cl._cl.enqueue_nd_range_kernel(
            queue, knl, gs, None, None, wait_for, True, True)
    return launch


def launch_setup(workdir: Path) -> SimpleNamespace:
    """The per-launch paths of LAUNCH_PATHS on the default device, each as
    ``run(count)``: *count* launches, then ``queue.finish()``; it returns
    the seconds that took. Also the objects they use. bench/instructions.py
    counts the same paths."""
    import numpy as np

    import pyopencl as cl

    ctx = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(ctx)
    prg = cl.Program(ctx, KERNEL_SRC).build()
    notes = []

    if hasattr(type(prg), "get_kernel"):
        def new_kernel():
            return prg.get_kernel(KERNEL_NAME)
    else:
        notes.append(
            "no Program.get_kernel: cl.Kernel(prg, name) used instead")

        def new_kernel():
            return cl.Kernel(prg, KERNEL_NAME)

    c_loop, why = build_c_loop(workdir)
    if c_loop is None:
        notes.append(f"C loop skipped: {why}")

    mf = cl.mem_flags
    n = np.int32(LAUNCH_N)
    one = 1
    gs = (LAUNCH_N,)
    buf = cl.Buffer(ctx, mf.READ_WRITE, 4 * LAUNCH_N)
    knl = new_kernel()
    knl_dtypes = new_kernel()
    knl_dtypes.set_scalar_arg_dtypes([None, np.int32, np.int32])
    ct = CtypesCL()
    ct_launch = ct.launcher(new_kernel(), queue, buf, LAUNCH_N)
    c_knl = new_kernel()
    name = KERNEL_NAME.encode()

    def py_loop(body):
        return timed_loop(body, queue)

    def c_run(mode):
        def run(count):
            return CLoop.checked(c_loop.launch_loop(
                queue.int_ptr, prg.int_ptr, c_knl.int_ptr, name, buf.int_ptr,
                mode, count, LAUNCH_N))
        return run

    paths = {}
    if c_loop is not None:
        paths.update({"c_event": c_run(0), "c_noevent": c_run(1),
                      "c_create": c_run(2)})
    paths.update({
        "ctypes": py_loop(lambda: ct_launch(one, LAUNCH_N)),
        "retrieve_attr": py_loop(lambda: getattr(prg, KERNEL_NAME)(
            queue, gs, None, buf, np.int32(one), n)),
        "retrieve_get_kernel": py_loop(lambda: new_kernel()(
            queue, gs, None, buf, np.int32(one), n)),
        "kept_numpy": py_loop(
            lambda: knl(queue, gs, None, buf, np.int32(one), n)),
        "kept_dtypes": py_loop(
            lambda: knl_dtypes(queue, gs, None, buf, one, LAUNCH_N)),
        "set_args_enqueue": py_loop(lambda: (
            knl.set_args(buf, np.int32(one), n),
            cl.enqueue_nd_range_kernel(queue, knl, gs, None))),
        "set_arg_enqueue": py_loop(lambda: (
            knl.set_arg(0, buf), knl.set_arg(1, np.int32(one)),
            knl.set_arg(2, n),
            cl.enqueue_nd_range_kernel(queue, knl, gs, None))),
        "generated_wait": py_loop(generated_launch(cl, queue, knl, buf, gs,
                                                  wait=True)),
        "generated": py_loop(generated_launch(cl, queue, knl, buf, gs,
                                             wait=False)),
    })

    return SimpleNamespace(cl=cl, np=np, ctx=ctx, queue=queue, prg=prg,
                           new_kernel=new_kernel, c_loop=c_loop, ct=ct,
                           paths=paths, notes=notes, py_loop=py_loop)


def array_setup(setup: SimpleNamespace) -> SimpleNamespace:
    """The array operations of ARRAY_OPS on *setup*'s queue, each as
    ``run(count)`` as in launch_setup, on ARRAY_N-element float32 arrays
    with the default allocator, as a user would write them ('add_pooled':
    with a pyopencl.tools.MemoryPool, as CuPy allocates by default, which
    separates the cost of clCreateBuffer/clReleaseMemObject per result
    from that of the launch). Kernels that
    a user builds (ElementwiseKernel, ReductionKernel, GenericScanKernel)
    are built once, here. ``check()`` runs each once more and compares
    with numpy: {key: bool}. bench/instructions.py counts the same
    operations."""
    np, queue = setup.np, setup.queue
    import pyopencl.array as cl_array
    from pyopencl.elementwise import ElementwiseKernel
    from pyopencl.reduction import ReductionKernel
    from pyopencl.scan import GenericScanKernel

    ctx = queue.context
    rng = np.random.default_rng(1234)
    ha = rng.random(ARRAY_N, dtype=np.float32)
    hb = rng.random(ARRAY_N, dtype=np.float32)
    a = cl_array.to_device(queue, ha)
    b = cl_array.to_device(queue, hb)
    c = cl_array.empty_like(a)
    acc = cl_array.to_device(queue, ha)  # what a += b adds to
    filled = cl_array.to_device(queue, ha)  # what a.fill(0) fills
    unkept = cl_array.to_device(queue, ha)
    scanned = cl_array.empty_like(a)
    from pyopencl.tools import ImmediateAllocator, MemoryPool
    pool = MemoryPool(ImmediateAllocator(queue))
    a_pooled = cl_array.to_device(queue, ha, allocator=pool)
    b_pooled = cl_array.to_device(queue, hb, allocator=pool)

    add_knl = ElementwiseKernel(ctx, "float *a, float *b, float *c",
                                "c[i] = a[i] + b[i]", "bench_add")
    dot_knl = ReductionKernel(
        ctx, np.float32, neutral="0", reduce_expr="a+b",
        map_expr="x[i]*y[i]",
        arguments="__global const float *x, __global const float *y")
    scan_knl = GenericScanKernel(
        ctx, np.float32,
        arguments="__global const float *ary, __global float *out",
        input_expr="ary[i]", scan_expr="a+b", neutral="0",
        output_statement="out[i] = item;")

    def iadd():
        nonlocal acc
        acc += b

    def fill_unkept():
        # what a.fill(0) costs without the bookkeeping of Array.add_event,
        # which keeps the last 12 events of an array and waits for the
        # oldest 4 of them every fourth call (not a pattern to use: an array
        # whose events are dropped is no longer waited for on another queue)
        unkept.fill(0)
        unkept.events.clear()

    ops = {
        "elementwise_call": lambda: add_knl(a, b, c),
        "add": lambda: a + b,
        "add_pooled": lambda: a_pooled + b_pooled,
        "iadd": iadd,
        "mul_scalar": lambda: a * 2.0,
        "fill": lambda: filled.fill(0),
        "fill_unkept": fill_unkept,
        "sum": lambda: cl_array.sum(a),
        "reduction_kernel": lambda: dot_knl(a, b),
        "scan_kernel": lambda: scan_knl(a, scanned),
        "cumsum": lambda: cl_array.cumsum(a),
    }
    assert list(ops) == [k for k, _ in ARRAY_OPS]

    def check() -> dict[str, bool]:
        ha64, hb64 = ha.astype(np.float64), hb.astype(np.float64)
        acc.set(ha)
        filled.set(ha)
        c.fill(np.nan)
        scanned.fill(np.nan)
        add_knl(a, b, c)
        got = {
            "elementwise_call": (c.get(), ha + hb),
            "add": ((a + b).get(), ha + hb),
            "add_pooled": ((a_pooled + b_pooled).get(), ha + hb),
            "mul_scalar": ((a * 2.0).get(), ha * np.float32(2.0)),
        }
        iadd()
        got["iadd"] = (acc.get(), ha + hb)
        filled.fill(0)
        got["fill"] = (filled.get(), np.zeros_like(ha))
        unkept.set(ha)
        fill_unkept()
        got["fill_unkept"] = (unkept.get(), np.zeros_like(ha))
        exact = {k: bool(np.array_equal(x, y)) for k, (x, y) in got.items()}
        scan_knl(a, scanned)
        close = {
            "sum": (cl_array.sum(a).get(), ha64.sum()),
            "reduction_kernel": (dot_knl(a, b).get(), (ha64 * hb64).sum()),
            "scan_kernel": (scanned.get(), np.cumsum(ha64)),
            "cumsum": (cl_array.cumsum(a).get(), np.cumsum(ha64)),
        }
        exact.update({k: bool(np.allclose(x, y, rtol=1e-5))
                      for k, (x, y) in close.items()})
        return exact

    return SimpleNamespace(
        paths={k: setup.py_loop(op) for k, op in ops.items()}, check=check)


def reikna_setup(setup: SimpleNamespace) -> SimpleNamespace:
    """The operations of REIKNA_OPS on *setup*'s queue, as array_setup's,
    each compiled once with reikna's OpenCL API; no paths (and a note) where
    reikna is not installed. bench/instructions.py counts the same
    operations."""
    np, queue = setup.np, setup.queue
    try:
        from reikna.cluda import ocl_api
        from reikna.fft import FFT
        from reikna.linalg import MatrixMul
    except ImportError:
        setup.notes.append("reikna not installed: no real-client rows")
        return SimpleNamespace(paths={}, check=dict)

    thr = ocl_api().Thread(queue)
    rng = np.random.default_rng(1234)
    ops, expected = {}, {}
    for key, shape in [("reikna_fft256", (256,)),
                       ("reikna_fft64x64", (64, 64))]:
        h = (rng.random(shape) + 1j * rng.random(shape)).astype(np.complex64)
        x = thr.to_device(h)
        y = thr.empty_like(x)
        fft = FFT(x).compile(thr)
        ops[key] = lambda fft=fft, x=x, y=y: fft(y, x)
        expected[key] = (y, np.fft.fftn(h))
    ha = rng.random((32, 32), dtype=np.float32)
    hb = rng.random((32, 32), dtype=np.float32)
    a, b = thr.to_device(ha), thr.to_device(hb)
    c = thr.empty_like(a)
    matmul = MatrixMul(a, b, out_arr=c).compile(thr)
    ops["reikna_matmul32"] = lambda: matmul(c, a, b)
    expected["reikna_matmul32"] = (c, ha.astype(np.float64) @ hb)
    assert list(ops) == [k for k, _ in REIKNA_OPS]

    def check() -> dict[str, bool]:
        ok = {}
        for key, (out, want) in expected.items():
            out.fill(np.nan)
            ops[key]()
            got = out.get()
            ok[key] = bool(np.abs(got - want).max() <= 1e-5 * np.abs(want).max())
        return ok

    return SimpleNamespace(
        paths={k: setup.py_loop(op) for k, op in ops.items()}, check=check)


def clients_setup(setup: SimpleNamespace) -> SimpleNamespace:
    """The operations of CLIENT_OPS, each built once on *setup*'s device and
    context: a pyclesperanto-prototype pipeline (a Gaussian blur, a
    threshold, a weighted sum of two images, the sum of all pixels, which
    returns a number to the host) and silx's ``ImageProcessing.normalize``
    (a two-stage min/max reduction and a map: three kernels), each on its
    own queue, which the timing drains. check() gives each output's bytes,
    which main() compares between the columns. No paths (and a note) for a
    client that is not installed."""
    np, ctx = setup.np, setup.ctx
    dev = ctx.devices[0]
    rng = np.random.default_rng(1234)
    ops, outputs, queues = {}, {}, {}
    try:
        import pyclesperanto_prototype as cle
    except ImportError as e:
        setup.notes.append(f"pyclesperanto-prototype not installed ({e}): "
                           "no rows")
    else:
        cle.select_device(dev.name)
        for n in (64, 256):
            src = cle.push(rng.random((n, n), dtype=np.float32))
            blurred, binary, out = (cle.create_like(src) for _ in range(3))

            def pipeline(src=src, blurred=blurred, binary=binary, out=out):
                cle.gaussian_blur(src, blurred, sigma_x=1, sigma_y=1)
                cle.greater_constant(blurred, binary, constant=0.5)
                cle.add_images_weighted(blurred, binary, out, factor1=1,
                                        factor2=0.5)
                return cle.sum_of_all_pixels(out)

            key = f"cle_pipeline{n}"
            ops[key], queues[key] = pipeline, cle.get_device().queue
            outputs[key] = lambda p=pipeline, out=out: (
                cle.pull(out).tobytes() + np.float32(p()).tobytes())
    try:
        from silx.opencl.image import ImageProcessing

        import pyopencl.array as cl_array
    except ImportError as e:
        setup.notes.append(f"silx not installed ({e}): no row")
    else:
        h = rng.random((256, 256), dtype=np.float32)
        ip = ImageProcessing(shape=h.shape, ctx=ctx)
        img = cl_array.to_device(ip.queue, h)
        out = cl_array.empty(ip.queue, h.shape, np.float32)
        ops["silx_normalize256"] = lambda: ip.normalize(img, copy=False, out=out)
        queues["silx_normalize256"] = ip.queue
        outputs["silx_normalize256"] = lambda: ip.normalize(
            img, copy=False, out=out).get().tobytes()

    def check() -> dict[str, str]:
        import hashlib
        return {k: hashlib.sha256(f()).hexdigest()[:16]
                for k, f in outputs.items()}

    return SimpleNamespace(
        paths={k: timed_loop(op, queues[k]) for k, op in ops.items()}, check=check)


def no_clients(setup: SimpleNamespace) -> SimpleNamespace:
    return SimpleNamespace(paths={}, check=dict)


def measure(launches: int, repeats: int, sort_sizes: list[int],
            real_clients: bool = True) -> dict:
    """Time every path in this process. The paths are interleaved: each of
    the *repeats* rounds times every path once, and each path keeps its best
    round, so a slow spell of a noisy machine hits all paths alike."""
    tmp = tempfile.TemporaryDirectory()
    setup = launch_setup(Path(tmp.name))
    arrays = array_setup(setup)
    reikna = (reikna_setup if real_clients else no_clients)(setup)
    clients = (clients_setup if real_clients else no_clients)(setup)
    if not real_clients:
        setup.notes.append("--no-real-clients: no real-client rows")
    cl, np = setup.cl, setup.np
    ctx, queue, prg = setup.ctx, setup.queue, setup.prg
    new_kernel, c_loop, ct = setup.new_kernel, setup.c_loop, setup.ct
    paths = setup.paths
    mf = cl.mem_flags
    dev = queue.device

    result: dict = {
        "pyopencl": cl.VERSION_TEXT,
        "python": sys.version.split()[0],
        "device": f"{dev.name} ({dev.platform.name})",
        "launches": launches,
        "repeats": repeats,
        "notes": setup.notes,
        "launch": {},
        "array": {},
        "reikna": {},
        "clients": {},
        "sort": {},
    }

    # the array operations take part in the same rounds as the launch paths
    all_paths = {**paths, **arrays.paths, **reikna.paths, **clients.paths}
    counts = dict.fromkeys(all_paths, launches)
    counts.update(dict.fromkeys(RETRIEVAL_PATHS, max(launches // 10, 10)))
    counts.update(dict.fromkeys([*arrays.paths, *reikna.paths],
                                max(launches // 5, 10)))
    # a pipeline of the clients is milliseconds on PoCL
    counts.update(dict.fromkeys(clients.paths, max(launches // 50, 5)))
    best = dict.fromkeys(all_paths, float("inf"))
    with warnings.catch_warnings():
        # the point of 'retrieve_attr' is the repeated retrieval
        warnings.simplefilter("ignore")
        for run in all_paths.values():
            run(10)  # warm up caches
        for _ in range(repeats):
            for key, run in all_paths.items():
                best[key] = min(best[key], run(counts[key]) / counts[key])
        ok = {**arrays.check(), **reikna.check()}
        digests = clients.check()
    for key, t in best.items():
        if key in digests:
            result["clients"][key] = {"us": 1e6 * t, "digest": digests[key],
                                      "ops": counts[key]}
        elif key in ok:
            section = "array" if key in arrays.paths else "reikna"
            result[section][key] = {"us": 1e6 * t, "ok": ok[key],
                                    "ops": counts[key]}
        else:
            result["launch"][key] = {"us": 1e6 * t}
    add_launch_ratios(result)

    # the #830 workload
    rng = np.random.default_rng(1234)
    for size in sort_sizes:
        data = rng.integers(0, 2**31 - 1, size, dtype=np.int32)
        expected = np.sort(data)
        sbuf = cl.Buffer(ctx, mf.READ_WRITE, data.nbytes)
        xs = sort_launches(size)
        nsz = np.int32(size)
        gsz = (size,)
        sknl = new_kernel()
        sknl_dtypes = new_kernel()
        sknl_dtypes.set_scalar_arg_dtypes([None, np.int32, np.int32])
        s_ct = ct.launcher(new_kernel(), queue, sbuf, size)
        s_c = new_kernel()

        def style_c(sbuf=sbuf, size=size, s_c=s_c):
            return CLoop.checked(c_loop.bitonic_sort(
                queue.int_ptr, s_c.int_ptr, sbuf.int_ptr, size))

        def timed(fn):
            def timed_fn():
                t0 = time.perf_counter()
                fn()
                queue.finish()
                return time.perf_counter() - t0
            return timed_fn

        def style_830(xs=xs, sbuf=sbuf, nsz=nsz, gsz=gsz):
            # as in #830: the kernel is retrieved on every launch
            for x in xs:
                prg.swap_pairs_kernel(queue, gsz, None, sbuf, np.int32(x), nsz)

        def style_numpy(xs=xs, sbuf=sbuf, nsz=nsz, gsz=gsz, sknl=sknl):
            for x in xs:
                sknl(queue, gsz, None, sbuf, np.int32(x), nsz)

        def style_dtypes(xs=xs, sbuf=sbuf, size=size, gsz=gsz,
                         sknl=sknl_dtypes):
            for x in xs:
                sknl(queue, gsz, None, sbuf, x, size)

        def style_set_args(xs=xs, sbuf=sbuf, nsz=nsz, gsz=gsz, sknl=sknl):
            for x in xs:
                sknl.set_args(sbuf, np.int32(x), nsz)
                cl.enqueue_nd_range_kernel(queue, sknl, gsz, None)

        def style_ctypes(xs=xs, size=size, launch=s_ct):
            for x in xs:
                launch(x, size)

        styles = {}
        if c_loop is not None:
            styles["c"] = style_c
        styles.update({
            "ctypes": timed(style_ctypes), "830": timed(style_830),
            "kept_numpy": timed(style_numpy), "kept_dtypes": timed(style_dtypes),
            "set_args_enqueue": timed(style_set_args)})
        best = dict.fromkeys(styles, float("inf"))
        ok = dict.fromkeys(styles, True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(repeats):
                for key, run in styles.items():
                    cl.enqueue_copy(queue, sbuf, data)
                    queue.finish()
                    best[key] = min(best[key], run())
                    out = np.empty_like(data)
                    cl.enqueue_copy(queue, out, sbuf)
                    ok[key] = ok[key] and bool((out == expected).all())
        result["sort"][str(size)] = {
            key: {"us": 1e6 * t, "ok": ok[key], "launches": len(xs)}
            for key, t in best.items()}
    add_sort_ratios(result)

    tmp.cleanup()
    return result


def raw_launch_key(run: dict) -> str:
    """The key of a column's raw launch in run["launch"]: ARRAY_VS, or
    CuPy's RawKernel in CuPy's column."""
    return CUPY_VS if CUPY_VS in run["launch"] else ARRAY_VS


def add_launch_ratios(result: dict) -> None:
    vs = raw_launch_key(result)
    ref = result["launch"].get(vs)
    for entry in result["array"].values():
        entry["ratio"] = entry["us"] / ref["us"]
        entry["vs"] = vs
    for key, _label, vs in LAUNCH_PATHS:
        entry = result["launch"].get(key)
        ref = result["launch"].get(vs)
        if entry is not None and ref is not None:
            entry["ratio"] = entry["us"] / ref["us"]
            entry["vs"] = vs


def add_sort_ratios(result: dict) -> None:
    for entries in result["sort"].values():
        for entry in entries.values():
            if "ctypes" in entries:
                entry["vs_ctypes"] = entry["us"] / entries["ctypes"]["us"]
            if "c" in entries:
                entry["vs_c"] = entry["us"] / entries["c"]["us"]


def best_of_processes(results: list[dict]) -> dict:
    """One column measured by several processes: per path its best time
    (and 'ok' only if every process's result was right), ratios computed
    again from those."""
    import copy
    merged = copy.deepcopy(results[0])

    def sections(r: dict) -> list[dict]:
        return [r["launch"], r["array"], r["reikna"], r.get("clients", {}),
                *r["sort"].values()]

    for i, section in enumerate(sections(merged)):
        for key, entry in section.items():
            others = [sections(r)[i][key] for r in results]
            entry["us"] = min(o["us"] for o in others)
            if "ok" in entry:
                entry["ok"] = all(o["ok"] for o in others)
            if "digest" in entry and len({o["digest"] for o in others}) > 1:
                entry["digest"] = "differs between processes"
    add_launch_ratios(merged)
    add_sort_ratios(merged)
    merged["processes"] = len(results)
    return merged


def add_fork_ratios(runs: dict[str, dict]) -> None:
    """Ratios across the columns of one run: each column's array operations
    and raw launch against the fork's raw launch ("ratio_fork": the issue's
    targets are against it), and the fork's against CuPy's ("vs_cupy")."""
    fork_ref = runs.get("fork", {}).get("launch", {}).get(ARRAY_VS)
    if fork_ref is None:
        return
    for run in runs.values():
        raw = run["launch"][raw_launch_key(run)]
        for entry in [raw, *run["array"].values()]:
            entry["ratio_fork"] = entry["us"] / fork_ref["us"]
    cupy = runs.get("cupy")
    if cupy is not None:
        fork_ref["vs_cupy"] = fork_ref["us"] / cupy["launch"][CUPY_VS]["us"]
        for key, entry in runs["fork"]["array"].items():
            if key in cupy["array"]:
                entry["vs_cupy"] = entry["us"] / cupy["array"][key]["us"]

# }}}


# {{{ CuPy's column

def cupy_absent() -> str | None:
    """Why CuPy's column cannot be measured in this interpreter, or None."""
    try:
        import cupy
    except ImportError as e:
        return f"CuPy not installed ({e}): no cupy column"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except RuntimeError as e:  # its CUDARuntimeError: no driver, no device
        return f"no CUDA device ({e}): no cupy column"
    return None if count else "no CUDA device: no cupy column"


def cupy_absent_in(py: Path, env: dict | None) -> str | None:
    """cupy_absent() in a fresh process of the interpreter *py*, so that
    this process does not initialize CUDA beside the measuring ones."""
    code = (f"import sys; sys.path.insert(0, {str(HERE)!r}); "
            "import launch_overhead as lo; print(lo.cupy_absent() or '')")
    proc = subprocess.run([str(py), "-c", code], env=env, check=False,
                          capture_output=True, text=True)
    if proc.returncode:
        return ("import cupy failed: no cupy column ("
                + (proc.stderr.strip().splitlines() or ["?"])[-1] + ")")
    return proc.stdout.strip() or None


def measure_cupy(launches: int, repeats: int) -> dict:
    """CuPy's column, shaped as measure()'s result: its raw launch of the
    launch paths' kernel (CUPY_VS: a RawKernel, numpy scalars, LAUNCH_N
    threads) and the operations CUPY_OPS on ARRAY_N-element float32 arrays
    on the current CUDA device, as CuPy writes them; each path is
    ``run(count)``: *count* calls, then the device synchronized (as
    queue.finish() in the other columns). Interleaved rounds, each path's
    best, the same counts as measure(), each result checked against numpy
    once, as array_setup's check()."""
    import cupy
    import numpy as np

    device = cupy.cuda.Device()
    synced = SimpleNamespace(finish=device.synchronize)  # as a queue

    raw = cupy.RawKernel(CUPY_KERNEL_SRC, KERNEL_NAME)
    buf = cupy.zeros(LAUNCH_N, dtype=cupy.int32)
    n = np.int32(LAUNCH_N)
    one = 1
    grid, block = (1,), (LAUNCH_N,)

    rng = np.random.default_rng(1234)
    ha = rng.random(ARRAY_N, dtype=np.float32)
    hb = rng.random(ARRAY_N, dtype=np.float32)
    a, b = cupy.asarray(ha), cupy.asarray(hb)
    c = cupy.empty_like(a)
    acc = cupy.asarray(ha)  # what a += b adds to
    filled = cupy.asarray(ha)  # what a.fill(0) fills
    add_knl = cupy.ElementwiseKernel("float32 a, float32 b", "float32 c",
                                     "c = a + b", "bench_add")
    dot_knl = cupy.ReductionKernel("float32 x, float32 y", "float32 z",
                                   "x * y", "a + b", "z = a", "0",
                                   "bench_dot")

    def iadd():
        nonlocal acc
        acc += b

    ops = {
        "elementwise_call": lambda: add_knl(a, b, c),
        "add": lambda: a + b,
        "add_pooled": lambda: a + b,  # CuPy's default: its memory pool
        "iadd": iadd,
        "mul_scalar": lambda: a * 2.0,
        "fill": lambda: filled.fill(0),
        "sum": lambda: cupy.sum(a),
        "reduction_kernel": lambda: dot_knl(a, b),
        "cumsum": lambda: cupy.cumsum(a),
    }
    assert list(ops) == CUPY_OPS
    paths = {CUPY_VS: timed_loop(
        lambda: raw(grid, block, (buf, np.int32(one), n)), synced)}
    paths.update({k: timed_loop(op, synced) for k, op in ops.items()})

    def check() -> dict[str, bool]:
        ha64, hb64 = ha.astype(np.float64), hb.astype(np.float64)
        acc.set(ha)
        filled.set(ha)
        c.fill(np.nan)
        add_knl(a, b, c)
        got = {
            "elementwise_call": (c.get(), ha + hb),
            "add": ((a + b).get(), ha + hb),
            "add_pooled": ((a + b).get(), ha + hb),
            "mul_scalar": ((a * 2.0).get(), ha * np.float32(2.0)),
        }
        iadd()
        got["iadd"] = (acc.get(), ha + hb)
        filled.fill(0)
        got["fill"] = (filled.get(), np.zeros_like(ha))
        exact = {k: bool(np.array_equal(x, y)) for k, (x, y) in got.items()}
        close = {
            "sum": (cupy.sum(a).get(), ha64.sum()),
            "reduction_kernel": (dot_knl(a, b).get(), (ha64 * hb64).sum()),
            "cumsum": (cupy.cumsum(a).get(), np.cumsum(ha64)),
        }
        exact.update({k: bool(np.allclose(x, y, rtol=1e-5))
                      for k, (x, y) in close.items()})
        return exact

    counts = dict.fromkeys(paths, max(launches // 5, 10))
    counts[CUPY_VS] = launches
    best = dict.fromkeys(paths, float("inf"))
    for run in paths.values():
        run(10)  # compiles each kernel (NVRTC, or CuPy's kernel cache)
    for _ in range(repeats):
        for key, run in paths.items():
            best[key] = min(best[key], run(counts[key]) / counts[key])
    ok = check()

    name = cupy.cuda.runtime.getDeviceProperties(device.id)["name"]
    version = cupy.cuda.runtime.runtimeGetVersion()
    result = {
        "cupy": cupy.__version__,
        "python": sys.version.split()[0],
        "device": (f"{name.decode() if isinstance(name, bytes) else name} "
                   f"(CUDA runtime {version // 1000}.{version % 1000 // 10})"),
        "launches": launches,
        "repeats": repeats,
        "notes": [],
        "launch": {CUPY_VS: {"us": 1e6 * best[CUPY_VS]}},
        "array": {k: {"us": 1e6 * best[k], "ok": ok[k], "ops": counts[k]}
                  for k in CUPY_OPS},
        "reikna": {},
        "clients": {},
        "sort": {},
    }
    add_launch_ratios(result)
    return result

# }}}


# {{{ upstream's wheel in its own virtual environment

def upstream_python(venv: Path, env: dict | None = None) -> Path:
    """A virtual environment with upstream's released wheel of the pinned
    version; made on first use, pip run in *env* (default: ours)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import upstream
    version = upstream.read_pin(ROOT).version
    py = venv / "bin" / "python"
    check = [str(py), "-c",
             ("import importlib.metadata as m, sys; "
              "sys.exit(m.version('pyopencl') != sys.argv[1])"), version]
    if py.exists() and subprocess.run(check, check=False).returncode == 0:
        # the array operations need Mako, which the wheel does not require
        # (and the real-client rows reikna and the others: installed by
        # ensure_real_clients)
        has_them = [str(py), "-c", "import mako"]
        if subprocess.run(has_them, check=False,
                          capture_output=True).returncode != 0:
            subprocess.run([str(py), "-m", "pip", "install", "-q",
                            "--disable-pip-version-check", "mako"],
                           env=env, check=True)
        return py
    print(f"making {venv} with upstream's pyopencl=={version} wheel",
          file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q",
                    "--disable-pip-version-check", "--only-binary", "pyopencl",
                    f"pyopencl=={version}", "mako"], env=env, check=True)
    return py


# pip reaches no package index: what it said, once per run (None: it does)
_UNREACHABLE: dict[str, str | None] = {}


def index_unreachable(py: Path) -> str | None:
    """Whether the pip of *py* can fetch a real client, asked once per run:
    one download of reikna with no retry and a short timeout. Offline, pip
    would otherwise retry each install five times (a minute or more of
    "WARNING: Retrying" lines per client) before it fails."""
    if "why" not in _UNREACHABLE:
        with tempfile.TemporaryDirectory() as tmp:
            proc = subprocess.run(
                [str(py), "-m", "pip", "download", "-q",
                 "--disable-pip-version-check", "--no-deps", "--retries", "0",
                 "--timeout", "10", "--dest", tmp, REIKNA_REQ],
                check=False, capture_output=True, text=True)
        lines = [ln for ln in (proc.stdout + proc.stderr).splitlines()
                 if ln.startswith("ERROR")] or ["?"]
        _UNREACHABLE["why"] = lines[-1] if proc.returncode else None
    return _UNREACHABLE["why"]


def ensure_real_clients(py: Path, env: dict | None, label: str) -> str | None:
    """reikna, pyclesperanto-prototype and silx in the environment of the
    column's interpreter *py*, installed on first use where that is a
    virtual environment (numpy and pyopencl kept as they are); else a note
    why not, and the rows say "not installed"."""
    def ok(code: str) -> bool:
        return subprocess.run([str(py), "-c", code], env=env, check=False,
                              capture_output=True).returncode == 0
    if ok(f"import mako, reikna; {CLIENT_IMPORTS}"):
        return None
    if env is not None or not ok("import sys; sys.exit(sys.prefix == sys.base_prefix)"):
        return (f"{label}: the real clients are not all installed and {py} "
                "is no virtual environment to install them into: install "
                f"{REIKNA_REQ}, {' '.join(CLIENT_REQS)} (--no-deps) and "
                "their requirements but numpy and pyopencl")
    why = index_unreachable(py)
    if why is not None:
        note = (f"{label}: real clients not installed: pip could not fetch "
                f"{REIKNA_REQ} in one try, offline? ({why})")
        print(note, file=sys.stderr)
        return note
    keep = subprocess.run(
        [str(py), "-c", ("import numpy, importlib.metadata as m; "
                         "print(f'numpy=={numpy.__version__}'); "
                         "print(f\"pyopencl=={m.version('pyopencl')}\")")],
        env=env, check=False, capture_output=True, text=True).stdout
    with tempfile.TemporaryDirectory() as tmp:
        cfile = Path(tmp) / "keep.txt"
        cfile.write_text(keep)
        pip = [str(py), "-m", "pip", "install", "-q",
               "--disable-pip-version-check", "-c", str(cfile)]
        for cmd in ([*pip, "mako", REIKNA_REQ],
                    [*pip, "--no-deps", *CLIENT_REQS], [*pip, *CLIENT_DEPS]):
            # pip's output stays out of the benchmark's unless pip fails:
            # after the last step its resolver reports the numpy<2 pin of
            # pyclesperanto-prototype as an "ERROR", which is expected here
            proc = subprocess.run(cmd, check=False, capture_output=True,
                                  text=True)
            if proc.returncode:
                print(proc.stdout + proc.stderr, file=sys.stderr)
                return (f"{label}: pip could not install the real clients "
                        f"({' '.join(cmd[8:])})")
    print(f"installed into {label}'s environment ({py}): {REIKNA_REQ}, "
          f"{', '.join(CLIENT_REQS)} (pyclesperanto-prototype without its "
          "numpy<2 pin) and their requirements", file=sys.stderr)
    return None

# }}}


# {{{ the columns' processes

# what PoCL's compiler (clang) prints on stderr for each program it builds
# with warnings (the real clients' kernels): a count, not the warnings,
# and only while PoCL's kernel cache lacks the program
COMPILER_COUNT = re.compile(r"\d+ warnings? generated\.")


def run_column(cmd: list[str], cwd: str, env: dict | None) -> int:
    """Run a column's process, its stderr passed on but for the compiler's
    "N warnings generated." lines; how many of those it dropped."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stderr is not None
    dropped = 0
    for line in proc.stderr:
        if COMPILER_COUNT.fullmatch(line.strip()):
            dropped += 1
        else:
            sys.stderr.write(line)
    if proc.wait():
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    return dropped

# }}}


# {{{ output

def fmt_us(entry: dict | None) -> str:
    return "-" if entry is None else f"{entry['us']:9.2f}"


def fmt_ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:6.2f}x"


def array_entry(run: dict, key: str | None) -> dict | None:
    """A column's entry in the array table: operation *key*, or (None) the
    column's raw launch."""
    if key is None:
        return run["launch"].get(raw_launch_key(run))
    return run.get("array", {}).get(key)


def print_table(runs: dict[str, dict]) -> None:
    # CuPy's column has the array table only, beside the fork's
    cupy = runs.get("cupy")
    names = [name for name in runs if name != "cupy"]
    first = runs[names[0]]
    print(f"\nDevice: {first['device']}")
    for name in names:
        print(f"  {name}: pyopencl {runs[name]['pyopencl']}, "
              f"Python {runs[name]['python']}")
    if cupy is not None:
        print(f"  cupy: CuPy {cupy['cupy']}, Python {cupy['python']}, "
              f"{cupy['device']}")
    header = f"{'per launch (µs, ratio to matching C loop)':46}"
    for name in names:
        header += f" | {name:>9} {'ratio':>7}"
    print("\n" + header)
    print("-" * len(header))
    for key, label, _vs in LAUNCH_PATHS:
        row = f"{label:46}"
        for name in names:
            e = runs[name]["launch"].get(key)
            row += f" | {fmt_us(e):>9} {fmt_ratio(e and e.get('ratio')):>7}"
        print(row)
    print("  ratios: 'every launch' paths against the C loop that calls "
          "clCreateKernel every launch, the others against the C loop with "
          "an event")

    if any(runs[name].get("array") for name in names):
        header = (f"{f'array operation, {ARRAY_N} float32 (µs, ratio)':46}")
        ref_name = "fork" if "fork" in names else names[0]
        for name in names:
            header += f" | {name:>9} {'ratio':>7}"
        if cupy is not None:
            header += f" | {'cupy':>9} {'fork/CuPy':>9}"
        print("\n" + header)
        print("-" * len(header))
        vs = {k: lbl for k, lbl, _ in LAUNCH_PATHS}[ARRAY_VS]
        for key, label in [(None, f"raw launch: {vs}"), *ARRAY_OPS]:
            row = f"{label:46}"
            wrong = False
            for name in names:
                e = array_entry(runs[name], key)
                row += (f" | {fmt_us(e):>9} "
                        f"{fmt_ratio(e and e.get('ratio_fork', e.get('ratio'))):>7}")
                wrong = wrong or (e is not None and not e.get("ok", True))
            if cupy is not None:
                e = array_entry(cupy, key)
                mine = array_entry(runs["fork"], key)
                row += (f" | {fmt_us(e):>9} "
                        f"{fmt_ratio(mine and mine.get('vs_cupy')):>9}")
                wrong = wrong or (e is not None and not e.get("ok", True))
            print(row + (" WRONG RESULT" if wrong else ""))
        print(f"  ratios: against the raw launch '{vs}' of the {ref_name} "
              "column of this run")
        if cupy is not None:
            print("  cupy: the same operations as CuPy writes them (its raw "
                  "launch: the same kernel as a cupy.RawKernel, numpy "
                  "scalars); fork/CuPy: the fork's µs over CuPy's")

    # a client skipped (--no-real-clients) or installed in no column has
    # no table: the notes at the end say why
    both = "fork" in names and "upstream" in names

    def client_table(section: str, title: str, ops) -> None:
        if not any(runs[n].get(section) for n in names):
            return
        header = f"{title:46}"
        for name in names:
            header += f" | {name:>13}"
        header += " | upstream/fork" if both else ""
        print("\n" + header)
        print("-" * len(header))
        for key, label in ops:
            row = f"{label:46}"
            for name in names:
                e = runs[name].get(section, {}).get(key)
                row += f" | {'not installed' if e is None else fmt_us(e):>13}"
            e = runs["fork"].get(section, {}).get(key) if both else None
            if e is not None and "vs_upstream" in e:
                # the README's direction: above 1, the fork is faster
                row += f" | {fmt_ratio(1 / e['vs_upstream']):>13}"
                if not e.get("same_result", True):
                    row += " RESULTS DIFFER between the columns"
            if any(not runs[n].get(section, {}).get(key, {}).get("ok", True)
                   for n in names):
                row += " WRONG RESULT"
            print(row)

    client_table("reikna", "real client: reikna 0.9 (µs per call)", REIKNA_OPS)
    client_table("clients", "real clients: their releases (µs per call)",
                 CLIENT_OPS)
    if both and any(runs[n].get("clients") for n in names):
        print("  each output compared byte for byte between the columns")

    for size in first["sort"]:
        launches = next(iter(first["sort"][size].values()))["launches"]
        header = f"{f'bitonic sort of {size} int32 ({launches} launches), µs':46}"
        for name in names:
            header += f" | {name:>9} {'/ctypes':>7} {'/C':>7}"
        print("\n" + header)
        print("-" * len(header))
        for key, label in SORT_STYLES:
            row = f"{label:46}"
            for name in names:
                e = runs[name]["sort"].get(size, {}).get(key)
                row += (f" | {fmt_us(e):>9} "
                        f"{fmt_ratio(e and e.get('vs_ctypes')):>7} "
                        f"{fmt_ratio(e and e.get('vs_c')):>7}")
                if e is not None and not e["ok"]:
                    row += " WRONG RESULT"
            print(row)

    for name in runs:
        for note in runs[name]["notes"]:
            print(f"note ({name}): {note}")


def plain_ticks(ax) -> None:
    """Ticks of a log axis as plain numbers, 1, 2, 5, 10, 20, ... (not
    matplotlib's "6x10^1" on the minor ticks)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter
    lo, hi = ax.get_ylim()
    ticks = [m * 10.0 ** e for e in range(-3, 7) for m in (1, 2, 5)]
    ax.yaxis.set_major_locator(FixedLocator(
        [t for t in ticks if lo <= t <= hi] or ticks))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def plot(runs: dict[str, dict], path: Path) -> str | None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib not installed: no plot"
    keys = [k for k, _, _ in LAUNCH_PATHS if not k.startswith("c_")]
    labels = [label for k, label, _ in LAUNCH_PATHS if not k.startswith("c_")]
    with_arrays = any(run.get("array") for run in runs.values())
    fig, axes = plt.subplots(1, 2 if with_arrays else 1,
                             figsize=(17 if with_arrays else 10, 5.5),
                             squeeze=False)
    ax = axes[0][0]
    cl_runs = {name: run for name, run in runs.items() if name != "cupy"}
    width = 0.8 / len(cl_runs)
    for i, (name, run) in enumerate(cl_runs.items()):
        xs = [j + (i - (len(cl_runs) - 1) / 2) * width
              for j in range(len(keys))]
        ys = [run["launch"].get(k, {}).get("us", float("nan")) for k in keys]
        ax.bar(xs, ys, width, label=f"{name} ({run['pyopencl']})")
    first = next(iter(cl_runs.values()))
    for key, style in [("c_event", "-"), ("c_create", "--")]:
        if key in first["launch"]:
            ax.axhline(first["launch"][key]["us"], color="black", ls=style,
                       lw=1, label={k: lbl for k, lbl, _ in LAUNCH_PATHS}[key])
    ax.set_yscale("log")
    plain_ticks(ax)
    ax.set_ylabel("µs per launch (log scale)")
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels(labels, rotation=20, ha="right", fontsize=8)
    ax.set_title(f"Kernel launch overhead on {first['device']}", fontsize=10)
    ax.legend(fontsize=8)
    if with_arrays:
        ax = axes[0][1]
        keys = [k for k, _ in ARRAY_OPS]
        width = 0.8 / len(runs)
        for i, (name, run) in enumerate(runs.items()):
            xs = [j + (i - (len(runs) - 1) / 2) * width
                  for j in range(len(keys))]
            ys = [run.get("array", {}).get(k, {}).get("us", float("nan"))
                  for k in keys]
            version = run.get("pyopencl") or f"CuPy {run['cupy']}"
            bars = ax.bar(xs, ys, width, label=f"{name} ({version})")
            ref = run["launch"].get(ARRAY_VS)
            if ref is not None and (i == 0 or "fork" not in runs):
                ax.axhline(ref["us"], color=bars.patches[0].get_facecolor(),
                           ls=":", lw=1.5,
                           label=f"{name}: raw kept-kernel launch")
        # each pair labelled with upstream's µs over the fork's
        fork, up = runs.get("fork", {}), runs.get("upstream", {})
        for j, k in enumerate(keys):
            f = fork.get("array", {}).get(k)
            u = up.get("array", {}).get(k)
            if f is not None and u is not None:
                ax.annotate(f"{u['us'] / f['us']:.2f}", (j, max(f["us"], u["us"])),
                            ha="center", va="bottom", fontsize=7)
        ax.set_yscale("log")
        plain_ticks(ax)
        ax.set_ylabel("µs per operation (log scale)"
                      + ("; labels: upstream / fork" if fork and up else ""))
        ax.set_xticks(range(len(keys)))
        ax.set_xticklabels([lbl for _, lbl in ARRAY_OPS], rotation=20,
                           ha="right", fontsize=8)
        ax.set_title(f"Array operations, {ARRAY_N} float32", fontsize=10)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return None

# }}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="PYOPENCL_CTX selects the device, e.g. PYOPENCL_CTX=0:0.")
    ap.add_argument("--quick", action="store_true",
                    help="few launches and small sorts: checks that it runs")
    ap.add_argument("--launches", type=int, default=5000,
                    help="launches per timing of a kept kernel (default "
                    "%(default)s; a tenth for paths that create a kernel "
                    "every launch)")
    ap.add_argument("--repeats", type=int, default=15,
                    help="rounds, each timing every path once; each path "
                    "keeps its best round")
    ap.add_argument("--processes", type=int, default=1,
                    help="measure each column in this many processes, "
                    "alternating with the other column's, and keep each "
                    "path's best (default: %(default)s)")
    ap.add_argument("--sort-sizes", default="1024,65536",
                    help="comma-separated powers of two")
    ap.add_argument("--no-upstream", action="store_true",
                    help="measure this environment only")
    ap.add_argument("--upstream-venv", type=Path,
                    default=ROOT / ".venv-upstream",
                    help="where upstream's wheel is installed")
    ap.add_argument("--upstream-path", type=Path,
                    help="a directory holding upstream's installed pyopencl "
                    "(pip install --target), run with this interpreter "
                    "instead of the venv: for machines without a network")
    ap.add_argument("--no-real-clients", dest="real_clients",
                    action="store_false",
                    help="skip the real clients' rows (reikna, "
                    "pyclesperanto-prototype, silx), which are otherwise "
                    "installed on first use into each column's virtual "
                    "environment")
    ap.add_argument("--no-cupy", dest="cupy", action="store_false",
                    help="no cupy column (measured otherwise where the "
                    "fork's interpreter imports cupy and sees a CUDA "
                    "device)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench-out",
                    help="directory for launch_overhead.json and .png")
    ap.add_argument("--measure-only", type=Path, metavar="JSON",
                    help=argparse.SUPPRESS)
    ap.add_argument("--measure-cupy", action="store_true",
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.quick:
        args.launches, args.repeats = 300, 2
        args.sort_sizes = "1024,4096"
    if args.processes < 1:
        ap.error(f"--processes {args.processes}: at least 1")
    sizes = [int(s) for s in args.sort_sizes.split(",") if s]
    for s in sizes:
        if s < 2 or s & (s - 1):
            ap.error(f"sort size {s} is not a power of two")

    if args.measure_only is not None:
        args.measure_only.write_text(json.dumps(
            measure_cupy(args.launches, args.repeats) if args.measure_cupy
            else measure(args.launches, args.repeats, sizes,
                         args.real_clients)))
        return 0

    # Each column is measured in a fresh process of its own, started the
    # same way. (The fork's column used to run in this process, first, and
    # its C loop came out 1.3-1.7x slower than upstream's on a 2-core VM:
    # the first process measured after start-up is slow there; see
    # bench/README.md, "What to trust".)
    envs = {"fork": (Path(sys.executable), None)}
    if not args.no_upstream:
        env = None
        if args.upstream_path is not None:
            py = Path(sys.executable)
            # upstream first, and no other entry that holds a pyopencl
            others = [e for e in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                      if e and not (Path(e) / "pyopencl").exists()]
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                [str(args.upstream_path.resolve()), *others]))
        else:
            py = upstream_python(args.upstream_venv)
        envs["upstream"] = (py, env)
    install_notes = []
    if args.real_clients:
        for name, (py, env) in envs.items():
            why = ensure_real_clients(py, env, name)
            if why:
                install_notes.append(why)
    # CuPy's column: in the fork's interpreter, in processes of its own,
    # alternating with the others'
    why = "--no-cupy: no cupy column" if not args.cupy else cupy_absent_in(
        *envs["fork"])
    if why:
        install_notes.append(why)
    else:
        envs["cupy"] = envs["fork"]
    # With --processes N, the columns' processes alternate N times and each
    # path keeps its best: on a shared machine a slow spell of seconds
    # otherwise falls on one column's process and not on the other's.
    measured: dict[str, list[dict]] = {name: [] for name in envs}
    dropped = 0
    for _ in range(args.processes):
        for name, (py, env) in envs.items():
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / f"{name}.json"
                cmd = [str(py), str(Path(__file__).resolve()),
                       "--measure-only", str(out),
                       "--launches", str(args.launches),
                       "--repeats", str(args.repeats),
                       "--sort-sizes", ",".join(map(str, sizes)),
                       *([] if args.real_clients else ["--no-real-clients"]),
                       *(["--measure-cupy"] if name == "cupy" else [])]
                dropped += run_column(cmd, tmp, env)
                measured[name].append(json.loads(out.read_text()))
    runs = {name: best_of_processes(results)
            for name, results in measured.items()}
    add_fork_ratios(runs)
    if "upstream" in runs:
        for section in ("reikna", "clients"):
            up = runs["upstream"].get(section, {})
            for key, entry in runs["fork"].get(section, {}).items():
                if key in up:
                    # fork over upstream in the json, as older runs have
                    # it; the table prints upstream / fork
                    entry["vs_upstream"] = entry["us"] / up[key]["us"]
                    if "digest" in entry:
                        entry["same_result"] = (
                            entry["digest"] == up[key]["digest"]
                            and "differs" not in entry["digest"])
    if dropped:
        install_notes.append(
            f"{dropped} lines \"N warnings generated.\" not shown: PoCL's "
            "compiler counts the warnings on kernels it builds (the real "
            "clients'), once, until its kernel cache has them")
    runs[next(iter(runs))]["notes"].extend(install_notes)

    print_table(runs)
    args.out.mkdir(parents=True, exist_ok=True)
    json_path = args.out / "launch_overhead.json"
    json_path.write_text(json.dumps({"runs": runs}, indent=2) + "\n")
    print(f"\nwrote {json_path}")
    png_path = args.out / "launch_overhead.png"
    why = plot(runs, png_path)
    print(why or f"wrote {png_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
