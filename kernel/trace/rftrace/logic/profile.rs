// SPDX-License-Identifier: GPL-2.0
//! The text of the function profiler's `trace_stat/function<cpu>` files,
//! as the C core prints it: a header, then per function its name, hits,
//! and (with the function graph) total, average and variance of its time.

/// A line being built in a fixed buffer; what does not fit is dropped.
pub struct Line {
    buf: [u8; 160],
    len: usize,
}

impl Default for Line {
    fn default() -> Self {
        Self::new()
    }
}

impl Line {
    pub const fn new() -> Self {
        Line {
            buf: [0; 160],
            len: 0,
        }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    pub fn push(&mut self, b: &[u8]) {
        let room = self.buf.len() - self.len;
        let n = b.len().min(room);
        self.buf[self.len..self.len + n].copy_from_slice(&b[..n]);
        self.len += n;
    }

    fn pad(&mut self, n: usize) {
        for _ in 0..n {
            self.push(b" ");
        }
    }

    /// Appends `v` in decimal; returns how many digits.
    pub fn num(&mut self, v: u64) -> usize {
        let mut d = [0u8; 20];
        let mut i = d.len();
        let mut v = v;
        loop {
            i -= 1;
            d[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.push(&d[i..]);
        d.len() - i
    }
}

/// The header lines; `graph` when times are profiled too.
pub fn header(graph: bool) -> &'static [u8] {
    if graph {
        b"  Function                               Hit    Time            Avg             s^2\n  --------                               ---    ----            ---             ---\n"
    } else {
        b"  Function                               Hit\n  --------                               ---\n"
    }
}

/// A duration in ns as microseconds with up to 7 significant digits,
/// " us ", and padding to a column of 8 (`trace_print_graph_duration()`).
pub fn duration(l: &mut Line, ns: u64) {
    let usecs = ns / 1000;
    let rem = ns % 1000;
    let mut len = l.num(usecs);
    if len < 7 {
        // Three digits of ns, fewer when the microseconds are long.
        let keep = (7 - len).min(4).min(3);
        let digits = [
            b'0' + (rem / 100) as u8,
            b'0' + (rem / 10 % 10) as u8,
            b'0' + (rem % 10) as u8,
        ];
        l.push(b".");
        l.push(&digits[..keep]);
        len += keep + 1;
    }
    l.push(b" us ");
    l.pad(8usize.saturating_sub(len));
}

/// The sample variance of `n` times with sum `t` and sum of squares `t2`,
/// in us^2 times 1000 (the duration printer divides by 1000 again).
pub fn variance(n: u64, t: u64, t2: u64) -> u64 {
    let denom = n.wrapping_mul(n.wrapping_sub(1)).wrapping_mul(1000);
    if denom == 0 {
        return 0;
    }
    n.wrapping_mul(t2).wrapping_sub(t.wrapping_mul(t)) / denom
}

/// One function's line, without the newline: `name` padded or cut to 30
/// columns, the hit count right-aligned in 10, then the times if `graph`.
pub fn row(name: &[u8], hits: u64, time: u64, time2: u64, graph: bool) -> Line {
    let mut l = Line::new();
    l.push(b"  ");
    let n = &name[..name.len().min(30)];
    l.push(n);
    l.pad(30 - n.len());
    l.push(b"  ");
    let mut d = Line::new();
    let w = d.num(hits);
    l.pad(10usize.saturating_sub(w));
    l.push(d.bytes());
    if graph {
        let avg = time.checked_div(hits).unwrap_or(0);
        l.push(b"    ");
        duration(&mut l, time);
        l.push(b"    ");
        duration(&mut l, avg);
        l.push(b"    ");
        duration(&mut l, variance(hits, time, time2));
    }
    l
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn dur(ns: u64) -> std::string::String {
        let mut l = Line::new();
        duration(&mut l, ns);
        std::string::String::from_utf8(l.bytes().to_vec()).unwrap()
    }

    #[test]
    fn durations_as_the_c_printer() {
        assert_eq!(dur(0), "0.000 us    ");
        assert_eq!(dur(1234), "1.234 us    ");
        assert_eq!(dur(12_345_678), "12345.67 us ");
        assert_eq!(dur(123_456_789), "123456.7 us ");
        assert_eq!(dur(1_234_567_890), "1234567 us  ");
        assert_eq!(dur(999), "0.999 us    ");
    }

    #[test]
    fn rows() {
        let r = row(b"schedule", 42, 0, 0, false);
        assert_eq!(
            r.bytes(),
            std::format!("  {:<30}  {:>10}", "schedule", 42).as_bytes()
        );
        let long = [b'x'; 40];
        let r = row(&long, 1, 0, 0, false);
        assert_eq!(r.bytes().len(), 2 + 30 + 2 + 10);
        let r = row(b"f", 2, 3000, 5_000_000, true);
        let want = std::format!(
            "  {:<30}  {:>10}    3.000 us        1.500 us        0.500 us    ",
            "f",
            2
        );
        assert_eq!(r.bytes(), want.as_bytes());
    }

    #[test]
    fn variance_of_two() {
        // Times 1000 and 2000 ns: (2*5e6 - 9e6) / (2*1*1000) = 500.
        assert_eq!(variance(2, 3000, 5_000_000), 500);
        assert_eq!(variance(1, 10, 100), 0);
        assert_eq!(variance(0, 0, 0), 0);
    }

    proptest! {
        #[test]
        fn duration_column(ns in any::<u64>()) {
            let s = dur(ns);
            // The column is at least 12 wide and ends with " us " and padding.
            prop_assert!(s.len() >= 12);
            prop_assert!(s.contains(" us "));
            let usecs = std::format!("{}", ns / 1000);
            prop_assert!(s.starts_with(&usecs));
        }
    }
}
