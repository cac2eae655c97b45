// SPDX-License-Identifier: GPL-2.0
//! Reading and validating ELF64 little-endian x86_64 relocatable objects.
//!
//! Everything here works on a byte slice that holds the whole object; there
//! is no file I/O, so every check can be exercised on hand-made bytes.
//! Every offset and size taken from the input is checked before it is used:
//! a malformed object gives an [`Error`], never a panic.

use std::fmt;

/// Size of the ELF64 file header.
pub const EHDR_SIZE: usize = 64;
/// Size of one ELF64 section header.
pub const SHDR_SIZE: usize = 64;
/// Size of one ELF64 symbol.
pub const SYM_SIZE: usize = 24;
/// Size of one ELF64 `Rela` entry.
pub const RELA_SIZE: usize = 24;
/// Size of one ELF64 `Rel` entry.
pub const REL_SIZE: usize = 16;

/// `e_type` of a relocatable object.
pub const ET_REL: u16 = 1;
/// `e_machine` of x86_64.
pub const EM_X86_64: u16 = 62;

/// Inactive section header.
pub const SHT_NULL: u32 = 0;
/// Section contents defined by the program.
pub const SHT_PROGBITS: u32 = 1;
/// Symbol table.
pub const SHT_SYMTAB: u32 = 2;
/// String table.
pub const SHT_STRTAB: u32 = 3;
/// Relocations with explicit addends.
pub const SHT_RELA: u32 = 4;
/// Section occupying no file space.
pub const SHT_NOBITS: u32 = 8;
/// Relocations without addends.
pub const SHT_REL: u32 = 9;
/// Section group.
pub const SHT_GROUP: u32 = 17;
/// Extended section indexes of a symbol table.
pub const SHT_SYMTAB_SHNDX: u32 = 18;

/// Section occupies memory at run time.
pub const SHF_ALLOC: u64 = 0x2;
/// Section holds machine instructions.
pub const SHF_EXECINSTR: u64 = 0x4;
/// `sh_info` holds a section index.
pub const SHF_INFO_LINK: u64 = 0x40;

/// Undefined section index.
pub const SHN_UNDEF: u16 = 0;
/// First reserved section index.
pub const SHN_LORESERVE: u16 = 0xff00;
/// The real index is elsewhere (extended section numbering).
pub const SHN_XINDEX: u16 = 0xffff;

/// Local symbol binding.
pub const STB_LOCAL: u8 = 0;
/// Global symbol binding.
pub const STB_GLOBAL: u8 = 1;
/// Weak symbol binding (the tool never uses it: only the tests do).
#[allow(dead_code)]
pub const STB_WEAK: u8 = 2;
/// Symbol type of a section symbol.
pub const STT_SECTION: u8 = 3;

/// No relocation.
pub const R_X86_64_NONE: u32 = 0;
/// Direct 64-bit address.
pub const R_X86_64_64: u32 = 1;
/// 32-bit PC-relative.
pub const R_X86_64_PC32: u32 = 2;
/// 32-bit PLT-relative (what `call sym` gets from current assemblers).
pub const R_X86_64_PLT32: u32 = 4;

/// Offset of `e_shoff` in the file header.
pub const E_SHOFF: usize = 40;
/// Offset of `e_shnum` in the file header.
pub const E_SHNUM: usize = 60;

const ELF_MAGIC: &[u8; 4] = b"\x7fELF";
const ELFCLASS64: u8 = 2;
const ELFDATA2LSB: u8 = 1;
const EV_CURRENT: u8 = 1;

/// What went wrong with an object; the caller adds the file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(String);

impl Error {
    /// An error with the given message.
    pub fn new(msg: impl Into<String>) -> Self {
        Error(msg.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

/// Shorthand for results of this module.
pub type Result<T> = std::result::Result<T, Error>;

/// A section or symbol name, printable even if it is not UTF-8.
pub fn show(name: &[u8]) -> String {
    String::from_utf8_lossy(name).into_owned()
}

/// Sequential little-endian decoder over a byte slice.
struct Decoder<'a> {
    rest: &'a [u8],
}

impl<'a> Decoder<'a> {
    fn new(rest: &'a [u8]) -> Self {
        Decoder { rest }
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N]> {
        match self.rest.split_first_chunk::<N>() {
            Some((head, tail)) => {
                self.rest = tail;
                Ok(*head)
            }
            None => Err(Error::new("truncated structure")),
        }
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(u8::from_le_bytes(self.take::<1>()?))
    }

    fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.take::<2>()?))
    }

    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take::<4>()?))
    }

    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take::<8>()?))
    }
}

