#!/usr/bin/env bash
# On the H200 machine (no network): build the fork from this checkout for the
# machine's python3 and run the launch-overhead benchmark beside upstream's
# wheel. Carried with the device tool (a folder CARRY, default .h200, ignored
# by git): wheels/ for that Python (the build and run requirements and
# upstream's pyopencl wheel) and debs/ (Debian's opencl-headers,
# opencl-c-headers, ocl-icd-opencl-dev, ocl-icd-libopencl1), plus the pinned
# sdist in subprojects/packagefiles/. Results go to $OUT. BENCH=breakdown
# runs bench/breakdown.py instead of bench/launch_overhead.py.
# The real clients' rows need their wheels in wheels/ too (installed into
# /tmp/site with the rest; numpy is the machine's): reikna 0.9.0 and funcsigs;
# silx 3.1.3 (cp312) and filelock; pyclesperanto-prototype 0.24.6, toolz,
# transforms3d, lazy_loader, scikit-image (cp312) and scipy (cp312, which
# needs numpy >= 2). With those, about 57 of the device tool's 64 MiB; without
# pyclesperanto's (scipy alone is 35 MB) about 9; a client whose wheels are
# missing has "not installed" rows.
set -euo pipefail
carry=${CARRY:-.h200}
py=python3
$py -m pip install -q --no-index --no-deps --target /tmp/site "$carry"/wheels/*.whl 2>&1 | tail -2
rm -rf /tmp/site/pyopencl*
$py -m pip install -q --no-index --no-deps --target /tmp/up "$carry"/wheels/pyopencl-"$(python3 tools/upstream.py version)"-*.whl
for d in "$carry"/debs/*.deb; do dpkg -x "$d" /tmp/ocl; done
export CL_INC_DIR=/tmp/ocl/usr/include CL_LIB_DIR=/tmp/ocl/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=$CL_LIB_DIR
mkdir -p /tmp/icd
lib=$(ldconfig -p | awk '/libnvidia-opencl.so.1/{print $NF; exit}')
echo "$lib" > /tmp/icd/nvidia.icd
export OCL_ICD_VENDORS=/tmp/icd PYOPENCL_CTX=0
export PATH=/tmp/site/bin:$PATH
CC=/usr/bin/gcc CXX=/usr/bin/g++ PYTHONPATH=/tmp/site \
  $py -m pip install -q --no-build-isolation --no-deps --no-index --target /tmp/fork . 2>&1 | tail -5
PYTHONPATH=/tmp/fork:/tmp/site $py -c 'import pyopencl as cl; print(cl.VERSION_TEXT, cl.get_platforms()[0].get_devices())'
if [ "${BENCH:-}" = breakdown ]; then
  # bench/breakdown.py: the pieces of each array operation, CuPy's beside
  PYTHONPATH=/tmp/fork:/tmp/site $py bench/breakdown.py --json "$OUT/h200-breakdown.json" "$@" | tee "$OUT/h200-breakdown.txt"
  # and upstream's wheel, the same pieces
  PYTHONPATH=/tmp/up:/tmp/site $py bench/breakdown.py --no-cupy --json "$OUT/h200-breakdown-upstream.json" "$@" | tee -a "$OUT/h200-breakdown.txt"
  exit
fi
PYTHONPATH=/tmp/fork:/tmp/site $py bench/launch_overhead.py --upstream-path /tmp/up --out "$OUT" "$@" | tee "$OUT/h200-nvidia.txt"
