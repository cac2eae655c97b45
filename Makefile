# SPDX-License-Identifier: GPL-2.0
#
# The ftrace core project: build a Linux 6.12 kernel with the chosen
# function tracer core and run it in QEMU. See README.md and
# Documentation/harness.rst.
#
#   make run  [CORE=rust|c] [CMD='...' | SCRIPT=path] [EXTRA=dir]
#   make test [CORE=rust|c] [CONF=production|rt|tiny|fp] [TEST_SUITES=...]
#   make ftracetest, make bench, make patch, make kernel, make clean
#   make mcount-compare (call sites of the two cores' builds)
#   make bpf-selftests (the kernel's BPF selftests through the tracer, both cores)
#   make insn-profile SCRIPT=x.sh CALLS=N (instructions per call, by function)
#   make torture [CORE=rust|c] [DURATION=s] (rftrace_torture.ko, CPUs at once)
#   make fault-inject [CORE=rust|c] (every allocation of each operation)
#   make mutants [MUTANTS_ONLY='n ...'] (the tests catch every deliberate
#   break of the Rust core: a kernel with CONFIG_FTRACE_CORE_RUST_MUTANTS)
#   KASAN=1 with kernel, test, run, fault-inject: the sanitizer build
#   (clang, KASAN, kmemleak; kernel/configs/ftrace-kasan.config)

CORE ?= rust
CONF ?= production
# The distribution configurations (derived from Debian's: production from
# its amd64 kernel, rt from its rt-amd64 one) share their test settings.
distro := $(filter production rt,$(CONF))
# The fault-injection tests fail every FI_STRIDE-th allocation of each
# operation they walk (1, 1+k, 1+2k, ...): a sample in `make test`, every
# one in `make fault-inject`. OWN_TIMEOUT: the guest's limit for one own
# test (s).
FI_STRIDE ?= 16
OWN_TIMEOUT ?= $(if $(KASAN),1800,600)
export CORE CONF SCRIPT EXTRA TIMEOUT ACCEL TOOLS VERBOSE FI_STRIDE OWN_TIMEOUT KASAN TWICE REPRO_SECONDS MUTANTS_ONLY

H := scripts/harness
ST := tools/testing/selftests/rftrace
BUILD := $(CURDIR)/build
export BUILD

.PHONY: all setup tree kernel run test generic-check test-some cargo-test ftracetest fault-inject bench patch clippy clean distclean mcount-compare torture textpoke-repro bpf-selftests insn-profile mutants

all: kernel

setup:
	@$(H)/setup-host.sh

tree: setup
	@$(H)/prepare-tree.sh

kernel: tree
	@$(H)/build-kernel.sh

