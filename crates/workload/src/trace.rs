//! Cache trace readers for libCacheSim's formats (checked against
//! libCacheSim's traceReader, 2024): the oracleGeneral binary format and csv
//! with a libCacheSim-style column spec. Readers stream: traces are large.
//!
//! oracleGeneral: packed little-endian 24-byte records
//! `{ u32 clock_time; u64 obj_id; u32 obj_size; i64 next_access_vtime; }`.
//! `next_access_vtime` is not needed to replay a trace and is skipped.
//! A file whose length is not a multiple of 24 ends in a truncated record,
//! reported as an error naming the record. zstd-compressed traces are
//! refused (decompress them first).
//!
//! csv: columns are 1-based, as in libCacheSim's `-t "time-col=1,
//! obj-id-col=2, obj-size-col=3, delimiter=,, has-header=true"`. Without a
//! time column, time is 0; without a size column, obj_size is 1
//! (libCacheSim's default). Object ids must be integers unless
//! `obj-id-is-num=false`, in which case the id string is hashed with 64-bit
//! FNV-1a. Without `has-header`, a first line whose id field is not an
//! integer is taken for a header.
//!
//! Errors are [`ParseError`]s: file, line (csv line or 1-based binary
//! record number), option (the column or the format) and message.

pub use crate::fio::ParseError;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

