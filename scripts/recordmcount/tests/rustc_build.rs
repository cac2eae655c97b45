// SPDX-License-Identifier: GPL-2.0
//! The tool builds with a plain `rustc` call (std only, no Cargo), as the
//! kernel builds its Rust host programs, and that build behaves like the
//! Cargo one.

mod common;

use std::process::Command;

use common::*;

#[test]
fn builds_with_plain_rustc() {
    let dir = TempDir::new("rustc");
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("recordmcount.rs");
    let exe = dir.join("recordmcount");
    let out = match Command::new("rustc")
        .args(["--edition", "2021", "-O"])
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            eprintln!("skipped: cannot run rustc: {e}");
            return;
        }
    };
    assert!(
        out.status.success(),
        "rustc failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "rustc warnings:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let src = r#"
int __attribute__((weak)) w(int x) { return x + 1; }
int g(int x) { return w(x) * 2; }
__attribute__((section(".exit.text"))) int e(int x) { return g(x); }
"#;
    let mut f = PG.to_vec();
    f.extend([
        "-O2",
        "-ffunction-sections",
        "-fno-asynchronous-unwind-tables",
    ]);
    let a = gcc(&dir, "a", src, &f);
    let b = dir.join("b.o");
    std::fs::copy(&a, &b).unwrap();
    tool_ok([&a]);
    let run = Command::new(&exe).arg(&b).output().unwrap();
    assert!(run.status.success());
    assert_eq!(read(&a), read(&b));
    assert_eq!(check_consistent(&read(&b), false), 2);
}