/// `len` bytes of `data` at `offset`, if they are all inside `data`.
pub fn range(data: &[u8], offset: u64, len: u64) -> Option<&[u8]> {
    let start = usize::try_from(offset).ok()?;
    let len = usize::try_from(len).ok()?;
    data.get(start..start.checked_add(len)?)
}

/// Mutable variant of [`range`].
pub fn range_mut(data: &mut [u8], offset: u64, len: u64) -> Option<&mut [u8]> {
    let start = usize::try_from(offset).ok()?;
    let len = usize::try_from(len).ok()?;
    data.get_mut(start..start.checked_add(len)?)
}

/// Reads a little-endian `u64` at `offset`.
pub fn read_u64(data: &[u8], offset: u64) -> Option<u64> {
    let bytes = range(data, offset, 8)?;
    Some(u64::from_le_bytes(bytes.try_into().ok()?))
}

/// Overwrites `bytes.len()` bytes of `data` at `offset`; false if out of range.
pub fn write_at(data: &mut [u8], offset: u64, bytes: &[u8]) -> bool {
    match range_mut(data, offset, bytes.len() as u64) {
        Some(dst) => {
            dst.copy_from_slice(bytes);
            true
        }
        None => false,
    }
}

/// The NUL-terminated string at `offset` of string table `table`.
fn c_str(table: &[u8], offset: u32) -> Option<&[u8]> {
    let tail = table.get(usize::try_from(offset).ok()?..)?;
    let end = tail.iter().position(|&b| b == 0)?;
    tail.get(..end)
}

/// One section header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Section {
    /// Offset of the name in the section name string table.
    pub name: u32,
    /// `sh_type`.
    pub kind: u32,
    /// `sh_flags`.
    pub flags: u64,
    /// `sh_addr`.
    pub addr: u64,
    /// File offset of the contents.
    pub offset: u64,
    /// Size of the contents.
    pub size: u64,
    /// `sh_link`.
    pub link: u32,
    /// `sh_info`.
    pub info: u32,
    /// `sh_addralign`.
    pub addralign: u64,
    /// `sh_entsize`.
    pub entsize: u64,
}

impl Section {
    /// Decodes a section header from its 64 bytes.
    pub fn decode(bytes: &[u8]) -> Result<Section> {
        let mut d = Decoder::new(bytes);
        Ok(Section {
            name: d.u32()?,
            kind: d.u32()?,
            flags: d.u64()?,
            addr: d.u64()?,
            offset: d.u64()?,
            size: d.u64()?,
            link: d.u32()?,
            info: d.u32()?,
            addralign: d.u64()?,
            entsize: d.u64()?,
        })
    }

    /// Appends the 64-byte encoding of the header to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.name.to_le_bytes());
        out.extend_from_slice(&self.kind.to_le_bytes());
        out.extend_from_slice(&self.flags.to_le_bytes());
        out.extend_from_slice(&self.addr.to_le_bytes());
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.size.to_le_bytes());
        out.extend_from_slice(&self.link.to_le_bytes());
        out.extend_from_slice(&self.info.to_le_bytes());
        out.extend_from_slice(&self.addralign.to_le_bytes());
        out.extend_from_slice(&self.entsize.to_le_bytes());
    }

    /// Whether the section has contents in the file.
    pub fn has_file_data(&self) -> bool {
        self.kind != SHT_NOBITS && self.kind != SHT_NULL
    }
}

/// One symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Symbol {
    /// Offset of the name in the string table.
    pub name: u32,
    /// Binding (high nibble) and type (low nibble).
    pub info: u8,
    /// Visibility.
    pub other: u8,
    /// Section index, or a reserved `SHN_*` value.
    pub shndx: u16,
    /// Value: the offset in its section for a relocatable object.
    pub value: u64,
    /// Size.
    pub size: u64,
}