pub const ORACLE_GENERAL_RECORD: usize = 24;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TraceReq {
    pub time: u64,
    pub obj_id: u64,
    pub obj_size: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CsvSpec {
    /// 1-based columns.
    pub time_col: Option<usize>,
    pub obj_id_col: usize,
    pub obj_size_col: Option<usize>,
    pub delimiter: u8,
    /// None: guess from the first line.
    pub has_header: Option<bool>,
    pub obj_id_is_num: bool,
}

impl Default for CsvSpec {
    /// `time-col=1, obj-id-col=2, obj-size-col=3, delimiter=,`.
    fn default() -> Self {
        CsvSpec {
            time_col: Some(1),
            obj_id_col: 2,
            obj_size_col: Some(3),
            delimiter: b',',
            has_header: None,
            obj_id_is_num: true,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum TraceFormat {
    OracleGeneral,
    Csv(CsvSpec),
}

fn is_true(v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "y" => Ok(true),
        "false" | "0" | "no" | "n" => Ok(false),
        _ => Err(format!("bad boolean '{v}' (true/false)")),
    }
}

/// Parse a libCacheSim csv parameter string, e.g.
/// `time-col=1, obj-id-col=2, obj-size-col=3, delimiter=,, has-header=true`.
/// Keys are case-insensitive and `_` equals `-`, as in libCacheSim.
pub fn parse_csv_spec(s: &str) -> Result<CsvSpec, String> {
    let mut spec = CsvSpec {
        time_col: None,
        obj_id_col: 0,
        obj_size_col: None,
        delimiter: b',',
        has_header: None,
        obj_id_is_num: true,
    };
    let mut rest = s;
    while !rest.is_empty() {
        // key up to '=', value up to the next ',' (libCacheSim's strsep
        // walk, which is what makes "delimiter=,," mean a comma).
        let (key, after) = rest
            .split_once('=')
            .ok_or_else(|| format!("'{}': expected key=value", rest.trim()))?;
        let (val, next) = after.split_once(',').unwrap_or((after, ""));
        rest = next.trim_start_matches([' ', ',']);
        let key = key.trim().replace('_', "-").to_ascii_lowercase();
        let val = val.trim();
        let col = |v: &str| -> Result<usize, String> {
            match v.parse::<usize>() {
                Ok(n) if n >= 1 => Ok(n),
                _ => Err(format!("{key}: bad column '{v}' (columns start at 1)")),
            }
        };
        match key.as_str() {
            "time-col" | "time-field" => spec.time_col = Some(col(val)?),
            "obj-id-col" | "obj-id-field" => spec.obj_id_col = col(val)?,
            "obj-size-col" | "obj-size-field" | "size-col" | "size-field" => {
                spec.obj_size_col = Some(col(val)?)
            }
            "header" | "has-header" => {
                spec.has_header = Some(is_true(val).map_err(|e| format!("{key}: {e}"))?)
            }
            "obj-id-is-num" => {
                spec.obj_id_is_num = is_true(val).map_err(|e| format!("{key}: {e}"))?
            }
            "delimiter" => {
                spec.delimiter = match val {
                    "" | "\\" | "\\," => b',',
                    "\\t" | "\t" => b'\t',
                    v if v.len() == 1 => v.as_bytes()[0],
                    v => return Err(format!("delimiter: unsupported delimiter '{v}'")),
                }
            }
            // Not needed to replay a trace.
            "next-access-col" | "next-access-field" | "cnt-col" | "cnt-field" => {
                col(val)?;
            }
            _ => return Err(format!("unknown trace parameter '{key}'")),
        }
    }
    if spec.obj_id_col == 0 {
        return Err("obj-id-col is required".into());
    }
    Ok(spec)
}

/// Format from the file name: names containing "oracleGeneral" or ending in
/// `.bin` are oracleGeneral; `.csv` is csv with [`CsvSpec::default`];
/// anything else is taken for oracleGeneral (libCacheSim's usual format).
pub fn guess_format(path: &Path) -> TraceFormat {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if name.contains("oraclegeneral") || name.ends_with(".bin") {
        TraceFormat::OracleGeneral
    } else if name.ends_with(".csv") {
        TraceFormat::Csv(CsvSpec::default())
    } else {
        TraceFormat::OracleGeneral
    }
}

enum Inner {
    Bin {
        r: BufReader<File>,
        record: usize,
    },
    Csv {
        r: BufReader<File>,
        spec: CsvSpec,
        line: usize,
        buf: String,
        started: bool,
    },
}

/// Streaming reader: an iterator of requests; after an error it ends.
pub struct TraceReader {
    file: String,
    inner: Inner,
    failed: bool,
}

pub fn open(path: &Path, fmt: &TraceFormat) -> Result<TraceReader, ParseError> {
    let file = path.display().to_string();
    let opt = match fmt {
        TraceFormat::OracleGeneral => "oracleGeneral",
        TraceFormat::Csv(_) => "csv",
    };
    let f = File::open(path).map_err(|e| ParseError {
        file: file.clone(),
        line: 0,
        option: opt.into(),
        msg: format!("cannot open: {e}"),
    })?;
    let mut r = BufReader::with_capacity(1 << 16, f);
    let inner = match fmt {
        TraceFormat::OracleGeneral => {
            let head = r.fill_buf().map_err(|e| ParseError {
                file: file.clone(),
                line: 0,
                option: opt.into(),
                msg: format!("cannot read: {e}"),
            })?;
            if head.starts_with(&[0x28, 0xB5, 0x2F, 0xFD]) {
                return Err(ParseError {
                    file,
                    line: 0,
                    option: opt.into(),
                    msg: "zstd-compressed trace: decompress it first (zstd -d)".into(),
                });
            }
            Inner::Bin { r, record: 0 }
        }
        TraceFormat::Csv(spec) => Inner::Csv {
            r,
            spec: spec.clone(),
            line: 0,
            buf: String::new(),
            started: false,
        },
    };
    Ok(TraceReader {
        file,
        inner,
        failed: false,
    })
}

impl TraceReader {
    fn err(&self, line: usize, option: &str, msg: String) -> ParseError {
        ParseError {
            file: self.file.clone(),
            line,
            option: option.into(),
            msg,
        }
    }

    fn next_bin(&mut self) -> Option<Result<TraceReq, ParseError>> {
        let Inner::Bin { r, record } = &mut self.inner else {
            unreachable!()
        };
        // A whole record in the reader's buffer: parse it in place (the
        // common case; a record split across refills takes the copy below).
        if let Ok(buf) = r.fill_buf() {
            if buf.len() >= ORACLE_GENERAL_RECORD {
                let req = oracle_general_req(&buf[..ORACLE_GENERAL_RECORD]);
                r.consume(ORACLE_GENERAL_RECORD);
                *record += 1;
                return Some(Ok(req));
            }
        }
        let mut rec = [0u8; ORACLE_GENERAL_RECORD];
        let mut got = 0;
        while got < rec.len() {
            match r.read(&mut rec[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let n = *record + 1;
                    return Some(Err(self.err(
                        n,
                        "oracleGeneral",
                        format!("read error: {e}"),
                    )));
                }
            }
        }
        if got == 0 {
            return None;
        }
        *record += 1;
        let n = *record;
        if got < rec.len() {
            return Some(Err(self.err(
                n,
                "oracleGeneral",
                format!(
                    "truncated record {n}: {got} of {ORACLE_GENERAL_RECORD} bytes at byte offset {}",
                    (n - 1) * ORACLE_GENERAL_RECORD
                ),
            )));
        }
        Some(Ok(oracle_general_req(&rec)))
    }

    fn next_csv(&mut self) -> Option<Result<TraceReq, ParseError>> {
        loop {
            let Inner::Csv {
                r,
                spec,
                line,
                buf,
                started,
            } = &mut self.inner
            else {
                unreachable!()
            };
            buf.clear();
            if let Err(e) = r.read_line(buf) {
                let n = *line + 1;
                return Some(Err(self.err(n, "csv", format!("read error: {e}"))));
            }
            if buf.is_empty() {
                return None;
            }
            *line += 1;
            let n = *line;
            let text = buf.trim_end_matches(['\n', '\r']).to_string();
            if text.trim().is_empty() {
                continue;
            }
            // The header guess only looks at the first non-empty line.
            let first = !std::mem::replace(started, true);
            let spec = spec.clone();
            let fields: Vec<&str> = text
                .split(spec.delimiter as char)
                .map(|f| f.trim().trim_matches('"'))
                .collect();
            let header = match spec.has_header {
                Some(h) => h && first,
                None => {
                    first
                        && spec.obj_id_is_num
                        && fields
                            .get(spec.obj_id_col - 1)
                            .is_some_and(|f| f.parse::<u64>().is_err())
                }
            };
            if header {
                continue;
            }
            return Some(self.csv_record(&spec, &fields, n));
        }
    }

    fn csv_record(
        &self,
        spec: &CsvSpec,
        fields: &[&str],
        n: usize,
    ) -> Result<TraceReq, ParseError> {
        let field = |col: usize, name: &str| -> Result<&str, ParseError> {
            fields.get(col - 1).copied().ok_or_else(|| {
                self.err(
                    n,
                    name,
                    format!("no column {col} (line has {} fields)", fields.len()),
                )
            })
        };
        let id = field(spec.obj_id_col, "obj-id-col")?;
        let obj_id = if spec.obj_id_is_num {
            id.parse::<u64>().map_err(|_| {
                self.err(
                    n,
                    "obj-id-col",
                    format!(
                        "object id '{id}' is not an integer (use obj-id-is-num=false to hash ids)"
                    ),
                )
            })?
        } else {
            let mut h = 0xCBF2_9CE4_8422_2325u64;
            for b in id.as_bytes() {
                h ^= *b as u64;
                h = h.wrapping_mul(0x0000_0100_0000_01B3);
            }
            h
        };
        let time = match spec.time_col {
            None => 0,
            Some(c) => {
                let t = field(c, "time-col")?;
                match t.parse::<u64>() {
                    Ok(v) => v,
                    Err(_) => match t.parse::<f64>() {
                        Ok(v) if v.is_finite() && v >= 0.0 => v as u64,
                        _ => return Err(self.err(n, "time-col", format!("bad time '{t}'"))),
                    },
                }
            }
        };
        let obj_size = match spec.obj_size_col {
            None => 1,
            Some(c) => {
                let s = field(c, "obj-size-col")?;
                s.parse::<u32>()
                    .map_err(|_| self.err(n, "obj-size-col", format!("bad object size '{s}'")))?
            }
        };
        Ok(TraceReq {
            time,
            obj_id,
            obj_size,
        })
    }
}

/// One oracleGeneral record {u32 time; u64 id; u32 size; i64 next}, little
/// endian (the next-access field is not used).
#[inline]
fn oracle_general_req(rec: &[u8]) -> TraceReq {
    TraceReq {
        time: u32::from_le_bytes(rec[0..4].try_into().unwrap()) as u64,
        obj_id: u64::from_le_bytes(rec[4..12].try_into().unwrap()),
        obj_size: u32::from_le_bytes(rec[12..16].try_into().unwrap()),
    }
}

impl Iterator for TraceReader {
    type Item = Result<TraceReq, ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let r = match self.inner {
            Inner::Bin { .. } => self.next_bin(),
            Inner::Csv { .. } => self.next_csv(),
        };
        if matches!(r, Some(Err(_))) {
            self.failed = true;
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::path::PathBuf;

    fn tmp(name: &str, bytes: &[u8]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("foliosim-trace-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::File::create(&p).unwrap().write_all(bytes).unwrap();
        p
    }

    fn read_all(p: &std::path::Path, format: &TraceFormat) -> Vec<TraceReq> {
        open(p, format).unwrap().collect::<Result<_, _>>().unwrap()
    }

    fn req(time: u64, obj_id: u64, obj_size: u32) -> TraceReq {
        TraceReq {
            time,
            obj_id,
            obj_size,
        }
    }

    fn rec(t: u32, id: u64, size: u32, next: i64) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&t.to_le_bytes());
        v.extend_from_slice(&id.to_le_bytes());
        v.extend_from_slice(&size.to_le_bytes());
        v.extend_from_slice(&next.to_le_bytes());
        v
    }

    #[test]
    fn oracle_general_records() {
        let mut b = rec(1, 42, 4096, -1);
        b.extend(rec(2, u64::MAX - 1, 7, 5));
        let p = tmp("a.oracleGeneral.bin", &b);
        assert_eq!(guess_format(&p), TraceFormat::OracleGeneral);
        let v = read_all(&p, &TraceFormat::OracleGeneral);
        assert_eq!(v, vec![req(1, 42, 4096), req(2, u64::MAX - 1, 7),]);
    }

    #[test]
    fn error_truncated_oracle_general_record() {
        let mut b = rec(1, 42, 4096, -1);
        b.extend(&rec(2, 43, 4096, -1)[..10]);
        let p = tmp("trunc.oracleGeneral", &b);
        let mut r = open(&p, &TraceFormat::OracleGeneral).unwrap();
        assert!(r.next().unwrap().is_ok());
        let e = r.next().unwrap().unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}:2: oracleGeneral: truncated record 2: 10 of 24 bytes at byte offset 24",
                p.display()
            )
        );
        assert!(r.next().is_none(), "reader stops after an error");
    }

    #[test]
    fn zstd_is_refused() {
        let p = tmp("x.oracleGeneral.zst", &[0x28, 0xB5, 0x2F, 0xFD, 0, 0]);
        let e = open(&p, &guess_format(&p)).err().unwrap();
        assert!(e.to_string().contains("zstd-compressed"), "{e}");
    }

    #[test]
    fn csv_with_spec_and_header() {
        let spec = parse_csv_spec(
            "time-col=1, obj-id-col=2, obj-size-col=3, delimiter=,, has-header=true",
        )
        .unwrap();
        assert_eq!(spec.delimiter, b',');
        assert_eq!(spec.has_header, Some(true));
        let p = tmp("t.csv", b"time,id,size\n10,5,4096\n\n11,6,100\n");
        let v = read_all(&p, &TraceFormat::Csv(spec));
        assert_eq!(v, vec![req(10, 5, 4096), req(11, 6, 100)]);
        // Guessed header, default spec from the extension.
        let v = read_all(&p, &guess_format(&p));
        assert_eq!(v.len(), 2);
    }

    #[test]
    fn csv_other_delimiters_and_hashed_ids() {
        let spec = parse_csv_spec("obj_id_col=1,delimiter=\\t,obj-id-is-num=false").unwrap();
        assert_eq!(
            (spec.delimiter, spec.time_col, spec.obj_size_col),
            (b'\t', None, None)
        );
        let p = tmp("t.tsv", b"abc\t1\nabd\t2\nabc\t3\n");
        let v = read_all(&p, &TraceFormat::Csv(spec));
        assert_eq!(v.len(), 3);
        assert_eq!(v[0].obj_id, v[2].obj_id);
        assert_ne!(v[0].obj_id, v[1].obj_id);
        assert_eq!((v[0].time, v[0].obj_size), (0, 1));
        assert_eq!(
            parse_csv_spec("obj-id-col=2;delimiter=;").unwrap_err(),
            "obj-id-col: bad column '2;delimiter=;' (columns start at 1)"
        );
        assert_eq!(
            parse_csv_spec("time-col=1").unwrap_err(),
            "obj-id-col is required"
        );
        assert_eq!(
            parse_csv_spec("obj-id-col=1, colour=red").unwrap_err(),
            "unknown trace parameter 'colour'"
        );
        assert_eq!(
            parse_csv_spec("obj-id-col=0").unwrap_err(),
            "obj-id-col: bad column '0' (columns start at 1)"
        );
        let s = parse_csv_spec("obj-id-col=2, delimiter=;, time-col=1").unwrap();
        assert_eq!((s.delimiter, s.time_col), (b';', Some(1)));
    }

    #[test]
    fn error_bad_csv_line() {
        let p = tmp("bad.csv", b"1,10,4096\n2,11,4096\n3,zz,4096\n4,12\n");
        let mut r = open(&p, &TraceFormat::Csv(CsvSpec::default())).unwrap();
        assert!(r.next().unwrap().is_ok());
        assert!(r.next().unwrap().is_ok());
        let e = r.next().unwrap().unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{}:3: obj-id-col: object id 'zz' is not an integer (use obj-id-is-num=false to hash ids)", p.display())
        );
        assert!(r.next().is_none());
        let p = tmp("short.csv", b"1,10,4096\n4,12\n");
        let e = open(&p, &TraceFormat::Csv(CsvSpec::default()))
            .unwrap()
            .nth(1)
            .unwrap()
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}:2: obj-size-col: no column 3 (line has 2 fields)",
                p.display()
            )
        );
        let e = open(
            Path::new("/nonexistent.csv"),
            &TraceFormat::Csv(CsvSpec::default()),
        )
        .err()
        .unwrap();
        assert!(e
            .to_string()
            .starts_with("/nonexistent.csv: csv: cannot open"));
    }
}
