#!/usr/bin/env bash
# Build the authors' C implementation of probabilistic backpropagation (Hernandez-Lobato &
# Adams 2015; github.com/HIPS/Probabilistic-Backpropagation, c/PBP_net) as the Python module
# `pbp` that benchmarks/bench_pbp.py runs beside ours. Fetches nothing: SOURCE is a checkout
# of that repository (or its c/PBP_net directory) that you obtained yourself; the peer is
# not part of this project and none of its code is copied into it.
#
#   scripts/build_pbp_peer.sh SOURCE [OUTPUT]     (OUTPUT default: /work/peers/pbp/c/PBP_net)
#   python benchmarks/bench_pbp.py --peer OUTPUT
#
# Needs: Cython (`cython` on PATH, or CYTHON=/path/to/cython), a C compiler (CC, default cc),
# the CBLAS header and library (e.g. Debian's libopenblas-dev; BLAS_LIB, default -lopenblas),
# and the Python that runs the benchmark (PYTHON, default python3) with numpy: the module is
# built against its headers. pbp.pyx is Python 2 code, so Cython runs with -2.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 ]]; then
    echo "usage: $0 SOURCE [OUTPUT]  (SOURCE: a checkout of HIPS/Probabilistic-Backpropagation)" >&2
    exit 2
fi
source_dir=$1
output_dir=${2:-/work/peers/pbp/c/PBP_net}
[[ -f $source_dir/c/PBP_net/pbp.pyx ]] && source_dir=$source_dir/c/PBP_net
for file in pbp.pyx network.c network.h pnorm.c pnorm.h; do
    if [[ ! -f $source_dir/$file ]]; then
        echo "$0: $source_dir/$file not found (SOURCE must be the repository or its c/PBP_net)" >&2
        exit 1
    fi
done
PYTHON=${PYTHON:-python3}
CYTHON=${CYTHON:-cython}
CC=${CC:-cc}
BLAS_LIB=${BLAS_LIB:--lopenblas}
command -v "$CYTHON" >/dev/null || { echo "$0: no Cython ('$CYTHON'); pip install cython, or set CYTHON" >&2; exit 1; }
command -v "$CC" >/dev/null || { echo "$0: no C compiler ('$CC'); set CC" >&2; exit 1; }

mkdir -p "$output_dir"
cp "$source_dir"/{pbp.pyx,network.c,network.h,pnorm.c,pnorm.h} "$output_dir"/
[[ -f $source_dir/PBP_net.py ]] && cp "$source_dir/PBP_net.py" "$output_dir"/
cd "$output_dir"
read -r py_include np_include np_pxd suffix < <("$PYTHON" -c '
import os, sysconfig, numpy
print(sysconfig.get_paths()["include"], numpy.get_include(),
      os.path.dirname(os.path.dirname(numpy.__file__)), sysconfig.get_config_var("EXT_SUFFIX"))')
# `cimport numpy` finds numpy's own numpy/__init__.pxd, of the numpy the module runs with
"$CYTHON" -2 -I "$np_pxd" pbp.pyx -o pbp.c
# numpy's deprecated-API warnings are the peer's; -w keeps the output to errors
"$CC" -O3 -shared -fPIC -w -I"$py_include" -I"$np_include" -I. \
    pbp.c network.c pnorm.c $BLAS_LIB -lm -o "pbp$suffix"
"$PYTHON" -c "import sys; sys.path.insert(0, '.'); import pbp; print('built', pbp.__file__)"
