// SPDX-License-Identifier: GPL-2.0
//! Reads the serial logs the harness keeps and turns them into the test
//! summary of `make test` and the benchmark table of `make bench`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Marker lines the guest prints (scripts/harness/guest/init and
/// tools/testing/selftests/rftrace/run-tests.sh).
pub const DMESG_BEGIN: &str = "=== harness: dmesg begin ===";
pub const DMESG_END: &str = "=== harness: dmesg end ===";
pub const EXIT_PREFIX: &str = "=== harness: exit ";

/// Outcome of one test as the guest reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    /// Anything else: FAIL, UNSUPPORTED, UNRESOLVED, a missing result...
    NotPass(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestResult {
    pub name: String,
    pub outcome: Outcome,
}

/// Strips a printk time stamp ("[   12.345678] ") from a line.
pub fn strip_timestamp(line: &str) -> &str {
    let t = line.trim_start();
    if let Some(rest) = t.strip_prefix('[') {
        if let Some(end) = rest.find("] ") {
            let stamp = &rest[..end];
            if stamp.trim().chars().all(|c| c.is_ascii_digit() || c == '.') {
                return &rest[end + 2..];
            }
        }
    }
    line
}

/// The lines between the dmesg markers, or `None` when the guest never
/// printed them (it did not get to the end of its job).
pub fn dmesg_block(log: &str) -> Option<Vec<&str>> {
    let mut lines = log.lines();
    lines.find(|l| l.trim_end() == DMESG_BEGIN)?;
    let mut out = Vec::new();
    for l in lines {
        if l.trim_end() == DMESG_END {
            return Some(out);
        }
        out.push(l);
    }
    None
}

/// The boot-time selftests of CONFIG_FTRACE_STARTUP_TEST in a dmesg: each
/// "Testing <name>: " opens a test, which ends at the first PASSED or
/// FAILED after it (the verdict is printed with pr_cont, possibly on a
/// later line when other messages came in between).
pub fn boot_selftests(dmesg: &[&str]) -> Vec<TestResult> {
    let mut out: Vec<TestResult> = Vec::new();
    let mut open: Option<String> = None;
    for raw in dmesg {
        let mut line = strip_timestamp(raw);
        loop {
            if let Some(pos) = line.find("Testing ") {
                let after = &line[pos + "Testing ".len()..];
                if let Some(colon) = after.find(": ") {
                    let before = &line[..pos];
                    if let Some(name) = open.take() {
                        out.push(verdict(name, before));
                    }
                    // An architecture without full-regs trampolines
                    // runs "ftrace regs" as "ftrace regs(no arch
                    // support)": the same test, which checks that the
                    // core refuses what it cannot give.
                    let name = after[..colon].trim();
                    open = Some(name.trim_end_matches("(no arch support)").to_string());
                    line = &after[colon + 2..];
                    continue;
                }
            }
            if let Some(name) = open.take() {
                if has_verdict(line) {
                    out.push(verdict(name, line));
                } else {
                    open = Some(name);
                }
            }
            break;
        }
    }
    if let Some(name) = open {
        out.push(TestResult {
            name: format!("boot: {name}"),
            outcome: Outcome::NotPass("no verdict".into()),
        });
    }
    out
}

/// Words that end a boot selftest: the tracer selftests print PASSED or
/// FAILED, the event filter and kprobe selftests OK or NG.
const PASS_WORDS: &[&str] = &["PASSED", "OK"];
const FAIL_WORDS: &[&str] = &["FAILED", "FAILED!", "NG", "NG:"];

fn has_verdict(text: &str) -> bool {
    text.split_whitespace()
        .any(|w| PASS_WORDS.contains(&w) || FAIL_WORDS.contains(&w))
}

fn verdict(name: String, text: &str) -> TestResult {
    let first = text
        .split_whitespace()
        .find(|w| PASS_WORDS.contains(w) || FAIL_WORDS.contains(w));
    let outcome = match first {
        Some(w) if PASS_WORDS.contains(&w) => Outcome::Pass,
        Some(_) => Outcome::NotPass("FAILED".into()),
        None => Outcome::NotPass("no verdict".into()),
    };
    TestResult {
        name: format!("boot: {name}"),
        outcome,
    }
}

/// "RESULT <status> <name> [(detail)]" lines of the guest's test runner.
pub fn result_lines(log: &str) -> Vec<TestResult> {
    let mut out = Vec::new();
    for l in log.lines() {
        let Some(rest) = l.trim_end().strip_prefix("RESULT ") else {
            continue;
        };
        let mut it = rest.splitn(2, ' ');
        let (Some(status), Some(name)) = (it.next(), it.next()) else {
            continue;
        };
        let (name, detail) = match name.find(" (") {
            Some(p) => (&name[..p], Some(name[p + 2..].trim_end_matches(')'))),
            None => (name, None),
        };
        let outcome = if status == "PASS" {
            Outcome::Pass
        } else {
            Outcome::NotPass(match detail {
                Some(d) => format!("{status}: {d}"),
                None => status.to_string(),
            })
        };
        out.push(TestResult {
            name: name.to_string(),
            outcome,
        });
    }
    out
}

/// The runner's quote of a failed test's output: the "    | " lines
/// right before its non-PASS RESULT line, by test name.
pub fn failure_output(log: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut quoted: Vec<String> = Vec::new();
    for l in log.lines() {
        let l = l.trim_end();
        if l.starts_with("    | ") {
            quoted.push(l.to_string());
            continue;
        }
        if let Some(r) = result_lines(l).into_iter().next() {
            if r.outcome != Outcome::Pass && !quoted.is_empty() {
                out.push((r.name, std::mem::take(&mut quoted)));
            }
        }
        quoted.clear();
    }
    out
}

/// Signs of a kernel in trouble. Any of them fails a test run.
const KERNEL_TROUBLE: &[&str] = &[
    "WARNING:",
    "BUG:",
    "Oops",
    "Kernel panic",
    "general protection fault",
    "possible circular locking dependency",
    "possible recursive locking",
    "inconsistent lock state",
    "INFO: possible",
    "Looking for class",
    "DEBUG_LOCKS_WARN_ON",
    "trying to register non-static key",
    "suspicious RCU usage",
    "lock held when returning to user space",
    "blocked for more than",
    "KFENCE:",
    "KASAN:",
    "UBSAN:",
    "detected stalls on CPUs",
    "self-detected stall",
    "ftrace bug",
    "ftrace failed to modify",
    "ftrace faulted",
    "Unable to handle kernel",
];

/// The guest time the tests took: the total of the `TIME <test> <s>`
/// lines and the `most` slowest tests, slowest first.
pub fn test_times(log: &str, most: usize) -> (u64, Vec<(String, u64)>) {
    let mut all: Vec<(String, u64)> = log
        .lines()
        .filter_map(|l| {
            let mut w = l.trim_end().strip_prefix("TIME ")?.split(' ');
            let name = w.next()?.to_string();
            let secs = w.next()?.parse().ok()?;
            Some((name, secs))
        })
        .collect();
    let total = all.iter().map(|(_, s)| s).sum();
    all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    all.truncate(most);
    (total, all)
}

/// Distinct kernel-trouble lines of a log, time stamps stripped. Lines of
/// test output the guest quoted ("    | ...") are not the kernel's.
pub fn kernel_trouble(log: &str) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    let lines: Vec<&str> = log.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        if l.starts_with("    | ") || l.starts_with("RESULT ") || l.starts_with("TIME ") {
            continue;
        }
        let s = strip_timestamp(l).trim();
        if !KERNEL_TROUBLE.iter().any(|p| s.contains(p)) {
            continue;
        }
        // An oops names where it happened a few lines on ("RIP: 0010:f+o"):
        // the line says it too, so that a known entry can name the place.
        let mut t = s.to_string();
        if s.starts_with("Oops") || s.starts_with("BUG:") {
            let rip = lines[i + 1..]
                .iter()
                .take(12)
                .find_map(|n| strip_timestamp(n).trim().strip_prefix("RIP: 0010:"));
            if let Some(at) = rip {
                t = format!("{t} at {at}");
            }
        }
        if !seen.iter().any(|x| *x == t) {
            seen.push(t);
        }
    }
    seen
}

