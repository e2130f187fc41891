//! `foliosim report RESULT... -o OUT`: runs, comparisons and sweeps as one
//! self-contained HTML page, or their plots as SVG/PNG files.

use std::path::PathBuf;

use foliosim_report::{build, input, render_html, Options};

#[derive(clap::Args)]
pub struct ReportArgs {
    /// Results: JSON of `fio --json` / `--output-format=json`, `run --json`,
    /// `mmap-probe --json`, `compare --json`, or a sweep's CSV.
    #[arg(required = true)]
    results: Vec<PathBuf>,
    /// The HTML file to write; with --format svg|png, the folder for the plots.
    #[arg(short = 'o', long)]
    output: PathBuf,
    /// html (one page), svg or png (one file per plot).
    #[arg(long, default_value = "html")]
    format: String,
    /// The page's heading.
    #[arg(long)]
    title: Option<String>,
    /// A sweep's result column to plot (repeatable; `memcg.pgpgin` or just
    /// `pgpgin` when one column ends so). Default: the key counters that vary.
    #[arg(long)]
    metric: Vec<String>,
    /// The sweep parameter on the x axis (default: the first that varies).
    #[arg(long)]
    x: Option<String>,
    /// PNG pixels per SVG pixel (default 2, for print).
    #[arg(long, default_value_t = 2)]
    scale: u32,
}

pub fn run(a: &ReportArgs) -> Result<(), String> {
    if !matches!(a.format.as_str(), "html" | "svg" | "png") {
        return Err(format!("--format: '{}' is not html, svg or png", a.format));
    }
    if !(1..=8).contains(&a.scale) {
        return Err(format!("--scale: {} is not 1 to 8", a.scale));
    }
    let inputs = a
        .results
        .iter()
        .map(|p| input::load(p))
        .collect::<Result<Vec<_>, _>>()?;
    let sources: Vec<String> = a.results.iter().map(|p| p.display().to_string()).collect();
    let opts = Options {
        title: a.title.clone(),
        metrics: a.metric.clone(),
        x: a.x.clone(),
    };
    let report = build(&inputs, &sources, &opts)?;
    let out = a.output.display().to_string();
    if a.format == "html" {
        let page = render_html(&report)?;
        return std::fs::write(&a.output, page).map_err(|e| format!("{out}: {e}"));
    }
    std::fs::create_dir_all(&a.output).map_err(|e| format!("{out}: {e}"))?;
    for (i, c) in report.charts().enumerate() {
        let path = a
            .output
            .join(format!("{:02}-{}.{}", i + 1, c.slug, a.format));
        let bytes = if a.format == "svg" {
            foliosim_report::chart::svg(c)?.into_bytes()
        } else {
            foliosim_report::chart::png(c, a.scale)?
        };
        std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        println!("{}", path.display());
    }
    Ok(())
}
