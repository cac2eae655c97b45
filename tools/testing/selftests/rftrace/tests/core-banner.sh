#!/bin/sh
# The boot log names the function tracer core this kernel was built with.
case "$CORE" in
c) want='ftrace: function tracer core: C ' ;;
rust) want="ftrace: function tracer core: Rust (generic core and $(uname -m | sed 's/aarch64/arm64/') layer); [0-9]* call sites" ;;
*) echo "CORE unset"; exit 1 ;;
esac
n=$(dmesg | grep -c 'ftrace: function tracer core:')
[ "$n" -eq 1 ] || { echo "expected one core banner, found $n"; exit 1; }
dmesg | grep -q "$want" || { echo "banner is not '$want':"; dmesg | grep 'function tracer core'; exit 1; }