/// The job's exit status the guest printed last, if any.
pub fn exit_status(log: &str) -> Option<i32> {
    log.lines()
        .filter_map(|l| l.trim_end().strip_prefix(EXIT_PREFIX))
        .filter_map(|r| r.strip_suffix(" ===")?.parse().ok())
        .next_back()
}

/// "<name>\t<reason>" lines, '#' comments and blank lines ignored.
pub fn parse_name_list(text: &str) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for l in text.lines() {
        let l = l.trim_end();
        if l.trim_start().starts_with('#') || l.trim().is_empty() {
            continue;
        }
        let (name, reason) = match l.split_once('\t') {
            Some((n, r)) => (n.trim(), r.trim()),
            None => (l.trim(), ""),
        };
        m.insert(name.to_string(), reason.to_string());
    }
    m
}

/// Seconds per test from a "<name>\t<seconds>" list (see parse_name_list).
pub fn parse_times(text: &str) -> BTreeMap<String, u64> {
    parse_name_list(text)
        .into_iter()
        .filter_map(|(n, s)| Some((n, s.parse().ok()?)))
        .collect()
}

/// Shares a run's tests out between `guests` guests booted at once, so
/// that each takes about as long: longest first, each test goes to the
/// guest with the least work so far. Tests are named as the guest reports
/// them ("rftrace/x.sh", "ftracetest/dir/x.tc"); `times` holds their guest
/// seconds from an earlier run, and a test it lacks counts `unknown`
/// seconds. Returns each guest's tests in name order.
pub fn share_out(
    tests: &[String],
    times: &BTreeMap<String, u64>,
    guests: usize,
    unknown: u64,
) -> Vec<Vec<String>> {
    let guests = guests.max(1);
    let mut order: Vec<(u64, &String)> = tests
        .iter()
        .map(|t| (times.get(t).copied().unwrap_or(unknown), t))
        .collect();
    order.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    let mut load = vec![0u64; guests];
    let mut out = vec![Vec::new(); guests];
    for (secs, test) in order {
        let g = (0..guests).min_by_key(|&g| (load[g], g)).unwrap_or(0);
        load[g] += secs;
        out[g].push(test.clone());
    }
    for list in &mut out {
        list.sort();
    }
    out
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub lines: Vec<String>,
    /// The quoted output of each unexpected failure ("    | " lines the
    /// runner prints before its RESULT), headed by the test's name.
    pub details: Vec<String>,
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
}

