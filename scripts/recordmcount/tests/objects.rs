// SPDX-License-Identifier: GPL-2.0
//! The tool on objects gcc compiles here, checked against gcc's own
//! `-mrecord-mcount` tables, after `ld -r`, and in a running program.

mod common;

use std::fmt::Write as _;
use std::process::Command;

use common::*;
use rftrace_recordmcount::elf::Elf;
use rftrace_recordmcount::record::{is_mcounted_section_name, MCOUNT_LOC};

/// Runs the tool on the plain object of a pair and checks that it records
/// exactly the sites gcc records, minus those of untraced sections (which
/// the tool turns into NOPs). Returns the number of sites.
fn cross_check(plain: &std::path::Path, rec: &std::path::Path, nop: bool) -> usize {
    let before = read(plain);
    assert!(mcount_sites(&before).is_empty());
    let out = if nop {
        tool_ok([std::ffi::OsStr::new("-n"), plain.as_os_str()])
    } else {
        tool_ok([plain])
    };
    assert!(out.stdout.is_empty());
    let after = read(plain);
    let n = check_consistent(&after, nop);

    let gcc_sites: Vec<(String, u64)> = mcount_sites(&read(rec))
        .into_iter()
        .filter(|(s, _)| is_mcounted_section_name(s.as_bytes()))
        .collect();
    assert_same("tool sites", "gcc sites", &mcount_sites(&after), &gcc_sites);
    // The code is the same apart from the NOPs.
    let calls_after: Vec<(String, u64)> = fentry_calls(&after)
        .into_iter()
        .map(|c| (c.section, c.site))
        .collect();
    let calls_gcc: Vec<(String, u64)> = fentry_calls(&read(rec))
        .into_iter()
        .map(|c| (c.section, c.site))
        .collect();
    assert_same("calls after", "gcc calls", &calls_after, &calls_gcc);
    n
}

/// A translation unit with most things the kernel's C has: static, weak,
/// global, cold, hot and inline functions, jump tables, function pointers,
/// strings, notrace functions and the kernel's text sections.
fn rich_source(prefix: &str) -> String {
    let mut s = String::new();
    write!(
        s,
        r#"
extern int printf(const char *, ...);
static int counter;
static const char *const names[] = {{ "zero", "one", "two" }};
__attribute__((noinline)) static int {p}helper(int x) {{ return x * 3 + counter; }}
__attribute__((noinline)) static int {p}helper2(int x) {{ return x ^ counter; }}
int __attribute__((weak)) {p}weak_hook(int x) {{ return x + 1; }}
int __attribute__((weak)) {p}weak_hook2(int x) {{ return x + 2; }}
int (*{p}fptr)(int) = {p}helper2;
int {p}sw(int x) {{
    switch (x) {{
    case 0: return {p}helper(1);
    case 1: return 7;
    case 2: return {p}weak_hook(x);
    case 3: return 11;
    case 4: return 13;
    case 5: return 17;
    case 6: return {p}weak_hook2(x);
    default: return -1;
    }}
}}
__attribute__((cold, noinline)) int {p}cold_fn(int x) {{ return x - counter; }}
__attribute__((hot, noinline)) int {p}hot_fn(int x) {{ return x * counter + 1; }}
int {p}split(int x) {{
    if (__builtin_expect(x > 1000, 0)) {{
        counter += {p}cold_fn(x);
        printf("%s\n", names[x % 3]);
    }}
    return {p}hot_fn(x);
}}
static inline int {p}inl(int x) {{ return x + 5; }}
const char *{p}name_of(int i) {{ return names[i % 3] + {p}inl(0) - 5; }}
__attribute__((no_instrument_function)) int {p}notrace_fn(int x) {{ return x + counter; }}
__attribute__((section(".init.text"), noinline)) int {p}init_fn(int x) {{ return {p}sw(x) + 1; }}
__attribute__((section(".ref.text"), noinline)) int {p}ref_fn(int x) {{ return {p}sw(x) + 2; }}
__attribute__((section(".sched.text"), noinline)) int {p}sched_fn(int x) {{ return {p}sw(x) + 3; }}
__attribute__((section(".spinlock.text"), noinline)) int {p}lock_fn(int x) {{ return {p}sw(x) + 4; }}
__attribute__((section(".irqentry.text"), noinline)) int {p}irq_fn(int x) {{ return {p}sw(x) + 5; }}
__attribute__((section(".softirqentry.text"), noinline)) int {p}softirq_fn(int x) {{ return {p}sw(x) + 6; }}
__attribute__((section(".kprobes.text"), noinline)) int {p}kprobes_fn(int x) {{ return {p}sw(x) + 7; }}
__attribute__((section(".cpuidle.text"), noinline)) int {p}idle_fn(int x) {{ return {p}sw(x) + 8; }}
__attribute__((section(".text.unlikely"), noinline)) int {p}unlikely_fn(int x) {{ return {p}sw(x) + 9; }}
__attribute__((section(".text.hot"), noinline)) int {p}texthot_fn(int x) {{ return {p}sw(x) + 10; }}
int {p}all(int x) {{
    return {p}init_fn(x) + {p}ref_fn(x) + {p}sched_fn(x) + {p}lock_fn(x) + {p}irq_fn(x)
        + {p}softirq_fn(x) + {p}kprobes_fn(x) + {p}idle_fn(x) + {p}unlikely_fn(x)
        + {p}texthot_fn(x) + {p}split(x) + {p}fptr(x) + {p}notrace_fn(x)
        + {p}name_of(x)[0];
}}
"#,
        p = prefix
    )
    .unwrap();
    s
}

