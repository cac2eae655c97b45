// SPDX-License-Identifier: GPL-2.0
//! harness-report: the host side of `make test` and `make bench`.
//!
//!   harness-report test LOG... [--console LOG]... --boot FILE --known FILE [--tests-dir DIR] --ftracetest-list FILE
//!   harness-report split --guests N --ftracetest-list FILE --times FILE [--tests-dir DIR] --out PREFIX
//!     (writes PREFIX-<k>.own and PREFIX-<k>.list for each guest k)
//!   harness-report bench --c LOG [--rust LOG] --tsv OUT

use harness_report::*;
use std::collections::BTreeMap;
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

/// Every value of a repeatable option.
fn all<'a>(args: &'a [String], name: &str) -> Vec<&'a str> {
    args.windows(2)
        .filter(|w| w[0] == name)
        .map(|w| w[1].as_str())
        .collect()
}

/// The own tests (file names) of --tests-dir, if given.
fn own_tests(args: &[String]) -> Result<Vec<String>, String> {
    let Some(dir) = opt(args, "--tests-dir") else {
        return Ok(Vec::new());
    };
    let mut own: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| format!("{dir}: {e}"))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sh"))
        .collect();
    own.sort();
    Ok(own)
}

/// The tests a run has, named as the guest reports them: the own tests
/// of --tests-dir ("rftrace/x.sh"), then the cases of --ftracetest-list
/// ("ftracetest/dir/x.tc").
fn run_tests(args: &[String]) -> Result<Vec<String>, String> {
    let mut tests: Vec<String> = own_tests(args)?
        .into_iter()
        .map(|n| format!("rftrace/{n}"))
        .collect();
    let list = parse_name_list(&read(need(args, "--ftracetest-list")?)?);
    tests.extend(list.into_keys().map(|c| format!("ftracetest/{c}")));
    Ok(tests)
}

fn test(args: &[String]) -> Result<bool, String> {
    let log_paths: Vec<&String> = args.iter().take_while(|a| !a.starts_with("--")).collect();
    if log_paths.is_empty() {
        return Err("missing LOG".into());
    }
    let logs = log_paths
        .iter()
        .map(|p| read(p))
        .collect::<Result<Vec<_>, _>>()?;
    let consoles = all(args, "--console")
        .into_iter()
        .map(read)
        .collect::<Result<Vec<_>, _>>()?;
    let boot = parse_name_list(&read(need(args, "--boot")?)?);
    // --known FILE, repeatable: the failures every core shares, then
    // those of one core (an upstream C bug the Rust core fixed).
    let mut known = BTreeMap::new();
    for path in all(args, "--known") {
        known.extend(parse_name_list(&read(path)?));
    }
    let expected = run_tests(args)?;
    let log_refs: Vec<&str> = logs.iter().map(String::as_str).collect();
    let console_refs: Vec<&str> = consoles.iter().map(String::as_str).collect();
    let s = summarize(&TestRun {
        logs: &log_refs,
        consoles: &console_refs,
        expected_boot: &boot,
        expected_results: &expected,
        known: &known,
    });
    for l in &s.lines {
        println!("{l}");
    }
    if !s.details.is_empty() {
        println!("what the failed tests printed (the end of it):");
        for l in &s.details {
            println!("{l}");
        }
    }
    let (total, slowest) = test_times(&logs.join("\n"), 5);
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

/// Writes PREFIX-<k>.own and PREFIX-<k>.list: the own tests (file names)
/// and the ftracetest cases of guest k.
fn split(args: &[String]) -> Result<bool, String> {
    let guests: usize = need(args, "--guests")?
        .parse()
        .map_err(|_| "--guests wants a number".to_string())?;
    let tests = run_tests(args)?;
    let times = match std::fs::read(need(args, "--times")?) {
        Ok(b) => parse_times(&String::from_utf8_lossy(&b)),
        Err(_) => Default::default(),
    };
    let prefix = need(args, "--out")?;
    for (k, share) in share_out(&tests, &times, guests, 15).iter().enumerate() {
        for (ext, suite) in [("own", "rftrace/"), ("list", "ftracetest/")] {
            let path = format!("{prefix}-{k}.{ext}");
            let text: String = share
                .iter()
                .filter_map(|t| t.strip_prefix(suite))
                .map(|t| format!("{t}\n"))
                .collect();
            std::fs::write(&path, text).map_err(|e| format!("{path}: {e}"))?;
        }
    }
    Ok(true)
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
        Some("split") => split(&args[1..]),
        _ => Err("usage: harness-report test|split|bench ...".into()),
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