impl Summary {
    pub fn closing_line(&self) -> String {
        let mut s = format!("{} passed, {} failed", self.passed, self.failed);
        if self.skipped > 0 {
            let _ = write!(s, ", {} skipped", self.skipped);
        }
        s
    }
}

/// Inputs of one test run's verdict. A run is one guest or several that
/// shared the tests out between them (`make test` on the production
/// configuration boots two at once); every guest must finish its job.
pub struct TestRun<'a> {
    /// What each guest's job printed.
    pub logs: &'a [&'a str],
    /// The kernel consoles, when they went to logs of their own.
    pub consoles: &'a [&'a str],
    /// Boot selftests that must report (name without the "boot: " prefix).
    pub expected_boot: &'a BTreeMap<String, String>,
    /// Tests the guest runners together must report a RESULT for.
    pub expected_results: &'a [String],
    /// Tests that do not pass on the C core in this configuration, with why
    /// ("kernel log: TEXT" for a console line containing TEXT).
    pub known: &'a BTreeMap<String, String>,
}

/// The boot selftests of every guest, one verdict per test: a test that
/// did not pass in any guest does not pass.
fn boot_results(logs: &[&str]) -> Vec<TestResult> {
    let mut results: Vec<TestResult> = Vec::new();
    for (i, log) in logs.iter().enumerate() {
        let Some(d) = dmesg_block(log) else {
            results.push(TestResult {
                name: guest_name("harness: dmesg dump", i, logs.len()),
                outcome: Outcome::NotPass("missing: the guest did not finish its job".into()),
            });
            continue;
        };
        for r in boot_selftests(&d) {
            match results.iter_mut().find(|x| x.name == r.name) {
                Some(x) if x.outcome == Outcome::Pass => x.outcome = r.outcome,
                Some(_) => {}
                None => results.push(r),
            }
        }
    }
    results
}

