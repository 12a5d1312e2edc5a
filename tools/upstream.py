#!/usr/bin/env python3
"""Fetch and verify the pinned upstream PyOpenCL sdist.

The pin lives in ``subprojects/pyopencl.wrap`` (``source_filename`` and
``source_hash``); this module is its only reader.  pip downloads the sdist from
whatever package index it is configured for, so no index host is named here.

Used three ways:

* by ``meson.build`` at configure time (``prepare``): make sure the verified
  tarball sits in ``subprojects/packagefiles/`` and that no stale, previously
  extracted tree (built from an older series) is reused;
* by ``meson.build`` at configure end (``stamp``): record which series the
  extracted tree was built from;
* by ``meson dist`` (``dist``): put the verified tarball into the fork's sdist,
  so installing that sdist downloads nothing from upstream;
* by ``tools/series.py`` (imported).

Exit status 0 on success; on failure a message saying what went wrong and
what to do is printed on stderr and the exit status is 1.
"""

from __future__ import annotations

import argparse
import configparser
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
WRAP = ROOT / "subprojects" / "pyopencl.wrap"
STAMP_NAME = ".fork-series-stamp"


class FetchError(Exception):
    pass


@dataclass(frozen=True)
class Pin:
    root: Path
    version: str
    filename: str
    sha256: str
    directory: str
    patch_directory: str
    diff_files: tuple[str, ...]

    @property
    def packagefiles(self) -> Path:
        return self.root / "subprojects" / "packagefiles"

    @property
    def tarball(self) -> Path:
        return self.packagefiles / self.filename

    @property
    def extracted(self) -> Path:
        return self.root / "subprojects" / self.directory

    @property
    def series(self) -> list[Path]:
        return [self.packagefiles / f for f in self.diff_files]


def read_pin(root: Path = ROOT) -> Pin:
    wrap = root / "subprojects" / "pyopencl.wrap"
    cp = configparser.ConfigParser(interpolation=None)
    if not cp.read(wrap):
        raise FetchError(f"pin file {wrap} is missing")
    sec = cp["wrap-file"]
    filename = sec["source_filename"]
    prefix, suffix = "pyopencl-", ".tar.gz"
    if not (filename.startswith(prefix) and filename.endswith(suffix)):
        raise FetchError(f"{wrap}: source_filename {filename!r} is not "
                         f"of the form pyopencl-VERSION.tar.gz")
    return Pin(
        root=root,
        version=filename[len(prefix):-len(suffix)],
        filename=filename,
        sha256=sec["source_hash"].strip().lower(),
        directory=sec["directory"],
        patch_directory=sec.get("patch_directory", ""),
        diff_files=tuple(f.strip() for f in sec.get("diff_files", "").split(",")
                         if f.strip()))


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_hash(pin: Pin, path: Path) -> None:
    actual = sha256_of(path)
    if actual != pin.sha256:
        raise FetchError(
            f"sha256 mismatch for {path}:\n"
            f"  expected {pin.sha256} (the pin)\n"
            f"  actual   {actual}\n"
            "The file is not the pinned upstream release. Delete it and build "
            "again to download it anew; if the mismatch persists, your package "
            "index serves a different file: check pip's index configuration.")


def ensure_tarball(pin: Pin) -> Path:
    """Return the verified pinned sdist, downloading it with pip if absent."""
    if pin.tarball.exists():
        check_hash(pin, pin.tarball)
        return pin.tarball

    pin.packagefiles.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=pin.packagefiles) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps",
               "--no-binary", "pyopencl", "--disable-pip-version-check",
               "--dest", tmp, f"pyopencl=={pin.version}"]
        print("fetching upstream sdist:", " ".join(cmd), file=sys.stderr)
        proc = subprocess.run(cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, check=False)
        got = Path(tmp) / pin.filename
        if proc.returncode != 0 or not got.exists():
            raise FetchError(
                f"could not download the pinned upstream sdist "
                f"pyopencl=={pin.version} with pip "
                f"(exit status {proc.returncode}).\n"
                "pip said:\n  " + "\n  ".join(proc.stdout.strip().splitlines()[-15:])
                + "\nCheck the network and pip's index configuration, or put "
                f"{pin.filename} (sha256 {pin.sha256}) into {pin.packagefiles}/ "
                "by hand.")
        # verify before the file reaches its final name: a bad download
        # never sits where the next build would pick it up
        check_hash(pin, got)
        os.replace(got, pin.tarball)
    return pin.tarball


def series_stamp(pin: Pin) -> str:
    """A digest of everything that shapes the extracted tree."""
    h = hashlib.sha256()
    files = [pin.root / "subprojects" / "pyopencl.wrap", *pin.series]
    overlay = pin.packagefiles / pin.patch_directory
    if pin.patch_directory and overlay.is_dir():
        files += sorted(p for p in overlay.rglob("*") if p.is_file())
    for p in files:
        h.update(str(p.relative_to(pin.root)).encode() + b"\0")
        h.update(p.read_bytes() + b"\0")
    return h.hexdigest()


def drop_stale_tree(pin: Pin) -> None:
    """Remove an extracted tree that was built from another series.

    Meson reuses ``subprojects/<directory>`` as it finds it and never
    re-applies the series, so a tree left by an earlier build would silently
    ship without newer patches.
    """
    if not pin.extracted.exists():
        return
    stamp = pin.extracted / STAMP_NAME
    if stamp.exists() and stamp.read_text().strip() == series_stamp(pin):
        return
    print(f"removing {pin.extracted}: it was not built from the current "
          "patch series", file=sys.stderr)
    shutil.rmtree(pin.extracted)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("action",
                    choices=["prepare", "stamp", "dist", "fetch", "version"])
    args = ap.parse_args(argv)
    try:
        pin = read_pin()
        if args.action == "version":
            print(pin.version)
        elif args.action == "fetch":
            print(ensure_tarball(pin))
        elif args.action == "prepare":
            ensure_tarball(pin)
            drop_stale_tree(pin)
        elif args.action == "stamp":
            (pin.extracted / STAMP_NAME).write_text(series_stamp(pin) + "\n")
        elif args.action == "dist":
            dist_root = Path(os.environ["MESON_DIST_ROOT"])
            dest = dist_root / pin.tarball.relative_to(pin.root)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ensure_tarball(pin), dest)
    except FetchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
