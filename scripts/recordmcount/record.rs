// SPDX-License-Identifier: GPL-2.0
//! Finding the `call __fentry__` sites of an object and recording them in
//! a new `__mcount_loc` section.
//!
//! [`process`] takes the bytes of an object and returns the bytes of the
//! rewritten object (or says that nothing is to be changed). No file I/O
//! happens here.
//!
//! The rewritten object is the original bytes, with these changes:
//!
//! - calls to `__fentry__` in executable sections that ftrace does not
//!   trace (see [`is_mcounted_section_name`]) become 5-byte NOPs and their
//!   relocations `R_X86_64_NONE`; with [`Options::nop_recorded`] the
//!   recorded calls do too;
//! - if a traced section has no usable base symbol (only weak symbols, as
//!   current assemblers omit unused section symbols), a section symbol is
//!   added for it: the first global symbol moves to the end of the symbol
//!   table to make room, and the relocations that use it are renumbered;
//! - appended at the end: the new symbol table if it changed, the
//!   `__mcount_loc` contents (one zeroed 8-byte slot per call site), its
//!   relocations (`R_X86_64_64` against a base symbol of the call's section
//!   plus the call's offset), a copy of the section name string table with
//!   the two new names, and a new section header table with the two new
//!   sections. The old string and header tables stay as unused bytes.

use std::collections::HashMap;

use crate::elf::{
    range, range_mut, read_u64, show, write_at, Elf, Error, Rela, Result, Section, Symbol,
    SymbolTable, E_SHNUM, E_SHOFF, RELA_SIZE, REL_SIZE, R_X86_64_64, R_X86_64_NONE, R_X86_64_PC32,
    R_X86_64_PLT32, SHF_ALLOC, SHF_EXECINSTR, SHF_INFO_LINK, SHN_LORESERVE, SHN_XINDEX, SHT_GROUP,
    SHT_PROGBITS, SHT_REL, SHT_RELA, SHT_SYMTAB_SHNDX, STB_GLOBAL, STB_LOCAL, STT_SECTION,
    SYM_SIZE,
};

/// Name of the section listing the call sites.
pub const MCOUNT_LOC: &[u8] = b"__mcount_loc";
/// Name of its relocation section.
pub const RELA_MCOUNT_LOC: &[u8] = b".rela__mcount_loc";
/// The symbol the compiler calls at function entry with `-pg -mfentry`.
pub const FENTRY: &[u8] = b"__fentry__";
/// `call rel32` with a zero displacement, as the assembler leaves it.
pub const CALL5: [u8; 5] = [0xe8, 0, 0, 0, 0];
/// The 5-byte NOP the kernel uses on x86_64 (`nopl 0x0(%rax,%rax,1)`).
pub const NOP5: [u8; 5] = [0x0f, 0x1f, 0x44, 0x00, 0x00];
/// The section in which `-fpatchable-function-entry` (C) and
/// `-Zpatchable-function-entry` (rustc) note each function's NOP area.
pub const PATCHABLE_ENTRIES: &[u8] = b"__patchable_function_entries";
/// The 5-byte NOP rustc (LLVM) puts at a function's entry for
/// `-Zpatchable-function-entry=N+5,N` (`nopl 0x8(%rax,%rax,1)`).
pub const ENTRY_NOP5: [u8; 5] = [0x0f, 0x1f, 0x44, 0x00, 0x08];
/// `endbr64`, before the entry NOP when indirect branch tracking is on.
pub const ENDBR64: [u8; 4] = [0xf3, 0x0f, 0x1e, 0xfa];
/// The longest run of one-byte NOPs (the function padding before the
/// entry) looked through between a noted NOP area and its function.
const MAX_PREFIX: u64 = 64;

/// What to do besides recording.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Also turn the recorded calls into NOPs (and their relocations into
    /// `R_X86_64_NONE`).
    pub nop_recorded: bool,
}

/// The result for one object.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing to change.
    Unchanged,
    /// The object already has a `__mcount_loc` section; left alone.
    AlreadyRecorded,
    /// The new contents of the object.
    Rewritten(Vec<u8>),
}

/// The result and what happened on the way.
#[derive(Debug)]
pub struct Report {
    /// The result.
    pub outcome: Outcome,
    /// Number of call sites recorded in `__mcount_loc`.
    pub recorded: usize,
    /// Number of calls turned into NOPs.
    pub nopped: usize,
    /// Number of section symbols added to the symbol table.
    pub added_symbols: usize,
    /// Executable sections with `__fentry__` calls that are not traced
    /// (their calls became NOPs).
    pub ignored_sections: Vec<String>,
    /// Things worth telling the user that do not stop the tool.
    pub warnings: Vec<String>,
}

impl Report {
    fn new(outcome: Outcome) -> Self {
        Report {
            outcome,
            recorded: 0,
            nopped: 0,
            added_symbols: 0,
            ignored_sections: Vec::new(),
            warnings: Vec::new(),
        }
    }
}

/// Whether ftrace traces the functions of a section with this name: any
/// name starting with `.text`, and the kernel's other text sections that
/// hold traceable functions.
pub fn is_mcounted_section_name(name: &[u8]) -> bool {
    const OTHERS: [&[u8]; 8] = [
        b".init.text",
        b".ref.text",
        b".sched.text",
        b".spinlock.text",
        b".irqentry.text",
        b".softirqentry.text",
        b".kprobes.text",
        b".cpuidle.text",
    ];
    name.starts_with(b".text") || OTHERS.contains(&name)
}

/// One `call __fentry__`, or the entry NOP of a function compiled with a
/// patchable entry.
#[derive(Debug, Clone, Copy)]
struct Site {
    /// Index of the section holding the call.
    text: usize,
    /// Offset of the call instruction in that section.
    offset: u64,
    /// File offset of the call's relocation entry; `None` for an entry
    /// NOP, which has no relocation.
    rela_entry: Option<u64>,
    /// Index of the symbol table of that relocation.
    symtab: usize,
}