const FLAG_SETS: &[&[&str]] = &[
    &["-O2"],
    &["-O2", "-ffunction-sections"],
    &["-O2", "-fno-asynchronous-unwind-tables"],
    &[
        "-O2",
        "-ffunction-sections",
        "-fno-asynchronous-unwind-tables",
    ],
    &["-Os", "-ffunction-sections"],
    &["-O0"],
];

fn flags<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut f = PG.to_vec();
    f.extend_from_slice(extra);
    f
}

/// The main cross-check: for several flag sets, the tool records what gcc's
/// `-mrecord-mcount` records; `ld -r` of two processed objects has one
/// `__mcount_loc` with the same sites as `ld -r` of gcc's objects.
#[test]
fn matches_gcc_record_mcount_and_links() {
    for (k, extra) in FLAG_SETS.iter().enumerate() {
        let dir = TempDir::new(&format!("xcheck{k}"));
        let f = flags(extra);
        let (a, a_gcc) = gcc_pair(&dir, "a", &rich_source("a_"), &f);
        let (b, b_gcc) = gcc_pair(&dir, "b", &rich_source("b_"), &f);
        let na = cross_check(&a, &a_gcc, false);
        let nb = cross_check(&b, &b_gcc, false);
        assert!(na >= 20, "{extra:?}: only {na} sites");

        let linked = dir.join("linked.o");
        ld_r(&linked, &[&a, &b]);
        let linked_gcc = dir.join("linked-gcc.o");
        ld_r(&linked_gcc, &[&a_gcc, &b_gcc]);
        let data = read(&linked);
        assert_eq!(check_consistent(&data, false), na + nb, "{extra:?}");
        assert_same(
            &format!("linked sites {extra:?}"),
            "linked gcc sites",
            &mcount_sites(&data),
            &mcount_sites(&read(&linked_gcc)),
        );

        // gcc -r as well, and the tool leaves its output alone.
        let linked2 = dir.join("linked2.o");
        let out = Command::new("gcc")
            .args(["-r", "-nostdlib", "-o"])
            .arg(&linked2)
            .arg(&a)
            .arg(&b)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let before = read(&linked2);
        let out = tool_ok([&linked2]);
        assert!(String::from_utf8_lossy(&out.stderr).contains("already"));
        assert_eq!(read(&linked2), before);
        assert_eq!(mcount_sites(&before).len(), na + nb);
    }
}

