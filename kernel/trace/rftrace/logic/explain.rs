// SPDX-License-Identifier: GPL-2.0
//! Why a filter-file token selected nothing: the reason the core writes
//! to the tracing error_log when a write fails (the errno stays what the
//! C core returns). The kernel asks kallsyms, the call-site table and
//! the section bounds; the reasoning over the answers is here.

use super::glob::{Kind, Pattern};

/// Where a function's text is, as far as the tracer's recording goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Text the build records call sites in.
    Text,
    /// Init text: its call sites went when it was freed after boot.
    Init,
    /// A section whose code is never traced (noinstr, entry code).
    Unrecorded,
}

/// A reason, the index of its message in [`MESSAGES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Why {
    /// No symbol of that name (loaded modules included).
    NoSymbol = 0,
    /// A function without a call site: notrace, or inlined everywhere.
    NoSite,
    /// In a section the tracer does not record.
    Unrecorded,
    /// Init code, freed after boot.
    FreedInit,
    /// A pattern no traceable function matches.
    NoMatch,
    /// A number that is no call site's index.
    NoIndex,
    /// `func:command` with a command nobody registered.
    UnknownCommand,
    /// `func:mod:module` of a loaded module: none of its functions match.
    NoModMatch,
}

/// The messages, NUL-terminated for the tracing core, in [`Why`] order.
pub const MESSAGES: [&[u8]; 8] = [
    b"No such function; one of a module not loaded yet can be cached with 'func:mod:module'\0",
    b"Function has no call site: notrace or noinstr, or inlined into every caller\0",
    b"Function is in a section the tracer does not record (noinstr or entry code)\0",
    b"Function is init code, freed after boot\0",
    b"No traceable function matches the pattern\0",
    b"No call site has this index (see available_filter_functions)\0",
    b"Unknown command\0",
    b"No function of this module matches\0",
];

/// Why the function part `func` of a token (`!` included) selected
/// nothing, and where in `func` the caret goes. `lookup` is kallsyms
/// (the address of a symbol), `has_site` the call-site table, `place`
/// the section bounds. `None`: the name is a function with a call site,
/// so the reason is elsewhere (a command's parameter, a module filter).
pub fn explain(
    func: &[u8],
    lookup: impl FnOnce(&[u8]) -> Option<u64>,
    has_site: impl FnOnce(u64) -> bool,
    place: impl FnOnce(u64) -> Place,
) -> Option<(Why, usize)> {
    let pat = Pattern::parse(func);
    let at = usize::from(pat.negated);
    let why = match pat.kind {
        Kind::Index => Why::NoIndex,
        Kind::Front | Kind::Middle | Kind::End | Kind::Glob => Why::NoMatch,
        Kind::Full => match lookup(pat.search) {
            None => Why::NoSymbol,
            Some(a) if has_site(a) => return None,
            Some(a) => match place(a) {
                Place::Text => Why::NoSite,
                Place::Init => Why::FreedInit,
                Place::Unrecorded => Why::Unrecorded,
            },
        },
    };
    Some((why, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(func: &[u8], sym: Option<u64>, site: bool, place: Place) -> Option<(Why, usize)> {
        explain(func, |_| sym, |_| site, |_| place)
    }

    #[test]
    fn reasons() {
        use Place::*;
        // (token, its symbol, has a call site, where it is) -> reason
        let cases: [(&[u8], Option<u64>, bool, Place, Option<(Why, usize)>); 10] = [
            (b"nope", None, false, Text, Some((Why::NoSymbol, 0))),
            (b"!nope", None, false, Text, Some((Why::NoSymbol, 1))),
            (b"f", Some(1), false, Text, Some((Why::NoSite, 0))),
            (b"f", Some(1), false, Init, Some((Why::FreedInit, 0))),
            (b"f", Some(1), false, Unrecorded, Some((Why::Unrecorded, 0))),
            (b"f", Some(1), true, Text, None),
            (b"zz*", None, false, Text, Some((Why::NoMatch, 0))),
            (b"*zz", None, false, Text, Some((Why::NoMatch, 0))),
            (b"z?z", None, false, Text, Some((Why::NoMatch, 0))),
            (b"99999", None, false, Text, Some((Why::NoIndex, 0))),
        ];
        for (tok, sym, site, place, want) in cases {
            assert_eq!(
                ex(tok, sym, site, place),
                want,
                "{:?}",
                core::str::from_utf8(tok)
            );
        }
    }

    #[test]
    fn names_are_looked_up_without_bang() {
        let mut asked = std::vec::Vec::new();
        let _ = explain(
            b"!ksys_read",
            |n| {
                asked.extend_from_slice(n);
                None
            },
            |_| false,
            |_| Place::Text,
        );
        assert_eq!(asked, b"ksys_read");
    }

    #[test]
    fn messages_are_c_strings() {
        for m in MESSAGES {
            assert_eq!(m.iter().filter(|&&b| b == 0).count(), 1);
            assert_eq!(m.last(), Some(&0));
        }
        assert_eq!(MESSAGES.len(), Why::NoModMatch as usize + 1);
    }
}