/// A harness check's name, with the guest's number when there are several.
fn guest_name(what: &str, i: usize, guests: usize) -> String {
    if guests > 1 {
        format!("{what} (guest {i})")
    } else {
        what.to_string()
    }
}

/// Why a non-pass is known, if it is: a test by its name; a kernel log
/// line by an entry "kernel log: TEXT" whose TEXT it contains.
fn known_reason<'k>(
    known: &'k BTreeMap<String, String>,
    name: &str,
    why: &str,
) -> Option<&'k String> {
    if let Some(reason) = known.get(name) {
        return Some(reason);
    }
    if name != "kernel log" {
        return None;
    }
    known.iter().find_map(|(k, reason)| {
        let text = k.strip_prefix("kernel log: ")?;
        (!text.is_empty() && why.contains(text)).then_some(reason)
    })
}

/// Everything a run reported, checked against what it had to report.
pub fn summarize(run: &TestRun<'_>) -> Summary {
    let mut sum = Summary::default();
    let mut results = boot_results(run.logs);
    for name in run.expected_boot.keys() {
        let full = format!("boot: {name}");
        if !results.iter().any(|r| r.name == full) {
            results.push(TestResult {
                name: full,
                outcome: Outcome::NotPass("missing result".into()),
            });
        }
    }
    let reported: Vec<TestResult> = run.logs.iter().flat_map(|l| result_lines(l)).collect();
    for name in run.expected_results {
        if !reported.iter().any(|r| &r.name == name) {
            results.push(TestResult {
                name: name.clone(),
                outcome: Outcome::NotPass("missing result".into()),
            });
        }
    }
    results.extend(reported);
    for (i, log) in run.logs.iter().enumerate() {
        if exit_status(log).is_none() {
            results.push(TestResult {
                name: guest_name("harness: guest exit", i, run.logs.len()),
                outcome: Outcome::NotPass("the guest did not power off cleanly".into()),
            });
        }
    }
    let quotes: Vec<(String, Vec<String>)> =
        run.logs.iter().flat_map(|l| failure_output(l)).collect();
    let mut trouble: Vec<String> = Vec::new();
    for t in run
        .consoles
        .iter()
        .chain(run.logs)
        .flat_map(|l| kernel_trouble(l))
    {
        if !trouble.contains(&t) {
            trouble.push(t);
        }
    }
    for t in trouble {
        results.push(TestResult {
            name: "kernel log".into(),
            outcome: Outcome::NotPass(t),
        });
    }
    for r in results {
        match r.outcome {
            Outcome::Pass => {
                sum.passed += 1;
                sum.lines.push(format!("PASS  {}", r.name));
            }
            Outcome::NotPass(why) => match known_reason(run.known, &r.name, &why) {
                Some(reason) => {
                    sum.skipped += 1;
                    sum.lines
                        .push(format!("SKIP  {} [{why}]: {reason}", r.name));
                }
                None => {
                    sum.failed += 1;
                    sum.lines.push(format!("FAIL  {} [{why}]", r.name));
                    for (name, quote) in quotes.iter().filter(|(n, _)| *n == r.name) {
                        sum.details.push(format!("--- {name}:"));
                        sum.details.extend(quote.iter().cloned());
                    }
                }
            },
        }
    }
    sum
}

/// Benchmark samples of one core: case -> (unit, values) in first-seen
/// order.
pub type Samples = Vec<(String, String, Vec<f64>)>;