/// Dozens of functions in their own sections.
#[test]
fn many_function_sections() {
    let dir = TempDir::new("many");
    let mut src = String::new();
    for i in 0..80 {
        match i % 4 {
            0 => writeln!(src, "int f{i}(int x) {{ return x * {i} + 1; }}"),
            1 => writeln!(
                src,
                "__attribute__((noinline)) static int s{i}(int x) {{ return x - {i}; }}\nint g{i}(int x) {{ return s{i}(x) + f{}(x); }}",
                i - 1
            ),
            2 => writeln!(src, "int __attribute__((weak)) w{i}(int x) {{ return x ^ {i}; }}"),
            _ => writeln!(
                src,
                "__attribute__((cold)) int c{i}(int x) {{ return x | {i}; }}"
            ),
        }
        .unwrap();
    }
    let f = flags(&["-O2", "-ffunction-sections"]);
    let (plain, rec) = gcc_pair(&dir, "many", &src, &f);
    let n = cross_check(&plain, &rec, false);
    assert_eq!(n, 100);
    let sections: std::collections::BTreeSet<String> = mcount_sites(&read(&plain))
        .into_iter()
        .map(|s| s.0)
        .collect();
    assert!(sections.len() >= 80, "{sections:?}");
    assert!(sections.iter().any(|s| s.starts_with(".text.unlikely.")));
}

/// Weak and static functions; sections holding only weak functions have no
/// section symbol (the assembler drops unused ones), so the tool adds one
/// rather than relocating against a weak symbol.
#[test]
fn weak_and_static_functions() {
    let src = r#"
int __attribute__((weak)) w1(int x) { return x + 1; }
int __attribute__((weak)) w2(int x) { return x + 2; }
__attribute__((noinline)) static int s1(int x) { return x * 7; }
int g(int x) { return s1(x) + w1(x) + w2(x); }
"#;
    let weak_only = r#"
int __attribute__((weak)) only1(int x) { return x + 1; }
int __attribute__((weak)) only2(int x) { return x + 2; }
"#;
    let mut k = 0;
    for extra in [
        &["-O2"][..],
        &["-O2", "-ffunction-sections"],
        &["-O2", "-fno-asynchronous-unwind-tables"],
        &[
            "-O2",
            "-ffunction-sections",
            "-fno-asynchronous-unwind-tables",
        ],
    ] {
        for source in [src, weak_only] {
            k += 1;
            let dir = TempDir::new(&format!("weak{k}"));
            let (plain, rec) = gcc_pair(&dir, "w", source, &flags(extra));
            let n = cross_check(&plain, &rec, false);
            assert_eq!(n, if source == src { 4 } else { 2 });
            // Linking keeps the weak functions' sites, even when a strong
            // definition replaces one of them.
            let strong = gcc(
                &dir,
                "strong",
                "int w1(int x) { return x * 100; }\nint only1(int x) { return x * 100; }\n",
                &flags(extra),
            );
            tool_ok([&strong]);
            let linked = dir.join("linked.o");
            ld_r(&linked, &[&plain, &strong]);
            assert_eq!(check_consistent(&read(&linked), false), n + 2);
        }
    }
}

