//! Which `/api/` paths may be appended to `API_ORIGIN_URL`: none that a common origin server
//! could read as another path, above all one outside the base path.
//!
//! What origins do with the forms refused here:
//!
//! - A `;` starts a path parameter in the servlet containers (Tomcat, Jetty) and in Spring's
//!   older path matching, which drop it from each segment before they resolve dot-segments:
//!   `/api/..;/..;/admin` is `/admin` to them, while every other hop sees no dot-segment.
//!   Other servers keep the `;` as text, so a refused parameter costs them nothing.
//! - An encoded slash or backslash (`%2F`, `%5C`) is a separator to a server that decodes
//!   before it routes (Tomcat did by default before CVE-2007-0450; many frameworks still do).
//! - An encoded dot (`%2E`) makes a dot-segment once decoded; so does one encoded twice
//!   (`%252E`) at a server behind another that decodes, or an overlong UTF-8 encoding of a dot
//!   (`%C0%AE`, `%E0%80%AE`) at a decoder that accepts it (old IIS, some Java decoders), or
//!   IIS's `%u002E`.
//! - A backslash is a separator on Windows servers (IIS) and in some Java ones.
//!
//! The runtime's URL parser resolves the plain dot-segments (`.`, `..`, `%2e`, `%2E%2E`) before
//! the worker sees the path; what is left of any form above is refused.

use std::borrow::Cow;

use percent_encoding::percent_decode_str;

use super::Problem;

/// How many times a segment is percent-decoded in search of a form refused here: a server
/// behind several others that each decode would decode it as often. A segment still encoded
/// after this many decodings is refused.
pub const MAX_DECODINGS: usize = 4;

/// Checks the path of an `/api/` request (percent-encoded, without its query) before it is
/// appended to `API_ORIGIN_URL`: a segment that holds, at any depth of percent-decoding, a
/// `;` (a path parameter), a slash (encoded), a backslash, IIS's `%u` escape or a control
/// character, that is not UTF-8 once decoded (overlong encodings among them), whose escapes are
/// not `%` and two hexadecimal digits, or that decodes to `.` or `..`, is refused with 400
/// `path-refused`. Nothing else is changed; the query is not checked.
pub fn check_path(path: &str) -> Result<(), Problem> {
    if path.split('/').all(segment_is_plain) {
        return Ok(());
    }
    Err(Problem::new(
        400,
        "path-refused",
        "Path refused",
        "a path segment holds a path parameter (;), an encoded slash or backslash, a dot-segment \
         (., .., also encoded or with a parameter), an overlong or malformed encoding, or a \
         control character, which the API origin could read as another path",
    ))
}

/// True for a segment every decoding of which is plain (see [`check_path`]).
fn segment_is_plain(raw: &str) -> bool {
    if !escapes_are_well_formed(raw) {
        return false;
    }
    let mut text = Cow::Borrowed(raw);
    for _ in 0..=MAX_DECODINGS {
        let refused = text.contains(['\\', ';', '/'])
            || text.contains("%u")
            || text.contains("%U")
            || text.chars().any(char::is_control)
            || text == "."
            || text == "..";
        if refused {
            return false;
        }
        let Ok(decoded) = percent_decode_str(&text).decode_utf8() else {
            return false; // not UTF-8 once decoded: an overlong encoding, or another charset
        };
        if decoded == text {
            return true;
        }
        text = Cow::Owned(decoded.into_owned());
    }
    false
}

/// True when every `%` of `raw` starts an escape of two hexadecimal digits.
fn escapes_are_well_formed(raw: &str) -> bool {
    let bytes = raw.as_bytes();
    bytes.iter().enumerate().all(|(at, byte)| {
        *byte != b'%'
            || bytes
                .get(at + 1..at + 3)
                .is_some_and(|digits| digits.iter().all(u8::is_ascii_hexdigit))
    })
}
