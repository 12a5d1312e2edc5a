"""pytest hooks for running our tests and upstream's suite in one session.

Tests of upstream's suite that also fail on unpatched upstream here are listed
with their reasons in test/upstream-known-failures.txt; they are deselected by
name, and the reasons are printed at the end of the run.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import _pytest.runner


_KNOWN = Path(__file__).parent / "test" / "upstream-known-failures.txt"


def _known_failures() -> dict[str, str]:
    result = {}
    for line in _KNOWN.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, reason = re.split(r"\s{2,}", line.strip(), maxsplit=1)
            result[name] = reason
    return result


def pytest_collection_modifyitems(config, items):
    known = _known_failures()
    keep, dropped = [], []
    for item in items:
        name = f"{Path(str(item.fspath)).name}::{item.originalname}"
        if name in known and "subprojects" in Path(str(item.fspath)).parts:
            dropped.append(item)
            config._fork_deselected = {
                **getattr(config, "_fork_deselected", {}), name: known[name]}
        else:
            keep.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def pytest_terminal_summary(terminalreporter, config):
    deselected = getattr(config, "_fork_deselected", {})
    if deselected:
        terminalreporter.section("upstream tests deselected (known failures)")
        for name, reason in deselected.items():
            terminalreporter.write_line(f"{name}: {reason}")


# pytest sets PYTEST_CURRENT_TEST at each phase of a test and removes it after
# the test. Adding or removing a variable changes glibc's environ array in
# place or moves it, under any thread that passes environ to posix_spawn
# meanwhile: PoCL's compiler thread, still compiling a kernel that an earlier
# test launched (its queue released without finish()), spawns the linker, gets
# EFAULT ("posix_spawn failed: Bad address") and aborts the run. So the
# variable is set once, before any OpenCL work, and from then on only its
# value changes (one pointer stored; glibc keeps the old strings).
_update_current_test_var = _pytest.runner._update_current_test_var


def _replace_current_test_var(item, when):
    if when is None:
        os.environ["PYTEST_CURRENT_TEST"] = ""
    else:
        _update_current_test_var(item, when)


def pytest_configure(config):
    os.environ.setdefault("PYTEST_CURRENT_TEST", "")
    _pytest.runner._update_current_test_var = _replace_current_test_var
