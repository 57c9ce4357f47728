#!/bin/sh
# Runs in the nested guest: read the P2P capability of each GPU, wait for
# the host to hot-plug two more, read again, and try to overwrite the
# capability with non-zero bytes (the writes must be ignored).
V=build/guest-tools/gpup2p-verify
$V --pci-only --json > "$VHOST_OUT/cold.json.tmp"
mv "$VHOST_OUT/cold.json.tmp" "$VHOST_OUT/cold.json"
i=0
while [ ! -e "$VHOST_OUT/plugged" ] && [ $i -lt 1200 ]; do
    sleep 0.1; i=$((i + 1))
done
sleep 2
echo 1 > /sys/bus/pci/rescan
sleep 1
$V --pci-only --json > "$VHOST_OUT/hot.json"
python3 - "$VHOST_OUT/hot.json" > "$VHOST_OUT/writes.json" <<'PY'
import json, os, sys
out = {}
for g in json.load(open(sys.argv[1]))["gpus"]:
    cap = g["capability"]
    if not cap or cap["offset"] is None:
        continue
    path = "/sys/bus/pci/devices/%s/config" % g["bdf"]
    fd = os.open(path, os.O_RDWR)
    before = os.pread(fd, 8, cap["offset"])
    # Non-zero values over every byte, the next pointer included.
    os.pwrite(fd, b"\x5a\xa5\x11\x22", cap["offset"])
    os.pwrite(fd, b"\xff\xff\xff\xff", cap["offset"] + 4)
    os.pwrite(fd, b"\x40", cap["offset"] + 1)
    after = os.pread(fd, 8, cap["offset"])
    os.close(fd)
    out[g["bdf"]] = {"before": before.hex(), "after": after.hex()}
print(json.dumps(out))
PY