impl Symbol {
    /// Decodes a symbol from its 24 bytes.
    pub fn decode(bytes: &[u8]) -> Result<Symbol> {
        let mut d = Decoder::new(bytes);
        Ok(Symbol {
            name: d.u32()?,
            info: d.u8()?,
            other: d.u8()?,
            shndx: d.u16()?,
            value: d.u64()?,
            size: d.u64()?,
        })
    }

    /// Appends the 24-byte encoding of the symbol to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.name.to_le_bytes());
        out.push(self.info);
        out.push(self.other);
        out.extend_from_slice(&self.shndx.to_le_bytes());
        out.extend_from_slice(&self.value.to_le_bytes());
        out.extend_from_slice(&self.size.to_le_bytes());
    }

    /// `STB_*` binding.
    pub fn bind(&self) -> u8 {
        self.info >> 4
    }

    /// `STT_*` type.
    pub fn kind(&self) -> u8 {
        self.info & 0xf
    }
}

/// One relocation with addend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rela {
    /// Offset in the section the relocation applies to.
    pub offset: u64,
    /// Symbol index (high 32 bits) and type (low 32 bits).
    pub info: u64,
    /// Addend.
    pub addend: i64,
}

impl Rela {
    /// Decodes a relocation from its 24 bytes.
    pub fn decode(bytes: &[u8]) -> Result<Rela> {
        let mut d = Decoder::new(bytes);
        Ok(Rela {
            offset: d.u64()?,
            info: d.u64()?,
            addend: d.u64()? as i64,
        })
    }

    /// Appends the 24-byte encoding of the relocation to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.info.to_le_bytes());
        out.extend_from_slice(&self.addend.to_le_bytes());
    }

    /// Builds `r_info` from a symbol index and a type.
    pub fn make_info(sym: u32, kind: u32) -> u64 {
        (u64::from(sym) << 32) | u64::from(kind)
    }

    /// Symbol index.
    pub fn sym(&self) -> u32 {
        (self.info >> 32) as u32
    }

    /// `R_X86_64_*` type.
    pub fn kind(&self) -> u32 {
        self.info as u32
    }
}

/// A parsed and validated object: its header fields and section headers.
#[derive(Debug)]
pub struct Elf<'a> {
    data: &'a [u8],
    e_shnum: u16,
    shstrndx: usize,
    sections: Vec<Section>,
    names: Vec<&'a [u8]>,
}

