# SPDX-License-Identifier: GPL-2.0
# Sourced by bench.sh and many-ops.sh: dither sleeps 0 to 3,999 us (the
# tick of HZ=250), the next of a fixed pseudo-random sequence, the same
# on both cores. The rows that wait for timer ticks call it before each
# sample: under -icount a guest repeats to the instruction, so without it
# a switch that ends on a grace period's tick starts the next sample at
# the same phase again, and a core's samples lock onto one value (a run
# gave one core 13 of its 15 enable-all-sites samples at the same 72.06
# ms, the other's spread over 44 to 76 ms). On hardware the phase is
# random.
dither_seed=1
dither() {
	dither_seed=$(( (dither_seed * 1103515245 + 12345) % 2147483648 ))
	usleep $(( (dither_seed / 65536) % 4000 ))
}
