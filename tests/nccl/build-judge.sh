#!/bin/sh
# Build nccl-topo-judge: NCCL's topology reader (src/graph/xml.cc of the
# tree scripts/nccl-source.sh unpacks), compiled unchanged with NCCL's
# include paths and defines for Linux (not its -O3 or symbol visibility,
# which change no behaviour), linked with our driver and the stand-ins of
# outside-reader.cc. Prints the binary's path.
#
#   tests/nccl/build-judge.sh NCCL_TREE OUTDIR
#
# The reader includes the CUDA runtime's headers (its types only; nothing
# of CUDA runs): $CUDA_HOME/include, /usr/local/cuda/include by default.
set -eu
if [ $# -ne 2 ]; then
    echo "usage: build-judge.sh NCCL_TREE OUTDIR" >&2
    exit 2
fi
tree=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
cuda_inc=${CUDA_HOME:-/usr/local/cuda}/include
if [ ! -f "$cuda_inc/cuda_runtime.h" ]; then
    echo "build-judge.sh: no cuda_runtime.h in $cuda_inc (install the CUDA" \
         "Toolkit there, or set CUDA_HOME)" >&2
    exit 1
fi
version_mk=$tree/makefiles/version.mk
field() {
    awk -v k="$1" '$1 == k { print $3; exit }' "$version_mk"
}
major=$(field NCCL_MAJOR)
minor=$(field NCCL_MINOR)
patch=$(field NCCL_PATCH)
suffix=$(awk '$1 == "NCCL_SUFFIX" { print $3; exit }' "$version_mk")
if [ -z "$major" ] || [ -z "$minor" ] || [ -z "$patch" ]; then
    echo "build-judge.sh: $version_mk gives no NCCL version" >&2
    exit 1
fi
cuda_major=$(awk '$2 == "CUDART_VERSION" { print int($3 / 1000); exit }' \
             "$cuda_inc/cuda_runtime_api.h")
if [ -z "$cuda_major" ]; then
    echo "build-judge.sh: $cuda_inc/cuda_runtime_api.h gives no" \
         "CUDART_VERSION" >&2
    exit 1
fi
# The reader's capacity as NCCL allocates it (src/graph/topo.h).
max_nodes=$(awk '$2 == "NCCL_TOPO_XML_MAX_NODES" { print $3; exit }' \
            "$tree/src/graph/topo.h")
case "$max_nodes" in
''|*[!0-9]*)
    echo "build-judge.sh: $tree/src/graph/topo.h gives no" \
         "NCCL_TOPO_XML_MAX_NODES" >&2
    exit 1
    ;;
esac
mkdir -p "$out/include"
# nccl.h as NCCL's src/Makefile makes it from nccl.h.in.
sed -e "s/\${nccl:Major}/$major/g" -e "s/\${nccl:Minor}/$minor/g" \
    -e "s/\${nccl:Patch}/$patch/g" -e "s/\${nccl:Suffix}/$suffix/g" \
    -e "s/\${nccl:Version}/$((major * 10000 + minor * 100 + patch))/g" \
    "$tree/src/nccl.h.in" > "$out/include/nccl.h.tmp"
mv "$out/include/nccl.h.tmp" "$out/include/nccl.h"
flags="-std=c++17 -O1 -DNCCL_OS_LINUX -DCUDA_MAJOR=$cuda_major
       -DTOPO_XML_MAX_NODES=$max_nodes"
# NCCL's file with NCCL's warning flags; ours with the project's, NCCL's
# and CUDA's headers taken as system headers (their warnings are theirs).
# shellcheck disable=SC2086
c++ $flags -I"$tree/src" -I"$out/include" -I"$tree/src/include" \
    -I"$tree/src/include/plugin" -I"$cuda_inc" \
    -Wall -Wno-unused-function -Wno-sign-compare \
    -c "$tree/src/graph/xml.cc" -o "$out/xml.o"
for f in outside-reader nccl-topo-judge; do
    # shellcheck disable=SC2086
    c++ $flags -isystem "$out/include" -isystem "$tree/src/include" \
        -isystem "$tree/src" -isystem "$tree/src/include/plugin" \
        -isystem "$cuda_inc" -Wall -Wextra -Werror \
        -c "$here/$f.cc" -o "$out/$f.o"
done
c++ -o "$out/nccl-topo-judge.tmp" "$out/nccl-topo-judge.o" "$out/xml.o" \
    "$out/outside-reader.o" -ldl
mv "$out/nccl-topo-judge.tmp" "$out/nccl-topo-judge"
echo "$out/nccl-topo-judge"