report := target/release/harness-report
$(report): $(wildcard $(H)/report/src/*.rs) $(H)/report/Cargo.toml Cargo.toml
	@cargo build -q --release -p harness-report

ifneq ($(CMD),)
run_mode := cmd
else ifneq ($(SCRIPT),)
run_mode := script
else
run_mode := shell
endif

# CMD is written out unexpanded, so that '$x' reaches the guest's shell.
run: kernel
	$(if $(filter cmd,$(run_mode)),$(file >$(BUILD)/run-cmd.sh,$(value CMD)))
	@MODE=$(run_mode) CMD_FILE=$(BUILD)/run-cmd.sh $(H)/run-qemu.sh

cargo-test: setup
	@cargo test -q --workspace 2>&1 | grep -v '^$$'

# The ftracetest cases: on the production configuration every case of
# every directory of test.d; on the tiny one those of test.d/ftrace and
# test.d/kprobe (the rest needs options tinyconfig lacks).
ftlist := $(BUILD)/ftracetest-cases-$(CONF).txt
# FTRACETEST_DIRS: the ftracetest directories run. On production, by
# default those whose cases go through the tracer core (function and
# function_graph tracers, fprobe and dynamic events, direct calls,
# instances, the tracers, kprobe events: on function entries they are
# IPMODIFY, full-regs ops of the core); FTRACETEST_DIRS=all adds the rest
# (event triggers and histograms, events, event filters, 00basic), which
# test the tracing code above the core and take as long again: CI's 75
# minutes do not hold both on the machines of December 2026.
# Documentation/harness.rst says when to run them.
ifneq ($(distro),)
FTRACETEST_DIRS ?= ftrace dynevent direct instances tracer selftest preemptirq kprobe
else
FTRACETEST_DIRS ?= ftrace kprobe
endif
ftdirs := $(if $(filter all,$(FTRACETEST_DIRS)),.,$(FTRACETEST_DIRS))
# Cases that crash the stock C kernel itself (bugs above the tracer core)
# are not run; ftracetest-not-run.txt says which and why.
notrun := $(ST)/ftracetest-not-run.txt
define list-ftracetest
	@(cd $(BUILD)/src/tools/testing/selftests/ftrace/test.d && \
		find $(ftdirs) -name '*.tc' | sed 's|^\./||' | LC_ALL=C sort | \
		awk -F'\t' 'NR == FNR { if ($$0 !~ /^#/ && NF > 1) skip[$$1] = 1; next } !($$0 in skip)' \
		$(CURDIR)/$(notrun) -) > $(ftlist)
endef
# How long a test run's guest may take before it is deemed hung (s).
# KASAN's checks make the guest several times as slow: three times the
# limits.
TEST_TIMEOUT ?= $(if $(KASAN),21600,$(if $(distro),7200,2400))
# Tests the C core does not pass in a configuration, with the reason;
# then those only one core does not pass (known-failures-$(CONF)-$(CORE).txt,
# where there is one: the stock C core's own bugs the Rust core fixed;
# the rt configuration takes production's as well, and
# known-failures-rt.txt: the real-time kernel's own, on both cores).
known = $(ST)/known-failures$(if $(distro),-production).txt \
	$(wildcard $(sort $(ST)/known-failures-$(CONF)-$(CORE).txt \
		$(if $(filter rt,$(CONF)),$(ST)/known-failures-rt.txt) \
		$(if $(distro),$(ST)/known-failures-production-$(CORE).txt) \
		$(if $(filter arm64,$(ARCH)),$(ST)/known-failures-arm64.txt $(ST)/known-failures-arm64-$(CORE).txt)))

# Run test suites ($(2)) in the guest and turn the serial logs into the
# summary (scripts/harness/guest-tests.sh). A run fails on any failed or
# missing test and any kernel warning. GUESTS guests share the tests out
# and run at once: two on the production configuration (a TCG guest uses
# one host core; its tests take about an hour of guest time), one on
# the tiny one.
GUESTS ?= $(if $(distro),2,1)
define guest-tests
	$(list-ftracetest)
	@NAME=$(1) SUITES="$(2)" TIMEOUT=$(3) FTRACETEST_LIST=$(ftlist) KNOWN="$(strip $(known))" \
		GUESTS=$(GUESTS) $(H)/guest-tests.sh $(4)
endef

# Then, when both cores are built (the second core of CI), compare the
# call sites gcc's -mrecord-mcount recorded (C core) with those of the
# Rust recordmcount (Rust core).
# TEST_SUITES: the project's own tests (own) and ftracetest; CI runs the
# C core's reference with the own tests alone (see README.md).
TEST_SUITES ?= own ftracetest
# The torture (tests/torture.sh, rftrace_torture.ko) in a guest of its
# own after the others: TORTURE_CPUS vCPUs under TORTURE_ACCEL (mttcg:
# they really run at once; Documentation/harness.rst, "Parallelism") for
# TORTURE_SECONDS. `make torture [CORE=c] [DURATION=s]` runs it alone.
TORTURE_ACCEL ?= mttcg
TORTURE_CPUS ?= 4
TORTURE_SECONDS ?= $(if $(distro),300,120)
export TORTURE_ACCEL TORTURE_CPUS TORTURE_SECONDS
test: cargo-test kernel $(report)
	$(call guest-tests,test,$(TEST_SUITES),$(TEST_TIMEOUT),--tests-dir $(ST)/tests)
	@$(if $(KASAN),:,$(H)/mcount-compare.sh)

# Some of the project's tests alone: TESTS names them (tests/*.sh); the
# torture among them runs in its guest, the tools-*.sh in theirs.
# `make test-some CONF=rt TESTS="..."` is CI's share of the real-time
# configuration (.ci/run).
some_dir = $(BUILD)/some-tests-$(CORE)-$(CONF)
test-some: kernel $(report)
	@rm -rf $(some_dir) && mkdir -p $(some_dir) && \
		cp $(addprefix $(ST)/tests/,$(TESTS)) $(some_dir)/
	$(call guest-tests,some,own,$(TEST_TIMEOUT),--tests-dir $(some_dir))

ftracetest: kernel $(report)
	$(call guest-tests,ftracetest,ftracetest,$(TEST_TIMEOUT),)

# The fault-injection tests alone, failing every allocation of each
# operation in turn (issue 13; Documentation/rust-core.rst, "When things
# fail", gives what it costs).
fi_dir := $(BUILD)/fault-inject-tests
fault-inject: FI_STRIDE = 1
fault-inject: OWN_TIMEOUT = 3600
fault-inject: kernel $(report)
	@rm -rf $(fi_dir) && mkdir -p $(fi_dir) && cp $(ST)/tests/fault-inject*.sh $(fi_dir)/
	$(call guest-tests,fault-inject,own,7200,--tests-dir $(fi_dir))

mcount-compare:
	@$(H)/mcount-compare.sh

# Cross-CPU code patching without ftrace (static keys flipped while the
# other vCPUs run their sites), under ACCEL (mttcg) with SMP vCPUs (4):
# whether the emulator is right for the stock kernel's text_poke_bp().
textpoke-repro: kernel
	@MODE=script SCRIPT=$(ST)/repro/textpoke-repro.sh ACCEL=$(or $(ACCEL),mttcg) \
		SMP=$(or $(SMP),4) TIMEOUT=$(or $(TIMEOUT),1200) $(H)/run-qemu.sh

# The torture alone, for DURATION seconds (default 1800), then the test
# that kills tracing (tests/rust-ftrace-kill.sh; the Rust core's).
torture_dir := $(BUILD)/torture-tests
torture: TORTURE_SECONDS = $(or $(DURATION),1800)
torture: kernel $(report)
	@rm -rf $(torture_dir) && mkdir -p $(torture_dir) && \
		cp $(ST)/tests/torture.sh $(ST)/tests/rust-ftrace-kill.sh $(torture_dir)/
	$(call guest-tests,torture,own,$$(($(TORTURE_SECONDS) + 3600)),--tests-dir $(torture_dir))

# The deliberate breaks of the Rust core, each against the test that must
# catch it, in the mutants kernel (its own build directory; by hand, not
# in CI: some 5 minutes a break). Documentation/harness.rst, "Mutants".
mutants: export MUTANTS = 1
mutants: export CORE = rust
mutants: TORTURE_SECONDS = $(or $(DURATION),60)
mutants: tree
	@$(H)/build-kernel.sh
	@$(H)/mutants.sh

# The generic crate compiled for ARCH (arm64) in the tree of that
# architecture's C-core kernel (`make kernel ARCH=arm64 CORE=c` first):
# it builds from the same files on every architecture before that
# architecture's Rust layer exists (scripts/harness/generic-check.sh).
generic-check: tree
	@$(H)/generic-check.sh

bench: tree $(report)
	@$(H)/bench.sh

# The kernel's own BPF selftests that go through the tracer core
# (test_progs of the 6.12 tree), on both cores: every test and subtest
# that passes on C passes on Rust (Documentation/harness.rst).
bpf-selftests: tree
	@$(MAKE) -s kernel CORE=c && $(MAKE) -s kernel CORE=rust
	@$(H)/bpf-selftests.sh

# Where a guest's instructions go, function by function, under icount:
# make insn-profile SCRIPT=x.sh CALLS=N [BASE=0] [BOTH=1] [CONF=tiny]
# (Documentation/harness.rst, "Instruction profiles").
insn-profile: kernel
	@CALLS=$(CALLS) BASE=$(or $(BASE),0) BOTH=$(or $(BOTH),0) $(H)/insn-profile.sh

patch: setup
	@$(H)/make-patch.sh

# The kernel's Rust lints over the Rust core (rebuilds the Rust objects of
# build/out-rust with clippy-driver).
clippy: tree
	@CORE=rust CLIPPY=1 $(H)/build-kernel.sh

clean:
	rm -rf $(BUILD)/out-* $(BUILD)/initramfs-* $(BUILD)/log $(BUILD)/bench target

distclean:
	rm -rf $(BUILD) target
