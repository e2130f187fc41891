//! The published figures the reproductions print beside the model: each
//! seed's (or paper's) table is a CSV file under reproduce/data/, embedded
//! at build time (include_str!) and parsed on first use. Workload
//! parameters and experiment definitions stay code.
//!
//! The dialect: lines that start with `#` are comments (each file names
//! its source there) and blank lines are skipped; the first other line is
//! the header, each later one a row with as many fields, split at commas.
//! There is no quoting: a field holds neither a comma nor a quote, nor
//! spaces at its ends. Each table names its columns, which the header must
//! match, and reads every row into a typed struct (`seed_table!` declares
//! both from one list of typed fields, named as the seed names them). A
//! table that does not parse is a bug in the embedded data:
//! tests/seed_tables.rs parses every one (`all()`), and `Table::rows` panics
//! naming the file.

use std::sync::OnceLock;

/// A parsed CSV text: its header and rows (each with its line number).
#[derive(Debug)]
pub struct Csv<'a> {
    file: &'a str,
    header: Vec<&'a str>,
    rows: Vec<(usize, Vec<&'a str>)>,
}

/// Parses `text` (named `file` in messages), whose header must be
/// `columns`; at least one row.
pub fn parse_csv<'a>(file: &'a str, text: &'a str, columns: &[&str]) -> Result<Csv<'a>, String> {
    let mut header: Option<Vec<&str>> = None;
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split(',').collect();
        if let Some(f) = fields.iter().find(|f| f.contains('"') || f.trim() != **f) {
            return Err(format!(
                "{file}:{n}: field '{f}' is quoted or padded (this dialect has neither)"
            ));
        }
        match &header {
            None => {
                if fields != columns {
                    return Err(format!(
                        "{file}:{n}: header '{line}' is not '{}'",
                        columns.join(",")
                    ));
                }
                header = Some(fields);
            }
            Some(h) => {
                if fields.len() != h.len() {
                    return Err(format!(
                        "{file}:{n}: {} fields, the header has {}",
                        fields.len(),
                        h.len()
                    ));
                }
                rows.push((n, fields));
            }
        }
    }
    let header = header.ok_or_else(|| format!("{file}: no header"))?;
    if rows.is_empty() {
        return Err(format!("{file}: no rows"));
    }
    Ok(Csv { file, header, rows })
}

impl<'a> Csv<'a> {
    pub fn rows(&self) -> impl Iterator<Item = Row<'_, 'a>> {
        self.rows.iter().map(move |(line, fields)| Row {
            csv: self,
            line: *line,
            fields,
        })
    }
}

/// One row, its fields read by column name.
pub struct Row<'c, 'a> {
    csv: &'c Csv<'a>,
    line: usize,
    fields: &'c [&'a str],
}

impl<'a> Row<'_, 'a> {
    /// The field of `column`, not empty.
    pub fn text(&self, column: &str) -> Result<&'a str, String> {
        let i = self
            .csv
            .header
            .iter()
            .position(|h| *h == column)
            .ok_or_else(|| format!("{}: no column '{column}'", self.csv.file))?;
        match self.fields[i] {
            "" => Err(self.error(column, "is empty")),
            v => Ok(v),
        }
    }

    pub fn u64(&self, column: &str) -> Result<u64, String> {
        let v = self.text(column)?;
        v.parse()
            .map_err(|_| self.error(column, &format!("'{v}' is not a whole number")))
    }

    pub fn f64(&self, column: &str) -> Result<f64, String> {
        let v = self.text(column)?;
        match v.parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(x),
            _ => Err(self.error(column, &format!("'{v}' is not a number"))),
        }
    }

    /// The field of `column` as a `T` (an LRU's name, a swappiness).
    pub fn parse<T>(&self, column: &str) -> Result<T, String>
    where
        T: std::str::FromStr,
        T::Err: std::fmt::Display,
    {
        let v = self.text(column)?;
        v.parse()
            .map_err(|e| self.error(column, &format!("'{v}': {e}")))
    }

    fn error(&self, column: &str, what: &str) -> String {
        format!("{}:{}: {column} {what}", self.csv.file, self.line)
    }
}

/// A column's type: how its field reads.
pub trait Field: Sized {
    fn read(row: &Row<'_, 'static>, column: &str) -> Result<Self, String>;
}

impl Field for &'static str {
    fn read(row: &Row<'_, 'static>, column: &str) -> Result<Self, String> {
        row.text(column)
    }
}

impl Field for u64 {
    fn read(row: &Row<'_, 'static>, column: &str) -> Result<Self, String> {
        row.u64(column)
    }
}

impl Field for f64 {
    fn read(row: &Row<'_, 'static>, column: &str) -> Result<Self, String> {
        row.f64(column)
    }
}

