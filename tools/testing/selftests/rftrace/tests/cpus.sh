#!/bin/sh
# The harness boots SMP vCPUs (two unless asked: make test SMP=8) and
# the guest brings them all up.
n=${SMP:-2}
online=$(cat /sys/devices/system/cpu/online)
[ "$online" = "0-$((n - 1))" ] || { echo "online CPUs: '$online', expected 0-$((n - 1))"; exit 1; }
[ "$(nproc)" = "$n" ] || { echo "nproc: $(nproc), expected $n"; exit 1; }