/// What the relocation sections say about `__fentry__` calls.
#[derive(Debug, Default)]
struct Scan {
    recorded: Vec<Site>,
    ignored: Vec<Site>,
    ignored_sections: Vec<String>,
}

/// Where the entry NOP of the function whose NOP area starts at `from`
/// in `text` is: after the one-byte NOPs of the padding and an optional
/// `endbr64`, the 5-byte [`ENTRY_NOP5`]. `None` if there is none there
/// (a C function's area ends in its `call __fentry__`; a Rust function
/// compiled with `entry_nops = 0`, or without entry NOPs, has padding
/// only).
fn entry_nop(text: &[u8], from: u64) -> Option<u64> {
    let at = |pos: u64, len: u64| range(text, pos, len);
    let mut pos = from;
    while pos < from.saturating_add(MAX_PREFIX) && at(pos, 1) == Some(&[0x90][..]) {
        pos += 1;
    }
    if at(pos, ENDBR64.len() as u64) == Some(&ENDBR64[..]) {
        pos += ENDBR64.len() as u64;
    }
    (at(pos, ENTRY_NOP5.len() as u64) == Some(&ENTRY_NOP5[..])).then_some(pos)
}

/// Adds to `result` the entry NOPs of the functions noted by the
/// relocations in section `ri` (those of a `__patchable_function_entries`
/// section): each `R_X86_64_64` names a NOP area by a symbol and addend.
fn scan_patchable(elf: &Elf<'_>, ri: usize, result: &mut Scan) -> Result<()> {
    let rname = show(elf.section_name(ri)?);
    let symidx = elf.section(ri)?.link as usize;
    let st = elf
        .symtab(symidx)
        .map_err(|e| context(&format!("symbol table of {rname}"), e))?;
    let relas = elf.relas(ri)?;
    let mut ignored_in: Vec<usize> = Vec::new();
    for i in 0..relas.count() {
        let r = relas.get(i)?;
        if r.kind() != R_X86_64_64 {
            return Err(Error::new(format!(
                "{rname}: relocation {i} has type {}, not R_X86_64_64",
                r.kind()
            )));
        }
        let sym = r.sym() as usize;
        if sym >= st.count() {
            return Err(Error::new(format!(
                "{rname}: relocation {i} refers to symbol {sym}, beyond the {} symbols",
                st.count()
            )));
        }
        let s = st.get(sym)?;
        let Some(ti) = st.section_of(sym, &s)? else {
            return Err(Error::new(format!(
                "{rname}: relocation {i} is against a symbol in no section"
            )));
        };
        let ts = elf.section(ti)?;
        if ts.kind != SHT_PROGBITS || ts.flags & SHF_EXECINSTR == 0 {
            return Err(Error::new(format!(
                "{rname}: relocation {i} points into {}, not code",
                show(elf.section_name(ti)?)
            )));
        }
        let from = s.value.wrapping_add(r.addend as u64);
        let Some(offset) = entry_nop(elf.section_data(ti)?, from) else {
            continue;
        };
        let site = Site {
            text: ti,
            offset,
            rela_entry: None,
            symtab: symidx,
        };
        if is_mcounted_section_name(elf.section_name(ti)?) {
            result.recorded.push(site);
        } else {
            result.ignored.push(site);
            if !ignored_in.contains(&ti) {
                ignored_in.push(ti);
            }
        }
    }
    for ti in ignored_in {
        let name = show(elf.section_name(ti)?);
        if !result.ignored_sections.contains(&name) {
            result.ignored_sections.push(name);
        }
    }
    Ok(())
}

fn context(what: &str, e: Error) -> Error {
    Error::new(format!("{what}: {e}"))
}

/// Indexes of the symbols called `__fentry__` in `st`.
fn fentry_symbols(st: &SymbolTable<'_>) -> Result<Vec<u32>> {
    let mut found = Vec::new();
    for i in 1..st.count() {
        let sym = st.get(i)?;
        if st.name(&sym)? == FENTRY {
            found.push(u32::try_from(i).map_err(|_| Error::new("too many symbols"))?);
        }
    }
    Ok(found)
}

fn scan(elf: &Elf<'_>) -> Result<Scan> {
    let mut result = Scan::default();
    let mut tables: Vec<(usize, usize, Vec<u32>)> = Vec::new();
    for (ri, rs) in elf.sections().iter().enumerate() {
        if rs.kind != SHT_RELA && rs.kind != SHT_REL {
            continue;
        }
        let rname = show(elf.section_name(ri)?);
        let ti = rs.info as usize;
        let ts = elf
            .section(ti)
            .map_err(|e| context(&format!("relocation section {ri} ({rname}) target"), e))?;
        let tname = elf.section_name(ti)?;
        if rs.kind == SHT_RELA && tname == PATCHABLE_ENTRIES {
            scan_patchable(elf, ri, &mut result)?;
            continue;
        }
        if ts.kind != SHT_PROGBITS || ts.flags & SHF_EXECINSTR == 0 {
            continue;
        }
        if rs.kind == SHT_REL {
            return Err(Error::new(format!(
                "relocation section {rname} for {} is SHT_REL; x86_64 objects use SHT_RELA",
                show(tname)
            )));
        }
        let counted = is_mcounted_section_name(tname);
        let relas = elf.relas(ri)?;
        let symidx = rs.link as usize;
        if !tables.iter().any(|t| t.0 == symidx) {
            let st = elf
                .symtab(symidx)
                .map_err(|e| context(&format!("symbol table of {rname}"), e))?;
            let fentry = fentry_symbols(&st)?;
            tables.push((symidx, st.count(), fentry));
        }
        let Some((_, nsyms, fentry)) = tables.iter().find(|t| t.0 == symidx) else {
            return Err(Error::new("internal error: symbol table cache"));
        };
        let mut ignored_here = 0usize;
        for i in 0..relas.count() {
            let r = relas.get(i)?;
            if r.kind() != R_X86_64_PLT32 && r.kind() != R_X86_64_PC32 {
                continue;
            }
            let sym = r.sym();
            if sym as usize >= *nsyms {
                return Err(Error::new(format!(
                    "{rname}: relocation {i} refers to symbol {sym}, beyond the {nsyms} symbols"
                )));
            }
            if !fentry.contains(&sym) {
                continue;
            }
            let fits = r.offset >= 1 && r.offset.checked_add(4).is_some_and(|end| end <= ts.size);
            if !fits {
                return Err(Error::new(format!(
                    "{rname}: __fentry__ relocation at offset {:#x} does not fit a 5-byte call in {} (size {:#x})",
                    r.offset,
                    show(tname),
                    ts.size
                )));
            }
            let site = Site {
                text: ti,
                offset: r.offset - 1,
                rela_entry: Some(relas.entry_offset(i)),
                symtab: symidx,
            };
            if counted {
                result.recorded.push(site);
            } else {
                result.ignored.push(site);
                ignored_here += 1;
            }
        }
        if ignored_here > 0 {
            result.ignored_sections.push(show(tname));
        }
    }
    Ok(result)
}

