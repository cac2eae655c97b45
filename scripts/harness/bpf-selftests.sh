#!/usr/bin/env bash
# make bpf-selftests: the kernel's own BPF selftests that go through the
# function tracer core, on both cores of CONF (production by default).
#
# test_progs is built from the 6.12 tree's tools/testing/selftests/bpf
# with Debian's clang, by that directory's own Makefile, over the tests
# named below (fentry/fexit/fmod_ret trampolines, kprobes, kprobe_multi,
# their cookies, links and module variants): a directory of links,
# selftests/bpf-ftrace, holds those tests, the BPF programs they include
# and everything else of selftests/bpf. The tests themselves are not
# edited. bpf_testmod.ko is built against each core's kernel.
#
# Each core boots with the same initramfs and runs `test_progs -t LIST`.
# The oracle is test_progs' own verdicts, test by test and subtest by
# subtest: every one that passes on C must pass on Rust.
# Documentation/harness.rst, "The kernel's BPF selftests".
set -euo pipefail
. "$(dirname "$0")/env.sh"

TESTS=(fentry_test fexit_test fentry_fexit fexit_stress fexit_sleep
	trampoline_count modify_return get_func_ip_test get_func_args_test
	kprobe_multi_test kprobe_multi_testmod_test attach_probe tracing_struct
	bpf_cookie module_attach module_fentry_shadow recursive_attach
	fill_link_info missed d_path test_overhead kfree_skb vmlinux)
# Built, not run: they define functions the tests above call.
LINKED=(uprobe_multi_test test_lsm)
# Light skeletons among them (the Makefile's LSKELS, cut to these tests).
LSKELS="fentry_test.c fexit_test.c fexit_sleep.c"

st=$src/tools/testing/selftests
sub=$st/bpf-ftrace
bo=$build/bpf-selftests
[ -d "$st/bpf" ] || { echo "bpf-selftests: no $st/bpf (make tree)" >&2; exit 2; }
for core in c rust; do
	[ -f "$build/out-$core-$CONF/vmlinux" ] ||
		{ echo "bpf-selftests: build both cores first (make kernel CORE=$core CONF=$CONF)" >&2; exit 2; }
done

# --- the subset directory ----------------------------------------------------
rm -rf "$sub" && mkdir -p "$sub/prog_tests" "$sub/progs"
for f in "$st"/bpf/* "$st"/bpf/.[!.]*; do
	case "${f##*/}" in prog_tests | progs) ;; *) ln -s "$f" "$sub/" ;; esac