impl<'a> Elf<'a> {
    /// Parses and validates the ELF header and the section header table.
    ///
    /// Checks: ELF magic, 64-bit class, little-endian, current version,
    /// `ET_REL`, `EM_X86_64`, header and section header sizes, the section
    /// header table and every section's contents inside the file, the
    /// section name string table and every section name.
    pub fn parse(data: &'a [u8]) -> Result<Elf<'a>> {
        if data.is_empty() {
            return Err(Error::new("empty file, not an ELF object"));
        }
        if data.get(..4) != Some(&ELF_MAGIC[..]) {
            return Err(Error::new("not an ELF object (bad magic number)"));
        }
        let class = data.get(4).copied().unwrap_or(0);
        if class != ELFCLASS64 {
            return Err(Error::new(format!(
                "unsupported ELF class {class} (only 64-bit ELF is handled)"
            )));
        }
        let encoding = data.get(5).copied().unwrap_or(0);
        if encoding != ELFDATA2LSB {
            return Err(Error::new(format!(
                "unsupported ELF data encoding {encoding} (only little-endian is handled)"
            )));
        }
        let version = data.get(6).copied().unwrap_or(0);
        if version != EV_CURRENT {
            return Err(Error::new(format!("unsupported ELF version {version}")));
        }
        let header = data
            .get(..EHDR_SIZE)
            .ok_or_else(|| Error::new(format!("truncated ELF header ({} bytes)", data.len())))?;
        let mut d = Decoder::new(header.get(16..).unwrap_or(&[]));
        let e_type = d.u16()?;
        let e_machine = d.u16()?;
        let _e_version = d.u32()?;
        let _e_entry = d.u64()?;
        let _e_phoff = d.u64()?;
        let shoff = d.u64()?;
        let _e_flags = d.u32()?;
        let ehsize = d.u16()?;
        let _e_phentsize = d.u16()?;
        let _e_phnum = d.u16()?;
        let shentsize = d.u16()?;
        let e_shnum = d.u16()?;
        let e_shstrndx = d.u16()?;

        if e_type != ET_REL {
            return Err(Error::new(format!(
                "not a relocatable object (e_type {e_type}, expected {ET_REL})"
            )));
        }
        if e_machine != EM_X86_64 {
            return Err(Error::new(format!(
                "unsupported machine {e_machine} (only x86_64, {EM_X86_64}, is handled)"
            )));
        }
        if usize::from(ehsize) != EHDR_SIZE {
            return Err(Error::new(format!("bad ELF header size {ehsize}")));
        }
        if usize::from(shentsize) != SHDR_SIZE {
            return Err(Error::new(format!("bad section header size {shentsize}")));
        }

        let mut elf = Elf {
            data,
            e_shnum,
            shstrndx: 0,
            sections: Vec::new(),
            names: Vec::new(),
        };
        if shoff == 0 {
            if e_shnum != 0 {
                return Err(Error::new(format!(
                    "e_shnum is {e_shnum} but there is no section header table"
                )));
            }
            return Ok(elf);
        }

        let first = range(data, shoff, SHDR_SIZE as u64).ok_or_else(|| {
            Error::new(format!(
                "section header table at offset {shoff:#x} is past the end of the file ({} bytes)",
                data.len()
            ))
        })?;
        let shdr0 = Section::decode(first)?;
        let shnum = if e_shnum != 0 {
            u64::from(e_shnum)
        } else {
            shdr0.size
        };
        if shnum == 0 {
            return Err(Error::new("section header table with no entries"));
        }
        let table_size = shnum
            .checked_mul(SHDR_SIZE as u64)
            .ok_or_else(|| Error::new(format!("absurd section count {shnum}")))?;
        let table = range(data, shoff, table_size).ok_or_else(|| {
            Error::new(format!(
                "section header table ({shnum} entries at offset {shoff:#x}) runs past the end of the file ({} bytes)",
                data.len()
            ))
        })?;
        let mut sections = Vec::with_capacity(table.len() / SHDR_SIZE);
        for chunk in table.chunks_exact(SHDR_SIZE) {
            sections.push(Section::decode(chunk)?);
        }
        for (i, s) in sections.iter().enumerate() {
            if s.has_file_data() && range(data, s.offset, s.size).is_none() {
                return Err(Error::new(format!(
                    "section {i}: contents at offset {:#x}, size {:#x}, are outside the file ({} bytes)",
                    s.offset,
                    s.size,
                    data.len()
                )));
            }
        }

        let shstrndx = if e_shstrndx == SHN_XINDEX {
            shdr0.link as usize
        } else {
            usize::from(e_shstrndx)
        };
        if shstrndx == 0 {
            return Err(Error::new("no section name string table"));
        }
        let strsec = sections.get(shstrndx).ok_or_else(|| {
            Error::new(format!(
                "section name string table index {shstrndx} out of range ({} sections)",
                sections.len()
            ))
        })?;
        if strsec.kind != SHT_STRTAB {
            return Err(Error::new(format!(
                "section name string table (section {shstrndx}) is not a string table"
            )));
        }
        let strtab = range(data, strsec.offset, strsec.size).unwrap_or(&[]);
        let mut names = Vec::with_capacity(sections.len());
        for (i, s) in sections.iter().enumerate() {
            let name = c_str(strtab, s.name).ok_or_else(|| {
                Error::new(format!(
                    "section {i}: name offset {:#x} is outside the section name string table",
                    s.name
                ))
            })?;
            names.push(name);
        }
        elf.shstrndx = shstrndx;
        elf.sections = sections;
        elf.names = names;
        Ok(elf)
    }

    /// `e_shnum` as stored (0 when the count is in section 0's `sh_size`).
    pub fn e_shnum(&self) -> u16 {
        self.e_shnum
    }

    /// Index of the section name string table.
    pub fn shstrndx(&self) -> usize {
        self.shstrndx
    }

    /// All section headers, index 0 included.
    pub fn sections(&self) -> &[Section] {
        &self.sections
    }

    /// Number of sections.
    pub fn shnum(&self) -> usize {
        self.sections.len()
    }

    /// The header of section `idx`.
    pub fn section(&self, idx: usize) -> Result<&Section> {
        self.sections.get(idx).ok_or_else(|| {
            Error::new(format!(
                "section index {idx} out of range ({} sections)",
                self.sections.len()
            ))
        })
    }

    /// The name of section `idx`.
    pub fn section_name(&self, idx: usize) -> Result<&'a [u8]> {
        self.section(idx)?;
        Ok(self.names.get(idx).copied().unwrap_or(&[]))
    }

