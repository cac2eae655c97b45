#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Derive a configuration fragment from Debian's own kernel configuration.

    debian-config.py CONFIG ARCH SRC OUT

CONFIG is one of the configurations of Debian's linux-config-6.12
package (config.amd64_none_amd64.xz, config.amd64_rt_amd64.xz, ...) as
Kconfig settles it on this source (build-kernel.sh runs olddefconfig
over it first: Debian's file may name options this source's Kconfig
drops); ARCH is the kernel's architecture directory (x86, arm64); SRC
the kernel source tree; OUT the fragment written. Every option that
touches the function tracer, its clients, its code generation or its
checks gets Debian's value:

- every option that kernel/trace/Kconfig, kernel/bpf/Kconfig,
  kernel/livepatch/Kconfig and kernel/Kconfig.preempt define (the tracers
  and probes, BPF, live patching, the preemption model);
- the options of the families below, wherever Kconfig defines them: the
  mitigations and the control-flow integrity that change the call sites
  and their padding (on arm64, BTI, pointer authentication and the shadow
  call stack; its module PLTs and module placement, which decide whether
  a module's sites reach the trampolines), the unwinder, kprobes and uprobes, function error
  injection, BTF, text protection and placement (DEBUG_WX, STRICT_*_RWX,
  RELOCATABLE, RANDOMIZE_BASE), jump labels, and the CPU count.

Only options with a prompt are taken (the others follow what selects
them). EXCLUDED lists, with the reason, what the kernel's Rust support in
6.12 cannot have and what the test kernels lack; Documentation/harness.rst
repeats it. The project's own
fragments, merged after this one, add what tests need and the debug set.
"""

import lzma
import re
import sys
from pathlib import Path

# Every option these Kconfig files define.
FILES = (
    "kernel/trace/Kconfig",
    "kernel/bpf/Kconfig",
    "kernel/livepatch/Kconfig",
    "kernel/Kconfig.preempt",
)

# The families, by name, wherever they are defined.
FAMILIES = re.compile(
    r"^("
    r"CPU_MITIGATIONS|MITIGATION_\w+|CALL_PADDING|CALL_THUNKS|"
    r"X86_KERNEL_IBT|CFI_\w+|FINEIBT|"
    r"ARM64_BTI\w*|ARM64_PTR_AUTH\w*|SHADOW_CALL_STACK|UNWIND_PATCH_PAC_INTO_SCS|"
    r"ARM64_MODULE_PLTS|RANDOMIZE_MODULE_REGION_FULL|ARM64_PSEUDO_NMI|"
    r"UNWINDER_\w+|"
    r"KPROBES\w*|KRETPROBES|OPTPROBES|UPROBES|"
    r"FUNCTION_ERROR_INJECTION|"
    r"DEBUG_INFO_BTF\w*|"
    r"DEBUG_WX|STRICT_KERNEL_RWX|STRICT_MODULE_RWX|RELOCATABLE|RANDOMIZE_BASE|"
    r"JUMP_LABEL|"
    r"NR_CPUS|MAXSMP"
    r")$"
)

# What 6.12's RUST excludes (init/Kconfig, `config RUST`), with the reason.
EXCLUDED = {
    "MODVERSIONS": "RUST depends on !MODVERSIONS in 6.12",
    "MITIGATION_VMSCAPE": "it protects a KVM host; the test kernels have no KVM",
    "RANDSTRUCT": "RUST depends on !RANDSTRUCT",
    "GCC_PLUGIN_RANDSTRUCT": "RUST depends on !GCC_PLUGIN_RANDSTRUCT",
}

CONFIG_RE = re.compile(r"^CONFIG_(\w+)=(.*)$")
UNSET_RE = re.compile(r"^# CONFIG_(\w+) is not set$")
DEFINE_RE = re.compile(r"^\s*(?:menu)?config\s+(\w+)\s*$")


def debian_values(path):
    """Debian's value of every option its configuration mentions."""
    values = {}
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt") as f:
        for line in f:
            line = line.rstrip("\n")
            m = CONFIG_RE.match(line)
            if m:
                values[m.group(1)] = m.group(2)
                continue
            m = UNSET_RE.match(line)
            if m:
                values[m.group(1)] = "n"
    return values


PROMPT_RE = re.compile(r'^\s+(?:(?:bool|tristate|int|hex|string)\s+"|prompt\s)')
BLOCK_END_RE = re.compile(r"^\s*(?:config|menuconfig|choice|endchoice|menu|endmenu|if|endif|comment|source)\b")


def kconfig(path):
    """The options `path` defines, with whether each has a prompt (only
    those can be set; the others follow what selects them)."""
    opts = {}
    name = None
    for line in path.read_text(errors="replace").splitlines():
        m = DEFINE_RE.match(line)
        if m:
            name = m.group(1)
            opts.setdefault(name, False)
        elif BLOCK_END_RE.match(line):
            name = None
        elif name and PROMPT_RE.match(line):
            opts[name] = True
    return opts


def all_kconfig(src, arch):
    """Every option of the tree for `arch`, with whether it has a prompt
    somewhere."""
    opts = {}
    for path in src.rglob("Kconfig*"):
        rel = path.relative_to(src)
        if rel.parts[0] == "arch" and len(rel.parts) > 2 and rel.parts[1] != arch:
            continue
        if rel.parts[0] in ("Documentation", "tools", "scripts"):
            continue
        for name, prompt in kconfig(path).items():
            opts[name] = opts.get(name, False) or prompt
    return opts


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    config, arch = Path(sys.argv[1]), sys.argv[2]
    src, out = Path(sys.argv[3]), Path(sys.argv[4])
    values = debian_values(config)
    prompts = all_kconfig(src, arch)
    wanted = set()
    for rel in FILES:
        wanted |= set(kconfig(src / rel))
    wanted |= {name for name in values if FAMILIES.match(name)}
    # Only what can be set: an option without a prompt follows what
    # selects it.
    wanted = {name for name in wanted if prompts.get(name)}
    lines = [
        f"# Derived by scripts/harness/debian-config.py from Debian's",
        f"# {config}: every option that",
        f"# touches the function tracer, its clients, its code generation",
        f"# and its checks, with Debian's value. Do not edit: regenerated at",
        f"# every build.",
    ]
    for name in sorted(wanted):
        if name in EXCLUDED:
            lines.append(f"# CONFIG_{name}: left out ({EXCLUDED[name]})")
            continue
        if name not in values:
            # Debian's configuration does not mention it: its dependencies
            # are not met there, or it has no prompt. Kconfig decides.
            continue
        lines.append(f"CONFIG_{name}={values[name]}")
    out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
