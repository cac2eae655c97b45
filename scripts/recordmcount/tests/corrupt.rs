// SPDX-License-Identifier: GPL-2.0
//! Bad input and command lines: a clear error naming the file, a non-zero
//! exit, no panic, and the file left byte for byte as it was.

mod common;

use std::path::Path;

use common::*;
use rftrace_recordmcount::elf::{Elf, E_SHOFF, SHDR_SIZE};

/// A traced object the tool would change.
fn good_object(dir: &TempDir) -> Vec<u8> {
    let src = r#"
int __attribute__((weak)) w(int x) { return x + 1; }
__attribute__((noinline)) static int s(int x) { return x * 3; }
int g(int x) { return s(x) + w(x); }
__attribute__((section(".init.text"))) int i(int x) { return g(x); }
__attribute__((section(".exit.text"))) int e(int x) { return g(x); }
"#;
    let mut f = PG.to_vec();
    f.push("-O2");
    let o = gcc(dir, "good", src, &f);
    let data = read(&o);
    std::fs::remove_file(o).unwrap();
    data
}

/// Runs the tool on `data` written to a file and checks the failure.
fn expect_failure(dir: &TempDir, name: &str, data: &[u8], what: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, data).unwrap();
    let out = tool([&path]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    assert!(
        stderr.contains(&path.display().to_string()),
        "{what}: error does not name the file: {stderr}"
    );
    assert_eq!(read(&path), data, "{what}: file changed");
    assert_eq!(
        dir.files().iter().filter(|f| f.contains(".tmp")).count(),
        0,
        "{what}: temporary file left"
    );
    std::fs::remove_file(&path).unwrap();
    stderr
}

fn put(data: &mut [u8], at: usize, bytes: &[u8]) {
    data[at..at + bytes.len()].copy_from_slice(bytes);
}

/// File offset of section `idx`'s header.
fn shdr_at(data: &[u8], idx: usize) -> usize {
    let shoff = u64::from_le_bytes(data[E_SHOFF..E_SHOFF + 8].try_into().unwrap()) as usize;
    shoff + idx * SHDR_SIZE
}

fn section_index(data: &[u8], name: &str) -> usize {
    Elf::parse(data)
        .unwrap()
        .find_section(name.as_bytes())
        .unwrap()
}

#[test]
fn empty_garbage_and_wrong_kind() {
    let dir = TempDir::new("bad-kind");
    let good = good_object(&dir);
    let msg = expect_failure(&dir, "empty.o", &[], "empty");
    assert!(msg.contains("empty"), "{msg}");
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let msg = expect_failure(&dir, "garbage.o", &garbage, "garbage");
    assert!(msg.contains("not an ELF"), "{msg}");
    expect_failure(&dir, "text.o", b"int main(void) { return 0; }\n", "text");

    let mut d = good.clone();
    d[4] = 1;
    let msg = expect_failure(&dir, "class32.o", &d, "ELF class");
    assert!(msg.contains("class 1"), "{msg}");
    let mut d = good.clone();
    d[5] = 2;
    let msg = expect_failure(&dir, "bigendian.o", &d, "data encoding");
    assert!(msg.contains("little-endian"), "{msg}");
    let mut d = good.clone();
    put(&mut d, 18, &183u16.to_le_bytes());
    let msg = expect_failure(&dir, "aarch64.o", &d, "machine");
    assert!(msg.contains("machine 183"), "{msg}");
    let mut d = good.clone();
    put(&mut d, 16, &2u16.to_le_bytes());
    let msg = expect_failure(&dir, "exec.o", &d, "e_type");
    assert!(msg.contains("relocatable"), "{msg}");

    // A real 32-bit object, if this gcc can make one.
    let o32 = dir.join("m32.o");
    let c = dir.join("m32.c");
    std::fs::write(&c, "int f(int x) { return x + 1; }\n").unwrap();
    let built = std::process::Command::new("gcc")
        .args(["-m32", "-c", "-pg", "-o"])
        .arg(&o32)
        .arg(&c)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if built {
        let data = read(&o32);
        std::fs::remove_file(&o32).unwrap();
        expect_failure(&dir, "m32.o", &data, "-m32 object");
    }
}

#[test]
fn truncated_objects() {
    let dir = TempDir::new("truncated");
    let good = good_object(&dir);
    let shoff = shdr_at(&good, 0);
    let text = shdr_at(&good, section_index(&good, ".text"));
    let mut cuts = vec![1, 3, 4, 10, 16, 40, 63, 64, 65, 100, 200];
    cuts.extend([
        good.len() / 2,
        shoff,
        shoff + 1,
        shoff + 64,
        text,
        good.len() - 1,
    ]);
    for cut in cuts {
        if cut < good.len() {
            expect_failure(&dir, "cut.o", &good[..cut], &format!("cut at {cut}"));
        }
    }
    // Every cut point of the header and of the section header table.
    for cut in (0..64).chain(shoff..good.len()) {
        let path = dir.join("c.o");
        std::fs::write(&path, &good[..cut]).unwrap();
        let out = tool([&path]);
        assert_eq!(out.status.code(), Some(1), "cut at {cut}");
        assert_eq!(read(&path), &good[..cut]);
    }
}

