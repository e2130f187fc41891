//! The report as one HTML file: plots as inline SVG, the style inline, no
//! script, no link to anything outside the file.

use std::fmt::Write;

use crate::{chart, Item, Report, Table};

const STYLE: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;max-width:1600px;padding:0 24px 40px;color:#1b1b1b;background:#fff}
header{border-bottom:2px solid #0072b2;margin-bottom:8px}
h1{font-size:1.6em;margin:18px 0 4px}
h2{font-size:1.3em;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
nav a{margin-right:14px}
.src{color:#555;margin:4px 0 10px}
figure.plot{display:inline-block;vertical-align:top;margin:8px 16px 12px 0;max-width:100%}
figure.plot svg{max-width:100%;height:auto;border:1px solid #e3e3e3}
figcaption{font-size:.88em;color:#444;margin-top:3px}
table{border-collapse:collapse;margin:6px 0 16px;font-size:.9em}
caption{text-align:left;font-weight:600;padding:4px 0}
th,td{border-bottom:1px solid #e6e6e6;padding:3px 10px;text-align:left}
th{background:#f3f6f9}
td.n{text-align:right;font-family:ui-monospace,'DejaVu Sans Mono',monospace}
td.k{font-family:ui-monospace,'DejaVu Sans Mono',monospace}
details summary{cursor:pointer;font-weight:600;margin:6px 0}
p.note{color:#333;max-width:70em}
footer{margin-top:30px;color:#666;font-size:.85em}
";

pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

fn table(out: &mut String, t: &Table) {
    if t.folded {
        let _ = write!(
            out,
            "<details><summary>{} ({} rows)</summary>",
            esc(&t.caption),
            t.rows.len()
        );
    }
    out.push_str("<table>");
    if !t.folded {
        let _ = write!(out, "<caption>{}</caption>", esc(&t.caption));
    }
    if t.head.iter().any(|h| !h.is_empty()) {
        out.push_str("<thead><tr>");
        for h in &t.head {
            let _ = write!(out, "<th>{}</th>", esc(h));
        }
        out.push_str("</tr></thead>");
    }
    out.push_str("<tbody>");
    for r in &t.rows {
        out.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            // Counter names in the kernel's monospace, numbers right-aligned.
            let class = if i >= t.numeric_from && t.head.get(i).is_none_or(|h| h != "meaning") {
                " class=\"n\""
            } else if i == 0 {
                " class=\"k\""
            } else {
                ""
            };
            let _ = write!(out, "<td{class}>{}</td>", esc(c));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    if t.folded {
        out.push_str("</details>");
    }
    out.push('\n');
}

pub fn render_html(r: &Report) -> Result<String, String> {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<header>\n<h1>{}</h1>\n",
        esc(&r.title),
        esc(&r.title)
    );
    let _ = writeln!(
        out,
        "<p class=\"src\">From {}. Counters under their kernel names (memory.stat, /proc/vmstat); time is the model's simulated time.</p>",
        r.sources.iter().map(|s| format!("<code>{}</code>", esc(s))).collect::<Vec<_>>().join(", ")
    );
    out.push_str("<nav>");
    for s in &r.sections {
        let _ = write!(out, "<a href=\"#{}\">{}</a>", esc(&s.id), esc(&s.title));
    }
    out.push_str("</nav>\n</header>\n");
    for s in &r.sections {
        let _ = writeln!(
            out,
            "<section id=\"{}\">\n<h2>{}</h2>",
            esc(&s.id),
            esc(&s.title)
        );
        for it in &s.items {
            match it {
                Item::Note(t) => {
                    let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(t));
                }
                Item::Table(t) => table(&mut out, t),
                Item::Chart { chart: c, caption } => {
                    let svg = chart::svg(c)?;
                    let _ = writeln!(
                        out,
                        "<figure class=\"plot\" id=\"plot-{}\">\n{svg}\n<figcaption style=\"max-width:{}px\">{}</figcaption>\n</figure>",
                        esc(&c.slug),
                        c.size.0,
                        esc(caption)
                    );
                }
            }
        }
        out.push_str("</section>\n");
    }
    let _ = writeln!(
        out,
        "<footer>foliosim report {} — plots also as files with <code>foliosim report --format svg|png</code>.</footer>\n</body>\n</html>",
        env!("CARGO_PKG_VERSION")
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped() {
        assert_eq!(esc("a<b & \"c\"'"), "a&lt;b &amp; &quot;c&quot;&#39;");
    }
}
