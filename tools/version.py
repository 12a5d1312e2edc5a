#!/usr/bin/env python3
"""The fork's version, for ``meson.build``'s ``project()``.

Usage: ``tools/version.py BASE``, where BASE is upstream's release with the
fork's local label (``2026.1.4+fork.18``, set in ``meson.build``).  Prints
BASE with the commit the build comes from added to the local label,
``2026.1.4+fork.18.g1a2b3c4`` (as setuptools-scm writes a commit), so that
each commit's build has a version of its own and pip replaces an installed
build when a pin moves to another commit:

* in a git checkout of this repository: BASE and ``.g`` with the first 7
  hex digits of HEAD (uncommitted changes are not marked);
* in the fork's sdist, which has no git: the version in its ``PKG-INFO``,
  which meson-python wrote from a checkout;
* otherwise (a copy of the files without git, or a BASE without a local
  label, such as the plain release that ``tools/series.py`` builds without
  patch 0001): BASE.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent


def version(base: str) -> str:
    if "+" not in base:
        return base
    pkg_info = ROOT / "PKG-INFO"
    if pkg_info.is_file():
        for line in pkg_info.read_text().splitlines():
            if line.startswith("Version:"):
                return line.partition(":")[2].strip()
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "--show-toplevel", "HEAD"], cwd=ROOT,
            capture_output=True, text=True, check=False)
    except OSError:  # no git
        return base
    lines = proc.stdout.split()
    # the repository must be this one, not one around a copy of it
    if proc.returncode != 0 or len(lines) != 2 or Path(lines[0]).resolve() != ROOT:
        return base
    return f"{base}.g{lines[1][:7]}"


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print(version(sys.argv[1]))
