//! fio's job-file syntax: sections, `key=value` lines, comments,
//! `${VAR}` and keyword substitution (fio's parse.c and init.c).

use super::{Keywords, ParseError};
// ---------------------------------------------------------------------------
// ini splitting

#[derive(Clone, Debug)]
pub(super) struct Entry {
    pub(super) key: String,
    pub(super) val: Option<String>,
    pub(super) line: usize,
}

#[derive(Clone, Debug)]
pub(super) struct Section {
    pub(super) name: String,
    pub(super) line: usize,
    pub(super) entries: Vec<Entry>,
}

pub(super) fn perr(file: &str, line: usize, option: &str, msg: impl Into<String>) -> ParseError {
    ParseError {
        file: file.to_string(),
        line,
        option: option.to_string(),
        msg: msg.into(),
    }
}

/// Split ini text into sections. Like fio, everything from a ';' or '#' to
/// the end of the line is a comment.
pub(super) fn split_ini(text: &str, file: &str, kw: &Keywords) -> Result<Vec<Section>, ParseError> {
    let mut out: Vec<Section> = Vec::new();
    for (idx, raw) in text.lines().enumerate() {
        let line_no = idx + 1;
        let mut l = raw;
        if let Some(p) = l.find([';', '#']) {
            l = &l[..p];
        }
        let l = l.trim();
        if l.is_empty() {
            continue;
        }
        if let Some(rest) = l.strip_prefix('[') {
            let Some(name) = rest.strip_suffix(']') else {
                return Err(perr(
                    file,
                    line_no,
                    l,
                    "malformed section header (want [name])",
                ));
            };
            let name = name.trim();
            if name.is_empty() || name.contains(['[', ']']) {
                return Err(perr(
                    file,
                    line_no,
                    l,
                    "malformed section header (want [name])",
                ));
            }
            out.push(Section {
                name: name.to_string(),
                line: line_no,
                entries: Vec::new(),
            });
            continue;
        }
        let (key, val) = match l.split_once('=') {
            Some((k, v)) => (k.trim().to_string(), Some(v.trim().to_string())),
            None => (l.to_string(), None),
        };
        if key.is_empty() {
            return Err(perr(file, line_no, l, "option without a name"));
        }
        if key == "include" || key.starts_with("include ") {
            return Err(perr(
                file,
                line_no,
                "include",
                "include files are not supported",
            ));
        }
        let val = match val {
            Some(v) => Some(
                expand_env(&v)
                    .and_then(|v| super::jobctl::keyword_replace(&v, kw))
                    .map_err(|m| perr(file, line_no, &key, m))?,
            ),
            None => None,
        };
        match out.last_mut() {
            Some(s) => s.entries.push(Entry {
                key,
                val,
                line: line_no,
            }),
            None => {
                return Err(perr(
                    file,
                    line_no,
                    &key,
                    "option outside of any [job] section",
                ));
            }
        }
    }
    Ok(out)
}

/// fio's `${VAR}` expansion in job files (fio_option_dup_subs): an unset
/// variable expands to nothing, as in fio.
fn expand_env(v: &str) -> Result<String, String> {
    expand_vars(v, &|var| Ok(std::env::var(var).unwrap_or_default()))
}

/// `${VAR}` substitution with `lookup` deciding each variable's value (or
/// refusing it): the parser follows fio, the oracle refuses unset ones.
pub fn expand_vars(
    v: &str,
    lookup: &dyn Fn(&str) -> Result<String, String>,
) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = v;
    while let Some(p) = rest.find("${") {
        out.push_str(&rest[..p]);
        let after = &rest[p + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("unterminated '${{' in '{v}'"));
        };
        out.push_str(&lookup(&after[..end])?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}
