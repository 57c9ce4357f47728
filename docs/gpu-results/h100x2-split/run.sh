#!/bin/sh
# Old (pre-split, e285b78) and new (split) guest tool alternating on this machine.
set -u
o=$OUT/split; mkdir -p $o
nvidia-smi -L > $o/gpus.txt 2>&1
nvidia-smi topo -m > $o/topo.txt 2>&1
printf 'run\ttool\texit\twall_s\n' > $o/runs.tsv
one() { # label tool args...
    label=$1; tool=$2; shift 2
    bin=build/gpu-pack/gpup2p-verify; [ $tool = pre ] && bin=build/gpu-pack-pre/gpup2p-verify
    s=$(date +%s.%N)
    $bin "$@" > $o/$label-$tool.json 2> $o/$label-$tool.err; rc=$?
    e=$(date +%s.%N)
    printf '%s\t%s\t%s\t%s\n' $label $tool $rc $(awk "BEGIN{print $e - $s}") >> $o/runs.tsv
}
for i in 1 2 3; do
    one default-$i split --skip-rdma --json
    one default-$i pre --skip-rdma --json
done
for i in 1 2 3; do
    one quick-$i split --quick --skip-rdma --json
    one quick-$i pre --quick --skip-rdma --json
done
CUDA_VISIBLE_DEVICES=0 one one-visible split --quick --skip-rdma --json
CUDA_VISIBLE_DEVICES=0 one one-visible pre --quick --skip-rdma --json
one rdma-untested split --quick --json
one rdma-untested pre --quick --json
cat $o/runs.tsv
tar -C $OUT -czf $OUT/split.tgz split && rm -rf $o
