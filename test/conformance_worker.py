"""The worker of test_fork_conformance.py: runs launch-API cases in one
interpreter (the fork's, or upstream's released wheel in its own virtual
environment) and answers one JSON line per case.

It sets up a context, queues and kernel sources once, writes
``{"ready": true, ...}``, then reads case descriptors, one JSON object a
line, from stdin::

    {"id": "...", "setup": "python statements", "code": "python statements"}

For each case it makes fresh state (a fresh program from binaries, fresh
kernels, fresh result buffers with a known fill) in a fresh namespace, runs
*setup*, takes a snapshot of the result buffers, runs *code*, finishes the
queues and answers one of::

    {"ok": true, "result": "<hex of the result buffers>", "ret": "<type>",
     "warnings": [...]}
    {"ok": false, "exc": ["<module.qualname>" for each class of the MRO],
     "msg": "<str(e)[:300]>", "msg_key": "<str(e), memory addresses as 0x?>",
     "result": "<hex of the result buffers>", "enqueued": <bool>,
     "warnings": [...]}
    {"setup_error": "..."}

*enqueued* says whether the result buffers changed between the snapshot and
the end of a failing case: an argument error should come before anything is
enqueued; *result* is what they hold then (a failing case may enqueue
something before its error, as upstream may). *code* that is one
expression is evaluated, and the type of its value is *ret*; otherwise
*ret* is the type of the variable ``ret``.

*warnings* are those *code* issued (all of them: recorded with the
"always" filter), each ``{"category": "module.qualname", "msg": "<the
message, as msg_key>", "place": ..., "line": ...}``, where *place* says
which file the warning points at: "case" (*code*, compiled as the file
``<case>``; *line* is then its line), "setup", "generated" (an invoker
pyopencl generated), "pyopencl" (a file of the pyopencl package), "worker"
(this file) or "other".

Everything else the process prints goes to stderr: stdout is the protocol.
Nothing here is upstream PyOpenCL code; it only calls its public API.
"""

# Every exception of a case is its outcome, and a case is code to run:
# ruff: noqa: BLE001, S102, S110

from __future__ import annotations

import json
import os
import re
import sys
import warnings


N = 64  # int32 elements per result buffer

# work-item index over up to three dimensions; the global offset is part of
# get_global_id, so every write is bounds-checked
_IDX = ("(get_global_id(0) + get_global_size(0) * (get_global_id(1)"
        " + get_global_size(1) * get_global_id(2)))")

# (kernel suffix, OpenCL type) of the scalar-store kernels st_<suffix>
SCALAR_TYPES = [
    ("char", "char"), ("uchar", "uchar"), ("short", "short"),
    ("ushort", "ushort"), ("int", "int"), ("uint", "uint"), ("long", "long"),
    ("ulong", "ulong"), ("float", "float"), ("double", "double"),
    ("float2", "float2"), ("double2", "double2"),
]

SRC = f"""
#pragma OPENCL EXTENSION cl_khr_fp64: enable
#define N {N}
#define IDX {_IDX}

__kernel void k(__global int *out, int x)
{{
    size_t i = IDX;
    if (i < N) out[i] = x + (int) i;
}}

__kernel void kp(__global int *out, __global const int *src, int x)
{{
    size_t i = IDX;
    if (i < N) out[i] = src ? src[i] + x : -x;
}}

__kernel void kl(__global int *out, __local int *tmp, int x)
{{
    size_t l = get_local_id(0);
    size_t i = IDX;
    if (l < 4) tmp[l] = x + (int) i;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (i < N) out[i] = l < 4 ? tmp[l] : -1;
}}

__kernel void k0(void)
{{
}}

// an array with offset (VectorArg(..., with_offset=True)) and one without
__kernel void ko(__global int *out, long off, __global const int *src, int x)
{{
    __global int *o = (__global int *) ((__global char *) out + off);
    size_t i = IDX;
    if (i < N - off / 4) o[i] = (src ? src[i] : 1000) + x + (int) i;
}}

// two int arguments; order-dependent, so that launches that run out of order
// or twice show
__kernel void k2(__global int *out, int x, int y)
{{
    size_t i = IDX;
    if (i < N) out[i] = (int) ((uint) out[i] * 3u + (uint) x + (uint) y * (uint) i);
}}

// a float, then an int: a declared float32 converted before an int refuses
__kernel void kf(__global int *out, float y, int x)
{{
    size_t i = IDX;
    if (i < N) out[i] = (int) y + x + (int) i;
}}

__kernel void k5(__global int *out, char a, short b, long c, double d)
{{
    size_t i = IDX;
    if (i < N) out[i] = (int) a + (int) b + (int) c + (int) d + (int) i;
}}
""" + "".join(
    f"""
__kernel void st_{name}(__global {ctype} *out, {ctype} x)
{{
    size_t i = get_global_id(0);
    if (i < 4) out[i] = x;
}}
""" for name, ctype in SCALAR_TYPES)