    /// The contents of section `idx` (empty for `SHT_NOBITS`).
    pub fn section_data(&self, idx: usize) -> Result<&'a [u8]> {
        let s = self.section(idx)?;
        if !s.has_file_data() {
            return Ok(&[]);
        }
        range(self.data, s.offset, s.size)
            .ok_or_else(|| Error::new(format!("section {idx}: contents outside the file")))
    }

    /// Index of the first section called `name`.
    pub fn find_section(&self, name: &[u8]) -> Option<usize> {
        self.names.iter().position(|n| *n == name)
    }

    /// The symbol table in section `idx`, with its string table and
    /// extended section index table.
    pub fn symtab(&self, idx: usize) -> Result<SymbolTable<'a>> {
        let s = self.section(idx)?;
        if s.kind != SHT_SYMTAB {
            return Err(Error::new(format!(
                "section {idx} ({}) is not a symbol table",
                show(self.section_name(idx)?)
            )));
        }
        if s.entsize != SYM_SIZE as u64 || s.size % SYM_SIZE as u64 != 0 {
            return Err(Error::new(format!(
                "symbol table {}: bad entry size {} or size {}",
                show(self.section_name(idx)?),
                s.entsize,
                s.size
            )));
        }
        let data = self.section_data(idx)?;
        let count = data.len() / SYM_SIZE;
        let stridx = s.link as usize;
        let strsec = self
            .section(stridx)
            .map_err(|e| Error::new(format!("symbol table {idx}: string table: {e}")))?;
        if strsec.kind != SHT_STRTAB {
            return Err(Error::new(format!(
                "symbol table {idx}: linked section {stridx} is not a string table"
            )));
        }
        let first_global = s.info as usize;
        if first_global > count {
            return Err(Error::new(format!(
                "symbol table {idx}: first non-local symbol {first_global} beyond the {count} symbols"
            )));
        }
        let mut xindex = None;
        let mut xindex_section = None;
        for (i, x) in self.sections.iter().enumerate() {
            if x.kind == SHT_SYMTAB_SHNDX && x.link as usize == idx {
                let table = self.section_data(i)?;
                if table.len() / 4 < count {
                    return Err(Error::new(format!(
                        "extended section index table {i} is shorter than its symbol table"
                    )));
                }
                xindex = Some(table);
                xindex_section = Some(i);
                break;
            }
        }
        Ok(SymbolTable {
            index: idx,
            data,
            strtab: self.section_data(stridx)?,
            xindex,
            xindex_section,
            count,
            first_global,
        })
    }

    /// The relocations with addends in section `idx`.
    pub fn relas(&self, idx: usize) -> Result<RelaTable<'a>> {
        let s = self.section(idx)?;
        if s.kind != SHT_RELA {
            return Err(Error::new(format!(
                "section {idx} ({}) is not a SHT_RELA section",
                show(self.section_name(idx)?)
            )));
        }
        if s.entsize != RELA_SIZE as u64 || s.size % RELA_SIZE as u64 != 0 {
            return Err(Error::new(format!(
                "relocation section {}: bad entry size {} or size {}",
                show(self.section_name(idx)?),
                s.entsize,
                s.size
            )));
        }
        let data = self.section_data(idx)?;
        Ok(RelaTable {
            data,
            file_offset: s.offset,
            count: data.len() / RELA_SIZE,
        })
    }
}

/// A symbol table with what is needed to resolve names and section indexes.
#[derive(Debug, Clone, Copy)]
pub struct SymbolTable<'a> {
    index: usize,
    data: &'a [u8],
    strtab: &'a [u8],
    xindex: Option<&'a [u8]>,
    xindex_section: Option<usize>,
    count: usize,
    first_global: usize,
}

impl<'a> SymbolTable<'a> {
    /// Section index of the table.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Number of symbols, the null symbol included.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Index of the first non-local symbol (`sh_info`).
    pub fn first_global(&self) -> usize {
        self.first_global
    }