/// Turns the call at `site` into a NOP and its relocation into
/// `R_X86_64_NONE`, if the bytes are the expected call; false if not. An
/// entry NOP becomes the kernel's NOP.
fn make_nop(out: &mut [u8], elf: &Elf<'_>, site: &Site) -> Result<bool> {
    let text = elf.section(site.text)?;
    let bad = || Error::new(format!("call site at {:#x} outside the file", site.offset));
    let at = text.offset.checked_add(site.offset).ok_or_else(bad)?;
    let bytes = range_mut(out, at, CALL5.len() as u64).ok_or_else(bad)?;
    let Some(rela_entry) = site.rela_entry else {
        if *bytes != ENTRY_NOP5 {
            return Ok(false);
        }
        bytes.copy_from_slice(&NOP5);
        return Ok(true);
    };
    if *bytes != CALL5 {
        return Ok(false);
    }
    bytes.copy_from_slice(&NOP5);
    let info_at = rela_entry.checked_add(8).ok_or_else(bad)?;
    let info = read_u64(out, info_at).ok_or_else(bad)?;
    let info = (info & !0xffff_ffff) | u64::from(R_X86_64_NONE);
    if !write_at(out, info_at, &info.to_le_bytes()) {
        return Err(bad());
    }
    Ok(true)
}

/// For each section flagged in `needed`, the symbol to use as the base of
/// its `__mcount_loc` relocations, with its value: the section symbol if
/// there is one, else the first local or global (never weak) symbol
/// defined in the section.
fn find_bases(st: &SymbolTable<'_>, needed: &[bool]) -> Result<Vec<Option<(u32, u64)>>> {
    let mut section_sym: Vec<Option<(u32, u64)>> = vec![None; needed.len()];
    let mut other_sym: Vec<Option<(u32, u64)>> = vec![None; needed.len()];
    for i in 1..st.count() {
        let sym = st.get(i)?;
        let Some(sec) = st.section_of(i, &sym)? else {
            continue;
        };
        if !needed.get(sec).copied().unwrap_or(false) {
            continue;
        }
        let bind = sym.bind();
        if bind != STB_LOCAL && bind != STB_GLOBAL {
            continue;
        }
        let entry = Some((
            u32::try_from(i).map_err(|_| Error::new("too many symbols"))?,
            sym.value,
        ));
        if bind == STB_LOCAL && sym.kind() == STT_SECTION {
            if let Some(slot @ None) = section_sym.get_mut(sec) {
                *slot = entry;
            }
        }
        if let Some(slot @ None) = other_sym.get_mut(sec) {
            *slot = entry;
        }
    }
    Ok(section_sym
        .into_iter()
        .zip(other_sym)
        .map(|(s, o)| s.or(o))
        .collect())
}

fn pad_to_8(out: &mut Vec<u8>) {
    out.resize(out.len().next_multiple_of(8), 0);
}

/// A slot of the rebuilt symbol table.
#[derive(Debug, Clone, Copy)]
enum Slot {
    /// The symbol that had this index in the old table.
    Old(usize),
    /// A new section symbol for this section.
    New(usize),
}

/// The new section symbols and the symbols that moved to make room.
struct AddedSymbols {
    /// Index of the new symbol of each section of `missing`, in order.
    new_indexes: Vec<u32>,
    /// Old index -> new index of the symbols that moved.
    moved: HashMap<usize, usize>,
}

