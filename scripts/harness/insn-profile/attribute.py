#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Charges tbcount.c's blocks to functions (scripts/harness/insn-profile.sh).

attribute.py SYMS BASE.tb RUN.tb CALLS: "instructions-per-call function"
lines for what RUN executed more than BASE, largest first, and a total.
attribute.py --compare C.txt RUST.txt: the two tables side by side, with
the difference, largest difference first.
"""
import bisect
import sys


def charge(addrs, names, tb_path):
    end = addrs[-1] if addrs else 0
    per = {}
    with open(tb_path) as f:
        for line in f:
            start, insns, runs = line.split()
            start = int(start, 16)
            i = bisect.bisect_right(addrs, start) - 1
            name = names[i] if 0 <= i and start <= end else "[module or trampoline]"
            per[name] = per.get(name, 0) + int(insns) * int(runs)
    return per


def attribute(syms_path, base_path, run_path, calls):
    addrs, names = [], []
    with open(syms_path) as f:
        for line in f:
            a, n = line.split()
            addrs.append(int(a, 16))
            names.append(n)
    base = charge(addrs, names, base_path)
    run = charge(addrs, names, run_path)
    per = {n: run.get(n, 0) - base.get(n, 0) for n in set(run) | set(base)}
    total = sum(per.values())
    for name, n in sorted(per.items(), key=lambda kv: -kv[1]):
        if abs(n) / calls >= 0.005:
            print(f"{n / calls:12.2f} {name}")
    print(f"{total / calls:12.2f} [total]")


def load(path):
    t = {}
    with open(path) as f:
        for line in f:
            v, name = line.split(None, 1)
            t[name.strip()] = float(v)
    return t


def compare(c_path, r_path):
    sys.stdout.reconfigure(errors="replace")
    c, r = load(c_path), load(r_path)
    names = set(c) | set(r)
    rows = sorted(names, key=lambda n: -abs(r.get(n, 0) - c.get(n, 0)))
    print(f"{'C':>12} {'Rust':>12} {'Rust-C':>10}  function")
    for n in rows:
        cv, rv = c.get(n, 0.0), r.get(n, 0.0)
        print(f"{cv:12.2f} {rv:12.2f} {rv - cv:10.2f}  {n}")


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        sys.stdout = open(sys.stdout.fileno(), "w", closefd=False)
        compare(sys.argv[2], sys.argv[3])
    else:
        attribute(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]))