    /// Section index of the `SHT_SYMTAB_SHNDX` table, if there is one.
    pub fn xindex_section(&self) -> Option<usize> {
        self.xindex_section
    }

    /// The raw 24 bytes of symbol `i`.
    pub fn raw(&self, i: usize) -> Result<&'a [u8]> {
        i.checked_mul(SYM_SIZE)
            .and_then(|start| self.data.get(start..start.checked_add(SYM_SIZE)?))
            .ok_or_else(|| {
                Error::new(format!(
                    "symbol index {i} out of range ({} symbols)",
                    self.count
                ))
            })
    }

    /// The raw 4-byte extended section index entry of symbol `i`, if the
    /// table has an extended section index table.
    pub fn raw_xindex(&self, i: usize) -> Option<&'a [u8]> {
        let table = self.xindex?;
        let start = i.checked_mul(4)?;
        table.get(start..start.checked_add(4)?)
    }

    /// Symbol `i`.
    pub fn get(&self, i: usize) -> Result<Symbol> {
        Symbol::decode(self.raw(i)?)
    }

    /// The name of `sym`.
    pub fn name(&self, sym: &Symbol) -> Result<&'a [u8]> {
        c_str(self.strtab, sym.name).ok_or_else(|| {
            Error::new(format!(
                "symbol name offset {:#x} is outside the string table",
                sym.name
            ))
        })
    }

    /// The section symbol `i` (decoded as `sym`) is defined in, if any:
    /// `None` for undefined, absolute and common symbols.
    pub fn section_of(&self, i: usize, sym: &Symbol) -> Result<Option<usize>> {
        if sym.shndx == SHN_UNDEF {
            return Ok(None);
        }
        if sym.shndx < SHN_LORESERVE {
            return Ok(Some(usize::from(sym.shndx)));
        }
        if sym.shndx != SHN_XINDEX {
            return Ok(None);
        }
        let raw = self.raw_xindex(i).ok_or_else(|| {
            Error::new(format!(
                "symbol {i} uses an extended section index but there is no index table for it"
            ))
        })?;
        let mut d = Decoder::new(raw);
        let ndx = d.u32()? as usize;
        Ok(if ndx == 0 { None } else { Some(ndx) })
    }
}

/// The entries of a `SHT_RELA` section.
#[derive(Debug, Clone, Copy)]
pub struct RelaTable<'a> {
    data: &'a [u8],
    file_offset: u64,
    count: usize,
}

