// SPDX-License-Identifier: GPL-2.0
//! harness-report: the host side of `make test` and `make bench`.
//!
//!   harness-report test LOG [--console LOG] --boot FILE --known FILE [--tests-dir DIR] --ftracetest-list FILE
//!   harness-report bench --c LOG [--rust LOG] --tsv OUT

use harness_report::*;
use std::process::ExitCode;

fn read(path: &str) -> Result<String, String> {
    std::fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .map_err(|e| format!("{path}: {e}"))
}

fn opt<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

fn need<'a>(args: &'a [String], name: &str) -> Result<&'a str, String> {
    opt(args, name).ok_or_else(|| format!("missing {name}"))
}

fn test(args: &[String]) -> Result<bool, String> {
    let log = read(args.first().ok_or("missing LOG")?)?;
    let console = match opt(args, "--console") {
        Some(p) => read(p)?,
        None => String::new(),
    };
    let boot = parse_name_list(&read(need(args, "--boot")?)?);
    let known = parse_name_list(&read(need(args, "--known")?)?);
    let mut expected = Vec::new();
    if let Some(dir) = opt(args, "--tests-dir") {
        let mut own: Vec<String> = std::fs::read_dir(dir)
            .map_err(|e| format!("{dir}: {e}"))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".sh"))
            .collect();
        own.sort();
        expected.extend(own.into_iter().map(|n| format!("rftrace/{n}")));
    }
    let list = parse_name_list(&read(need(args, "--ftracetest-list")?)?);
    expected.extend(list.keys().map(|c| format!("ftracetest/{c}")));
    let s = summarize(&TestRun {
        log: &log,
        console: &console,
        expected_boot: &boot,
        expected_results: &expected,
        known: &known,
    });
    for l in &s.lines {
        println!("{l}");
    }
    let (total, slowest) = test_times(&log, 5);
    if total > 0 {
        let top: Vec<String> = slowest.iter().map(|(n, t)| format!("{n} {t} s")).collect();
        println!(
            "guest time of the tests: {total} s; slowest: {}",
            top.join(", ")
        );
    }
    println!("{}", s.closing_line());
    Ok(s.failed == 0)
}

fn bench(args: &[String]) -> Result<bool, String> {
    let c = bench_samples(&read(need(args, "--c")?)?);
    if c.is_empty() {
        return Err("no samples in the C core's log".into());
    }
    let rust = match opt(args, "--rust") {
        Some(p) => Some(bench_samples(&read(p)?)),
        None => None,
    };
    let (table, tsv) = bench_table(&c, rust.as_ref());
    print!("{table}");
    let out = need(args, "--tsv")?;
    std::fs::write(out, tsv).map_err(|e| format!("{out}: {e}"))?;
    Ok(true)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.first().map(String::as_str) {
        Some("test") => test(&args[1..]),
        Some("bench") => bench(&args[1..]),
        _ => Err("usage: harness-report test|bench ...".into()),
    };
    match r {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("harness-report: {e}");
            ExitCode::from(2)
        }
    }
}
