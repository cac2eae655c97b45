// SPDX-License-Identifier: GPL-2.0
//! Helpers shared by the integration tests: temporary directories, gcc and
//! ld runs, the tool itself, and readers of the call-site tables.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use rftrace_recordmcount::elf::{
    show, Elf, R_X86_64_64, R_X86_64_NONE, R_X86_64_PC32, R_X86_64_PLT32, SHF_EXECINSTR,
    SHT_PROGBITS, SHT_RELA, STB_WEAK,
};
use rftrace_recordmcount::record::{
    is_mcounted_section_name, CALL5, FENTRY, MCOUNT_LOC, NOP5, RELA_MCOUNT_LOC,
};

/// A directory removed when dropped.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub(crate) fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "recordmcount-test-{}-{tag}-{n}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }

    pub(crate) fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Names of the files in the directory, sorted.
    pub(crate) fn files(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Flags every traced compile uses: kernel-like code model, fentry calls.
pub(crate) const PG: &[&str] = &["-pg", "-mfentry", "-fno-pic", "-fcf-protection=none"];

fn check(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Compiles `src` (written to `name.c`) into `name.o` with `flags`, through
/// the `cc` crate (gcc for x86_64 Linux, none of cc's default flags: the
/// test's flags are the whole command line).
pub(crate) fn gcc(dir: &TempDir, name: &str, src: &str, flags: &[&str]) -> PathBuf {
    let c = dir.join(&format!("{name}.c"));
    if !c.exists() {
        std::fs::write(&c, src).unwrap();
    }
    // Each compile its own output directory: cc names objects after a
    // hash of the source's directory, and pairs compile in parallel.
    let out = dir.join(&format!("{name}.cc"));
    let mut b = cc::Build::new();
    b.compiler("gcc")
        .target("x86_64-unknown-linux-gnu")
        .host("x86_64-unknown-linux-gnu")
        .no_default_flags(true)
        .opt_level(0)
        .debug(false)
        .warnings(false)
        .cargo_metadata(false)
        .cargo_warnings(false)
        .out_dir(&out)
        .file(&c);
    for f in flags {
        b.flag(f);
    }
    let objs = b
        .try_compile_intermediates()
        .unwrap_or_else(|e| panic!("gcc {flags:?} {name}.c failed: {e}"));
    assert_eq!(objs.len(), 1, "{objs:?}");
    let o = dir.join(&format!("{name}.o"));
    std::fs::rename(&objs[0], &o).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
    o
}

/// Compiles `src` twice, in parallel: `name.o` for the tool (`flags`),
/// and `name-gcc.o` with `-mrecord-mcount` added, where gcc writes
/// `__mcount_loc` itself.
pub(crate) fn gcc_pair(dir: &TempDir, name: &str, src: &str, flags: &[&str]) -> (PathBuf, PathBuf) {
    let rec_name = format!("{name}-gcc");
    let mut rec_flags = flags.to_vec();
    rec_flags.push("-mrecord-mcount");
    std::thread::scope(|s| {
        let rec = s.spawn(|| gcc(dir, &rec_name, src, &rec_flags));
        let plain = gcc(dir, name, src, flags);
        (plain, rec.join().unwrap())
    })
}

/// `ld -r -o out a b ...`.
pub(crate) fn ld_r(out: &Path, inputs: &[&Path]) {
    let o = Command::new("ld")
        .arg("-r")
        .arg("-o")
        .arg(out)
        .args(inputs)
        .output()
        .expect("running ld");
    check("ld -r", &o);
}

/// Runs the tool.
pub(crate) fn tool<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    Command::new(env!("CARGO_BIN_EXE_recordmcount"))
        .args(args)
        .output()
        .expect("running recordmcount")
}

/// Runs the tool and requires success.
pub(crate) fn tool_ok<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let out = tool(args);
    check("recordmcount", &out);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("panicked"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The (section name, offset) of every `__mcount_loc` entry, in table
/// order, read through `.rela__mcount_loc`; checks the table's shape on
/// the way. Empty if there is no `__mcount_loc`.
pub(crate) fn mcount_sites(data: &[u8]) -> Vec<(String, u64)> {
    let elf = Elf::parse(data).unwrap();
    let locs: Vec<usize> = (0..elf.shnum())
        .filter(|&i| elf.section_name(i).unwrap() == MCOUNT_LOC)
        .collect();
    let Some(&loc) = locs.first() else {
        return Vec::new();
    };
    assert_eq!(locs.len(), 1, "more than one __mcount_loc");
    let loc_data = elf.section_data(loc).unwrap();
    assert_eq!(loc_data.len() % 8, 0);
    let relas: Vec<usize> = (0..elf.shnum())
        .filter(|&i| {
            let s = elf.section(i).unwrap();
            s.kind == SHT_RELA && s.info as usize == loc
        })
        .collect();
    assert_eq!(relas.len(), 1, "one relocation section for __mcount_loc");
    let rela = relas[0];
    assert_eq!(elf.section_name(rela).unwrap(), RELA_MCOUNT_LOC);
    let st = elf
        .symtab(elf.section(rela).unwrap().link as usize)
        .unwrap();
    let t = elf.relas(rela).unwrap();
    assert_eq!(t.count() * 8, loc_data.len(), "one relocation per slot");
    let mut sites = Vec::new();
    for i in 0..t.count() {
        let r = t.get(i).unwrap();
        assert_eq!(r.kind(), R_X86_64_64);
        let slot = &loc_data[r.offset as usize..r.offset as usize + 8];
        let slot = u64::from_le_bytes(slot.try_into().unwrap());
        let sym = st.get(r.sym() as usize).unwrap();
        assert_ne!(sym.bind(), STB_WEAK, "relocation against a weak symbol");
        let sec = st
            .section_of(r.sym() as usize, &sym)
            .unwrap()
            .expect("base symbol defined in a section");
        let name = show(elf.section_name(sec).unwrap());
        sites.push((
            name,
            sym.value.wrapping_add(r.addend as u64).wrapping_add(slot),
        ));
    }
    sites
}

/// One relocation against `__fentry__` in an executable section.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Call {
    pub(crate) section: String,
    pub(crate) site: u64,
    pub(crate) kind: u32,
    pub(crate) bytes: [u8; 5],
}

/// Every `__fentry__` relocation of an executable section.
pub(crate) fn fentry_calls(data: &[u8]) -> Vec<Call> {
    let elf = Elf::parse(data).unwrap();
    let mut calls = Vec::new();
    let mut tables = BTreeMap::new();
    for (ri, rs) in elf.sections().iter().enumerate() {
        if rs.kind != SHT_RELA {
            continue;
        }
        let ts = *elf.section(rs.info as usize).unwrap();
        if ts.kind != SHT_PROGBITS || ts.flags & SHF_EXECINSTR == 0 {
            continue;
        }
        let text = elf.section_data(rs.info as usize).unwrap();
        let name = show(elf.section_name(rs.info as usize).unwrap());
        let st = *tables
            .entry(rs.link)
            .or_insert_with(|| elf.symtab(rs.link as usize).unwrap());
        let t = elf.relas(ri).unwrap();
        for i in 0..t.count() {
            let r = t.get(i).unwrap();
            let sym = st.get(r.sym() as usize).unwrap();
            if st.name(&sym).unwrap() != FENTRY {
                continue;
            }
            let site = r.offset - 1;
            calls.push(Call {
                section: name.clone(),
                site,
                kind: r.kind(),
                bytes: text[site as usize..site as usize + 5].try_into().unwrap(),
            });
        }
    }
    calls
}

/// Asserts that `a` and `b` hold the same elements (as multisets); on a
/// mismatch shows a few of the differences rather than everything.
pub(crate) fn assert_same<T: Ord + Clone + std::fmt::Debug>(an: &str, bn: &str, a: &[T], b: &[T]) {
    let (a, b) = (sorted(a), sorted(b));
    if a == b {
        return;
    }
    let only_a: Vec<&T> = a
        .iter()
        .filter(|x| b.binary_search(x).is_err())
        .take(10)
        .collect();
    let only_b: Vec<&T> = b
        .iter()
        .filter(|x| a.binary_search(x).is_err())
        .take(10)
        .collect();
    panic!(
        "{an} ({}) and {bn} ({}) differ; only in {an}: {only_a:?}; only in {bn}: {only_b:?}",
        a.len(),
        b.len()
    );
}

pub(crate) fn sorted<T: Ord + Clone>(v: &[T]) -> Vec<T> {
    let mut v = v.to_vec();
    v.sort();
    v
}

/// Checks an object the tool produced: the recorded sites are exactly the
/// `__fentry__` calls of the traced sections, each site still a call (or
/// the NOP, with an `R_X86_64_NONE` relocation, if `nopped`), and the calls
/// of untraced sections are NOPs. Returns the number of sites.
pub(crate) fn check_consistent(data: &[u8], nopped: bool) -> usize {
    let sites = mcount_sites(data);
    let calls = fentry_calls(data);
    let mut traced = Vec::new();
    for c in &calls {
        if is_mcounted_section_name(c.section.as_bytes()) {
            traced.push((c.section.clone(), c.site));
            if nopped {
                assert_eq!(c.bytes, NOP5, "{c:?}");
                assert_eq!(c.kind, R_X86_64_NONE, "{c:?}");
            } else {
                assert_eq!(c.bytes, CALL5, "{c:?}");
                assert!(c.kind == R_X86_64_PLT32 || c.kind == R_X86_64_PC32, "{c:?}");
            }
        } else {
            assert_eq!(c.bytes, NOP5, "untraced call left: {c:?}");
            assert_eq!(c.kind, R_X86_64_NONE, "{c:?}");
        }
    }
    assert_same("recorded sites", "traced calls", &sites, &traced);
    sites.len()
}

/// Multiset of sites, as (section, offset) -> count.
pub(crate) fn site_set(sites: &[(String, u64)]) -> BTreeMap<(String, u64), usize> {
    let mut m = BTreeMap::new();
    for s in sites {
        *m.entry(s.clone()).or_insert(0) += 1;
    }
    m
}

pub(crate) fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap()
}