done
for h in "$st"/bpf/prog_tests/*.h; do [ "${h##*/}" = tests.h ] || ln -s "$h" "$sub/prog_tests/"; done
ln -s "$st"/bpf/progs/*.h "$sub/progs/"
progs=()
for t in "${TESTS[@]}" "${LINKED[@]}"; do
	[ -f "$st/bpf/prog_tests/$t.c" ] || { echo "bpf-selftests: no test $t" >&2; exit 2; }
	ln -s "$st/bpf/prog_tests/$t.c" "$sub/prog_tests/"
	# The programs a test opens: its skeletons and the objects it names.
	progs+=($(grep -ohE '"[a-z0-9_]+\.(l|sub)?skel\.h"|[a-z0-9_]+\.bpf\.o' "$st/bpf/prog_tests/$t.c" |
		sed -E 's/"//g; s/\.(l|sub)?skel\.h$//; s/\.bpf\.o$//' || true))
done
for p in $(printf '%s\n' "${progs[@]}" | sort -u); do
	[ -f "$st/bpf/progs/$p.c" ] || { echo "bpf-selftests: no program $p.c" >&2; exit 2; }
	ln -s "$st/bpf/progs/$p.c" "$sub/progs/"
done

# --- build -------------------------------------------------------------------
mkdir -p "$bo/out"
# The test objects' dependency files name the skeletons relative to the
# output directory, which the Makefile cannot find again on the next run:
# drop them (the sources are the tarball's, they do not change).
rm -f "$bo"/out/*.test.d
echo "  BPF     test_progs over ${#TESTS[@]} tests, $(ls "$sub"/progs/*.c | wc -l) programs (log: ${bo#$top/}/build.log)"
if ! make -C "$sub" -j"$jobs" OUTPUT="$bo/out" \
	CLANG=clang-19 LLC=llc-19 LLVM_STRIP=llvm-strip-19 \
	VMLINUX_BTF="$build/out-c-$CONF/vmlinux" \
	LSKELS="$LSKELS" LSKELS_EXTRA= LINKED_SKELS= \
	TRUNNER_EXTRA_FILES="$bo/out/urandom_read $bo/out/liburandom_read.so" \
	"$bo/out/test_progs" > "$bo/build.log" 2>&1; then
	tail -30 "$bo/build.log" >&2
	echo "bpf-selftests: test_progs did not build" >&2
	exit 1
fi
for core in c rust; do
	m=$bo/bpf_testmod-$core
	rm -rf "$m" && mkdir -p "$m"
	cp "$st"/bpf/bpf_testmod/*.[ch] "$m/"
	printf 'obj-m += bpf_testmod.o\nCFLAGS_bpf_testmod.o = -I$(src)\n' > "$m/Kbuild"
	CORE=$core
	out=$build/out-$core-$CONF
	echo "  MOD     bpf_testmod.ko for the $core core"
	kmake M="$m" modules > "$m/build.log" 2>&1 ||
		{ tail -20 "$m/build.log" >&2; echo "bpf-selftests: bpf_testmod did not build" >&2; exit 1; }
done

# --- run ---------------------------------------------------------------------
cat > "$bo/guest.sh" << EOF
cd /extra
cp bpf_testmod-\$CORE.ko bpf_testmod.ko
# libbpf reads the kernel's configuration for programs' __kconfig externs.
mkdir -p /boot && cp config-\$CORE /boot/config-\$(uname -r)
ulimit -l unlimited
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
./test_progs -t $(IFS=,; echo "${TESTS[*]}")
echo "test_progs exit \$?"
EOF
rc=0
for core in c rust; do
	x=$bo/extra-$core
	rm -rf "$x" && mkdir -p "$x"
	cp "$bo/out/test_progs" "$bo/out/urandom_read" "$bo/out/liburandom_read.so" "$x/"
	cp "$bo"/out/*.bpf.o "$x/" 2>/dev/null || true
	for c2 in c rust; do
		cp "$bo/bpf_testmod-$c2/bpf_testmod.ko" "$x/bpf_testmod-$c2.ko"
		cp "$build/out-$c2-$CONF/.config" "$x/config-$c2"
	done
	echo "  RUN     test_progs on the $core core (log: build/log/bpf-selftests-$core.log)"
	CORE=$core MODE=script SCRIPT="$bo/guest.sh" EXTRA="$x" MEM=2G \
		TIMEOUT=${BPF_TIMEOUT:-1800} LOG="$build/log/bpf-selftests-$core.log" \
		"$top/scripts/harness/run-qemu.sh" > /dev/null || true
	grep -E '^#[0-9]+(/[0-9]+)? +[^ ]+:(OK|FAIL|SKIP)' "$build/log/bpf-selftests-$core.log" |
		sed -E 's/^#[0-9/]+ +//' | sort > "$bo/verdicts-$core" || true
	grep -q '^Summary:' "$build/log/bpf-selftests-$core.log" ||
		{ echo "bpf-selftests: test_progs did not finish on the $core core" >&2; rc=1; }
done

# --- compare -----------------------------------------------------------------
for core in c rust; do
	printf '  %-5s %s\n' "$core" "$(grep '^Summary:' "$build/log/bpf-selftests-$core.log" | tail -1)"
done
lost=$(comm -23 <(grep ':OK$' "$bo/verdicts-c") <(grep ':OK$' "$bo/verdicts-rust"))
if [ -n "$lost" ]; then
	echo "bpf-selftests: passes on C, not on Rust:" >&2
	printf '%s\n' "$lost" >&2
	rc=1
fi
[ -s "$bo/verdicts-c" ] || { echo "bpf-selftests: no verdicts from the C core" >&2; rc=1; }
[ "$rc" = 0 ] && echo "bpf-selftests: every test and subtest that passes on C passes on Rust ($(grep -c ':OK$' "$bo/verdicts-rust") OK on Rust)"
exit "$rc"
