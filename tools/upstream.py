#!/usr/bin/env python3
"""Fetch and verify the pinned upstream PyOpenCL sdist.

The pin lives in ``subprojects/pyopencl.wrap`` (``source_filename`` and
``source_hash``); this module is its only reader.  pip downloads the sdist from
whatever package index it is configured for, so no index host is named here.

Used three ways:

* by ``meson.build`` at configure time (``prepare``): make sure the verified
  tarball sits in ``subprojects/packagefiles/``, that no stale, previously
  extracted tree (built from an older series) is reused, and that
  ``upstream/LICENSE`` is upstream's LICENSE, taken from the tarball
  (``pyproject.toml``'s ``license-files`` ship it in every wheel);
* by ``meson.build`` at configure end (``stamp``): record which series the
  extracted tree was built from;
* by ``meson dist`` (``dist``): put the verified tarball and upstream's
  LICENSE into the fork's sdist, so installing that sdist downloads nothing
  from upstream;
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
import tarfile
import tempfile
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
WRAP = ROOT / "subprojects" / "pyopencl.wrap"
STAMP_NAME = ".fork-series-stamp"
# upstream's LICENSE, written from the pinned sdist at build time (ignored by
# git); pyproject.toml's license-files names it
LICENSE = Path("upstream") / "LICENSE"


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


def in_find_links(pin: Pin) -> Path | None:
    """The pinned sdist in a folder (or as a file) that PIP_FIND_LINKS names.

    ``pip download`` of an sdist prepares its metadata, which needs
    upstream's build backend: offline, pip fails even where it sees the
    file. So a file of the pinned name there is taken as it is (and
    verified), and pip is not asked.
    """
    for entry in os.environ.get("PIP_FIND_LINKS", "").split():
        if entry.startswith("file:"):
            entry = urllib.request.url2pathname(urllib.parse.urlparse(entry).path)
        elif "://" in entry:
            continue
        path = Path(entry)
        if path.is_dir():
            path = path / pin.filename
        if path.name == pin.filename and path.is_file():
            return path
    return None


def ensure_tarball(pin: Pin) -> Path:
    """Return the verified pinned sdist: the one in packagefiles/, else one
    in a folder of PIP_FIND_LINKS, else downloaded with pip."""
    if pin.tarball.exists():
        check_hash(pin, pin.tarball)
        return pin.tarball

    pin.packagefiles.mkdir(parents=True, exist_ok=True)
    found = in_find_links(pin)
    if found is not None:
        print(f"upstream sdist from PIP_FIND_LINKS: {found}", file=sys.stderr)
        check_hash(pin, found)
        with tempfile.TemporaryDirectory(dir=pin.packagefiles) as tmp:
            got = Path(tmp) / pin.filename
            shutil.copyfile(found, got)
            check_hash(pin, got)
            os.replace(got, pin.tarball)
        return pin.tarball

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
                + "\n" + offline_advice(pin))
        # verify before the file reaches its final name: a bad download
        # never sits where the next build would pick it up
        check_hash(pin, got)
        os.replace(got, pin.tarball)
    return pin.tarball


def offline_advice(pin: Pin) -> str:
    """What to do when pip cannot download the pinned sdist: something that
    works for a build from a git URL too, whose checkout is a temporary
    folder of pip's."""
    return (
        "Check the network and pip's index configuration. Offline, or where "
        "the index is out of reach:\n"
        f"  * put {pin.filename} (sha256 {pin.sha256}) into a folder and "
        "run the same command again with PIP_FIND_LINKS=/absolute/path/of/"
        "that/folder in the environment: the build takes the file from "
        "there. With no index at all, set PIP_NO_INDEX=1 too, and give pip "
        "the fork's build requirements (pyproject.toml's [build-system]) in "
        "that folder, or install them and add --no-build-isolation;\n"
        "  * or install the fork's own sdist or a wheel of it (bash "
        "bootstrap.sh wheels makes both): they carry upstream's code;\n"
        f"  * or, building from a checkout of your own, put {pin.filename} "
        "into its subprojects/packagefiles/.")


def license_text(pin: Pin) -> bytes:
    """Upstream's LICENSE, from the verified pinned sdist."""
    with tarfile.open(ensure_tarball(pin)) as tf:
        try:
            member = tf.extractfile(f"{pin.directory}/LICENSE")
        except KeyError:
            member = None
        if member is None:
            raise FetchError(f"{pin.filename} has no {pin.directory}/LICENSE")
        return member.read()


def write_license(pin: Pin, dest_root: Path) -> None:
    """Write upstream's LICENSE to DEST_ROOT/upstream/LICENSE."""
    dest = dest_root / LICENSE
    text = license_text(pin)
    if not dest.exists() or dest.read_bytes() != text:
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(text)


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
            write_license(pin, pin.root)
        elif args.action == "stamp":
            (pin.extracted / STAMP_NAME).write_text(series_stamp(pin) + "\n")
        elif args.action == "dist":
            dist_root = Path(os.environ["MESON_DIST_ROOT"])
            dest = dist_root / pin.tarball.relative_to(pin.root)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ensure_tarball(pin), dest)
            write_license(pin, dist_root)
    except FetchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