# T and TWO come from the build options: a signature that changes on rebuild
SRC_T = f"""
#define N {N}
#ifdef TWO
#define MORE , T y
#define PLUS + y
#else
#define MORE
#define PLUS
#endif
__kernel void kt(__global T *out, T x MORE)
{{
    size_t i = get_global_id(0);
    if (i < N) out[i] = x PLUS;
}}
"""

# names a case may use that are made only when its text mentions them
_LAZY = re.compile(
    r"\b(prg|knl|kp|kl|kf|k0|k2|k5|ko|K|evt|ctx2|q2|svm|svm_ary)\b")
KERNELS = ("knl", "kp", "kl", "kf", "k0", "k2", "k5", "ko")


def _class_names(exc: BaseException) -> list[str]:
    return [f"{c.__module__}.{c.__qualname__}" for c in type(exc).__mro__]


def _message(exc: BaseException) -> str:
    try:
        return str(exc)[:300]
    except Exception as e:  # a message that cannot be made is an outcome too
        return f"<str() failed: {type(e).__name__}>"


# a memory address in a message (an object's repr): the only part of a
# message that may differ between the two interpreters, besides where each
# has its pyopencl installed (a build log's "-I .../pyopencl/cl")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_PACKAGE_DIR: list[str] = []


def _message_key(exc: BaseException) -> str:
    """The whole message, memory addresses and this interpreter's pyopencl
    directory replaced, for comparing."""
    try:
        text = str(exc)
    except Exception as e:
        return f"<str() failed: {type(e).__name__}>"
    return _key(text)[:20000]


def _key(text: str) -> str:
    for d in _PACKAGE_DIR:
        text = text.replace(d, "<pyopencl>")
    return _ADDRESS.sub("0x?", text)


CASE_FILE = "<case>"


def _warning(w: warnings.WarningMessage) -> dict:
    """One recorded warning: its class, message and the file it points at."""
    c, filename = w.category, str(w.filename)
    if filename == CASE_FILE:
        place = "case"
    elif filename == "<setup>":
        place = "setup"
    elif filename.startswith("<generated"):
        place = "generated"
    elif any(filename.startswith(d) for d in _PACKAGE_DIR):
        place = "pyopencl"
    elif os.path.abspath(filename) == os.path.abspath(__file__):
        place = "worker"
    else:
        place = "other"
    return {"category": f"{c.__module__}.{c.__qualname__}",
            "msg": _key(str(w.message))[:300], "place": place,
            "line": w.lineno if place == "case" else None}


