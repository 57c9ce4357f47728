#!/bin/sh
# Build the independent references that tests/gpu/run-gpu-tests.sh runs
# beside gpup2p-verify: NVIDIA's nvbandwidth and cuda-samples'
# p2pBandwidthLatencyTest, from their public sources (fetched separately,
# never part of this tree); and the driver's floor of this tree
# (tests/gpu/driver-floor.c, for floor-bench.sh).
#
#   tests/gpu/build-references.sh NVBANDWIDTH_SRC CUDA_SAMPLES_SRC \
#       NVML_INCLUDE_DIR OUTDIR
#
# NVML_INCLUDE_DIR holds NVML's published nvml.h. nvbandwidth links
# against a stub libnvidia-ml.so.1 made here from the symbols it uses; the
# driver's real library replaces it at run time. Needs nvcc and
# libboost-program-options-dev; OUTDIR receives the binaries and the boost
# library they need.
set -eu
nvb=$1
samples=$2
nvml_inc=$3
out=$4
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
arch=${CUDA_ARCH:-sm_90}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The toolkit's cuda.h and link-time libcuda stub: CUDA_HOME, else nvcc's
# own toolkit. Only floor-bench.sh needs it: a failure leaves the other
# references to be built, and says so.
cuda=${CUDA_HOME:-$(dirname "$(dirname "$(readlink -f "$nvcc")")")}
if ! "${CC:-cc}" -O2 -Wall -Wextra -Werror -I "$cuda/include" \
    -o "$out/driver-floor" "$(dirname "$0")/driver-floor.c" \
    -L "$cuda/lib64/stubs" -lcuda -ldl -lpthread; then
    echo "build-references.sh: driver-floor not built (CUDA_HOME=$cuda)" >&2
fi

p2p=$samples/Samples/5_Domain_Specific/p2pBandwidthLatencyTest
"$nvcc" -O2 -arch="$arch" -I "$samples/Common" \
    -o "$out/p2pBandwidthLatencyTest" "$p2p/p2pBandwidthLatencyTest.cu"

objs=
for src in testcase.cpp testcases_ce.cpp testcases_sm.cpp kernels.cu \
           memcpy.cpp nvbandwidth.cpp multinode_memcpy.cpp \
           multinode_testcases.cpp output.cpp json_output.cpp \
           json/jsoncpp.cpp; do
    obj=$work/$(echo "$src" | tr / _).o
    "$nvcc" -O2 -std=c++17 -arch="$arch" -I "$nvb" -I "$nvml_inc" \
        -DGIT_VERSION='"reference"' -c -o "$obj" "$nvb/$src"
    objs="$objs $obj"
done
# The stub: every nvml* symbol the objects need, each failing if ever run.
nm -u $objs | awk '/ nvml/ { print $2 }' | sort -u |
    awk '{ printf "int %s(void) { return 999; }\n", $1 }' > "$work/stub.c"
cc -shared -fPIC -Wl,-soname,libnvidia-ml.so.1 -o "$work/libnvidia-ml.so.1" \
    "$work/stub.c"
ln -s libnvidia-ml.so.1 "$work/libnvidia-ml.so"
"$nvcc" -arch="$arch" -o "$out/nvbandwidth" $objs -L "$work" -lnvidia-ml \
    -lboost_program_options -lcuda
cp -L "$(ldd "$out/nvbandwidth" | awk '/boost_program_options/ { print $3 }')" \
    "$out/"
