"""The launch-overhead benchmark runs and reports sane results.

Quick mode only; no time is asserted, only that every path is reported with
a positive time and a ratio, and that every sort is right (the #830
reproducer, a bitonic sort in each style, checked against numpy: a guard,
since it passes on 2026.1.4 too).

No test asserts a time. test_launches_stay_cheap is the guard that
launches do not get slow again: it asserts ratios of instruction counts
(callgrind, the Python thread), which repeat from run to run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import launch_overhead as lo  # noqa: E402


def run_bench(out: Path, *extra: str) -> dict:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "launch_overhead.py"), "--quick",
         "--out", str(out), *extra],
        capture_output=True, text=True, check=False,
        env={k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "per launch" in proc.stdout
    assert "array operation, 256 float32" in proc.stdout
    for _key, label in lo.ARRAY_OPS:
        assert label in proc.stdout
    assert "WRONG RESULT" not in proc.stdout
    runs = json.loads((out / "launch_overhead.json").read_text())["runs"]
    notes = runs["fork"]["notes"]
    if "--no-cupy" in extra:
        assert "cupy" not in runs
        assert "--no-cupy: no cupy column" in notes
    elif "cupy" not in runs:   # no CuPy or no CUDA device here: said why
        assert [n for n in notes if n.endswith(": no cupy column")], notes
        assert "fork/CuPy" not in proc.stdout
    else:
        assert "fork/CuPy" in proc.stdout
        assert list(runs["cupy"]["array"]) == lo.CUPY_OPS
        assert all(e["ok"] for e in runs["cupy"]["array"].values())
    if "--no-real-clients" in extra:
        # skipped clients print no table, only the note
        assert "real client" not in proc.stdout
        for name, run in runs.items():
            assert run["reikna"] == run["clients"] == {}
            assert name == "cupy" or (
                "--no-real-clients: no real-client rows" in run["notes"])
    else:
        # installed on first use into each column's environment
        assert "real client: reikna 0.9" in proc.stdout
        assert "real clients: their releases" in proc.stdout
        # pip's output stays out of the benchmark's
        assert "ERROR" not in proc.stdout + proc.stderr
        for _key, label in lo.REIKNA_OPS + lo.CLIENT_OPS:
            assert label in proc.stdout
        assert "not installed" not in proc.stdout
        assert "RESULTS DIFFER" not in proc.stdout
    return runs


def check_run(run: dict) -> None:
    assert not [n for n in run["notes"] if "C loop skipped" in n], run["notes"]
    for key, _label, vs in lo.LAUNCH_PATHS:
        entry = run["launch"][key]
        assert entry["us"] > 0
        assert entry["vs"] == vs
        assert entry["ratio"] > 0
    assert list(run["array"]) == [k for k, _ in lo.ARRAY_OPS]
    for key, _label in lo.ARRAY_OPS:
        entry = run["array"][key]
        assert entry["ok"], key
        assert entry["us"] > 0
        assert entry["ops"] > 0
        assert entry["vs"] == lo.ARRAY_VS
        assert entry["ratio"] > 0
        assert entry["ratio_fork"] > 0
    if not run["reikna"]:   # --no-real-clients
        return check_sorts(run)
    assert list(run["reikna"]) == [k for k, _ in lo.REIKNA_OPS]
    for entry in run["reikna"].values():
        assert entry["ok"]
        assert entry["us"] > 0
        assert entry["ops"] > 0
    assert list(run["clients"]) == [k for k, _ in lo.CLIENT_OPS]
    for entry in run["clients"].values():
        assert entry["us"] > 0
        assert entry["ops"] > 0
        assert len(entry["digest"]) == 16
    check_sorts(run)


def check_sorts(run: dict) -> None:
    for size in ["1024", "4096"]:
        styles = run["sort"][size]
        assert set(styles) == {k for k, _ in lo.SORT_STYLES}
        for entry in styles.values():
            assert entry["ok"]
            assert entry["us"] > 0
            assert entry["launches"] == len(lo.sort_launches(int(size)))


def test_sort_launch_counts():
    # the #830 workload: 152 launches for 64K ints, 65 for 1K
    assert len(lo.sort_launches(65536)) == 152
    assert len(lo.sort_launches(1024)) == 65


def test_quick_benchmark(tmp_path):
    runs = run_bench(tmp_path, "--no-upstream", "--no-real-clients")
    assert list(runs) in (["fork"], ["fork", "cupy"])
    check_run(runs["fork"])


def test_quick_benchmark_beside_upstream(tmp_path):
    runs = run_bench(tmp_path, "--upstream-venv", str(ROOT / ".venv-upstream"),
                     "--no-cupy")
    assert list(runs) == ["fork", "upstream"]
    for run in runs.values():
        check_run(run)
    assert "+fork." in runs["fork"]["pyopencl"]
    assert "+" not in runs["upstream"]["pyopencl"]
    for entry in runs["fork"]["reikna"].values():
        assert entry["vs_upstream"] > 0
    for entry in runs["fork"]["clients"].values():
        assert entry["vs_upstream"] > 0
        assert entry["same_result"]   # byte for byte between the columns
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        pytest.skip("matplotlib not installed")
    png = tmp_path / "launch_overhead.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_compiler_counts_kept_out_of_the_output(tmp_path, capsys):
    # PoCL's compiler prints "N warnings generated." for each program it
    # builds with warnings (the real clients'): dropped and counted; the
    # rest of a column's stderr passes
    code = ("import sys; sys.stderr.write('8 warnings generated.\\n"
            "1 warning generated.\\na note\\n')")
    dropped = lo.run_column([sys.executable, "-c", code], str(tmp_path), None)
    assert dropped == 2
    assert capsys.readouterr().err == "a note\n"


def test_unreachable_index_is_asked_once(monkeypatch):
    # offline, one pip call with no retry says why the real clients are not
    # installed, for every column, instead of pip's retries per client
    for var in ["PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX"]:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setattr(lo, "_UNREACHABLE", {})
    calls = []
    real_run = subprocess.run

    def run(cmd, *args, **kwargs):
        calls.append(cmd)
        return real_run(cmd, *args, **kwargs)

    monkeypatch.setattr(lo.subprocess, "run", run)
    py = Path(sys.executable)
    why = lo.index_unreachable(py)
    assert why is not None and "Retrying" not in why
    assert lo.index_unreachable(py) == why
    assert len(calls) == 1
    assert "--retries" in calls[0] and "0" in calls[0]


def test_no_cupy_column_without_cuda():
    # the column is measured only where the fork's interpreter imports cupy
    # and sees a CUDA device; elsewhere the note says which is missing
    why = lo.cupy_absent_in(Path(sys.executable), None)
    if why is None:
        pytest.skip("CuPy and a CUDA device here")
    assert why.startswith(("CuPy not installed", "no CUDA device")), why
    assert why.endswith(": no cupy column")


def _column(raw_key: str, us: float, keys: list[str], **names) -> dict:
    # a column's result as measure() or measure_cupy() gives it, made up:
    # its raw launch us / 4, each array operation us
    run = {"python": "3", "device": "a device", "notes": [], "reikna": {},
           "clients": {}, "sort": {}, "launch": {raw_key: {"us": us / 4}},
           "array": {k: {"us": us, "ok": True, "ops": 10} for k in keys},
           **names}
    lo.add_launch_ratios(run)
    return run


def test_cupy_column_in_the_table(capsys):
    # CuPy's column of a made-up run: each path's best of its processes,
    # the fork's over CuPy's per row (the raw launch's too), "-" where CuPy
    # has no such operation; in the json's shape
    fork = _column(lo.ARRAY_VS, 12.0, [k for k, _ in lo.ARRAY_OPS],
                   pyopencl="2026.1.4+fork")
    cupy = [_column(lo.CUPY_VS, us, lo.CUPY_OPS, cupy="13") for us in (8, 6)]
    runs = {"fork": lo.best_of_processes([fork]),
            "cupy": lo.best_of_processes(cupy)}
    lo.add_fork_ratios(runs)
    json.dumps(runs)
    assert runs["cupy"]["processes"] == 2
    assert runs["cupy"]["launch"][lo.CUPY_VS]["us"] == 1.5
    for key in lo.CUPY_OPS:
        entry = runs["cupy"]["array"][key]
        assert (entry["us"], entry["vs"], entry["ratio"]) == (6, lo.CUPY_VS, 4)
        assert entry["ratio_fork"] == 2
        assert runs["fork"]["array"][key]["vs_cupy"] == 2
    assert runs["fork"]["launch"][lo.ARRAY_VS]["vs_cupy"] == 2
    assert "vs_cupy" not in runs["fork"]["array"]["scan_kernel"]

    lo.print_table(runs)
    out = capsys.readouterr().out
    assert "  cupy: CuPy 13, Python 3, a device" in out
    rows = {line.split(" | ")[0].strip(): line.split(" | ")[1:]
            for line in out.splitlines() if " | " in line}
    header = rows["array operation, 256 float32 (µs, ratio)"]
    assert [h.split() for h in header] == [["fork", "ratio"],
                                           ["cupy", "fork/CuPy"]]
    assert [c.split() for c in rows["raw launch: kept kernel, numpy scalars"]
            ] == [["3.00", "1.00x"], ["1.50", "2.00x"]]
    for key, label in lo.ARRAY_OPS:
        cupy_cells = ["6.00", "2.00x"] if key in lo.CUPY_OPS else ["-", "-"]
        assert [c.split() for c in rows[label]] == [["12.00", "4.00x"],
                                                    cupy_cells]
    assert "WRONG RESULT" not in out


def _instruction_counts(launches: str, *paths: str,
                        main_thread: bool = False, repeat: int = 1,
                        python: str = sys.executable) -> dict[str, list[str]]:
    # bench/instructions.py: per path its row (count, ratio), in the order asked
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "instructions.py"),
         *(["--main-thread"] if main_thread else []),
         "--repeat", str(repeat), "--python", python,
         "--launches", launches, *paths],
        capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines()[1:]]
    assert [r[0] for r in rows] == list(paths)
    return {r[0]: r[1:] for r in rows}


def _thousands(row: list[str]) -> float:
    return float(row[0].rstrip("k"))


def test_instruction_counts():
    # per launch, a few launches only: a launch costs something, and Python
    # adds to the C loop's cost
    rows = _instruction_counts("300,900", "c_event", "kept_numpy")
    assert 0 < _thousands(rows["c_event"]) < _thousands(rows["kept_numpy"])


def test_instruction_counts_array_operation():
    # the array operations are counted too
    rows = _instruction_counts("100,300", "kept_numpy", "add")
    assert 0 < _thousands(rows["kept_numpy"]) < _thousands(rows["add"])
    assert rows["add"][1].endswith("x")  # its ratio to kept_numpy


def test_launches_stay_cheap():
    # The guard of pull request C (0015-0017), by instructions on the Python
    # thread, which repeat from run to run (a clock on a shared machine
    # does not): a kept kernel called with numpy scalars costs at most twice
    # a launch with declared scalar types (set_arg catching an exception
    # per kind tried costs many times that), and a kernel created at every
    # launch costs at most a C loop's clCreateKernel and launch plus three
    # kept-kernel launches (generating its invoker anew costs many times
    # that)
    rows = _instruction_counts("300,900", "kept_numpy", "kept_dtypes",
                               "c_create", "retrieve_get_kernel",
                               main_thread=True)
    kept_numpy, kept_dtypes, c_create, retrieve = (
        _thousands(rows[p]) for p in ["kept_numpy", "kept_dtypes", "c_create",
                                      "retrieve_get_kernel"])
    assert kept_numpy <= 2 * kept_dtypes, rows
    assert retrieve <= c_create + 3 * kept_numpy, rows


def _host_code(row: list[str]) -> float:
    # "... in Python, PyOpenCL, numpy 5.08k": the Python thread's own code
    return float(row[-1].rstrip("k"))


def test_launch_paths_not_dearer_than_upstream():
    # Every launch path, as user code and as generated host code (loopy's:
    # _set_arg_multi, _set_arg_buf_pack_multi and a positional
    # enqueue_nd_range_kernel, with and without a wait_for list) call it,
    # costs at most what 2026.1.4 costs on the Python thread, in the own
    # code of Python, PyOpenCL and numpy (which repeats within a few dozen
    # instructions; libc's malloc, the ICD loader and PoCL move with PoCL's
    # worker thread or differ between the builds), with two hundred
    # instructions: two builds of the same code differ by up to about 60,
    # and F holds the events of a wait_for list until the call is done
    # (2026.1.4 released them while in use), about a hundred more
    paths = ["kept_numpy", "kept_dtypes", "set_args_enqueue",
             "set_arg_enqueue", "generated", "generated_wait"]
    upstream = str(lo.upstream_python(ROOT / ".venv-upstream"))
    fork = _instruction_counts("300,900", *paths, main_thread=True)
    base = _instruction_counts("300,900", *paths, main_thread=True,
                               python=upstream)
    dearer = {p: (fork[p], base[p]) for p in paths
              if _host_code(fork[p]) > _host_code(base[p]) + 0.2}
    assert not dearer


def test_instruction_counts_bad_input():
    for args, message in [(["bogus"], "unknown path(s) bogus"),
                          (["--launches", "30,10"], "0 < N1 < N2"),
                          (["--launches", "x"], "two integers"),
                          (["--repeat", "0"], "K >= 1")]:
        proc = subprocess.run(
            [sys.executable, str(ROOT / "bench" / "instructions.py"), *args],
            capture_output=True, text=True, check=False)
        assert proc.returncode == 2
        assert message in proc.stderr
