"""Conformance of the fork's pyopencl.array layer with upstream's released
wheel.

A table of array-level operations, generated from small tables: binary
operations between arrays and between an array and Python and numpy
scalars over every dtype, in-place operations, unary operations and
astype, reductions, fill, array creation, scans (with ``size=`` and a
counting allocator), ElementwiseKernel and ReductionKernel with scalar
arguments, ``queue=`` and ``wait_for=`` keywords, and sequences of
operations in one process where a cache of promotion results could leak
(int64 after longlong, uint64 after ulonglong, a huge Python int or float
after a small one, in both orders, also in a fresh process each).

Every case runs in a worker subprocess (test/array_conformance_worker.py)
of the fork's Python and of the virtual environment with upstream's wheel
that test_fork_conformance.py finds, so a crash is a result. The cases of
the table run in order in one worker process per side (what an earlier
case leaves in pyopencl's caches stays for the later ones, the same on
both sides); the sequences also run each in a fresh process. The rule, per
case and step: the two sides agree in everything the worker describes
(dtype.str and dtype.char, shape, strides, flags, values, the type of
``.get()``'s first element, ``len(events)`` of the result and of each named
array, and the exception class, module.qualname), floating-point values
within a relative 1e-6 (single) or 1e-13 (double), NaNs equal, and the
warnings of each step (test_fork_conformance.warning_differences). Exception
messages are compared but only reported. Cases with float64 or complex128
are skipped without double support. Where upstream silently does the wrong
thing (``KNOWN_UPSTREAM_BUGS``), the fork must raise a clear error instead
(test_fork_conformance.clear_error).

``python test/test_fork_array_conformance.py`` runs the table without
pytest and prints the summary; both write
``bench-out/array_conformance.json``.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import re
import selectors
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest


sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_fork_conformance import (
    clear_error,
    named_conversion_error,
    report,
    upstream_interpreter,
    warning_differences,
    worker_env,
)


ROOT = Path(__file__).resolve().parent.parent
WORKER = Path(__file__).resolve().parent / "array_conformance_worker.py"
OUT_JSON = ROOT / "bench-out" / "array_conformance.json"

CASE_TIMEOUT_S = 120
START_TIMEOUT_S = 180


# {{{ the case table

@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    steps: tuple[str, ...]
    setup: str = ""
    # run also in a fresh process of its own (the sequences)
    fresh: bool = False

    def descriptor(self) -> dict:
        text = self.setup + "".join(self.steps)
        needs = "double" if "float64" in text or "complex128" in text else None
        return {"id": self.id, "setup": self.setup, "steps": list(self.steps),
                "needs": needs}


CASES: list[Case] = []


def case(id: str, *steps: str, setup: str = "", fresh: bool = False) -> None:
    assert id not in {c.id for c in CASES}, id
    CASES.append(Case(id, steps, setup, fresh))


DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
          "uint64", "longlong", "ulonglong", "float32", "float64",
          "complex64", "complex128", "bool"]

OPS = {
    "add": "a + b", "sub": "a - b", "mul": "a * b", "truediv": "a / b",
    "floordiv": "a // b", "mod": "a % b", "pow": "a ** b", "and": "a & b",
    "or": "a | b", "xor": "a ^ b", "lt": "a < b", "eq": "a == b",
    "maximum": "cla.maximum(a, b)", "minimum": "cla.minimum(a, b)",
}


def ab(da: str, db: str) -> str:
    return f"a = A({da!r}, 'a')\nb = A({db!r}, 'b')"


# {{{ binary operations

for op, expr in OPS.items():
    for dt in DTYPES:
        case(f"aa-{op}-{dt}", expr, setup=ab(dt, dt))

MIXED = [("int8", "uint8"), ("int16", "uint32"), ("int32", "uint64"),
         ("int64", "uint64"), ("int64", "longlong"), ("longlong", "int64"),
         ("uint64", "ulonglong"), ("ulonglong", "uint64"), ("ulonglong", "int64"),
         ("bool", "int8"), ("bool", "float32"), ("uint8", "float32"),
         ("int64", "float32"), ("uint64", "float64"), ("float32", "float64"),
         ("float32", "complex64"), ("float64", "complex64"),
         ("int32", "complex64")]
for da, db in MIXED:
    for op in ["add", "mul", "truediv", "floordiv", "pow", "lt", "maximum"]:
        case(f"aa-{op}-{da}-{db}", OPS[op], setup=ab(da, db))

SCALARS = {
    "int": "3", "int-neg": "-2", "int-big": "2**40", "float": "2.5",
    "float-huge": "1e300", "complex": "(1+2j)", "bool": "True",
    "np-int8": "np.int8(3)", "np-int64": "np.int64(3)",
    "np-longlong": "np.longlong(3)", "np-uint64": "np.uint64(3)",
    "np-float32": "np.float32(2.5)", "np-float64": "np.float64(2.5)",
    "np-complex64": "np.complex64(1+2j)", "np-bool": "np.bool_(True)",
}
for dt in DTYPES:
    for name, s in SCALARS.items():
        case(f"as-add-{dt}-{name}", f"a + {s}", setup=f"a = A({dt!r})")

# a subclass of int (not a weak scalar to the fork's cache), a byte-swapped
# dtype (equal char, another dtype)
for dt in ["int32", "uint64", "float32"]:
    case(f"as-intenum-{dt}", "a + E.Y", "E.Y + a", "a * E.Y", "a + 2",
         setup=f"import enum\nE = enum.IntEnum('E', 'X Y')\na = A({dt!r})")
    case(f"aa-byteswapped-{dt}", "a + b", "b + a", "a + 1", "a * 2.5",
         setup=f"h = H({dt!r})\nb = A({dt!r}, 'b')\n"
         "a = cla.to_device(q, h.astype(h.dtype.newbyteorder('>')))")

SCALAR_OPS = {
    "sub": "a - {s}", "rsub": "{s} - a", "mul": "a * {s}", "rmul": "{s} * a",
    "truediv": "a / {s}", "rtruediv": "{s} / a", "floordiv": "a // {s}",
    "mod": "a % {s}", "pow": "a ** {s}", "rpow": "{s} ** a", "lt": "a < {s}",
    "eq": "a == {s}", "and": "a & {s}", "maximum": "cla.maximum(a, {s})",
}
for dt in ["int8", "uint64", "longlong", "float32", "complex64", "bool"]:
    for name in ["int", "float", "np-float32"]:
        for op, expr in SCALAR_OPS.items():
            case(f"as-{op}-{dt}-{name}", expr.format(s=SCALARS[name]),
                 setup=f"a = A({dt!r}, 'b')")

# }}}

# {{{ in-place, unary, astype

for dt, other in [("int32", "int32"), ("int64", "longlong"),
                  ("ulonglong", "uint64"), ("float32", "float32"),
                  ("float32", "int32"), ("int32", "float32"),
                  ("complex64", "float32"), ("uint8", "int64"),
                  ("bool", "bool"), ("float64", "float32")]:
    for op in ["+=", "*="]:
        name = "iadd" if op == "+=" else "imul"
        case(f"inplace-{name}-{dt}-{other}", f"a {op} b", "a", "b",
             setup=ab(dt, other))
for dt in ["int8", "uint64", "longlong", "float32", "complex64", "bool"]:
    for name in ["int", "float", "np-float32", "np-int64"]:
        case(f"inplace-iadd-{dt}-{name}", f"a += {SCALARS[name]}", "a",
             setup=f"a = A({dt!r})")
    case(f"inplace-imul-{dt}-int", "a *= 3", "a", setup=f"a = A({dt!r})")
    case(f"inplace-chain-{dt}", "a += a", "a *= a", "a -= 1", "a",
         setup=f"a = A({dt!r})")

for dt in DTYPES:
    case(f"unary-{dt}", "-a", "abs(a)", "a.copy()", setup=f"a = A({dt!r})")
for dt in ["int8", "uint16", "int64", "longlong", "uint64", "float32",
           "complex64", "bool"]:
    for to in ["int8", "int64", "longlong", "uint64", "ulonglong", "float32",
               "float64", "complex64", "bool"]:
        case(f"astype-{dt}-{to}", f"a.astype(T({to!r}))",
             setup=f"a = A({dt!r})")

# }}}

# {{{ reductions

for dt in DTYPES:
    case(f"reduce-{dt}", "cla.sum(a)", "cla.dot(a, b)", "cla.max(a)",
         "cla.min(a)", "cla.cumsum(a)", setup=ab(dt, dt))
for dt in ["int8", "int32", "longlong", "uint64", "float32"]:
    for to in ["int64", "longlong", "float64"]:
        case(f"reduce-sum-dtype-{dt}-{to}", f"cla.sum(a, dtype=T({to!r}))",
             setup=f"a = A({dt!r})")
    case(f"reduce-dot-dtype-{dt}", "cla.dot(a, b, dtype=T('longlong'))",
         setup=ab(dt, dt))
for dt, to in [("int32", "int64"), ("int32", "longlong"), ("longlong", "int64"),
               ("float32", "float64")]:
    case(f"reduce-cumsum-dtype-{dt}-{to}",
         f"cla.cumsum(a, output_dtype=T({to!r}))", setup=f"a = A({dt!r})")
for da, db in MIXED[:10]:
    case(f"reduce-dot-{da}-{db}", "cla.dot(a, b)", "cla.vdot(a, b)",
         setup=ab(da, db))
case("reduce-empty", "cla.sum(a)", "cla.max(a)", "cla.cumsum(a)",
     setup="a = cla.zeros(q, 0, np.int32)")
case("reduce-2d", "cla.sum(a)", "cla.max(a)",
     setup="a = A('float32', shape=(3, 4))")

# }}}

# {{{ fill, creation

FILLS = {"int": "7", "int-neg": "-1", "float": "2.5", "bool": "True",
         "complex": "(1+1j)", "np-int8": "np.int8(-3)",
         "np-uint64": "np.uint64(2**63)", "np-float32": "np.float32(0.5)",
         "int-big": "2**40"}
for dt in ["int8", "uint32", "int64", "longlong", "ulonglong", "float32",
           "complex64", "bool"]:
    for name, v in FILLS.items():
        case(f"fill-{dt}-{name}", f"a.fill({v})", "a", setup=f"a = A({dt!r})")

SHAPES = {"0": "(0,)", "5": "(5,)", "3x4": "(3, 4)", "2x3x4": "(2, 3, 4)",
          "int": "5", "np-int32": "np.int32(5)", "np-uint8": "np.uint8(7)",
          "np-int64-0": "np.int64(0)", "np-uint64": "np.uint64(6)",
          "tuple-np": "(np.int64(3), np.int16(4))",
          "tuple-mixed": "(2, np.uint32(3), np.int8(4))",
          "negative": "-1", "tuple-negative": "(3, -1)", "float": "2.0",
          "tuple-float": "(2.5,)", "bool": "True", "huge": "(2**63,)",
          "np-negative": "np.int32(-2)", "empty-tuple": "()"}
for name, shape in SHAPES.items():
    for dt in ["int32", "float32", "longlong"]:
        case(f"create-{name}-{dt}",
             f"cla.zeros(q, {shape}, T({dt!r}))",
             f"meta(cla.empty(q, {shape}, T({dt!r})))",
             f"cla.zeros(q, {shape}, T({dt!r}), order='F')",
             f"cla.to_device(q, np.ones({shape}, T({dt!r})))")
    case(f"create-{name}-allocator",
         f"meta(cla.empty(q, {shape}, np.int8, allocator=alloc))",
         "alloc.calls")
for name, args in {"stop": "5", "np-int16-stop": "np.int16(5)",
                   "start-stop": "2, 9", "step": "1, 10, 3",
                   "float-step": "0, 1, 0.25", "np-int64": "np.int64(0), 4",
                   "empty": "3, 3", "negative-step": "5, 0, -1"}.items():
    for dt in ["int32", "int64", "longlong", "uint64", "float32", "float64"]:
        case(f"arange-{name}-{dt}", f"cla.arange(q, {args}, dtype=T({dt!r}))")
    case(f"arange-{name}-default", f"cla.arange(q, {args})")
# shapes whose product wraps around 2**64 (upstream: an array of size 0,
# KNOWN_UPSTREAM_BUGS), and one whose product is 0 indeed
case("create-huge-product",
     "meta(cla.empty(q, (2**32, 2**32), np.uint8))",
     "cla.zeros(q, (2**32, 2**32), np.uint8)",
     "meta(cla.empty(q, (2**62, 4), np.uint8, order='F'))",
     "meta(cla.empty(q, (np.uint64(2**32), np.uint64(2**32)), np.uint8))",
     "meta(cla.Array(q, (2**31, 2**31, 4), np.uint8))")
case("create-huge-product-zero", "meta(cla.empty(q, (2**32, 2**32, 0), np.uint8))",
     "cla.zeros(q, (0, 2**40), np.int32)")
for dt in DTYPES:
    case(f"zeros_like-{dt}", "cla.zeros_like(a)", "meta(cla.empty_like(a))",
         "cla.ones_like(a) if hasattr(cla, 'ones_like') else None",
         setup=f"a = A({dt!r}, shape=(3, 4))")

# }}}

# {{{ scans

SCAN = ("from pyopencl.scan import GenericScanKernel, InclusiveScanKernel, "
        "ExclusiveScanKernel\n"
        "gscan = once('gscan', lambda: GenericScanKernel(ctx, np.int32, "
        "arguments='__global int *ary, __global int *out', "
        "input_expr='ary[i]', scan_expr='a+b', neutral='0', "
        "output_statement='out[i] = item;'))\n"
        "iscan = once('iscan', lambda: InclusiveScanKernel(ctx, np.int32, "
        "'a+b', neutral='0'))\n"
        "escan = once('escan', lambda: ExclusiveScanKernel(ctx, np.int32, "
        "'a+b', neutral='0'))\n")
for n in [1, 5, 1000, 20000]:
    setup = SCAN + f"x = A('int32', shape=({n},))\ny = cla.zeros_like(x)\n"
    for name, size in {"none": None, "int": "3", "np-int16": "np.int16(3)",
                       "np-int64": "np.int64(3)", "np-uint8": "np.uint8(4)",
                       "full-np-int16": f"np.int16({min(n, 20000)})",
                       "zero": "0", "negative": "-5", "bool": "True",
                       "0d-array": "np.array(3)", "float": "2.0"}.items():
        kw = "" if size is None else f", size={size}"
        case(f"scan-generic-{n}-{name}",
             f"gscan(x, y, allocator=alloc{kw})", "y", "alloc.calls",
             f"gscan(x, y{kw})", "y", setup=setup)
    case(f"scan-inclusive-{n}", "iscan(x, y, allocator=alloc)", "y",
         "alloc.calls", "iscan(x)", "x", "iscan(x, 'new')", setup=setup)
    case(f"scan-exclusive-{n}", "escan(x, y, allocator=alloc)", "y",
         "alloc.calls", setup=setup)
case("scan-inclusive-size-keyword", "iscan(x, y, size=np.int16(3))", "y",
     setup=SCAN + "x = A('int32')\ny = cla.zeros_like(x)\n")
case("scan-generic-allocator-array", "gscan(x, y)", "y",
     "x.allocator is alloc", "alloc.calls",
     setup=SCAN + "x = cla.to_device(q, H('int32', shape=(300,)), "
     "allocator=alloc)\ny = cla.zeros_like(x)\nalloc.calls.clear()\n")
for dt in ["int32", "int64", "uint64", "float32", "complex64", "int8"]:
    case(f"scan-cumsum-{dt}", "cla.cumsum(a)", "cla.cumsum(a, T('int64'))",
         setup=f"a = A({dt!r}, shape=(700,))")

# }}}

# {{{ ElementwiseKernel and ReductionKernel

EK = ("from pyopencl.elementwise import ElementwiseKernel\n"
      "ek = once('ek', lambda: ElementwiseKernel(ctx, "
      "'float *x, float s, long k', 'x[i] = x[i] * s + k'))\n"
      "x = A('float32')\n")
EK_VALUES = {"int": "2", "float": "2.5", "bool": "True",
             "np-int8": "np.int8(2)", "np-int64": "np.int64(2)",
             "np-uint64": "np.uint64(2)", "np-float32": "np.float32(2.5)",
             "np-float64": "np.float64(2.5)", "complex": "(1+1j)",
             "int-big": "2**70", "none": "None", "str": "'2'"}
for name, v in EK_VALUES.items():
    case(f"elementwise-s-{name}", f"ek(x, {v}, 3)", "x", setup=EK)
    case(f"elementwise-k-{name}", f"ek(x, 1.5, {v})", "x", setup=EK)
RK = ("from pyopencl.reduction import ReductionKernel\n"
      "rk = once('rk', lambda: ReductionKernel(ctx, np.float32, "
      "neutral='0', reduce_expr='a+b', map_expr='x[i] * s + k', "
      "arguments='__global float *x, float s, int k'))\n"
      "x = A('float32')\n")
for name, v in EK_VALUES.items():
    case(f"reduction-s-{name}", f"rk(x, {v}, 3)", setup=RK)
    case(f"reduction-k-{name}", f"rk(x, 1.5, {v})", setup=RK)
case("reduction-return_event", "rk(x, 2, 3, return_event=True)", setup=RK)
case("reduction-out", "o = cla.empty(q, (), np.float32)",
     "rk(x, 2, 3, out=o)", "o", setup=RK)
case("reduction-allocator", "rk(x, 2, 3, allocator=alloc)", "alloc.calls",
     setup=RK)

# }}}

# {{{ queue= and wait_for=

WAITS = {"list": "[ev()]", "tuple": "(ev(),)", "empty": "[]", "none": "None",
         "two": "[ev(), ev()]", "int": "[3]"}
for name, w in WAITS.items():
    case(f"wait_for-fill-{name}", f"a.fill(4, wait_for={w})", "a",
         setup="a = A('int32')")
    case(f"wait_for-cumsum-{name}", f"cla.cumsum(a, wait_for={w})",
         setup="a = A('int32')")
    case(f"wait_for-elementwise-{name}", f"ek(x, 2, 3, wait_for={w})", "x",
         setup=EK)
    case(f"wait_for-reduction-{name}", f"rk(x, 2, 3, wait_for={w})", setup=RK)
    case(f"wait_for-scan-{name}", f"gscan(x, y, wait_for={w})", "y",
         setup=SCAN + "x = A('int32')\ny = cla.zeros_like(x)\n")
QUEUE_OPS = {
    "sum": "cla.sum(a, queue=q2)", "dot": "cla.dot(a, b, queue=q2)",
    "max": "cla.max(a, queue=q2)", "astype": "a.astype(np.float32, queue=q2)",
    "maximum": "cla.maximum(a, b, queue=q2)", "copy": "a.copy(queue=q2)",
    "get": "a.get(queue=q2)", "fill": "a.fill(1, queue=q2)",
    "mul_add": "a.mul_add(2, b, 3, queue=q2)", "cumsum": "cla.cumsum(a, queue=q2)",
    "with_queue": "a.with_queue(q2) + b", "with_queue-none": "a.with_queue(None) + b",
    "elementwise": "ek(x, 2, 3, queue=q2)", "reduction": "rk(x, 2, 3, queue=q2)",
    "scan": "gscan(xs, ys, queue=q2)", "any": "cla.any(a, queue=q2)",
    "to_device": "cla.to_device(q2, H('int64'))",
}
QUEUE_SETUP = (ab("int32", "int32") + "\n" + EK + RK + SCAN
               + "xs = A('int32')\nys = cla.zeros_like(xs)\n")
for name, code in QUEUE_OPS.items():
    case(f"queue-{name}", code, "a", setup=QUEUE_SETUP)
case("events-fill-30", *["a.fill(1)", "len(a.events)"] * 30,
     setup="a = A('int32')")
case("events-iadd-20", *["a += b", "len(a.events)"] * 20, "a",
     setup=ab("float32", "float32"))
case("events-finish", "a += b", "a.finish()", "a", setup=ab("int8", "int8"))

# }}}

# {{{ sequences where a cache of promotion results could leak

SEQUENCES = {
    "longlong-int64": [("longlong", "longlong"), ("int64", "int64")],
    "ulonglong-uint64": [("ulonglong", "ulonglong"), ("uint64", "uint64")],
    "longlong-int64-mixed": [("longlong", "int64"), ("int64", "longlong"),
                             ("int64", "int64")],
}
SEQ_OPS = ["a + b", "a * b", "cla.maximum(a, b)", "a + 1", "a - True",
           "a * 2.5", "a < b", "-a", "cla.sum(a)", "a.astype(a.dtype)"]
for name, pairs in SEQUENCES.items():
    for order, ps in [("forward", pairs), ("reverse", pairs[::-1])]:
        steps = []
        for da, db in ps:
            steps.append(f"a = A({da!r}, 'a')\nb = A({db!r}, 'b')")
            steps += SEQ_OPS
        case(f"seq-{name}-{order}", *steps, fresh=True)
for name, first, then in [
        ("int32-big-int", "a + 2**40", "a + 3"),
        ("int32-big-int-scalar-first", "2**40 + a", "3 + a"),
        ("float32-huge-float", "a + 1e300", "a + 1.0"),
        ("float32-huge-float-mul", "a * 1e300", "a * 2.0"),
        ("int32-float", "a + 1e300", "a + 1"),
        ("uint8-neg-int", "a + (-1)", "a + 1"),
        ("uint64-neg-int", "a + (-1)", "a + 2**63"),
        ]:
    dt = "float32" if "float32" in name else name.split("-")[0]
    for order, steps in [("forward", (first, then)),
                         ("reverse", (then, first))]:
        case(f"seq-{name}-{order}", *steps, *steps,
             setup=f"a = A({dt!r}, 'b')", fresh=True)
case("seq-after-other-dtypes",
     *[f"A({d!r}) + A({d!r})" for d in ["longlong", "int64"]],
     *[f"A({d!r}) + A({d!r}, 'b')" for d in DTYPES],
     *[f"A({d!r}) + 1" for d in DTYPES],
     *[f"A({d!r}) * A({d!r})" for d in ["int64", "longlong", "uint64",
                                         "ulonglong"]],
     "A('int32') + 2**40", "A('float32') + 1e300",
     *[f"A({d!r}) + A({d!r})" for d in ["int64", "longlong", "ulonglong",
                                         "uint64"]],
     fresh=True)

# }}}

# }}}


# {{{ running the workers

def run_side(python: str, env: dict[str, str], isolated: bool,
             cases: list[dict]) -> tuple[dict, dict[str, dict]]:
    """All *cases* in order in one worker process of *python*; after a crash
    (or a case past CASE_TIMEOUT_S) the case is marked so and a fresh worker
    runs the rest. Returns (the worker's hello, the reply of each case)."""
    replies: dict[str, dict] = {}
    hello: dict = {}
    pending = list(cases)
    with tempfile.TemporaryDirectory() as tmp:
        while pending:
            path = Path(tmp) / "cases.json"
            path.write_text(json.dumps(pending))
            with open(Path(tmp) / "stderr", "w+b") as err:
                proc = subprocess.Popen(
                    [python, *(["-I"] if isolated else []), str(WORKER), str(path)],
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                    env=env, cwd=tmp)
                assert proc.stdout is not None
                sel = selectors.DefaultSelector()
                sel.register(proc.stdout, selectors.EVENT_READ)
                timeout = START_TIMEOUT_S
                timed_out = False
                while True:
                    if not sel.select(timeout):
                        timed_out = True
                        proc.kill()
                        break
                    line = proc.stdout.readline()
                    if not line:
                        break
                    reply = json.loads(line)
                    timeout = CASE_TIMEOUT_S
                    if "ready" in reply:
                        if not reply["ready"]:
                            raise RuntimeError(f"{python}: {reply['error']}")
                        hello = reply
                        continue
                    replies[reply["id"]] = reply
                    pending.pop(0)
                sel.close()
                proc.stdout.close()
                proc.wait()
                if pending:
                    if not hello:
                        raise RuntimeError(f"{python} worker did not start")
                    err.seek(0)
                    tail = err.read().decode("utf-8", "replace")[-600:]
                    replies[pending.pop(0)["id"]] = {
                        "crash": True, "timeout": timed_out,
                        "returncode": proc.returncode, "stderr": tail}
    return hello, replies

# }}}


# {{{ comparison

def _close(u: str, f: str, dtype: str) -> bool:
    dt = np.dtype(dtype)
    if dt.kind not in "fc":
        return False
    uv = np.frombuffer(bytes.fromhex(u), dt)
    fv = np.frombuffer(bytes.fromhex(f), dt)
    rtol = 1e-6 if dt.itemsize // (2 if dt.kind == "c" else 1) <= 4 else 1e-13
    return uv.shape == fv.shape and bool(
        np.allclose(uv, fv, rtol=rtol, atol=0, equal_nan=True))


def diff_values(u, f, where: str) -> list[str]:
    """What differs between two descriptions (the worker's describe())."""
    if isinstance(u, dict) and isinstance(f, dict):
        out = []
        for k in sorted(set(u) | set(f)):
            if u.get(k) == f.get(k):
                continue
            if (k == "values" and u.get("dtype") == f.get("dtype")
                    and k in u and k in f and _close(u[k], f[k], u["dtype"])):
                continue
            if k == "items" and k in u and k in f and len(u[k]) == len(f[k]):
                for i, (ui, fi) in enumerate(zip(u[k], f[k], strict=True)):
                    out += diff_values(ui, fi, f"{where}[{i}]")
                continue
            out.append(f"{where}.{k}: upstream {_short(u.get(k))}, "
                       f"fork {_short(f.get(k))}")
        return out
    return [] if u == f else [f"{where}: upstream {u!r}, fork {f!r}"]


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 120 else text[:117] + "..."


# what may differ in two messages of the same error: memory addresses and
# PoCL's temporary file names (in a build log)
_VOLATILE = re.compile(r"0x[0-9a-fA-F]+|tempfile_\w+")


def _key(msg: str) -> str:
    return _VOLATILE.sub("?", msg)


# case id: (the steps where upstream 2026.1.4 silently does the wrong thing,
# what it does); at those steps the fork passes only with a clear error
KNOWN_UPSTREAM_BUGS = {
    "create-huge-product": (range(5), ("an array of size 0: the product of "
                                       "the shape wraps around 2**64")),
}


def compare(up: dict, fork: dict) -> tuple[list[str], list[str]]:
    """(differences, notes) of two replies to one case: notes are the
    differences in exception messages."""
    bug_steps, bug = KNOWN_UPSTREAM_BUGS.get(fork["id"], ((), ""))
    for key in ("crash", "setup_error"):
        if key in up or key in fork:
            if up.get(key) and fork.get(key) and key == "crash":
                return [], ["both crashed"]
            return [(f"{key}: upstream {_short(up.get(key) and up)}, "
                     f"fork {_short(fork.get(key) and fork)}")], []
    diffs: list[str] = []
    notes: list[str] = []
    for i, (u, f) in enumerate(zip(up["steps"], fork["steps"], strict=True)):
        if i in bug_steps:
            if not clear_error({"ok": "exc" not in f, "exc": [f.get("exc")],
                                "msg": f.get("msg", "")}):
                diffs.append(f"step {i}: upstream's bug ({bug}): the fork must "
                             f"raise a clear error, it gave {describe_step(f)}")
            continue
        if u.get("exc") != "builtins.SystemError":
            diffs += [f"step {i} warnings: {d}" for d in warning_differences(u, f)]
        if ("exc" in u and "exc" in f
                and named_conversion_error(u["exc"], u["msg"], f["exc"])):
            notes.append(f"step {i}: upstream {describe_step(u)}, the fork "
                         f"names the argument: {describe_step(f)}")
            continue
        if u.get("exc") != f.get("exc") or ("exc" in u) != ("exc" in f):
            diffs.append(f"step {i}: upstream {describe_step(u)}, "
                         f"fork {describe_step(f)}")
            continue
        if "exc" in u and _key(u["msg"]) != _key(f["msg"]):
            notes.append(f"step {i} message: upstream {_short(u['msg'])}, "
                         f"fork {_short(f['msg'])}")
        diffs += diff_values(u.get("value"), f.get("value"), f"step {i}")
        diffs += diff_values(u.get("events"), f.get("events"),
                             f"step {i} events")
    return diffs, notes


def describe_step(s: dict) -> str:
    if "exc" in s:
        return f"raised {s['exc']}: {s['msg'][:150]}"
    v = s.get("value") or {}
    if "dtype" in v:
        return f"{v['type']} {v['dtype']}/{v['char']} shape {v['shape']}"
    return f"ok ({v.get('type')})"


class Session:
    """Both sides' replies to the table (and the sequences in fresh
    processes), the differences and the report."""

    def __init__(self, cases: list[Case]) -> None:
        env = worker_env()
        python, self.upstream_reason = upstream_interpreter()
        up_env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
        sides = [(sys.executable, env, False)]
        if python is not None:
            sides.append((python, up_env, True))
        table = [c.descriptor() for c in cases]
        fresh = [c.descriptor() for c in cases if c.fresh]
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            runs = [pool.submit(run_side, *side, table) for side in sides]
            fresh_runs = [[pool.submit(run_side, *side, [d]) for side in sides]
                          for d in fresh]
            results = [r.result() for r in runs]
            fresh_results = [[r.result()[1] for r in pair] for pair in fresh_runs]
        (self.fork_hello, fork), *rest = results
        self.up_hello, up = rest[0] if rest else ({}, {})
        if rest and ((uv := self.up_hello["version"]) == self.fork_hello["version"]
                     or "+" in uv):
            self.upstream_reason = (f"the upstream environment has pyopencl {uv}, "
                                    f"the fork {self.fork_hello['version']}")
            up = {}
        self.outcomes: dict[str, dict] = {}
        for c in cases:
            self.outcomes[c.id] = self.judge(c.id, fork[c.id], up.get(c.id))
        for d, pair in zip(fresh, fresh_results, strict=True):
            fid = f"{d['id']}/fresh-process"
            self.outcomes[fid] = self.judge(fid, pair[0][d["id"]],
                                            pair[1][d["id"]] if up else None)

    def judge(self, id: str, fork: dict, up: dict | None) -> dict:
        if "skip" in fork:
            return {"id": id, "skip": fork["skip"]}
        if up is None:
            return {"id": id, "skip": "comparison skipped: "
                    f"{self.upstream_reason}", "fork": fork}
        diffs, notes = compare(up, fork)
        return {"id": id, "diffs": diffs, "notes": notes, "fork": fork,
                "upstream": up}

    def counts(self) -> dict[str, int]:
        o = self.outcomes.values()
        return {"same": sum(1 for x in o if "diffs" in x and not x["diffs"]),
                "different": sum(1 for x in o if x.get("diffs")),
                "skipped": sum(1 for x in o if "skip" in x),
                "message notes": sum(1 for x in o if x.get("notes"))}

    def report_lines(self) -> list[str]:
        up = self.up_hello.get("version") or f"(not compared: {self.upstream_reason})"
        lines = [(f"fork {self.fork_hello['version']} vs upstream {up}, "
                  f"Python {self.fork_hello['python']}, numpy "
                  f"{self.fork_hello['numpy']}, {self.fork_hello['device']}"),
                 "cases: " + ", ".join(f"{k} {v}" for k, v in self.counts().items())]
        for o in self.outcomes.values():
            if o.get("diffs"):
                lines.append(f"  DIFFERENT {o['id']}:")
                lines += [f"    {d}" for d in o["diffs"]]
            for n in o.get("notes", []):
                lines.append(f"  note {o['id']}: {n}")
        return lines

    def write_json(self) -> Path:
        OUT_JSON.parent.mkdir(parents=True, exist_ok=True)
        OUT_JSON.write_text(json.dumps(
            {"fork": self.fork_hello, "upstream": self.up_hello or None,
             "upstream_skipped_because": self.upstream_reason or None,
             "counts": self.counts(), "cases": list(self.outcomes.values())},
            indent=1) + "\n")
        return OUT_JSON

# }}}


# {{{ the tests

@pytest.fixture(scope="module")
def conformance(request):
    s = Session(CASES)
    path = s.write_json()
    yield s
    report(request, "fork array conformance with upstream",
           [*s.report_lines(), f"wrote {path}"])


def test_table_size():
    assert len(CASES) >= 300
    assert len({c.id for c in CASES}) == len(CASES)


IDS = [c.id for c in CASES] + [f"{c.id}/fresh-process" for c in CASES if c.fresh]


@pytest.mark.parametrize("id", IDS)
def test_case(conformance, id):
    o = conformance.outcomes[id]
    if "skip" in o:
        pytest.skip(o["skip"])
    assert not o["diffs"], "\n".join(o["diffs"])

# }}}


def main() -> int:
    s = Session(CASES)
    print("\n".join(s.report_lines()))
    print(f"wrote {s.write_json()}")
    return 1 if s.counts()["different"] else 0


if __name__ == "__main__":
    sys.exit(main())
