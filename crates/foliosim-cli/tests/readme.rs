//! README.md is the first thing a newcomer reads, so it is held to the
//! binary: it stays under 150 lines; every `foliosim` line of its tour runs
//! (from a scratch directory that sees the repository's examples/, docs/
//! and oracle/); every option it names for a command is in that command's
//! `--help`; its list of machine options is exactly `foliosim fio --help`'s;
//! its list of kernel presets is `foliosim variants`'s. docs/cli.md's
//! command block is checked against `--help` the same way (not run: some
//! of its lines need root or minutes). Nothing here needs the network,
//! root or ../shared.

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_foliosim");

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// `foliosim ARGS...`: (exit code, stdout, stderr).
fn foliosim(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN).args(args).output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A shell line's words: quotes removed, an unquoted `#` starting a word
/// ends the line, and so does an output redirection (`>`).
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            None if !in_word && (c == '#' || c == '>') => return out,
            None => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

/// An option word (`--lru`, `--memcg-limit=400M`, `-o`), as its name, or
/// None for a value. Brackets of `[--opt VALUE]` are dropped.
fn option_name(w: &str) -> Option<String> {
    let w = w.trim_start_matches('[').trim_end_matches(']');
    if w.contains(char::is_whitespace) || w == "--" || !w.starts_with('-') {
        return None;
    }
    let name = w.split('=').next().unwrap();
    let long = name.len() > 2
        && name.starts_with("--")
        && name[2..]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-');
    let short = name.len() == 2 && name.as_bytes()[1].is_ascii_alphabetic();
    (long || short).then(|| name.to_string())
}

/// The commands a `foliosim` command line names (its words after
/// `foliosim`), each as its subcommand path and the options given to it:
/// compare's workload after `--` is a command of its own.
fn commands(args: &[String]) -> Vec<(Vec<String>, Vec<(String, bool)>)> {
    let Some(first) = args.first() else {
        return Vec::new();
    };
    let mut path = vec![first.clone()];
    let mut rest = &args[1..];
    if matches!(first.as_str(), "reproduce" | "oracle") {
        if let Some(sub) = rest.first().filter(|w| !w.starts_with('-')) {
            path.push(sub.clone());
            rest = &rest[1..];
        }
    }
    let (own, workload) = match rest.iter().position(|w| w == "--") {
        Some(i) if first == "compare" => (&rest[..i], &rest[i + 1..]),
        _ => (rest, &rest[..0]),
    };
    let opts = own
        .iter()
        .filter_map(|w| option_name(w).map(|n| (n, w.contains('='))))
        .collect();
    let mut out = vec![(path, opts)];
    out.extend(commands(workload));
    out
}

/// `foliosim PATH... --help`, which must succeed: the command exists.
fn help(path: &[String]) -> String {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("--help");
    let (code, out, err) = foliosim(&args);
    assert_eq!(code, 0, "foliosim {}: {err}", args.join(" "));
    out
}

/// Whether `--help` text names the option (as a whole word: `--trace`
/// is not `--trace-events`).
fn help_has(help: &str, opt: &str) -> bool {
    help.match_indices(opt).any(|(i, _)| {
        let before = help[..i].chars().next_back();
        let after = help[i + opt.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
            && !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    })
}

/// The options `--help` lists (its option lines), less `--help` itself.
fn help_options(help: &str) -> Vec<String> {
    help.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = l.strip_prefix("-h, ").unwrap_or(l);
            let l = match l.as_bytes() {
                [b'-', c, b',', b' ', ..] if c.is_ascii_alphabetic() => &l[4..],
                _ => l,
            };
            let name: String = l
                .strip_prefix("--")?
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            (!name.is_empty() && name != "help").then(|| format!("--{name}"))
        })
        .collect()
}

/// Every option the command line names is in its command's `--help`;
/// for fio, `--KEY=VALUE` may instead be one of fio's own options (fio's
/// command-line form, `--name=J --rw=read`), as the model's fio parser
/// knows them.
fn check_options(src: &str, line: &str) -> Vec<String> {
    let mut bad = Vec::new();
    for (path, opts) in commands(&words(line)[1..]) {
        if path[0].chars().all(|c| c.is_ascii_uppercase()) {
            continue; // a placeholder: `foliosim COMMAND --help`
        }
        let h = help(&path);
        for (opt, with_value) in opts {
            let fio_own =
                path[0] == "fio" && with_value && foliosim_workload::fio::is_option(&opt[2..]);
            if opt != "--help" && !help_has(&h, &opt) && !fio_own {
                bad.push(format!(
                    "{src}: `{line}`: {opt} is not in `foliosim {} --help`",
                    path.join(" ")
                ));
            }
        }
    }
    bad
}

