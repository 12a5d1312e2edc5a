#!/usr/bin/env bash
# On the H200 machine (no network, no build step): install the fork's cp312
# wheel from the file alone and run the demo, the retrieval and launch tests
# and the launch-overhead benchmark beside upstream's wheel. Carried with the
# device tool (a folder CARRY, default .h200, ignored by git): dist/ with the
# wheel from `FORK_DIST=.h200/dist bash bootstrap.sh wheels 3.12`, wheels/
# with the run requirements, pytest and upstream's wheel, debs/ with the
# OpenCL headers for the benchmark's C loop; and the patched tree's test/
# (series-tree/test, from tools/series.py unpack). Results go to $OUT.
set -euo pipefail
carry=${CARRY:-.h200}
py=python3
$py -m pip install -q --no-index --no-deps --target /tmp/fork "$carry"/dist/pyopencl-*-cp312-*.whl
$py -m pip install -q --no-index --no-deps --target /tmp/site \
  "$carry"/wheels/{pytools,platformdirs,typing_extensions,siphash24,mako,markupsafe,pytest,pluggy,iniconfig,packaging}-*.whl
$py -m pip install -q --no-index --no-deps --target /tmp/up \
  "$carry"/wheels/pyopencl-"$(python3 tools/upstream.py version)"-*.whl
for d in "$carry"/debs/*.deb; do dpkg -x "$d" /tmp/ocl; done
export CL_INC_DIR=/tmp/ocl/usr/include CL_LIB_DIR=/tmp/ocl/usr/lib/x86_64-linux-gnu
mkdir -p /tmp/icd
ldconfig -p | awk '/libnvidia-opencl.so.1/{print $NF; exit}' >/tmp/icd/nvidia.icd
export OCL_ICD_VENDORS=/tmp/icd PYOPENCL_CTX=0 PYTHONPATH=/tmp/fork:/tmp/site
{
  $py -c 'import pyopencl as cl; print(cl.VERSION_TEXT, cl.__file__, cl.get_platforms()[0].get_devices())'
  $py bench/demo.py
  (cd /tmp && $py -m pytest -q -p no:cacheprovider \
    -W error::pyopencl.RepeatedKernelRetrievalWarning \
    "$OLDPWD"/series-tree/test/test_wrapper.py -k "retriev or get_kernel or copied or launch or misuse or invoker") ||
    echo "TESTS FAILED (rc=$?)"
  $py bench/launch_overhead.py --upstream-path /tmp/up --out "$OUT" "$@"
} 2>&1 | tee "$OUT/h200-wheel.txt"
