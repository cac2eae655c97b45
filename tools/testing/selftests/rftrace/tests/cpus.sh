#!/bin/sh
# The harness boots two vCPUs and the guest brings both up.
online=$(cat /sys/devices/system/cpu/online)
[ "$online" = 0-1 ] || { echo "online CPUs: '$online', expected 0-1"; exit 1; }
[ "$(nproc)" = 2 ] || { echo "nproc: $(nproc)"; exit 1; }
