// SPDX-License-Identifier: GPL-2.0
//! Rust objects compiled with `-Zpatchable-function-entry=N+5,N`, as the
//! kernel builds them with traced Rust code: each function's entry NOP
//! (after the padding and the `endbr64`) is recorded and becomes the
//! kernel's NOP; a function whose entry has no NOP (the attribute with
//! `entry_nops = 0`) is not recorded; and a C object whose
//! `__patchable_function_entries` notes padding before `call __fentry__`
//! (CALL_PADDING) is recorded by its calls only.

mod common;

use std::process::Command;

use common::*;
use rftrace_recordmcount::elf::Elf;
use rftrace_recordmcount::record::{ENDBR64, ENTRY_NOP5, NOP5};

const SRC: &str = r#"
#![no_std]
#![feature(patchable_function_entry)]
#[no_mangle]
pub extern "C" fn traced_a(x: u64) -> u64 { x.wrapping_mul(3) }
#[inline(never)]
pub fn traced_generic<T: Copy + core::ops::Add<Output = T>>(x: T) -> T { x + x }
#[no_mangle]
pub extern "C" fn traced_b(x: u64) -> u64 { traced_generic(x) ^ 1 }
#[no_mangle]
#[patchable_function_entry(prefix_nops = 16, entry_nops = 0)]
pub extern "C" fn untraced(x: u64) -> u64 { x.wrapping_mul(5) }
#[no_mangle]
#[link_section = ".exit.text"]
pub extern "C" fn exit_fn(x: u64) -> u64 { x.wrapping_mul(7) }
"#;

/// Compiles SRC with rustc as Kbuild runs it (RUSTC_BOOTSTRAP=1), or
/// `None` when there is no rustc.
fn rustc(dir: &TempDir, name: &str, flags: &[&str]) -> Option<std::path::PathBuf> {
    let src = dir.join("t.rs");
    std::fs::write(&src, SRC).unwrap();
    let o = dir.join(&format!("{name}.o"));
    let out = match Command::new("rustc")
        .env("RUSTC_BOOTSTRAP", "1")
        .args([
            "--edition",
            "2021",
            "--crate-type",
            "rlib",
            "--emit=obj",
            "-O",
        ])
        .args(["-Csymbol-mangling-version=v0", "-Cpanic=abort"])
        .args(flags)
        .arg(&src)
        .arg("-o")
        .arg(&o)
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            eprintln!("skipped: cannot run rustc: {e}");
            return None;
        }
    };
    assert!(
        out.status.success(),
        "rustc failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(o)
}

/// The offset of the function `name` in its section, and that section's
/// name, bytes and file offset.
fn function(data: &[u8], name: &str) -> (String, u64, Vec<u8>) {
    let elf = Elf::parse(data).unwrap();
    for si in 0..elf.shnum() {
        let Ok(st) = elf.symtab(si) else { continue };
        for i in 1..st.count() {
            let sym = st.get(i).unwrap();
            if st.name(&sym).unwrap() != name.as_bytes() {
                continue;
            }
            let sec = st.section_of(i, &sym).unwrap().unwrap();
            let text = elf.section_data(sec).unwrap().to_vec();
            let sname = String::from_utf8_lossy(elf.section_name(sec).unwrap()).into_owned();
            return (sname, sym.value, text);
        }
    }
    panic!("no symbol {name}");
}

fn check(pad: u64, ibt: bool) {
    let dir = TempDir::new("rust");
    let total = format!("-Zpatchable-function-entry={},{pad}", pad + 5);
    let mut flags = vec![total.as_str()];
    if ibt {
        flags.push("-Zcf-protection=branch");
    }
    let Some(o) = rustc(&dir, "t", &flags) else {
        return;
    };
    let before = read(&o);
    tool_ok([&o]);
    let after = read(&o);
    let sites = mcount_sites(&after);
    let entry = if ibt { ENDBR64.len() as u64 } else { 0 };
    let mut want = Vec::new();
    for f in ["traced_a", "traced_b"] {
        let (sec, value, old) = function(&before, f);
        let at = (value + entry) as usize;
        assert_eq!(old[at..at + 5], ENTRY_NOP5, "{f}: rustc's entry NOP");
        if ibt {
            assert_eq!(old[value as usize..at], ENDBR64);
        }
        let (_, _, new) = function(&after, f);
        assert_eq!(new[at..at + 5], NOP5, "{f}: the kernel's NOP");
        want.push((sec, value + entry));
    }
    // The generic function, instantiated here, is recorded too.
    assert_eq!(sites.len(), 3, "{sites:?}");
    for w in &want {
        assert!(sites.contains(w), "{w:?} not in {sites:?}");
    }
    let (_, value, text) = function(&after, "untraced");
    let at = (value + entry) as usize;
    assert_ne!(text[at..at + 5], NOP5);
    assert!(!sites
        .iter()
        .any(|s| s.1 == value + entry && s.0.contains("untraced")));
    // .exit.text: not recorded, but a NOP all the same.
    let (sec, value, text) = function(&after, "exit_fn");
    assert_eq!(sec, ".exit.text");
    assert!(!sites.iter().any(|s| s.0 == sec));
    assert_eq!(text[(value + entry) as usize..][..5], NOP5);
    // Running the tool again leaves the object alone.
    tool_ok([&o]);
    assert_eq!(read(&o), after);
}

#[test]
fn rust_entry_nops_with_padding_and_ibt() {
    check(16, true);
}

#[test]
fn rust_entry_nops_without_padding() {
    check(0, false);
}

#[test]
fn c_padding_is_not_a_site() {
    let dir = TempDir::new("cpad");
    let src = "int f(int x) { return x + 1; }\nint g(int x) { return f(x) * 2; }\n";
    let mut flags = PG.to_vec();
    flags.extend(["-O2", "-fpatchable-function-entry=16,16"]);
    let o = gcc(&dir, "p", src, &flags);
    let calls = fentry_calls(&read(&o));
    tool_ok([&o]);
    let sites = mcount_sites(&read(&o));
    assert_eq!(sites.len(), calls.len(), "{sites:?} vs {calls:?}");
    assert_eq!(sites.len(), 2);
}