/// The kernel's text sections are traced, the others are not: the tool
/// turns their calls into NOPs.
#[test]
fn special_sections() {
    let mut src = rich_source("x_");
    src.push_str(
        r#"
__attribute__((section(".exit.text"), noinline)) int exit_fn(int x) { return x_sw(x) + 1; }
__attribute__((section(".noinstr.text"), noinline)) int noinstr_fn(int x) { return x_sw(x) + 2; }
__attribute__((section(".entry.text"), noinline)) int entry_fn(int x) { return x_sw(x) + 3; }
__attribute__((section(".init.text.foo"), noinline)) int init2_fn(int x) { return x_sw(x) + 4; }
"#,
    );
    let dir = TempDir::new("special");
    let (plain, rec) = gcc_pair(&dir, "s", &src, &flags(&["-O2"]));
    cross_check(&plain, &rec, false);
    let sites = mcount_sites(&read(&plain));
    let sections: std::collections::BTreeSet<&str> = sites.iter().map(|s| s.0.as_str()).collect();
    for s in [
        ".text",
        ".init.text",
        ".ref.text",
        ".sched.text",
        ".spinlock.text",
        ".irqentry.text",
        ".softirqentry.text",
        ".kprobes.text",
        ".cpuidle.text",
        ".text.unlikely",
        ".text.hot",
    ] {
        assert!(sections.contains(s), "{s} missing from {sections:?}");
    }
    let untraced: Vec<Call> = fentry_calls(&read(&plain))
        .into_iter()
        .filter(|c| !is_mcounted_section_name(c.section.as_bytes()))
        .collect();
    let names: std::collections::BTreeSet<&str> =
        untraced.iter().map(|c| c.section.as_str()).collect();
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        vec![
            ".entry.text",
            ".exit.text",
            ".init.text.foo",
            ".noinstr.text"
        ]
    );
    // -w names them.
    let dir2 = TempDir::new("special-w");
    let plain2 = gcc(&dir2, "s", &src, &flags(&["-O2"]));
    let out = tool_ok([std::ffi::OsStr::new("-w"), plain2.as_os_str()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    for s in [
        ".exit.text",
        ".noinstr.text",
        ".entry.text",
        ".init.text.foo",
    ] {
        assert!(stdout.contains(s), "{stdout}");
    }
    assert_eq!(mcount_sites(&read(&plain2)), mcount_sites(&read(&plain)));
}

/// No `-pg`: nothing to do, the file is not touched.
#[test]
fn no_fentry_calls_is_unchanged() {
    let dir = TempDir::new("nopg");
    let o = gcc(&dir, "n", &rich_source("n_"), &["-O2", "-fno-pic"]);
    let before = read(&o);
    let mtime = std::fs::metadata(&o).unwrap().modified().unwrap();
    let out = tool_ok([&o]);
    assert!(out.stdout.is_empty() && out.stderr.is_empty());
    assert_eq!(read(&o), before);
    assert_eq!(std::fs::metadata(&o).unwrap().modified().unwrap(), mtime);
    assert_eq!(dir.files(), vec!["n.c", "n.o"]);
    // An object with no functions at all.
    let e = gcc(&dir, "e", "int data = 1;\n", PG);
    let before = read(&e);
    tool_ok([&e]);
    assert_eq!(read(&e), before);
}

/// `-n`: the recorded calls become NOPs with `R_X86_64_NONE` relocations.
#[test]
fn nop_option() {
    for (k, extra) in [&["-O2"][..], &["-O2", "-ffunction-sections"]]
        .iter()
        .enumerate()
    {
        let dir = TempDir::new(&format!("nop{k}"));
        let (plain, rec) = gcc_pair(&dir, "p", &rich_source("p_"), &flags(extra));
        let n = cross_check(&plain, &rec, true);
        let calls = fentry_calls(&read(&plain));
        assert_eq!(calls.len(), n);
        assert!(calls
            .iter()
            .all(|c| c.bytes == [0x0f, 0x1f, 0x44, 0x00, 0x00]));
        let linked = dir.join("linked.o");
        ld_r(&linked, &[&plain]);
        assert_eq!(check_consistent(&read(&linked), true), n);
    }
}

/// The tool runs again on its own output: nothing changes.
#[test]
fn idempotent_and_permissions_kept() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("again");
    let o = gcc(&dir, "i", &rich_source("i_"), &flags(&["-O2"]));
    std::fs::set_permissions(&o, std::fs::Permissions::from_mode(0o640)).unwrap();
    tool_ok([&o]);
    let once = read(&o);
    assert_eq!(
        std::fs::metadata(&o).unwrap().permissions().mode() & 0o7777,
        0o640
    );
    let out = tool_ok([&o]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("__mcount_loc already exists"));
    assert_eq!(read(&o), once);
    assert_eq!(dir.files(), vec!["i.c", "i.o"]);
}