/// What a case's unit ends with when its statistic is the mean.
pub const MEAN_MARK: &str = " (mean)";

/// "SAMPLE <case> <value> <unit>" lines of the guest's bench.sh; a case
/// that a "MEAN <case>" line names is summed up by its mean, which its
/// unit says ([`MEAN_MARK`]).
pub fn bench_samples(log: &str) -> Samples {
    let mut out: Samples = Vec::new();
    let means: Vec<&str> = log
        .lines()
        .filter_map(|l| l.trim_end().strip_prefix("MEAN "))
        .map(str::trim)
        .collect();
    for l in log.lines() {
        let Some(rest) = l.trim_end().strip_prefix("SAMPLE ") else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        let [case, value, unit] = f[..] else {
            continue;
        };
        let Ok(v) = value.parse::<f64>() else {
            continue;
        };
        let unit = if means.contains(&case) {
            format!("{unit}{MEAN_MARK}")
        } else {
            unit.to_string()
        };
        match out.iter_mut().find(|(c, _, _)| c == case) {
            Some((_, _, vs)) => vs.push(v),
            None => out.push((case.to_string(), unit, vec![v])),
        }
    }
    out
}

/// Mean of a non-empty sample.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Median of a non-empty sample; the mean of the middle two for an even
/// count.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The comparison table of `make bench` and the rows of results.tsv.
pub fn bench_table(c: &Samples, rust: Option<&Samples>) -> (String, String) {
    let mut table = String::new();
    let mut tsv = String::from("case\tcore\tvalue\tunit\n");
    let _ = writeln!(
        table,
        "{:<38} {:>12} {:>12} {:>8}  unit (median, or mean where marked)",
        "case", "C", "Rust", "Rust/C"
    );
    let mut cases: Vec<(&str, &str)> = c.iter().map(|(k, u, _)| (k.as_str(), u.as_str())).collect();
    if let Some(r) = rust {
        for (k, u, _) in r {
            if !cases.iter().any(|(c, _)| c == k) {
                cases.push((k, u));
            }
        }
    }
    let med = |s: &Samples, case: &str| {
        s.iter().find(|(k, _, _)| k == case).and_then(|(_, u, v)| {
            if u.ends_with(MEAN_MARK) {
                mean(v)
            } else {
                median(v)
            }
        })
    };
    for (case, unit) in cases {
        let cm = med(c, case);
        let rm = rust.and_then(|r| med(r, case));
        let fmt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
        let rcol = if rust.is_some() {
            fmt(rm)
        } else {
            "not built".to_string()
        };
        let ratio = match (cm, rm) {
            (Some(c), Some(r)) if c > 0.0 => format!("{:.2}", r / c),
            _ => "-".to_string(),
        };
        let _ = writeln!(
            table,
            "{case:<38} {:>12} {rcol:>12} {ratio:>8}  {unit}",
            fmt(cm)
        );
        if let Some(v) = cm {
            let _ = writeln!(tsv, "{case}\tc\t{v}\t{unit}");
        }
        if let Some(v) = rm {
            let _ = writeln!(tsv, "{case}\trust\t{v}\t{unit}");
        }
    }
    (table, tsv)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DMESG: &str = "\
[    1.000000] Testing tracer function: PASSED
[    2.000000] Testing dynamic ftrace: PASSED
[    3.000000] Testing dynamic ftrace ops #1: 
[    3.100000] (1 0 1 0 0) 
[    3.200000] (1 1 2 0 0) PASSED
[    4.000000] Testing ftrace recursion: PASSED
[    4.500000] Testing ftrace regs: *callback never called* FAILED!
[    5.000000] Testing tracer function_graph: PASSED
[    6.000000] Testing fgraph storage of 1 byte: PASSED
[    7.000000] Testing tracer nop: ";

    #[test]
    fn boot_selftests_are_parsed_across_continuations() {
        let lines: Vec<&str> = DMESG.lines().collect();
        let r = boot_selftests(&lines);
        let names: Vec<&str> = r.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "boot: tracer function",
                "boot: dynamic ftrace",
                "boot: dynamic ftrace ops #1",
                "boot: ftrace recursion",
                "boot: ftrace regs",
                "boot: tracer function_graph",
                "boot: fgraph storage of 1 byte",
                "boot: tracer nop",
            ]
        );
        assert_eq!(r[2].outcome, Outcome::Pass);
        assert_eq!(r[4].outcome, Outcome::NotPass("FAILED".into()));
        assert_eq!(r[7].outcome, Outcome::NotPass("no verdict".into()));
    }

    #[test]
    fn regs_test_without_arch_support_is_the_regs_test() {
        let r = boot_selftests(&["[ 7.7] Testing ftrace regs(no arch support): PASSED"]);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].name, "boot: ftrace regs");
        assert_eq!(r[0].outcome, Outcome::Pass);
    }

    #[test]
    fn two_tests_on_one_line() {
        let r = boot_selftests(&["Testing a: PASSED Testing b: FAILED!"]);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].outcome, Outcome::Pass);
        assert_eq!(r[1].outcome, Outcome::NotPass("FAILED".into()));
    }

    #[test]
    fn ok_and_ng_verdicts_and_prefixes() {
        let r = boot_selftests(&[
            "[ 1.0] Testing ftrace filter: OK",
            "[ 2.0] trace_kprobe: Testing kprobe tracing: ",
            "[ 2.1] LOOKUP of something",
            "[ 2.5] OK",
            "[ 3.0] Testing other: NG: Some tests are failed.",
        ]);
        let v: Vec<(&str, bool)> = r
            .iter()
            .map(|t| (t.name.as_str(), t.outcome == Outcome::Pass))
            .collect();
        assert_eq!(
            v,
            [
                ("boot: ftrace filter", true),
                ("boot: kprobe tracing", true),
                ("boot: other", false)
            ]
        );
    }

    #[test]
    fn timestamps() {
        assert_eq!(strip_timestamp("[    1.234567] hello"), "hello");
        assert_eq!(strip_timestamp("[x] hello"), "[x] hello");
        assert_eq!(strip_timestamp("plain"), "plain");
    }

    /// The summary of one guest's log, with no console log of its own.
    fn summary_of(
        log: &str,
        boot: &BTreeMap<String, String>,
        expected: &[String],
        known: &BTreeMap<String, String>,
    ) -> Summary {
        summarize(&TestRun {
            logs: &[log],
            consoles: &[],
            expected_boot: boot,
            expected_results: expected,
            known,
        })
    }

    fn log_with(results: &str, dmesg: &str) -> String {
        format!("boot\n{results}\n{DMESG_BEGIN}\n{dmesg}\n{DMESG_END}\n=== harness: exit 0 ===\n")
    }

    #[test]
    fn times_total_and_slowest() {
        let log = "RESULT PASS rftrace/a.sh\nTIME rftrace/a.sh 3\nTIME ftracetest/x.tc 40\n\
                   [ 2.0] TIME is not ours\nTIME ftracetest/y.tc 12\nTIME bad\n";
        let (total, top) = test_times(log, 2);
        assert_eq!(total, 55);
        assert_eq!(
            top,
            vec![
                ("ftracetest/x.tc".to_string(), 40),
                ("ftracetest/y.tc".to_string(), 12)
            ]
        );
    }

    #[test]
    fn summary_counts_and_known_failures() {
        let log = log_with(
            "RESULT PASS rftrace/a.sh\nRESULT FAIL ftracetest/x.tc (exit 1)\nRESULT UNSUPPORTED ftracetest/y.tc",
            "[ 1.0] Testing tracer function: PASSED",
        );
        let mut known = BTreeMap::new();
        known.insert("ftracetest/y.tc".to_string(), "needs uprobes".to_string());
        let boot = parse_name_list("tracer function\n");
        let expected = vec!["rftrace/a.sh".to_string(), "ftracetest/z.tc".to_string()];
        let s = summary_of(&log, &boot, &expected, &known);
        assert_eq!((s.passed, s.failed, s.skipped), (2, 2, 1), "{:#?}", s.lines);
        assert!(s
            .lines
            .iter()
            .any(|l| l.starts_with("FAIL  ftracetest/z.tc [missing result]")));
        assert!(s
            .lines
            .iter()
            .any(|l| l.starts_with("FAIL  ftracetest/x.tc [FAIL: exit 1]")));
        assert_eq!(s.closing_line(), "2 passed, 2 failed, 1 skipped");
    }

    #[test]
    fn known_kernel_log_lines() {
        let log = log_with(
            "RESULT PASS rftrace/a.sh",
            "[ 9.0] WARNING: stack going in the wrong direction? at return_to_handler+0x46/0x50\n\
             [ 9.5] WARNING: CPU: 0 PID: 1 at kernel/trace/x.c:1 f+0x1/0x2",
        );
        let mut known = BTreeMap::new();
        known.insert(
            "kernel log: stack going in the wrong direction? at return_to_handler".to_string(),
            "upstream bug".to_string(),
        );
        known.insert("kernel log: ".to_string(), "matches nothing".to_string());
        let s = summary_of(&log, &BTreeMap::new(), &[], &known);
        assert_eq!((s.passed, s.failed, s.skipped), (1, 1, 1), "{:#?}", s.lines);
        assert!(s
            .lines
            .iter()
            .any(|l| l.starts_with("SKIP  kernel log [WARNING: stack")
                && l.ends_with(": upstream bug")));
        assert!(s
            .lines
            .iter()
            .any(|l| l.starts_with("FAIL  kernel log [WARNING: CPU: 0")));
    }

    #[test]
    fn unexpected_failures_quote_their_output() {
        let log = log_with(
            "    | old\nRESULT PASS rftrace/a.sh\n    | why b failed\n    | more\nRESULT FAIL rftrace/b.sh (exit 1)\n    | why c failed\nRESULT UNSUPPORTED ftracetest/c.tc",
            "",
        );
        let mut known = BTreeMap::new();
        known.insert("ftracetest/c.tc".to_string(), "needs x".to_string());
        let s = summary_of(&log, &BTreeMap::new(), &[], &known);
        assert_eq!(
            s.details,
            ["--- rftrace/b.sh:", "    | why b failed", "    | more"]
        );
    }

    #[test]
    fn missing_boot_test_and_warning_fail() {
        let log = log_with(
            "[ 9.0] WARNING: CPU: 0 PID: 1 at kernel/trace/x.c:1 f+0x1/0x2\n    | WARNING: quoted",
            "[ 1.0] Testing tracer function: PASSED\n[ 9.0] WARNING: CPU: 0 PID: 1 at kernel/trace/x.c:1 f+0x1/0x2",
        );
        let boot = parse_name_list("tracer function\ntracer nop\n");
        let s = summary_of(&log, &boot, &[], &BTreeMap::new());
        assert_eq!((s.passed, s.failed), (1, 2), "{:#?}", s.lines);
        assert!(s
            .lines
            .iter()
            .any(|l| l.contains("boot: tracer nop [missing result]")));
        assert!(s
            .lines
            .iter()
            .any(|l| l.contains("kernel log [WARNING: CPU: 0")));
    }

    #[test]
    fn unfinished_guest_fails() {
        let s = summarize(&TestRun {
            logs: &["booting...\nRESULT PASS a\n"],
            consoles: &["[ 1.0] Oops: 0000 [#1] PREEMPT SMP\n"],
            expected_boot: &BTreeMap::new(),
            expected_results: &[],
            known: &BTreeMap::new(),
        });
        assert_eq!((s.passed, s.failed), (1, 3), "{:#?}", s.lines);
        assert!(s.lines.iter().any(|l| l.contains("kernel log [Oops: 0000")));
    }

    #[test]
    fn oops_names_its_place() {
        let t = kernel_trouble(
            "[ 1.0] Oops: general protection fault, probably for non-canonical address 0x1: 0000 [#1]\n\
             [ 1.0] CPU: 1 UID: 0 PID: 5 Comm: modprobe\n\
             [ 1.0] RIP: 0010:kprobes_module_callback+0xce/0x1df\n",
        );
        assert_eq!(t.len(), 1, "{t:?}");
        assert!(t[0].ends_with(" at kprobes_module_callback+0xce/0x1df"), "{t:?}");
    }

    #[test]
    fn exit_status_is_the_last() {
        assert_eq!(
            exit_status("=== harness: exit 3 ===\n=== harness: exit 0 ===\n"),
            Some(0)
        );
        assert_eq!(exit_status("nothing"), None);
    }

    #[test]
    fn means_where_the_guest_asks() {
        let log = "MEAN enable-x\nSAMPLE enable-x 16 us\nSAMPLE enable-x 24 us\nSAMPLE enable-x 24 us\nSAMPLE other 1 us\nSAMPLE other 5 us\nSAMPLE other 6 us\n";
        let s = bench_samples(log);
        assert_eq!(s[0].1, "us (mean)");
        assert_eq!(s[1].1, "us");
        let (table, _) = bench_table(&s, Some(&s));
        let row = table.lines().find(|l| l.starts_with("enable-x")).unwrap();
        assert!(row.contains("21.3"), "{row}");
        let row = table.lines().find(|l| l.starts_with("other")).unwrap();
        assert!(row.contains("5.0"), "{row}");
        assert_eq!(mean(&[]), None);
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }

    #[test]
    fn bench_table_and_tsv() {
        let c = bench_samples("SAMPLE one-ops 45 ns/call\nSAMPLE one-ops 47 ns/call\nSAMPLE one-ops 44 ns/call\nSAMPLE sites 15556 sites\nnoise\n");
        let r = bench_samples("SAMPLE one-ops 36 ns/call\nSAMPLE new-case 10 us\n");
        let (table, tsv) = bench_table(&c, Some(&r));
        assert!(table.contains("one-ops"), "{table}");
        assert!(
            table
                .lines()
                .any(|l| l.starts_with("one-ops") && l.contains(" 45.0 ") && l.contains("0.80")),
            "{table}"
        );
        assert!(tsv.contains("one-ops\tc\t45\tns/call\n"));
        assert!(tsv.contains("one-ops\trust\t36\tns/call\n"));
        assert!(tsv.contains("new-case\trust\t10\tus\n"));
        let (table, _) = bench_table(&c, None);
        assert!(table.contains("not built"));
    }

    #[test]
    fn sharing_out_balances_and_keeps_every_test_once() {
        let tests: Vec<String> = [
            "rftrace/a.sh",
            "rftrace/b.sh",
            "ftracetest/d/x.tc",
            "ftracetest/d/y.tc",
            "ftracetest/e/w.tc",
            "ftracetest/e/v.tc",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let times = parse_times(
            "rftrace/a.sh\t50\nrftrace/b.sh\t10\nftracetest/d/x.tc\t40\nftracetest/d/y.tc\t30\n# c\nftracetest/e/w.tc\tfast\n",
        );
        // w.tc's time does not parse and v.tc has none: 5 s each. a (50)
        // to guest 0, x (40) to 1, y (30) to 1, b (10) to 0, v and w to 0.
        let s = share_out(&tests, &times, 2, 5);
        assert_eq!(s.len(), 2);
        assert_eq!(
            s[0],
            [
                "ftracetest/e/v.tc",
                "ftracetest/e/w.tc",
                "rftrace/a.sh",
                "rftrace/b.sh"
            ]
        );
        assert_eq!(s[1], ["ftracetest/d/x.tc", "ftracetest/d/y.tc"]);
        let one = share_out(&tests, &times, 1, 5);
        assert_eq!(one[0].len(), tests.len());
        assert_eq!(share_out(&tests, &times, 0, 5).len(), 1);
    }
}
