#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine (as root) or a prepared one:
#
#   bash bootstrap.sh bench [ARGS]   the main job: launch-overhead benchmark on PoCL
#   bash bootstrap.sh test  [ARGS]   the tests: ours and upstream's suite, on PoCL
#
# Both install missing Debian packages (as root; otherwise they say which are
# missing), make the virtual environment $FORK_VENV (default .venv), build and
# install the fork into it with pip, then run.  ARGS go to the benchmark or to
# pytest.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"
venv=${FORK_VENV:-$here/.venv}

usage() {
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}

# {{{ system packages

# OpenCL headers, the ICD loader and PoCL as the default device; a compiler
# and the tools the build and the tests use
needs=(opencl-headers ocl-icd-opencl-dev pocl-opencl-icd clinfo g++ pkg-config
  git patch valgrind)

missing_packages() {
  local pkg
  for pkg in "${needs[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed"; then
      echo "$pkg"
    fi
  done
  # a Python that can make virtual environments and build extensions
  if ! command -v python3 >/dev/null; then
    echo python3 python3-venv python3-dev
  else
    python3 -c 'import venv, ensurepip' 2>/dev/null || echo python3-venv
    python3 -c 'import sysconfig, os, sys
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
      || echo python3-dev
  fi
}

ensure_system() {
  local missing
  missing=$(missing_packages | tr '\n' ' ' | sed 's/ *$//')
  [[ -z $missing ]] && return
  if [[ $(id -u) -ne 0 ]]; then
    echo "error: missing Debian packages: $missing" >&2
    echo "Install them as root, then run this again:" >&2
    echo "  apt-get update && apt-get install -y $missing" >&2
    exit 1
  fi
  echo "installing Debian packages: $missing" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  # shellcheck disable=SC2086
  apt-get install -y -q --no-install-recommends $missing
}

# }}}

# {{{ virtual environment and the fork

ensure_fork() {
  local extras=$1
  if [[ ! -x $venv/bin/python ]]; then
    python3 -m venv "$venv"
  fi
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
  echo "building and installing the fork into $venv (about a minute)" >&2
  "$venv/bin/python" -m pip install -q --disable-pip-version-check ".[$extras]"
  "$venv/bin/python" -c 'import pyopencl; print("installed pyopencl", pyopencl.VERSION_TEXT)'
}

# }}}

cmd=${1:-}
[[ $# -gt 0 ]] && shift
case $cmd in
  bench)
    ensure_system
    ensure_fork bench
    exec "$venv/bin/python" bench/launch_overhead.py "$@"
    ;;
  demo)
    ensure_system
    ensure_fork bench
    exec "$venv/bin/python" bench/demo.py "$@"
    ;;
  test)
    ensure_system
    ensure_fork test
    # ours (test/) and upstream's suite from the patched tree that was built;
    # PyOpenCL's own code and tests never retrieve a kernel twice
    exec "$venv/bin/python" -m pytest -ra \
      -W error::pyopencl.RepeatedKernelRetrievalWarning \
      test "subprojects/pyopencl-$("$venv/bin/python" tools/upstream.py version)/test" "$@"
    ;;
  *) usage ;;
esac