impl Field for u32 {
    fn read(row: &Row<'_, 'static>, column: &str) -> Result<Self, String> {
        row.parse(column)
    }
}

impl Field for crate::sim::LruKind {
    fn read(row: &Row<'_, 'static>, column: &str) -> Result<Self, String> {
        row.parse(column)
    }
}

/// Declares an embedded table: a row struct whose fields are the CSV's
/// columns in order, each with its type (`Field`), and the static that
/// reads reproduce/data/FILE into it.
///
/// ```ignore
/// seed_table! {
///     /// Seed 000's published figures.
///     pub static SEED000: Seed000Cell = "strided_mmap_seed000.csv" {
///         lru: LruKind,
///         workingset_refault_file: u64,
///     }
/// }
/// ```
macro_rules! seed_table {
    (
        $(#[$doc:meta])*
        pub static $name:ident: $row:ident = $file:literal {
            $($field:ident: $ty:ty),+ $(,)?
        }
    ) => {
        #[doc = concat!("A row of reproduce/data/", $file, ".")]
        #[derive(Clone, Debug, PartialEq)]
        pub struct $row {
            $(pub $field: $ty),+
        }

        $(#[$doc])*
        pub static $name: $crate::reproduce::tables::Table<$row> =
            $crate::reproduce::tables::Table::new(
                $file,
                include_str!(concat!("data/", $file)),
                &[$(stringify!($field)),+],
                |r| {
                    Ok($row {
                        $($field: $crate::reproduce::tables::Field::read(r, stringify!($field))?),+
                    })
                },
            );
    };
}
pub(crate) use seed_table;

/// An embedded table: its file under reproduce/data/, its text, its
/// columns and how a row reads, parsed once.
pub struct Table<T: 'static> {
    pub file: &'static str,
    text: &'static str,
    columns: &'static [&'static str],
    row: fn(&Row<'_, 'static>) -> Result<T, String>,
    parsed: OnceLock<Vec<T>>,
}

impl<T> Table<T> {
    pub const fn new(
        file: &'static str,
        text: &'static str,
        columns: &'static [&'static str],
        row: fn(&Row<'_, 'static>) -> Result<T, String>,
    ) -> Self {
        Table {
            file,
            text,
            columns,
            row,
            parsed: OnceLock::new(),
        }
    }

    /// Every row, or why the text does not parse.
    pub fn parse(&self) -> Result<Vec<T>, String> {
        let csv = parse_csv(self.file, self.text, self.columns)?;
        csv.rows().map(|r| (self.row)(&r)).collect()
    }

    /// Every row; the embedded text must parse (tests/seed_tables.rs).
    pub fn rows(&self) -> &[T] {
        self.parsed.get_or_init(|| {
            self.parse()
                .unwrap_or_else(|e| panic!("embedded table reproduce/data/{e}"))
        })
    }
}

/// A seed's before/after figure of one metric.
#[derive(Clone, Debug, PartialEq)]
pub struct BeforeAfter {
    pub metric: &'static str,
    pub before: f64,
    pub after: f64,
}

pub const BEFORE_AFTER_COLUMNS: &[&str] = &["metric", "before", "after"];

/// A table of a seed's (before, after) figures by metric.
pub const fn before_after(file: &'static str, text: &'static str) -> Table<BeforeAfter> {
    Table::new(file, text, BEFORE_AFTER_COLUMNS, |r| {
        Ok(BeforeAfter {
            metric: r.text("metric")?,
            before: r.f64("before")?,
            after: r.f64("after")?,
        })
    })
}

impl Table<BeforeAfter> {
    /// The seed's (before, after) of `metric`, when it gives one.
    pub fn pair(&self, metric: &str) -> Option<(f64, f64)> {
        self.rows()
            .iter()
            .find(|r| r.metric == metric)
            .map(|r| (r.before, r.after))
    }
}

/// What the tests need of any table: its file and its rows' count.
pub trait Embedded: Sync {
    fn file(&self) -> &'static str;
    /// The rows' count, or why the text does not parse.
    fn check(&self) -> Result<usize, String>;
}

impl<T: Send + Sync> Embedded for Table<T> {
    fn file(&self) -> &'static str {
        self.file
    }
    fn check(&self) -> Result<usize, String> {
        self.parse().map(|v| v.len())
    }
}

/// Every embedded table, one per file in reproduce/data/: each
/// reproduction's `TABLES`.
pub fn all() -> Vec<&'static dyn Embedded> {
    [
        super::TABLES,
        super::reclaim_loop::TABLES,
        super::workingset_protection::TABLES,
        super::cache_ext::TABLES,
    ]
    .concat()
}
