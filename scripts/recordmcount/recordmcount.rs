// SPDX-License-Identifier: GPL-2.0
//! recordmcount: records where x86_64 objects call `__fentry__`.
//!
//! A Rust version of the kernel's `scripts/recordmcount.c`, for x86_64
//! only. Objects compiled with `-pg -mfentry` (but without
//! `-mrecord-mcount`) call `__fentry__` at the start of every traceable
//! function; ftrace needs a table of those call sites. For each object
//! named on the command line this tool:
//!
//! - finds the `R_X86_64_PLT32`/`R_X86_64_PC32` relocations against
//!   `__fentry__` in the relocation sections of executable sections; each
//!   is a 5-byte `call` starting one byte before the relocated field;
//! - for sections that ftrace traces (`.text*`, `.init.text`, `.ref.text`,
//!   `.sched.text`, `.spinlock.text`, `.irqentry.text`,
//!   `.softirqentry.text`, `.kprobes.text`, `.cpuidle.text`), appends a
//!   `__mcount_loc` section with one 8-byte slot per call and a
//!   `.rela__mcount_loc` section relocating each slot (`R_X86_64_64`)
//!   against a non-weak symbol of the call's section, so that after
//!   linking each slot holds the call's address: the same table that
//!   `gcc -mrecord-mcount` emits;
//! - turns the calls in the other executable sections into 5-byte NOPs
//!   (their relocations into `R_X86_64_NONE`), as they are never traced;
//! - with `-n`, turns the recorded calls into NOPs as well;
//! - if a traced section has only weak symbols (assemblers drop unused
//!   section symbols), adds a section symbol for it rather than failing as
//!   the C tool does: a weak function may be replaced at link time, so its
//!   symbol cannot be the base of the relocations.
//!
//! An object that already has `__mcount_loc` is left alone. A changed
//! object is written to a temporary file in the same directory, which then
//! replaces the original; on any error the original is left untouched, the
//! error is reported with the file name and the exit status is 1.
//!
//! Usage: `recordmcount [-w] [-n] file.o...`; `-w` prints the sections
//! whose calls are not recorded. Files ending in `/ftrace.o` are skipped,
//! as the C tool does.
//!
//! Build: `rustc --edition 2021 -O scripts/recordmcount/recordmcount.rs
//! -o recordmcount` (std only); `cargo test -p rftrace-recordmcount` runs
//! the tests. See `README.md` next to this file.

// `pub` keeps the kernel's host Rust lints (`unreachable_pub`) quiet when
// this file is built as a kernel host program.
pub mod elf;
pub mod record;

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "usage: recordmcount [-w] [-n] file.o...";

/// Command line.
struct Args {
    warn: bool,
    nop: bool,
    files: Vec<OsString>,
}

enum Parsed {
    Run(Args),
    Help,
}

fn parse_args(args: impl Iterator<Item = OsString>) -> Result<Parsed, String> {
    let mut parsed = Args {
        warn: false,
        nop: false,
        files: Vec::new(),
    };
    let mut options_done = false;
    for arg in args {
        let bytes = arg.as_encoded_bytes();
        if options_done || bytes.len() < 2 || bytes.first() != Some(&b'-') {
            parsed.files.push(arg);
            continue;
        }
        match bytes {
            b"--" => options_done = true,
            b"--help" | b"-h" => return Ok(Parsed::Help),
            _ => {
                for &c in bytes.iter().skip(1) {
                    match c {
                        b'w' => parsed.warn = true,
                        b'n' => parsed.nop = true,
                        _ => {
                            return Err(format!(
                                "unknown option '{}'",
                                String::from_utf8_lossy(bytes)
                            ))
                        }
                    }
                }
            }
        }
    }
    if parsed.files.is_empty() {
        return Err("no object files given".to_string());
    }
    Ok(Parsed::Run(parsed))
}

/// Creates a new, empty temporary file next to `name` in `dir`.
fn create_temp(dir: &Path, name: &OsStr) -> io::Result<(PathBuf, File)> {
    let pid = std::process::id();
    for n in 0..1000u32 {
        let mut tmp_name = OsString::from(".");
        // Keep the original name in it unless that would be too long.
        if name.len() <= 200 {
            tmp_name.push(name);
        }
        tmp_name.push(format!(".rcm{pid}-{n}.tmp"));
        let path = dir.join(tmp_name);
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "no free temporary file name",
    ))
}

/// Replaces the file at `path` with `data`: writes a temporary file in the
/// same directory and renames it over `path` once it is complete.
fn replace_file(path: &Path, data: &[u8], perms: fs::Permissions) -> Result<(), String> {
    let name = path
        .file_name()
        .ok_or_else(|| "cannot name a temporary file next to this path".to_string())?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let (tmp, mut file) =
        create_temp(&dir, name).map_err(|e| format!("cannot create a temporary file: {e}"))?;
    let written = file
        .write_all(data)
        .and_then(|()| file.set_permissions(perms))
        .and_then(|()| file.flush());
    drop(file);
    let result = written.and_then(|()| fs::rename(&tmp, path));
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(format!("cannot write the new object: {e}"));
    }
    Ok(())
}

fn do_file(path: &Path, args: &Args) -> Result<(), String> {
    let meta = fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".to_string());
    }
    let data = fs::read(path).map_err(|e| e.to_string())?;
    let opts = record::Options {
        nop_recorded: args.nop,
    };
    let report = record::process(&data, &opts).map_err(|e| e.to_string())?;
    for w in &report.warnings {
        eprintln!("recordmcount: {}: warning: {w}", path.display());
    }
    if args.warn {
        for s in &report.ignored_sections {
            println!(
                "{}: section {s} calls __fentry__ but is not traced; the calls are not recorded",
                path.display()
            );
        }
    }
    match report.outcome {
        record::Outcome::Unchanged => Ok(()),
        record::Outcome::AlreadyRecorded => {
            eprintln!(
                "recordmcount: {}: warning: __mcount_loc already exists, left unchanged",
                path.display()
            );
            Ok(())
        }
        record::Outcome::Rewritten(new) => replace_file(path, &new, meta.permissions()),
    }
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args_os().skip(1)) {
        Ok(Parsed::Run(args)) => args,
        Ok(Parsed::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("recordmcount: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut failed = 0usize;
    for file in &args.files {
        // kernel/trace/ftrace.o refers to __fentry__ without being traced.
        if file.as_encoded_bytes().ends_with(b"/ftrace.o") {
            continue;
        }
        let path = Path::new(file);
        if let Err(e) = do_file(path, &args) {
            eprintln!("recordmcount: {}: {e}", path.display());
            failed += 1;
        }
    }
    if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
