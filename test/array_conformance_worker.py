"""The worker of test_fork_array_conformance.py: runs pyopencl.array-level
cases in one interpreter (the fork's, or upstream's released wheel in its
own virtual environment) and answers one JSON line per case.

``python array_conformance_worker.py CASES.json`` sets up a context and two
queues, writes ``{"ready": true, ...}``, then runs the cases of the file
(a JSON list of ``{"id", "setup", "steps", "needs"}``) in order, in this one
process, so that whatever an earlier case left in pyopencl's caches stays
there for the later ones (as it would in a program). Each case gets a fresh
namespace; *setup* runs first, then each step. A step that is one
expression is evaluated and its value described; any other step is
executed. Each step answers ``{"value": ...}`` or ``{"exc": "module.qualname",
"msg": ...}``, and ``events``: ``len(x.events)`` for each array bound to a
name of the namespace after the step, and ``warnings``: those the step
issued (recorded with the "always" filter), as test/conformance_worker.py
describes them (a step is compiled as the file ``<case>``). The answer of a case::

    {"id": ..., "steps": [...]}  or  {"id": ..., "setup_error": "..."}
    or  {"id": ..., "skip": "why"}

(each with ``seconds``, the case's wall time, which is not compared).

An array is described by its dtype (``dtype.str`` and ``dtype.char``),
shape, strides, flags, ``len(events)`` (read before anything is read back),
the type of its first element after ``.get()`` and the hex of its values
(C order); ``meta(x)`` marks an array whose values mean nothing
(``empty``). Everything else the process prints goes to stderr: stdout is
the protocol. Nothing here is upstream PyOpenCL code; it only calls its
public API.
"""

# Every exception of a case is its outcome, and a case is code to run:
# ruff: noqa: BLE001, S102, S110

from __future__ import annotations

import json
import os
import re
import sys
import time
import warnings


N = 5  # elements of the default arrays

DTYPES = {
    "int8": "int8", "uint8": "uint8", "int16": "int16", "uint16": "uint16",
    "int32": "int32", "uint32": "uint32", "int64": "int64", "uint64": "uint64",
    "longlong": "longlong", "ulonglong": "ulonglong", "float32": "float32",
    "float64": "float64", "complex64": "complex64", "complex128": "complex128",
    "bool": "bool_",
}


def _type_name(t: type) -> str:
    return f"{t.__module__}.{t.__qualname__}"


CASE_FILE = "<case>"
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_PACKAGE_DIR: list[str] = []


def _warning(w: warnings.WarningMessage) -> dict:
    """One recorded warning: its class, message and the file it points at."""
    filename, text = str(w.filename), str(w.message)
    for d in _PACKAGE_DIR:
        text = text.replace(d, "<pyopencl>")
    if filename == CASE_FILE:
        place = "case"
    elif filename.startswith("<generated"):
        place = "generated"
    elif any(filename.startswith(d) for d in _PACKAGE_DIR):
        place = "pyopencl"
    else:
        place = "other"
    return {"category": _type_name(w.category),
            "msg": _ADDRESS.sub("0x?", text)[:300], "place": place,
            "line": w.lineno if place == "case" else None}


class Meta:
    """An array of which only the metadata is compared (``empty``)."""

    def __init__(self, ary):
        self.ary = ary


class CountingAllocator:
    """Allocates buffers as cl_array.empty does and keeps each request."""

    def __init__(self, cl, ctx):
        self.cl, self.ctx = cl, ctx
        self.calls: list[int] = []

    def __call__(self, nbytes):
        self.calls.append(int(nbytes))
        return self.cl.Buffer(self.ctx, self.cl.mem_flags.READ_WRITE,
                              max(int(nbytes), 1))


