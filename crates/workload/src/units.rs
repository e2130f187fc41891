//! Size and time values as fio and the kernel's tunables spell them, and
//! the one-line form of error messages.

use std::borrow::Cow;

/// An error message as one printable line: control characters echoed from
/// the input (a NUL, a '\r', a newline inside a command-line argument) are
/// written as escapes, so an error never spans or rewrites lines.
pub fn one_line(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Parses a size: a plain number of bytes, or a number with a K, M, G, T or P
/// suffix (optionally followed by "B" or "iB"), all powers of 1024 as fio's
/// default `kb_base=1024` has them.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if digits_end == 0 {
        return Err(format!("bad size '{s}'"));
    }
    let n: u64 = t[..digits_end]
        .parse()
        .map_err(|_| format!("bad size '{s}'"))?;
    let suffix = t[digits_end..].to_ascii_lowercase();
    let shift = match suffix.as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        "p" | "pb" | "pib" => 50,
        _ => {
            return Err(format!(
                "bad size '{s}' (unknown suffix '{}')",
                &t[digits_end..]
            ))
        }
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("size '{s}' overflows"))
}

/// Parses a duration in fio's style; `default_unit_ns` applies to a bare number
/// (seconds for runtime/ramp_time, microseconds for thinktime).
pub fn parse_time_ns(s: &str, default_unit_ns: u64) -> Result<u64, String> {
    let t = s.trim();
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if digits_end == 0 {
        return Err(format!("bad time '{s}'"));
    }
    let n: u64 = t[..digits_end]
        .parse()
        .map_err(|_| format!("bad time '{s}'"))?;
    let unit = match t[digits_end..].to_ascii_lowercase().as_str() {
        "" => default_unit_ns,
        "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ => return Err(format!("bad time '{s}' (unknown unit)")),
    };
    n.checked_mul(unit)
        .ok_or_else(|| format!("time '{s}' overflows"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_escapes_controls_only() {
        assert_eq!(one_line("bad size '4k'"), "bad size '4k'");
        assert!(matches!(one_line("plain é"), Cow::Borrowed(_)));
        assert_eq!(one_line("a\nb\r\0\u{7f}"), "a\\nb\\r\\u{0}\\u{7f}");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("600M"), Ok(600 << 20));
        assert_eq!(parse_size("20G"), Ok(20 << 30));
        assert_eq!(parse_size("123"), Ok(123));
        assert!(parse_size("12Q").unwrap_err().contains("12Q"));
        assert!(parse_size("").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("99999999999999999P").is_err());
    }

    #[test]
    fn times() {
        assert_eq!(parse_time_ns("600", 1_000_000_000), Ok(600_000_000_000));
        assert_eq!(parse_time_ns("30ms", 1_000_000_000), Ok(30_000_000));
        assert_eq!(parse_time_ns("10", 1_000), Ok(10_000));
        assert!(parse_time_ns("5x", 1).is_err());
    }
}