/// Tens of thousands of functions, each in its own section: more than
/// 65280 sections (extended section numbering), weak-only sections past
/// that limit (section symbols with extended indexes).
#[test]
fn tens_of_thousands_of_functions() {
    let dir = TempDir::new("big");
    let n = 35_000;
    let mut src = String::with_capacity(n * 40);
    for i in 0..n {
        if i % 1000 == 999 {
            writeln!(
                src,
                "int __attribute__((weak)) f{i}(int x) {{ return x + {i}; }}"
            )
            .unwrap();
        } else {
            writeln!(src, "int f{i}(int x) {{ return x + {i}; }}").unwrap();
        }
    }
    let f = flags(&[
        "-O0",
        "-ffunction-sections",
        "-fno-asynchronous-unwind-tables",
    ]);
    let start = std::time::Instant::now();
    let (plain, rec) = gcc_pair(&dir, "big", &src, &f);
    eprintln!("compiling {n} functions twice: {:?}", start.elapsed());
    let start = std::time::Instant::now();
    let got = cross_check(&plain, &rec, false);
    assert_eq!(got, n);
    let data = read(&plain);
    let elf = Elf::parse(&data).unwrap();
    assert!(elf.shnum() > 0xff00);
    assert_eq!(elf.e_shnum(), 0);
    // The weak functions past section 0xff00 got section symbols.
    let st = elf.symtab(elf.find_section(b".symtab").unwrap()).unwrap();
    let mut high_section_symbols = 0;
    for i in 0..st.count() {
        let s = st.get(i).unwrap();
        if s.kind() == 3 && st.section_of(i, &s).unwrap().unwrap_or(0) >= 0xff00 {
            high_section_symbols += 1;
        }
        assert!(
            i >= st.first_global() || s.bind() == 0,
            "local after global"
        );
        assert!(
            i < st.first_global() || s.bind() != 0,
            "global among locals"
        );
    }
    assert!(high_section_symbols > 0);
    eprintln!("tool + checks on {n} functions: {:?}", start.elapsed());

    // And linking keeps them all.
    let linked = dir.join("linked.o");
    ld_r(&linked, &[&plain]);
    assert_eq!(mcount_sites(&read(&linked)).len(), n);
}