class Worker:
    def __init__(self) -> None:
        warnings.simplefilter("ignore")
        import numpy as np

        import pyopencl as cl

        self.np = np
        self.cl = cl
        _PACKAGE_DIR[:] = [os.path.dirname(os.path.abspath(cl.__file__))]
        self.ctx = ctx = cl.create_some_context(interactive=False)
        self.dev = dev = ctx.devices[0]
        self.q = cl.CommandQueue(ctx)
        qp = cl.command_queue_properties
        self.q_prof = cl.CommandQueue(ctx, properties=qp.PROFILING_ENABLE)
        try:
            self.q_ooo = cl.CommandQueue(
                ctx, properties=qp.OUT_OF_ORDER_EXEC_MODE_ENABLE)
        except cl.Error:
            self.q_ooo = None
        self.binaries = cl.Program(ctx, SRC).build().binaries
        self._ctx2 = None
        self.fill = np.full(N, 0x5AA5A55A, dtype=np.uint32).view(np.int32)
        self.fill2 = np.full(N, 0x0F0FF0F0, dtype=np.uint32).view(np.int32)
        try:
            svm = int(dev.svm_capabilities)
        except Exception:
            svm = 0
        self.caps = {
            "version": cl.VERSION_TEXT,
            "python": sys.version.split()[0],
            "device": f"{dev.name} ({dev.platform.name})",
            "svm": bool(svm & cl.device_svm_capabilities.COARSE_GRAIN_BUFFER),
            "ooo": self.q_ooo is not None,
            "get_kernel": hasattr(cl.Program, "get_kernel"),
        }

    def queues(self):
        return [x for x in (self.q, self.q_prof, self.q_ooo) if x is not None]

    def finish(self) -> None:
        for queue in self.queues():
            try:
                queue.finish()
            except Exception:
                pass

    def namespace(self, text: str) -> dict:
        cl, np, ctx, q = self.cl, self.np, self.ctx, self.q
        mf = cl.mem_flags
        ns = {
            "cl": cl, "np": np, "ctx": ctx, "dev": self.dev, "q": q,
            "q_prof": self.q_prof, "q_ooo": self.q_ooo, "N": N,
            "SRC": SRC, "SRC_T": SRC_T, "BINARIES": self.binaries,
            "buf": cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR,
                             hostbuf=self.fill),
            "buf2": cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR,
                              hostbuf=self.fill2),
        }
        used = set(_LAZY.findall(text))
        if used & {"prg", "K", *KERNELS}:
            # a fresh program, so that no case sees what an earlier one left
            # in a program (the fork keeps invokers per program)
            prg = cl.Program(ctx, ctx.devices, self.binaries).build()
            ns["prg"] = prg
            ns["K"] = lambda name: cl.Kernel(prg, name)
            for name in KERNELS:
                if name in used:
                    ns[name] = cl.Kernel(prg, "k" if name == "knl" else name)
        if "evt" in used:
            ns["evt"] = cl.enqueue_marker(q)
            q.finish()
        if used & {"ctx2", "q2"}:
            if self._ctx2 is None:
                ctx2 = cl.Context(ctx.devices)
                self._ctx2 = (ctx2, cl.CommandQueue(ctx2))
            ns["ctx2"], ns["q2"] = self._ctx2
        if used & {"svm", "svm_ary"} and self.caps["svm"]:
            ary = cl.svm_empty(ctx, cl.svm_mem_flags.READ_WRITE, N, np.int32)
            cl.enqueue_copy(q, cl.SVM(ary), self.fill)
            q.finish()
            ns["svm_ary"] = ary
            ns["svm"] = cl.SVM(ary)
        return ns

    def read_back(self, ns: dict) -> str:
        """The result buffers (and an SVM array, ``extra``) as hex."""
        cl, np = self.cl, self.np
        self.finish()
        parts = []
        for name in ("buf", "buf2", "svm_ary"):
            obj = ns.get(name)
            if obj is None:
                continue
            host = np.empty(N, np.int32)
            try:
                if name == "svm_ary":
                    cl.enqueue_copy(self.q, host, cl.SVM(obj))
                else:
                    cl.enqueue_copy(self.q, host, obj)
                self.q.finish()
                parts.append(f"{name}:{host.tobytes().hex()}")
            except Exception as e:
                parts.append(f"{name}:<{type(e).__name__}>")
        extra = ns.get("extra")
        if extra is not None:
            parts.append(f"extra:{bytes(extra).hex()}")
        return "|".join(parts)

    def run(self, case: dict) -> dict:
        setup = case.get("setup") or ""
        code = case["code"]
        try:
            ns = self.namespace(setup + "\n" + code)
            if setup:
                exec(compile(setup, "<setup>", "exec"), ns)
            before = self.read_back(ns)
        except Exception as e:
            return {"setup_error": f"{type(e).__name__}: {_message(e)}"}

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                try:
                    compiled = compile(code, CASE_FILE, "eval")
                except SyntaxError:
                    exec(compile(code, CASE_FILE, "exec"), ns)
                    value = ns.get("ret")
                else:
                    value = eval(compiled, ns)
            except Exception as e:
                error: Exception | None = e
            else:
                error = None
        warned = [_warning(w) for w in caught]
        if error is not None:
            after = self.read_back(ns)
            return {"ok": False, "exc": _class_names(error), "msg": _message(error),
                    "msg_key": _message_key(error), "result": after,
                    "enqueued": after != before, "warnings": warned}
        ret = type(value)
        return {"ok": True, "result": self.read_back(ns),
                "ret": f"{ret.__module__}.{ret.__qualname__}", "warnings": warned}


def main() -> int:
    # the protocol goes to the original stdout; all other output, also from
    # C code, to stderr
    proto = os.fdopen(os.dup(1), "w", encoding="ascii", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    try:
        worker = Worker()
    except Exception as e:
        proto.write(json.dumps({"ready": False,
                                "error": f"{type(e).__name__}: {e}"}) + "\n")
        return 1
    proto.write(json.dumps({"ready": True, **worker.caps}) + "\n")

    for line in sys.stdin:
        if not line.strip():
            continue
        case = json.loads(line)
        try:
            reply = worker.run(case)
        except Exception as e:  # the worker's own failure, not the case's
            reply = {"setup_error": f"worker: {type(e).__name__}: {e}"}
        finally:
            worker.finish()
        reply["id"] = case.get("id")
        proto.write(json.dumps(reply) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