#[test]
fn bad_offsets_and_indexes() {
    let dir = TempDir::new("offsets");
    let good = good_object(&dir);
    let n = good.len() as u64;
    let text_idx = section_index(&good, ".text");
    let rela_idx = section_index(&good, ".rela.text");
    let symtab_idx = section_index(&good, ".symtab");
    let text = shdr_at(&good, text_idx);
    let rela = shdr_at(&good, rela_idx);
    let symtab = shdr_at(&good, symtab_idx);

    let cases: Vec<(&str, usize, Vec<u8>)> = vec![
        (
            "e_shoff past the end",
            E_SHOFF,
            (n + 64).to_le_bytes().to_vec(),
        ),
        (
            "e_shoff huge",
            E_SHOFF,
            (u64::MAX - 8).to_le_bytes().to_vec(),
        ),
        ("e_shnum too large", 60, 0x7000u16.to_le_bytes().to_vec()),
        (
            "e_shstrndx out of range",
            62,
            0x7000u16.to_le_bytes().to_vec(),
        ),
        ("e_shstrndx zero", 62, 0u16.to_le_bytes().to_vec()),
        ("e_shentsize", 58, 40u16.to_le_bytes().to_vec()),
        (
            "text offset past the end",
            text + 24,
            n.to_le_bytes().to_vec(),
        ),
        (
            "text size too large",
            text + 32,
            (n * 2).to_le_bytes().to_vec(),
        ),
        (
            "text offset overflow",
            text + 24,
            u64::MAX.to_le_bytes().to_vec(),
        ),
        (
            "rela offset past the end",
            rela + 24,
            (n + 1).to_le_bytes().to_vec(),
        ),
        ("rela entsize zero", rela + 56, 0u64.to_le_bytes().to_vec()),
        (
            "rela size not whole",
            rela + 32,
            25u64.to_le_bytes().to_vec(),
        ),
        (
            "rela target out of range",
            rela + 44,
            9999u32.to_le_bytes().to_vec(),
        ),
        (
            "rela symtab out of range",
            rela + 40,
            9999u32.to_le_bytes().to_vec(),
        ),
        (
            "rela symtab not a symtab",
            rela + 40,
            (text_idx as u32).to_le_bytes().to_vec(),
        ),
        ("symtab entsize", symtab + 56, 16u64.to_le_bytes().to_vec()),
        (
            "symtab strtab index",
            symtab + 40,
            9999u32.to_le_bytes().to_vec(),
        ),
        (
            "symtab sh_info",
            symtab + 44,
            9999u32.to_le_bytes().to_vec(),
        ),
        (
            "section name offset",
            text,
            0xffff_fff0u32.to_le_bytes().to_vec(),
        ),
    ];
    for (what, at, bytes) in cases {
        let mut d = good.clone();
        put(&mut d, at, &bytes);
        let msg = expect_failure(&dir, "bad.o", &d, what);
        assert!(msg.lines().count() <= 2, "{what}: {msg}");
    }

    // A relocation against a symbol past the end of the table, and a call
    // relocation past the end of its section.
    let elf = Elf::parse(&good).unwrap();
    let rel = elf.relas(rela_idx).unwrap();
    let entry = rel.entry_offset(0) as usize;
    let mut d = good.clone();
    put(&mut d, entry + 12, &0x00ff_ffffu32.to_le_bytes());
    let msg = expect_failure(&dir, "sym.o", &d, "symbol index");
    assert!(msg.contains("beyond"), "{msg}");
    let mut d = good.clone();
    put(&mut d, entry, &0xffff_ffffu64.to_le_bytes());
    let msg = expect_failure(&dir, "site.o", &d, "call offset");
    assert!(msg.contains("does not fit"), "{msg}");
}

#[test]
fn not_files_and_mixed_batches() {
    let dir = TempDir::new("batch");
    let good = good_object(&dir);

    let missing = dir.join("missing.o");
    let out = tool([&missing]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.o"));
    let out = tool([dir.path()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a regular file"));

    // A bad file does not stop the good ones; the exit status says so.
    let a = dir.join("a.o");
    let bad = dir.join("bad.o");
    let b = dir.join("b.o");
    std::fs::write(&a, &good).unwrap();
    std::fs::write(&bad, b"\x7fELF\x02\x01\x01").unwrap();
    std::fs::write(&b, &good).unwrap();
    let out = tool([&a, &bad, &b]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.o") && !stderr.contains("a.o:"),
        "{stderr}"
    );
    assert!(check_consistent(&read(&a), false) > 0);
    assert_eq!(read(&a), read(&b));
    assert_eq!(read(&bad), b"\x7fELF\x02\x01\x01");

    // ftrace.o is skipped, as by the C tool.
    let ftrace = dir.join("ftrace.o");
    std::fs::write(&ftrace, &good).unwrap();
    tool_ok([&ftrace]);
    assert_eq!(read(&ftrace), good);
}

#[test]
fn command_line() {
    let dir = TempDir::new("cli");
    let good = good_object(&dir);
    let out = tool(Vec::<&str>::new());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage"));
    let out = tool(["-x", "a.o"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("-x"));
    let out = tool(["--help"]);
    assert_eq!(out.status.code(), Some(0));

    // Options combine and may follow the files; "--" ends them.
    let p = dir.join("-n.o");
    std::fs::write(&p, &good).unwrap();
    let q = dir.join("q.o");
    std::fs::write(&q, &good).unwrap();
    let out = tool_ok([q.as_os_str(), "-wn".as_ref()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains(".exit.text"));
    assert_eq!(check_consistent(&read(&q), true), 4);
    let rel = Path::new("-n.o");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_recordmcount"))
        .current_dir(dir.path())
        .arg("--")
        .arg(rel)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(check_consistent(&read(&p), false), 4);
    // A file name without a directory part is written in the current one.
    assert!(!dir.files().iter().any(|f| f.contains(".tmp")));
}