class Worker:
    def __init__(self) -> None:
        warnings.simplefilter("ignore")
        import numpy as np

        import pyopencl as cl
        import pyopencl.array as cla

        self.np, self.cl, self.cla = np, cl, cla
        _PACKAGE_DIR[:] = [os.path.dirname(os.path.abspath(cl.__file__))]
        self.ctx = cl.create_some_context(interactive=False)
        dev = self.ctx.devices[0]
        self.q = cl.CommandQueue(self.ctx)
        self.q2 = cl.CommandQueue(self.ctx)
        self.kept: dict = {}
        self.caps = {
            "version": cl.VERSION_TEXT, "python": sys.version.split()[0],
            "numpy": np.__version__,
            "device": f"{dev.name} ({dev.platform.name})",
            "double": bool(dev.double_fp_config),
        }

    def host(self, name: str, which: str = "a", shape=(N,)):
        """Deterministic values of dtype *name*; "b" has no zeros (it is a
        divisor: an integer division by zero would kill the process)."""
        np = self.np
        dt = np.dtype(getattr(np, DTYPES[name]))
        n = int(np.prod(shape, dtype=np.int64))
        if dt.kind == "b":
            base = [True, False, True, True, False] if which == "a" else [True]
        elif dt.kind == "u":
            base = [0, 1, 2, 3, 7] if which == "a" else [1, 2, 3, 4, 5]
        elif dt.kind == "i":
            base = [-3, 0, 1, 2, 7] if which == "a" else [1, 2, 3, -2, 5]
        elif dt.kind == "f":
            base = ([-1.5, 0.0, 0.25, 2.0, 7.5] if which == "a"
                    else [0.5, 2.0, -3.0, 4.0, 1.25])
        else:
            base = ([-1.5 + 1j, 0, 0.25 - 2j, 2, 7.5 + 0.5j] if which == "a"
                    else [0.5, 2 - 1j, -3 + 1j, 4j, 1.25])
        return np.resize(np.array(base, dtype=dt), n).reshape(shape)

    def namespace(self) -> dict:
        np, cl, cla = self.np, self.cl, self.cla
        q = self.q

        def A(name, which="a", shape=(N,), queue=q):
            return cla.to_device(queue, self.host(name, which, shape))

        return {
            "np": np, "cl": cl, "cla": cla, "ctx": self.ctx, "q": q,
            "q2": self.q2, "N": N, "A": A, "H": self.host, "meta": Meta,
            "T": lambda name: getattr(np, DTYPES[name]),
            "ev": lambda: cl.enqueue_marker(q),
            "alloc": CountingAllocator(cl, self.ctx), "once": self.once,
        }

    def once(self, name: str, make):
        """*make()*, made once per process (kernels that cases share)."""
        if name not in self.kept:
            self.kept[name] = make()
        return self.kept[name]

    def describe(self, value, depth: int = 0):
        np, cla = self.np, self.cla
        if isinstance(value, Meta):
            return self.describe_array(value.ary, values=False)
        if isinstance(value, cla.Array):
            return self.describe_array(value)
        if isinstance(value, (list, tuple)) and depth < 2:
            return {"type": type(value).__name__,
                    "items": [self.describe(v, depth + 1) for v in value]}
        if isinstance(value, (np.ndarray, np.generic)):
            ary = np.asarray(value)
            return {"type": _type_name(type(value)), "dtype": ary.dtype.str,
                    "char": ary.dtype.char, "shape": list(ary.shape),
                    "values": np.ascontiguousarray(ary).tobytes().hex()}
        if value is None or isinstance(value, (bool, int, float, complex, str)):
            return {"type": _type_name(type(value)), "repr": repr(value)}
        return {"type": _type_name(type(value))}

    def describe_array(self, a, values: bool = True) -> dict:
        np = self.np
        d = {"type": _type_name(type(a)), "dtype": a.dtype.str,
             "char": a.dtype.char, "shape": [int(n) for n in a.shape],
             # a shape given as numpy integers may be kept so
             "shape_types": sorted({_type_name(type(n)) for n in a.shape}),
             "strides": [int(n) for n in a.strides], "c": bool(a.flags.c_contiguous),
             "f": bool(a.flags.f_contiguous), "events": len(a.events)}
        if values:
            try:
                h = a.get()
            except Exception as e:
                d["get_exc"] = _type_name(type(e))
                return d
            if h.size:
                d["item0"] = _type_name(type(h[(0,) * h.ndim]))
            d["values"] = np.ascontiguousarray(h).tobytes().hex()
        return d

    def events(self, ns: dict) -> dict:
        return {k: len(v.events) for k, v in sorted(ns.items())
                if isinstance(v, self.cla.Array)}

    def run(self, case: dict) -> dict:
        if case.get("needs") == "double" and not self.caps["double"]:
            return {"skip": f"no double support: {self.caps['device']}"}
        ns = self.namespace()
        try:
            exec(compile(case.get("setup") or "", "<setup>", "exec"), ns)
        except Exception as e:
            return {"setup_error": f"{_type_name(type(e))}: {str(e)[:300]}"}
        steps = []
        for step in case["steps"]:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    try:
                        compiled = compile(step, CASE_FILE, "eval")
                    except SyntaxError:
                        exec(compile(step, CASE_FILE, "exec"), ns)
                        out = {"value": None}
                    else:
                        value = eval(compiled, ns)
                        # the events first: reading back adds none, but the
                        # description must not depend on that
                        evs = self.events(ns)
                        out = {"value": self.describe(value), "events": evs}
                except Exception as e:
                    out = {"exc": _type_name(type(e)), "msg": str(e)[:300]}
            out["warnings"] = [_warning(w) for w in caught]
            out.setdefault("events", self.events(ns))
            steps.append(out)
        return {"steps": steps}


def main() -> int:
    # the protocol goes to the original stdout; all other output, also from
    # C code, to stderr
    proto = os.fdopen(os.dup(1), "w", encoding="ascii", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    try:
        worker = Worker()
    except Exception as e:
        proto.write(json.dumps({"ready": False,
                                "error": f"{type(e).__name__}: {e}"}) + "\n")
        return 1
    proto.write(json.dumps({"ready": True, **worker.caps}) + "\n")
    for case in cases:
        start = time.perf_counter()
        try:
            reply = worker.run(case)
        except Exception as e:  # the worker's own failure, not the case's
            reply = {"setup_error": f"worker: {type(e).__name__}: {e}"}
        for queue in (worker.q, worker.q2):
            try:
                queue.finish()
            except Exception:
                pass
        reply["id"] = case["id"]
        reply["seconds"] = round(time.perf_counter() - start, 3)
        proto.write(json.dumps(reply, default=repr) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