/// The lines of a markdown file's code blocks (4-space indented), trimmed.
fn code_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|l| l.strip_prefix("    "))
        .map(str::trim)
        .collect()
}

/// The `foliosim ...` lines of the code blocks under README's tour heading.
fn tour(readme: &str) -> Vec<String> {
    let start = readme
        .find("## A ten-line tour")
        .expect("README has its tour");
    let section = &readme[start + 3..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    code_lines(section)
        .into_iter()
        .filter(|l| l.starts_with("foliosim "))
        .map(String::from)
        .collect()
}

/// Inline code spans of the prose (outside code blocks) that are
/// `foliosim` command lines.
fn inline_commands(text: &str) -> Vec<String> {
    let prose: Vec<&str> = text.lines().filter(|l| !l.starts_with("    ")).collect();
    let prose = prose.join("\n");
    prose
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|s| s.starts_with("foliosim "))
        .collect()
}

#[test]
fn readme_is_under_150_lines() {
    let n = read("README.md").lines().count();
    assert!(
        n < 150,
        "README.md has {n} lines; keep it under 150 (reference material goes to docs/)"
    );
}

#[test]
fn readme_tour_runs_from_a_clean_directory() {
    let readme = read("README.md");
    let lines = tour(&readme);
    assert!(
        lines.len() >= 5,
        "the tour has its command lines: {lines:?}"
    );
    let dir = std::env::temp_dir().join(format!("foliosim-readme-tour-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for d in ["examples", "docs", "oracle"] {
        std::os::unix::fs::symlink(root().join(d), dir.join(d)).unwrap();
    }
    for line in &lines {
        let script = format!("foliosim() {{ \"$FOLIOSIM\" \"$@\"; }}\n{line}\n");
        let t = std::time::Instant::now();
        let out = Command::new("sh")
            .arg("-c")
            .arg(&script)
            .env("FOLIOSIM", BIN)
            .current_dir(&dir)
            .output()
            .expect("sh runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "README tour line failed: `{line}`\n{stderr}"
        );
        // What the tour promises: a second or less each on the reference
        // machine; a loaded test machine gets a generous margin.
        let secs = t.elapsed().as_secs_f64();
        assert!(secs < 30.0, "`{line}` took {secs:.1} s");
        if !line.contains('>') && !line.contains(" --out ") && !line.contains(" -o ") {
            assert!(!stdout.trim().is_empty(), "`{line}` printed nothing");
        }
        // README says of the compare line that p1+p2 cut pgpgin by about
        // three quarters.
        if line.contains("compare --set baseline --set p1+p2") {
            assert!(
                readme.contains("by about three quarters"),
                "README's words on the compare line changed: update this check"
            );
            let row = stdout
                .lines()
                .find(|l| l.starts_with("vmstat.pgpgin "))
                .unwrap_or_else(|| panic!("compare prints vmstat.pgpgin:\n{stdout}"));
            let pct: f64 = row
                .split_whitespace()
                .last()
                .and_then(|p| p.trim_end_matches('%').parse().ok())
                .unwrap_or_else(|| panic!("a change in percent: {row}"));
            assert!(
                (-85.0..=-65.0).contains(&pct),
                "README says about three quarters less pgpgin; compare says {pct}%"
            );
        }
    }
    assert!(dir.join("scn.json").is_file() || !readme.contains("> scn.json"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn readme_options_are_in_each_commands_help() {
    let readme = read("README.md");
    let mut bad = Vec::new();
    let mut seen = 0;
    for line in tour(&readme).iter().chain(inline_commands(&readme).iter()) {
        bad.extend(check_options("README.md", line));
        seen += 1;
    }
    // The main job's command line: `cargo run ... -- ARGS` runs `foliosim ARGS`.
    let main_job = code_lines(&readme)
        .into_iter()
        .find(|l| l.starts_with("cargo run --release -p foliosim-cli -- "))
        .expect("README shows the main job's cargo run line");
    let args = main_job.split(" -- ").nth(1).unwrap();
    bad.extend(check_options("README.md", &format!("foliosim {args}")));
    assert!(
        code_lines(&readme).contains(&"scripts/test"),
        "README shows the test command"
    );
    let t = root().join("scripts/test");
    assert!(t.is_file(), "scripts/test exists");
    assert!(seen >= 8, "README names its commands ({seen} found)");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn readme_machine_options_are_exactly_fio_helps() {
    let readme = read("README.md");
    let para = readme
        .split("\n\n")
        .find(|p| p.starts_with("Machine options"))
        .expect("README has its Machine options paragraph");
    let mut listed: Vec<String> = para
        .split('`')
        .skip(1)
        .step_by(2)
        .filter_map(option_name)
        .collect();
    listed.sort();
    listed.dedup();
    let fio = help(&["fio".into()]);
    // fio --help lists the machine options and fio's --output-format.
    let mut machine: Vec<String> = help_options(&fio)
        .into_iter()
        .filter(|o| o != "--output-format")
        .collect();
    machine.sort();
    machine.dedup();
    assert!(machine.len() > 10, "fio --help lists options: {machine:?}");
    let missing: Vec<_> = machine.iter().filter(|o| !listed.contains(o)).collect();
    let extra: Vec<_> = listed.iter().filter(|o| !machine.contains(o)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "README's machine options differ from `foliosim fio --help`: missing {missing:?}, not in help {extra:?}"
    );
    // "every workload command takes the same ones"
    for cmd in ["run", "mmap-probe", "replay"] {
        let h = help(&[cmd.into()]);
        for o in &machine {
            assert!(help_has(&h, o), "`foliosim {cmd} --help` lacks {o}");
        }
    }
}

#[test]
fn readme_kernel_presets_are_foliosim_variants() {
    let (code, out, err) = foliosim(&["variants"]);
    assert_eq!(code, 0, "{err}");
    let header: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    let from = header
        .iter()
        .position(|w| *w == "seed")
        .expect("seed column")
        + 1;
    let to = header
        .iter()
        .position(|w| *w == "subject")
        .expect("subject column");
    let releases = &header[from..to];
    assert!(releases.len() > 3, "{header:?}");
    let list = format!(
        "{} or {}",
        releases[..releases.len() - 1].join(", "),
        releases[releases.len() - 1]
    );
    let readme = read("README.md")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        readme.contains(&format!("release preset: {list};")),
        "README's --kernel presets are not `foliosim variants`'s: {list}"
    );
}

#[test]
fn docs_cli_commands_name_only_options_in_help() {
    let cli = read("docs/cli.md");
    let lines: Vec<&str> = code_lines(&cli)
        .into_iter()
        .filter(|l| l.starts_with("foliosim "))
        .collect();
    assert!(lines.len() > 20, "docs/cli.md lists the commands");
    let mut bad = Vec::new();
    for line in lines {
        bad.extend(check_options("docs/cli.md", line));
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn the_line_splitter_and_option_names() {
    assert_eq!(
        words(r#"foliosim run --usemem "-n 4 --random 256M" --swap zram:1G  # usemem"#),
        [
            "foliosim",
            "run",
            "--usemem",
            "-n 4 --random 256M",
            "--swap",
            "zram:1G"
        ]
    );
    assert_eq!(
        words("foliosim run a.toml --json > scn.json"),
        ["foliosim", "run", "a.toml", "--json"]
    );
    assert_eq!(option_name("[--format"), Some("--format".into()));
    assert_eq!(
        option_name("--memcg-limit=400M"),
        Some("--memcg-limit".into())
    );
    assert_eq!(option_name("-o"), Some("-o".into()));
    assert_eq!(option_name("-n 4 --random 256M"), None);
    assert_eq!(option_name("html|svg|png]"), None);
    let c = commands(&words("x compare --set a --json -- mmap-probe --file-size 4G")[1..]);
    assert_eq!(c[0].0, ["compare"]);
    assert_eq!(c[1].0, ["mmap-probe"]);
    assert_eq!(c[1].1, [("--file-size".to_string(), false)]);
    assert!(help_has("  --trace <FILE>", "--trace"));
    assert!(!help_has("  --trace-events <E>", "--trace"));
}