/// Adds a local section symbol for each section in `missing` (see the
/// module documentation). Appends the new symbol table (and extended index
/// table) to `out`, updates `headers`, renumbers moved symbols in the
/// relocations and groups.
fn add_section_symbols(
    elf: &Elf<'_>,
    st: &SymbolTable<'_>,
    missing: &[usize],
    out: &mut Vec<u8>,
    headers: &mut [Section],
) -> Result<AddedSymbols> {
    let symidx = st.index();
    for (i, s) in elf.sections().iter().enumerate() {
        let renumberable = matches!(s.kind, SHT_RELA | SHT_REL | SHT_GROUP | SHT_SYMTAB_SHNDX);
        if s.link as usize == symidx && i != symidx && !renumberable {
            return Err(Error::new(format!(
                "cannot add a section symbol: section {} of type {:#x} refers to the symbol table",
                show(elf.section_name(i)?),
                s.kind
            )));
        }
    }

    let mut slots: Vec<Slot> = (0..st.count()).map(Slot::Old).collect();
    let mut first_global = st.first_global();
    let mut moved: HashMap<usize, usize> = HashMap::new();
    let mut new_indexes = Vec::with_capacity(missing.len());
    for &sec in missing {
        if sec >= usize::from(SHN_LORESERVE) && st.xindex_section().is_none() {
            return Err(Error::new(format!(
                "cannot add a symbol for section {sec}: no extended section index table"
            )));
        }
        let pos = first_global;
        let len = slots.len();
        match slots.get_mut(pos) {
            Some(slot) => {
                let displaced = std::mem::replace(slot, Slot::New(sec));
                match displaced {
                    Slot::Old(old) => {
                        moved.insert(old, len);
                    }
                    Slot::New(_) => {
                        return Err(Error::new("internal error: moving a new symbol"));
                    }
                }
                slots.push(displaced);
            }
            None => slots.push(Slot::New(sec)),
        }
        new_indexes.push(u32::try_from(pos).map_err(|_| Error::new("too many symbols"))?);
        first_global += 1;
    }
    let too_many = || Error::new("too many symbols");
    let count = u32::try_from(slots.len()).map_err(|_| too_many())?;
    let first_global = u32::try_from(first_global).map_err(|_| too_many())?;

    pad_to_8(out);
    let sym_off = out.len() as u64;
    for slot in &slots {
        match *slot {
            Slot::Old(i) => out.extend_from_slice(st.raw(i)?),
            Slot::New(sec) => Symbol {
                name: 0,
                info: (STB_LOCAL << 4) | STT_SECTION,
                other: 0,
                shndx: if sec < usize::from(SHN_LORESERVE) {
                    sec as u16
                } else {
                    SHN_XINDEX
                },
                value: 0,
                size: 0,
            }
            .encode(out),
        }
    }
    let header = headers
        .get_mut(symidx)
        .ok_or_else(|| Error::new("internal error: symbol table header"))?;
    header.offset = sym_off;
    header.size = u64::from(count) * SYM_SIZE as u64;
    header.info = first_global;

    if let Some(xi) = st.xindex_section() {
        pad_to_8(out);
        let x_off = out.len() as u64;
        for slot in &slots {
            match *slot {
                Slot::Old(i) => match st.raw_xindex(i) {
                    Some(raw) => out.extend_from_slice(raw),
                    None => return Err(Error::new("extended section index table too short")),
                },
                Slot::New(sec) => {
                    let v = if sec < usize::from(SHN_LORESERVE) {
                        0
                    } else {
                        u32::try_from(sec).map_err(|_| Error::new("section index too large"))?
                    };
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
        }
        let header = headers
            .get_mut(xi)
            .ok_or_else(|| Error::new("internal error: index table header"))?;
        header.offset = x_off;
        header.size = u64::from(count) * 4;
    }

    if moved.is_empty() {
        return Ok(AddedSymbols { new_indexes, moved });
    }
    for (i, s) in elf.sections().iter().enumerate() {
        if s.link as usize != symidx {
            continue;
        }
        let name = show(elf.section_name(i)?);
        match s.kind {
            SHT_RELA | SHT_REL => {
                let size = if s.kind == SHT_RELA {
                    RELA_SIZE
                } else {
                    REL_SIZE
                } as u64;
                if s.entsize != size || s.size % size != 0 {
                    return Err(Error::new(format!(
                        "relocation section {name}: bad entry size {} or size {}",
                        s.entsize, s.size
                    )));
                }
                for k in 0..s.size / size {
                    let at = s
                        .offset
                        .checked_add(k * size + 8)
                        .ok_or_else(|| Error::new(format!("{name}: offset overflow")))?;
                    let info = read_u64(out, at)
                        .ok_or_else(|| Error::new(format!("{name}: entry outside the file")))?;
                    if let Some(&new) = moved.get(&((info >> 32) as usize)) {
                        let new = u32::try_from(new).map_err(|_| too_many())?;
                        let info = Rela::make_info(new, info as u32);
                        write_at(out, at, &info.to_le_bytes());
                    }
                }
            }
            SHT_GROUP => {
                if let Some(&new) = moved.get(&(s.info as usize)) {
                    if let Some(h) = headers.get_mut(i) {
                        h.info = u32::try_from(new).map_err(|_| too_many())?;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(AddedSymbols { new_indexes, moved })
}

/// Records the `__fentry__` call sites of the object in `input`.
pub fn process(input: &[u8], opts: &Options) -> Result<Report> {
    let elf = Elf::parse(input)?;
    if elf.find_section(MCOUNT_LOC).is_some() {
        return Ok(Report::new(Outcome::AlreadyRecorded));
    }
    let scan = scan(&elf)?;
    let mut report = Report::new(Outcome::Unchanged);
    report.ignored_sections = scan.ignored_sections.clone();
    if scan.recorded.is_empty() && scan.ignored.is_empty() {
        return Ok(report);
    }

    let mut out = input.to_vec();
    for site in &scan.ignored {
        if make_nop(&mut out, &elf, site)? {
            report.nopped += 1;
        }
    }
    for site in scan.recorded.iter().filter(|s| s.rela_entry.is_none()) {
        // An entry NOP is a NOP already: the kernel's own is written in
        // its place whatever the options, as the tracer verifies that.
        if make_nop(&mut out, &elf, site)? {
            report.nopped += 1;
        }
    }
    if opts.nop_recorded {
        for site in scan.recorded.iter().filter(|s| s.rela_entry.is_some()) {
            if make_nop(&mut out, &elf, site)? {
                report.nopped += 1;
            } else {
                report.warnings.push(format!(
                    "{}+{:#x}: not a `call __fentry__` (e8 00 00 00 00), left as it is",
                    show(elf.section_name(site.text)?),
                    site.offset
                ));
            }
        }
    }
    let Some(first) = scan.recorded.first() else {
        if report.nopped > 0 {
            report.outcome = Outcome::Rewritten(out);
        }
        return Ok(report);
    };
    let symidx = first.symtab;
    if scan.recorded.iter().any(|s| s.symtab != symidx) {
        return Err(Error::new(
            "the __fentry__ relocations use more than one symbol table",
        ));
    }
    let st = elf.symtab(symidx)?;

    let mut needed = vec![false; elf.shnum()];
    for site in &scan.recorded {
        if let Some(n) = needed.get_mut(site.text) {
            *n = true;
        }
    }
    let mut bases = find_bases(&st, &needed)?;
    let missing: Vec<usize> = needed
        .iter()
        .zip(&bases)
        .enumerate()
        .filter(|(_, (&n, b))| n && b.is_none())
        .map(|(i, _)| i)
        .collect();

    let mut headers: Vec<Section> = elf.sections().to_vec();
    if !missing.is_empty() {
        let added = add_section_symbols(&elf, &st, &missing, &mut out, &mut headers)?;
        // Bases that were global symbols may have moved.
        for (sym, _) in bases.iter_mut().flatten() {
            if let Some(&new) = added.moved.get(&(*sym as usize)) {
                *sym = u32::try_from(new).map_err(|_| Error::new("too many symbols"))?;
            }
        }
        for (&sec, &sym) in missing.iter().zip(&added.new_indexes) {
            if let Some(b) = bases.get_mut(sec) {
                *b = Some((sym, 0));
            }
        }
        report.added_symbols = added.new_indexes.len();
    }

    let n = scan.recorded.len() as u64;
    pad_to_8(&mut out);
    let loc_off = out.len() as u64;
    out.resize(out.len() + scan.recorded.len() * 8, 0);
    let rela_off = out.len() as u64;
    for (k, site) in scan.recorded.iter().enumerate() {
        let Some(Some((sym, value))) = bases.get(site.text).copied() else {
            return Err(Error::new(format!(
                "no symbol to relocate against for section {}",
                show(elf.section_name(site.text)?)
            )));
        };
        Rela {
            offset: k as u64 * 8,
            info: Rela::make_info(sym, R_X86_64_64),
            addend: site.offset.wrapping_sub(value) as i64,
        }
        .encode(&mut out);
    }

    let shstrndx = elf.shstrndx();
    let old_names = elf.section_data(shstrndx)?;
    let shstr_off = out.len() as u64;
    out.extend_from_slice(old_names);
    let name_offset = |len: usize| {
        u32::try_from(len).map_err(|_| Error::new("section name string table too large"))
    };
    let loc_name = name_offset(old_names.len())?;
    out.extend_from_slice(MCOUNT_LOC);
    out.push(0);
    let rela_name = name_offset(old_names.len() + MCOUNT_LOC.len() + 1)?;
    out.extend_from_slice(RELA_MCOUNT_LOC);
    out.push(0);
    let shstr_size = out.len() as u64 - shstr_off;
    match headers.get_mut(shstrndx) {
        Some(h) => {
            h.offset = shstr_off;
            h.size = shstr_size;
        }
        None => return Err(Error::new("internal error: string table header")),
    }

    let too_many = || Error::new("too many sections");
    let loc_index = u32::try_from(headers.len()).map_err(|_| too_many())?;
    headers.push(Section {
        name: loc_name,
        kind: SHT_PROGBITS,
        flags: SHF_ALLOC,
        addr: 0,
        offset: loc_off,
        size: n * 8,
        link: 0,
        info: 0,
        addralign: 8,
        entsize: 8,
    });
    headers.push(Section {
        name: rela_name,
        kind: SHT_RELA,
        flags: SHF_INFO_LINK,
        addr: 0,
        offset: rela_off,
        size: n * RELA_SIZE as u64,
        link: u32::try_from(symidx).map_err(|_| too_many())?,
        info: loc_index,
        addralign: 8,
        entsize: RELA_SIZE as u64,
    });
    let new_shnum = headers.len();
    let e_shnum = if elf.e_shnum() == 0 || new_shnum >= usize::from(SHN_LORESERVE) {
        match headers.first_mut() {
            Some(h) => h.size = new_shnum as u64,
            None => return Err(Error::new("internal error: no section 0")),
        }
        0u16
    } else {
        new_shnum as u16
    };

    pad_to_8(&mut out);
    let shoff = out.len() as u64;
    for h in &headers {
        h.encode(&mut out);
    }
    if !write_at(&mut out, E_SHOFF as u64, &shoff.to_le_bytes())
        || !write_at(&mut out, E_SHNUM as u64, &e_shnum.to_le_bytes())
    {
        return Err(Error::new("internal error: ELF header"));
    }
    report.recorded = scan.recorded.len();
    report.outcome = Outcome::Rewritten(out);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elf::{EHDR_SIZE, EM_X86_64, ET_REL, SHDR_SIZE, SHT_STRTAB, SHT_SYMTAB, STB_WEAK};

    /// A hand-made object: `texts` are executable sections (name, code),
    /// `syms` (name, bind, type, section) follow the null symbol, `relocs`
    /// are (text index in `texts`, offset, symbol index, type).
    struct Obj<'a> {
        texts: Vec<(&'a str, Vec<u8>)>,
        syms: Vec<(&'a str, u8, u8, u16)>,
        first_global: u32,
        relocs: Vec<(usize, u64, u32, u32)>,
    }

    const SYMTAB: usize = 3;

    impl Obj<'_> {
        /// Sections: 0 null, 1 .shstrtab, 2 .strtab, 3 .symtab, then for
        /// each text: the text and its .rela.
        fn build(&self) -> Vec<u8> {
            let mut out = vec![0u8; EHDR_SIZE];
            out[..4].copy_from_slice(b"\x7fELF");
            out[4] = 2;
            out[5] = 1;
            out[6] = 1;
            out[16..18].copy_from_slice(&ET_REL.to_le_bytes());
            out[18..20].copy_from_slice(&EM_X86_64.to_le_bytes());
            out[52..54].copy_from_slice(&(EHDR_SIZE as u16).to_le_bytes());
            out[58..60].copy_from_slice(&(SHDR_SIZE as u16).to_le_bytes());

            let mut shstr = vec![0u8];
            let mut add_name = |n: &str| {
                let off = shstr.len() as u32;
                shstr.extend_from_slice(n.as_bytes());
                shstr.push(0);
                off
            };
            let mut headers = vec![Section::default()];
            let n_shstr = add_name(".shstrtab");
            let n_str = add_name(".strtab");
            let n_sym = add_name(".symtab");
            let mut text_names = Vec::new();
            for (name, _) in &self.texts {
                text_names.push((add_name(name), add_name(&format!(".rela{name}"))));
            }

            let mut strtab = vec![0u8];
            let mut symtab = Vec::new();
            Symbol::default().encode(&mut symtab);
            for (name, bind, kind, shndx) in &self.syms {
                let off = if name.is_empty() {
                    0
                } else {
                    let o = strtab.len() as u32;
                    strtab.extend_from_slice(name.as_bytes());
                    strtab.push(0);
                    o
                };
                Symbol {
                    name: off,
                    info: (bind << 4) | kind,
                    shndx: *shndx,
                    ..Symbol::default()
                }
                .encode(&mut symtab);
            }

            let place = |out: &mut Vec<u8>, bytes: &[u8]| {
                pad_to_8(out);
                let off = out.len() as u64;
                out.extend_from_slice(bytes);
                off
            };
            let shstr_off = place(&mut out, &shstr);
            headers.push(Section {
                name: n_shstr,
                kind: SHT_STRTAB,
                offset: shstr_off,
                size: shstr.len() as u64,
                ..Section::default()
            });
            let str_off = place(&mut out, &strtab);
            headers.push(Section {
                name: n_str,
                kind: SHT_STRTAB,
                offset: str_off,
                size: strtab.len() as u64,
                ..Section::default()
            });
            let sym_off = place(&mut out, &symtab);
            headers.push(Section {
                name: n_sym,
                kind: SHT_SYMTAB,
                offset: sym_off,
                size: symtab.len() as u64,
                link: 2,
                info: self.first_global,
                entsize: SYM_SIZE as u64,
                ..Section::default()
            });
            for (t, ((_, code), (tn, rn))) in self.texts.iter().zip(&text_names).enumerate() {
                let off = place(&mut out, code);
                let text_index = headers.len() as u32;
                headers.push(Section {
                    name: *tn,
                    kind: SHT_PROGBITS,
                    flags: SHF_ALLOC | SHF_EXECINSTR,
                    offset: off,
                    size: code.len() as u64,
                    addralign: 16,
                    ..Section::default()
                });
                let mut rel = Vec::new();
                for &(rt, offset, sym, kind) in &self.relocs {
                    if rt == t {
                        Rela {
                            offset,
                            info: Rela::make_info(sym, kind),
                            addend: -4,
                        }
                        .encode(&mut rel);
                    }
                }
                let roff = place(&mut out, &rel);
                headers.push(Section {
                    name: *rn,
                    kind: SHT_RELA,
                    flags: SHF_INFO_LINK,
                    offset: roff,
                    size: rel.len() as u64,
                    link: SYMTAB as u32,
                    info: text_index,
                    entsize: RELA_SIZE as u64,
                    addralign: 8,
                    ..Section::default()
                });
            }
            pad_to_8(&mut out);
            let shoff = out.len() as u64;
            for h in &headers {
                h.encode(&mut out);
            }
            out[40..48].copy_from_slice(&shoff.to_le_bytes());
            out[60..62].copy_from_slice(&(headers.len() as u16).to_le_bytes());
            out[62..64].copy_from_slice(&1u16.to_le_bytes());
            out
        }
    }

    /// Two calls to __fentry__ and one call to `other`.
    fn code() -> Vec<u8> {
        let mut c = CALL5.to_vec();
        c.extend_from_slice(&[0x90; 3]);
        c.extend_from_slice(&CALL5);
        c.extend_from_slice(&CALL5);
        c.push(0xc3);
        c
    }

    /// (section name, site offset) of each __mcount_loc entry, checked
    /// against the object's own relocations.
    fn sites(data: &[u8]) -> Vec<(String, u64)> {
        let elf = Elf::parse(data).unwrap();
        let loc = elf.find_section(MCOUNT_LOC).unwrap();
        let rela = elf.find_section(RELA_MCOUNT_LOC).unwrap();
        assert_eq!(elf.section(rela).unwrap().info as usize, loc);
        let st = elf
            .symtab(elf.section(rela).unwrap().link as usize)
            .unwrap();
        let t = elf.relas(rela).unwrap();
        (0..t.count())
            .map(|i| {
                let r = t.get(i).unwrap();
                assert_eq!(r.kind(), R_X86_64_64);
                assert_eq!(r.offset, i as u64 * 8);
                let sym = st.get(r.sym() as usize).unwrap();
                assert_ne!(sym.bind(), STB_WEAK);
                let sec = st.section_of(r.sym() as usize, &sym).unwrap().unwrap();
                let name = show(elf.section_name(sec).unwrap());
                (name, sym.value.wrapping_add(r.addend as u64))
            })
            .collect()
    }

    fn rewritten(r: Report) -> Vec<u8> {
        match r.outcome {
            Outcome::Rewritten(d) => d,
            other => panic!("not rewritten: {other:?}"),
        }
    }

    #[test]
    fn section_names() {
        for n in [
            ".text",
            ".text.foo",
            ".text.unlikely",
            ".text.hot.x",
            ".textfoo",
            ".init.text",
            ".ref.text",
            ".sched.text",
            ".spinlock.text",
            ".irqentry.text",
            ".softirqentry.text",
            ".kprobes.text",
            ".cpuidle.text",
        ] {
            assert!(is_mcounted_section_name(n.as_bytes()), "{n}");
        }
        for n in [
            ".exit.text",
            ".noinstr.text",
            ".entry.text",
            ".init.text.x",
            ".head.text",
            "text",
            ".tex",
            "",
        ] {
            assert!(!is_mcounted_section_name(n.as_bytes()), "{n}");
        }
    }

    #[test]
    fn records_against_section_symbol() {
        let obj = Obj {
            texts: vec![(".text", code())],
            syms: vec![
                ("", STB_LOCAL, STT_SECTION, 4),
                ("f", STB_GLOBAL, 2, 4),
                ("__fentry__", STB_GLOBAL, 0, 0),
                ("other", STB_GLOBAL, 0, 0),
            ],
            first_global: 2,
            relocs: vec![
                (0, 1, 3, R_X86_64_PLT32),
                (0, 9, 4, 4),
                (0, 14, 3, R_X86_64_PC32),
            ],
        };
        let data = obj.build();
        let out = rewritten(process(&data, &Options::default()).unwrap());
        assert_eq!(out[EHDR_SIZE..data.len()], data[EHDR_SIZE..]);
        assert_eq!(
            sites(&out),
            vec![(".text".to_string(), 0), (".text".to_string(), 13)]
        );
        // Running again finds __mcount_loc and does nothing.
        let again = process(&out, &Options::default()).unwrap();
        assert_eq!(again.outcome, Outcome::AlreadyRecorded);
    }

    #[test]
    fn weak_only_section_gets_a_section_symbol() {
        let obj = Obj {
            texts: vec![(".text.a", code()), (".text.b", code())],
            syms: vec![
                ("w1", STB_WEAK, 2, 4),
                ("__fentry__", STB_GLOBAL, 0, 0),
                ("w2", STB_WEAK, 2, 6),
            ],
            first_global: 1,
            relocs: vec![
                (0, 1, 2, R_X86_64_PLT32),
                (1, 1, 2, R_X86_64_PLT32),
                (1, 9, 3, 4),
            ],
        };
        let data = obj.build();
        let r = process(&data, &Options::default()).unwrap();
        assert_eq!(r.added_symbols, 2);
        let out = rewritten(r);
        assert_eq!(
            sites(&out),
            vec![(".text.a".to_string(), 0), (".text.b".to_string(), 0)]
        );
        let elf = Elf::parse(&out).unwrap();
        let st = elf.symtab(SYMTAB).unwrap();
        assert_eq!(st.count(), 6);
        assert_eq!(st.first_global(), 3);
        let names: Vec<(Vec<u8>, u8, u8)> = (0..st.count())
            .map(|i| {
                let s = st.get(i).unwrap();
                (st.name(&s).unwrap().to_vec(), s.bind(), s.kind())
            })
            .collect();
        assert_eq!(names[1], (vec![], STB_LOCAL, STT_SECTION));
        assert_eq!(names[2], (vec![], STB_LOCAL, STT_SECTION));
        assert_eq!(names[4], (b"w1".to_vec(), STB_WEAK, 2));
        assert_eq!(names[5], (b"__fentry__".to_vec(), STB_GLOBAL, 0));
        // Every old relocation still names the same symbol.
        for rela_sec in [5, 7] {
            let t = elf.relas(rela_sec).unwrap();
            for i in 0..t.count() {
                let r = t.get(i).unwrap();
                let s = st.get(r.sym() as usize).unwrap();
                let name = st.name(&s).unwrap();
                assert!(name == b"__fentry__" || name == b"w2", "{name:?}");
                assert_eq!(name == b"__fentry__", r.offset == 1);
            }
        }
    }

    /// `data` with empty sections appended up to `total` sections.
    fn with_sections(data: &[u8], total: usize) -> Vec<u8> {
        let elf = Elf::parse(data).unwrap();
        let mut headers = elf.sections().to_vec();
        while headers.len() < total {
            headers.push(Section {
                kind: SHT_PROGBITS,
                offset: EHDR_SIZE as u64,
                ..Section::default()
            });
        }
        let mut out = data.to_vec();
        pad_to_8(&mut out);
        let shoff = out.len() as u64;
        for h in &headers {
            h.encode(&mut out);
        }
        out[E_SHOFF..E_SHOFF + 8].copy_from_slice(&shoff.to_le_bytes());
        out[E_SHNUM..E_SHNUM + 2].copy_from_slice(&(total as u16).to_le_bytes());
        out
    }

    #[test]
    fn section_count_crossing_the_reserved_range() {
        let obj = Obj {
            texts: vec![(".text", code())],
            syms: vec![
                ("", STB_LOCAL, STT_SECTION, 4),
                ("__fentry__", STB_GLOBAL, 0, 0),
            ],
            first_global: 2,
            relocs: vec![(0, 1, 2, R_X86_64_PLT32)],
        };
        let data = obj.build();
        // 0xfefd + 2 sections still fit e_shnum; 0xfefe + 2 do not.
        for (old, extended) in [(0xfefd, false), (0xfefe, true), (0xfeff, true)] {
            let input = with_sections(&data, old);
            let out = rewritten(process(&input, &Options::default()).unwrap());
            let elf = Elf::parse(&out).unwrap();
            assert_eq!(elf.shnum(), old + 2);
            assert_eq!(elf.e_shnum() == 0, extended, "{old:#x}");
            let s0 = elf.section(0).unwrap();
            assert_eq!(s0.size, if extended { old as u64 + 2 } else { 0 });
            assert_eq!(elf.find_section(MCOUNT_LOC), Some(old));
            assert_eq!(sites(&out), vec![(".text".to_string(), 0)]);
        }
    }

    #[test]
    fn moved_global_base_is_renumbered() {
        // .text.a has only the global f (no section symbol), .text.b only
        // the weak w: adding .text.b's section symbol moves f.
        let obj = Obj {
            texts: vec![(".text.a", code()), (".text.b", code())],
            syms: vec![
                ("f", STB_GLOBAL, 2, 4),
                ("__fentry__", STB_GLOBAL, 0, 0),
                ("w", STB_WEAK, 2, 6),
            ],
            first_global: 1,
            relocs: vec![(0, 9, 2, R_X86_64_PLT32), (1, 1, 2, R_X86_64_PLT32)],
        };
        let r = process(&obj.build(), &Options::default()).unwrap();
        assert_eq!(r.added_symbols, 1);
        let out = rewritten(r);
        assert_eq!(
            sites(&out),
            vec![(".text.a".to_string(), 8), (".text.b".to_string(), 0)]
        );
        let elf = Elf::parse(&out).unwrap();
        let st = elf.symtab(SYMTAB).unwrap();
        let t = elf
            .relas(elf.find_section(RELA_MCOUNT_LOC).unwrap())
            .unwrap();
        let base = st.get(t.get(0).unwrap().sym() as usize).unwrap();
        assert_eq!(st.name(&base).unwrap(), b"f");
    }

    #[test]
    fn base_never_weak_but_local_or_global() {
        let obj = Obj {
            texts: vec![(".text", code())],
            syms: vec![
                ("local_fn", STB_LOCAL, 2, 4),
                ("weak_fn", STB_WEAK, 2, 4),
                ("__fentry__", STB_GLOBAL, 0, 0),
            ],
            first_global: 2,
            relocs: vec![(0, 9, 3, R_X86_64_PLT32)],
        };
        let out = rewritten(process(&obj.build(), &Options::default()).unwrap());
        assert_eq!(sites(&out), vec![(".text".to_string(), 8)]);
        let elf = Elf::parse(&out).unwrap();
        let t = elf
            .relas(elf.find_section(RELA_MCOUNT_LOC).unwrap())
            .unwrap();
        assert_eq!(t.get(0).unwrap().sym(), 1);
    }

    #[test]
    fn untraced_sections_become_nops() {
        let obj = Obj {
            texts: vec![(".exit.text", code()), (".text", code())],
            syms: vec![
                ("", STB_LOCAL, STT_SECTION, 4),
                ("", STB_LOCAL, STT_SECTION, 6),
                ("__fentry__", STB_GLOBAL, 0, 0),
            ],
            first_global: 3,
            relocs: vec![
                (0, 1, 3, R_X86_64_PLT32),
                (0, 9, 3, R_X86_64_PLT32),
                (1, 14, 3, R_X86_64_PLT32),
            ],
        };
        let data = obj.build();
        let r = process(&data, &Options::default()).unwrap();
        assert_eq!(r.nopped, 2);
        assert_eq!(r.recorded, 1);
        assert_eq!(r.ignored_sections, vec![".exit.text".to_string()]);
        let out = rewritten(r);
        assert_eq!(sites(&out), vec![(".text".to_string(), 13)]);
        let elf = Elf::parse(&out).unwrap();
        let exit = elf.section_data(4).unwrap();
        assert_eq!(exit[..5], NOP5);
        assert_eq!(exit[8..13], NOP5);
        let t = elf.relas(5).unwrap();
        assert_eq!(t.get(0).unwrap().kind(), R_X86_64_NONE);
        assert_eq!(t.get(0).unwrap().sym(), 3);

        // Only untraced calls: the object is rewritten without __mcount_loc.
        let obj = Obj {
            texts: vec![(".noinstr.text", code())],
            relocs: vec![(0, 1, 2, R_X86_64_PLT32)],
            syms: vec![
                ("", STB_LOCAL, STT_SECTION, 4),
                ("__fentry__", STB_GLOBAL, 0, 0),
            ],
            first_global: 2,
        };
        let out = rewritten(process(&obj.build(), &Options::default()).unwrap());
        let elf = Elf::parse(&out).unwrap();
        assert!(elf.find_section(MCOUNT_LOC).is_none());
        assert_eq!(elf.section_data(4).unwrap()[..5], NOP5);
    }

    #[test]
    fn nop_option_and_non_call_bytes() {
        let mut c = code();
        c[8] = 0xe9; // a jmp, not a call
        let obj = Obj {
            texts: vec![(".text", c)],
            syms: vec![
                ("", STB_LOCAL, STT_SECTION, 4),
                ("__fentry__", STB_GLOBAL, 0, 0),
            ],
            first_global: 2,
            relocs: vec![(0, 1, 2, R_X86_64_PLT32), (0, 9, 2, R_X86_64_PLT32)],
        };
        let r = process(&obj.build(), &Options { nop_recorded: true }).unwrap();
        assert_eq!(r.nopped, 1);
        assert_eq!(r.warnings.len(), 1);
        let out = rewritten(r);
        assert_eq!(
            sites(&out),
            vec![(".text".to_string(), 0), (".text".to_string(), 8)]
        );
        let elf = Elf::parse(&out).unwrap();
        assert_eq!(elf.section_data(4).unwrap()[..5], NOP5);
        assert_eq!(elf.section_data(4).unwrap()[8], 0xe9);
        let t = elf.relas(5).unwrap();
        assert_eq!(t.get(0).unwrap().kind(), R_X86_64_NONE);
        assert_eq!(t.get(1).unwrap().kind(), R_X86_64_PLT32);
    }

    #[test]
    fn bad_relocations_are_errors() {
        let base = |relocs| Obj {
            texts: vec![(".text", code())],
            syms: vec![
                ("", STB_LOCAL, STT_SECTION, 4),
                ("__fentry__", STB_GLOBAL, 0, 0),
            ],
            first_global: 2,
            relocs,
        };
        for relocs in [
            vec![(0, 0, 2, R_X86_64_PLT32)],
            vec![(0, 16, 2, R_X86_64_PLT32)],
            vec![(0, u64::MAX, 2, R_X86_64_PLT32)],
            vec![(0, 1, 9, R_X86_64_PLT32)],
        ] {
            let e = process(&base(relocs.clone()).build(), &Options::default());
            assert!(e.is_err(), "{relocs:?}");
        }
        // Other relocation types against __fentry__ are not calls.
        let data = base(vec![(0, 0, 2, 10)]).build();
        let r = process(&data, &Options::default()).unwrap();
        assert_eq!(r.outcome, Outcome::Unchanged);
    }

    proptest::proptest! {
        #[test]
        fn corrupted_objects_never_panic(pos in 0usize..2048, val in proptest::num::u8::ANY, nop in proptest::bool::ANY) {
            let obj = Obj {
                texts: vec![(".text", code()), (".text.b", code())],
                syms: vec![
                    ("w", STB_WEAK, 2, 4),
                    ("__fentry__", STB_GLOBAL, 0, 0),
                    ("", STB_LOCAL, STT_SECTION, 6),
                ],
                first_global: 1,
                relocs: vec![(0, 1, 2, R_X86_64_PLT32), (1, 9, 2, R_X86_64_PLT32), (0, 14, 1, 4)],
            };
            let mut d = obj.build();
            let len = d.len();
            if let Some(b) = d.get_mut(pos % len) {
                *b = val;
            }
            let _ = process(&d, &Options { nop_recorded: nop });
        }
    }
}