/// The processed objects linked into a program: `__mcount_loc` holds the
/// address of every traced function's `call __fentry__` (the function's
/// first instruction), the calls happen, and with `-n` they do not.
#[test]
fn linked_program_sees_every_site() {
    let lib = r#"
__attribute__((noinline)) static int s1(int x) { return x * 7; }
int __attribute__((weak)) w1(int x) { return x + 1; }
int __attribute__((weak)) w2(int x) { return x + 2; }
int g1(int x) { return s1(x) + w1(x); }
__attribute__((section(".init.text"), noinline)) int i1(int x) { return x - 3; }
__attribute__((section(".exit.text"), noinline)) int e1(int x) { return x - 4; }
__attribute__((cold, noinline)) int c1(int x) { return x - 5; }
void *traced[] = { (void *)s1, (void *)w1, (void *)w2, (void *)g1, (void *)i1, (void *)c1 };
int ntraced = 6;
int run(int x) { return g1(x) + w2(x) + i1(x) + e1(x) + c1(x); }
"#;
    let strong = "int w2(int x) { return x * 2; }\n";
    let main = r#"
extern int printf(const char *, ...);
extern unsigned long __start___mcount_loc[], __stop___mcount_loc[];
extern void *traced[];
extern int ntraced;
extern int w2(int);
int run(int);
unsigned long fentry_calls;
asm(".text\n.globl __fentry__\n__fentry__:\n\tincq fentry_calls(%rip)\n\tret\n");
int main(void) {
    int n = __stop___mcount_loc - __start___mcount_loc;
    int r = run(10);
    for (int i = 0; i < ntraced; i++) {
        int found = 0;
        for (int k = 0; k < n; k++)
            found += __start___mcount_loc[k] == (unsigned long)traced[i];
        /* the overridden weak w2 is still listed, but traced[] points to the strong one */
        if (found != 1 && traced[i] != (void *)w2)
            return 100 + i;
    }
    printf("sites %d calls %lu result %d\n", n, fentry_calls, r);
    return 0;
}
"#;
    let mut outputs = Vec::new();
    for mode in ["gcc", "tool", "tool-n"] {
        let dir = TempDir::new(&format!("prog-{mode}"));
        let mut f = flags(&["-O2", "-ffunction-sections"]);
        if mode == "gcc" {
            f.push("-mrecord-mcount");
        }
        let l = gcc(&dir, "lib", lib, &f);
        let s = gcc(&dir, "strong", strong, &f);
        if mode != "gcc" {
            let args: Vec<&std::ffi::OsStr> = if mode == "tool-n" {
                vec!["-n".as_ref(), l.as_os_str(), s.as_os_str()]
            } else {
                vec![l.as_os_str(), s.as_os_str()]
            };
            tool_ok(args);
        }
        let m = gcc(&dir, "main", main, &["-O2", "-fno-pic"]);
        let exe = dir.join("prog");
        let out = Command::new("gcc")
            .arg("-no-pie")
            .arg("-o")
            .arg(&exe)
            .arg(&m)
            .arg(&l)
            .arg(&s)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let run = Command::new(&exe).output().unwrap();
        assert!(run.status.success(), "{mode}: {:?}", run.status);
        outputs.push(String::from_utf8_lossy(&run.stdout).into_owned());
    }
    let parse = |s: &str| -> (u64, u64, i64) {
        let w: Vec<&str> = s.split_whitespace().collect();
        assert_eq!(w.len(), 6, "{s}");
        (
            w[1].parse().unwrap(),
            w[3].parse().unwrap(),
            w[5].parse().unwrap(),
        )
    };
    let (gcc_sites, gcc_calls, gcc_result) = parse(&outputs[0]);
    let (sites, calls, result) = parse(&outputs[1]);
    let (n_sites, n_calls, n_result) = parse(&outputs[2]);
    // gcc also records the call in .exit.text (e1), which the tool turns
    // into a NOP: one site and one call fewer.
    assert_eq!(
        (sites + 1, calls + 1),
        (gcc_sites, gcc_calls),
        "{outputs:?}"
    );
    // Sites: s1 w1 w2 g1 i1 c1 run and the strong w2; calls: run (with g1
    // inlined) s1 w1 w2 i1 c1.
    assert_eq!(sites, 8, "{outputs:?}");
    assert_eq!(calls, 6, "{outputs:?}");
    assert_eq!((n_sites, n_calls), (sites, 0), "{outputs:?}");
    assert_eq!((result, n_result), (gcc_result, gcc_result));
}

/// `__mcount_loc` as a program sees it is the same for the tool's objects
/// and gcc's (the previous test checks addresses, this one the layout).
#[test]
fn section_header_shape() {
    let dir = TempDir::new("shape");
    let o = gcc(&dir, "h", &rich_source("h_"), &flags(&["-O2"]));
    tool_ok([&o]);
    let data = read(&o);
    let elf = Elf::parse(&data).unwrap();
    let loc = elf.find_section(MCOUNT_LOC).unwrap();
    let s = elf.section(loc).unwrap();
    assert_eq!(s.kind, 1);
    assert_eq!(s.flags, 2);
    assert_eq!(s.addralign, 8);
    assert_eq!(s.offset % 8, 0);
    let rela = elf.find_section(b".rela__mcount_loc").unwrap();
    let r = elf.section(rela).unwrap();
    assert_eq!(r.info as usize, loc);
    assert_eq!(r.entsize, 24);
    assert_eq!(
        elf.section_name(r.link as usize).unwrap(),
        b".symtab".as_slice()
    );
    // readelf agrees the object is well formed.
    let out = Command::new("readelf").arg("-aW").arg(&o).output();
    if let Ok(out) = out {
        assert!(out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("Warning") && !err.contains("Error"), "{err}");
    }
}