impl RelaTable<'_> {
    /// Number of relocations.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Relocation `i`.
    pub fn get(&self, i: usize) -> Result<Rela> {
        let bytes = i
            .checked_mul(RELA_SIZE)
            .and_then(|start| self.data.get(start..start.checked_add(RELA_SIZE)?))
            .ok_or_else(|| Error::new(format!("relocation index {i} out of range")))?;
        Rela::decode(bytes)
    }

    /// File offset of relocation `i`.
    pub fn entry_offset(&self, i: usize) -> u64 {
        self.file_offset
            .saturating_add((i as u64).saturating_mul(RELA_SIZE as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal valid object: null section, .shstrtab, .text.
    fn minimal() -> Vec<u8> {
        let mut out = vec![0u8; EHDR_SIZE];
        out[..4].copy_from_slice(ELF_MAGIC);
        out[4] = ELFCLASS64;
        out[5] = ELFDATA2LSB;
        out[6] = EV_CURRENT;
        out[16..18].copy_from_slice(&ET_REL.to_le_bytes());
        out[18..20].copy_from_slice(&EM_X86_64.to_le_bytes());
        out[20..24].copy_from_slice(&1u32.to_le_bytes());
        out[52..54].copy_from_slice(&(EHDR_SIZE as u16).to_le_bytes());
        out[58..60].copy_from_slice(&(SHDR_SIZE as u16).to_le_bytes());
        let strtab_off = out.len() as u64;
        out.extend_from_slice(b"\0.shstrtab\0.text\0");
        let strtab_size = out.len() as u64 - strtab_off;
        let text_off = out.len() as u64;
        out.extend_from_slice(&[0x90, 0xc3]);
        out.resize(out.len().next_multiple_of(8), 0);
        let shoff = out.len() as u64;
        Section::default().encode(&mut out);
        Section {
            name: 1,
            kind: SHT_STRTAB,
            offset: strtab_off,
            size: strtab_size,
            addralign: 1,
            ..Section::default()
        }
        .encode(&mut out);
        Section {
            name: 11,
            kind: SHT_PROGBITS,
            flags: SHF_ALLOC | SHF_EXECINSTR,
            offset: text_off,
            size: 2,
            addralign: 16,
            ..Section::default()
        }
        .encode(&mut out);
        out[40..48].copy_from_slice(&shoff.to_le_bytes());
        out[60..62].copy_from_slice(&3u16.to_le_bytes());
        out[62..64].copy_from_slice(&1u16.to_le_bytes());
        out
    }

    fn shoff(data: &[u8]) -> usize {
        read_u64(data, E_SHOFF as u64).unwrap() as usize
    }

    fn err(data: &[u8]) -> String {
        Elf::parse(data).unwrap_err().to_string()
    }

    #[test]
    fn parses_minimal() {
        let data = minimal();
        let elf = Elf::parse(&data).unwrap();
        assert_eq!(elf.shnum(), 3);
        assert_eq!(elf.section_name(2).unwrap(), b".text");
        assert_eq!(elf.find_section(b".text"), Some(2));
        assert_eq!(elf.section_data(2).unwrap(), &[0x90, 0xc3]);
        assert!(elf.section(3).is_err());
    }

    #[test]
    fn rejects_bad_identification() {
        assert!(err(&[]).contains("empty"));
        assert!(err(b"\x7fEL").contains("magic"));
        assert!(err(b"garbage garbage garbage").contains("magic"));
        let mut d = minimal();
        d[4] = 1;
        assert!(err(&d).contains("class 1"));
        let mut d = minimal();
        d[5] = 2;
        assert!(err(&d).contains("encoding 2"));
        let mut d = minimal();
        d[6] = 0;
        assert!(err(&d).contains("version"));
        let mut d = minimal();
        d[16] = 2;
        assert!(err(&d).contains("relocatable"));
        let mut d = minimal();
        d[18] = 3;
        assert!(err(&d).contains("machine 3"));
        let mut d = minimal();
        d[52] = 52;
        assert!(err(&d).contains("header size"));
        let mut d = minimal();
        d[58] = 40;
        assert!(err(&d).contains("section header size"));
        assert!(err(&minimal()[..40]).contains("truncated ELF header"));
        assert!(err(&minimal()[..5]).contains("encoding"));
    }

    #[test]
    fn rejects_bad_section_table() {
        let base = minimal();
        let so = shoff(&base);
        // Table offset past the end.
        let mut d = base.clone();
        d[40..48].copy_from_slice(&(base.len() as u64 + 8).to_le_bytes());
        assert!(err(&d).contains("past the end"));
        let mut d = base.clone();
        d[40..48].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(err(&d).contains("past the end"));
        // Too many entries.
        let mut d = base.clone();
        d[60..62].copy_from_slice(&4u16.to_le_bytes());
        assert!(err(&d).contains("runs past the end"));
        // Extended count, absurd.
        let mut d = base.clone();
        d[60..62].copy_from_slice(&0u16.to_le_bytes());
        d[so + 32..so + 40].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(err(&d).contains("absurd"));
        // Extended count of zero.
        let mut d = base.clone();
        d[60..62].copy_from_slice(&0u16.to_le_bytes());
        assert!(err(&d).contains("no entries"));
        // Section contents outside the file.
        let mut d = base.clone();
        let text = so + 2 * SHDR_SIZE;
        d[text + 32..text + 40].copy_from_slice(&0x1000u64.to_le_bytes());
        assert!(err(&d).contains("outside the file"));
        let mut d = base.clone();
        d[text + 24..text + 32].copy_from_slice(&(u64::MAX - 1).to_le_bytes());
        assert!(err(&d).contains("outside the file"));
        // NOBITS contents may be anywhere.
        let mut d = base.clone();
        d[text + 4..text + 8].copy_from_slice(&SHT_NOBITS.to_le_bytes());
        d[text + 32..text + 40].copy_from_slice(&0x1000u64.to_le_bytes());
        assert!(Elf::parse(&d).is_ok());
        // String table index out of range, zero, wrong type.
        let mut d = base.clone();
        d[62..64].copy_from_slice(&7u16.to_le_bytes());
        assert!(err(&d).contains("out of range"));
        let mut d = base.clone();
        d[62..64].copy_from_slice(&0u16.to_le_bytes());
        assert!(err(&d).contains("no section name"));
        let mut d = base.clone();
        d[62..64].copy_from_slice(&2u16.to_le_bytes());
        assert!(err(&d).contains("not a string table"));
        // Extended string table index through section 0's sh_link.
        let mut d = base.clone();
        d[62..64].copy_from_slice(&SHN_XINDEX.to_le_bytes());
        d[so + 40..so + 44].copy_from_slice(&1u32.to_le_bytes());
        assert!(Elf::parse(&d).is_ok());
        d[so + 40..so + 44].copy_from_slice(&99u32.to_le_bytes());
        assert!(err(&d).contains("out of range"));
        // Name outside the string table.
        let mut d = base.clone();
        d[text..text + 4].copy_from_slice(&500u32.to_le_bytes());
        assert!(err(&d).contains("name offset"));
        // No section header table at all is fine; a count without one is not.
        let mut d = base.clone();
        d[40..48].copy_from_slice(&0u64.to_le_bytes());
        assert!(err(&d).contains("no section header table"));
        d[60..62].copy_from_slice(&0u16.to_le_bytes());
        assert_eq!(Elf::parse(&d).unwrap().shnum(), 0);
    }

    #[test]
    fn every_truncation_is_an_error() {
        let base = minimal();
        for len in 0..base.len() {
            assert!(Elf::parse(&base[..len]).is_err(), "length {len}");
        }
    }

    #[test]
    fn symbol_section_indexes() {
        let syms = {
            let mut v = Vec::new();
            Symbol::default().encode(&mut v);
            Symbol {
                shndx: 5,
                ..Symbol::default()
            }
            .encode(&mut v);
            Symbol {
                shndx: SHN_XINDEX,
                ..Symbol::default()
            }
            .encode(&mut v);
            Symbol {
                shndx: 0xfff1,
                ..Symbol::default()
            }
            .encode(&mut v);
            v
        };
        let mut x = Vec::new();
        for v in [0u32, 0, 70000, 0] {
            x.extend_from_slice(&v.to_le_bytes());
        }
        let mut t = SymbolTable {
            index: 1,
            data: &syms,
            strtab: b"\0",
            xindex: Some(&x),
            xindex_section: Some(2),
            count: 4,
            first_global: 1,
        };
        let s = |t: &SymbolTable<'_>, i| t.section_of(i, &t.get(i).unwrap());
        assert_eq!(s(&t, 0).unwrap(), None);
        assert_eq!(s(&t, 1).unwrap(), Some(5));
        assert_eq!(s(&t, 2).unwrap(), Some(70000));
        assert_eq!(s(&t, 3).unwrap(), None);
        assert!(t.get(4).is_err());
        assert!(t.get(usize::MAX).is_err());
        t.xindex = None;
        assert!(s(&t, 2).is_err());
        let bad = Symbol {
            name: 7,
            ..Symbol::default()
        };
        assert!(t.name(&bad).is_err());
    }

    #[test]
    fn rela_encoding_round_trips() {
        let r = Rela {
            offset: 0x1234,
            info: Rela::make_info(7, R_X86_64_PLT32),
            addend: -4,
        };
        let mut v = Vec::new();
        r.encode(&mut v);
        assert_eq!(v.len(), RELA_SIZE);
        let back = Rela::decode(&v).unwrap();
        assert_eq!(back, r);
        assert_eq!(back.sym(), 7);
        assert_eq!(back.kind(), R_X86_64_PLT32);
        assert!(Rela::decode(&v[..23]).is_err());
    }

    proptest::proptest! {
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            let _ = Elf::parse(&bytes);
        }

        #[test]
        fn corrupted_headers_never_panic(pos in 0usize..400, val in proptest::num::u8::ANY) {
            let mut d = minimal();
            if let Some(b) = d.get_mut(pos) {
                *b = val;
            }
            if let Ok(elf) = Elf::parse(&d) {
                for i in 0..elf.shnum() {
                    let _ = elf.section_data(i);
                    let _ = elf.symtab(i);
                    let _ = elf.relas(i);
                }
            }
        }
    }
}
