//! `foliosim report` end to end: real runs' JSON (fio --json,
//! --output-format=json, compare --json, a scenario) and a sweep table made
//! from real runs, through the command, then the page in headless
//! Chromium (Debian's package) over the DevTools protocol: no console
//! error, nothing fetched, every plot drawn, a screenshot kept.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

#[path = "../../../tests/require.rs"]
mod require;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_foliosim")
}

fn outdir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn foliosim(args: &[&str]) -> std::process::Output {
    Command::new(bin())
        .args(args)
        .output()
        .expect("foliosim runs")
}

fn ok(args: &[&str]) -> Vec<u8> {
    let o = foliosim(args);
    assert!(
        o.status.success(),
        "foliosim {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// A small strided mmap read through a memcg too small for it (seed
/// 000's shape, scaled down): refaults, reclaim, MGLRU generations.
const JOB: &[&str] = &[
    "--name=hot_ws",
    "--rw=read",
    "--bs=4K",
    "--size=48M",
    "--runtime=4",
    "--zonemode=strided",
    "--zonesize=4K",
    "--zonerange=16K",
    "--time_based",
    "--filename=hot_data.bin",
    "--ioengine=mmap",
    "--memcg-limit=32M",
];

/// The results a report reads, made by the command itself.
fn results(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut fio = |name: &str, extra: &[&str]| {
        let mut a = vec!["fio"];
        a.extend_from_slice(JOB);
        a.extend_from_slice(extra);
        let p = dir.join(name);
        std::fs::write(&p, ok(&a)).unwrap();
        out.push(p);
    };
    fio("mglru.json", &["--lru=mglru", "--timeline", "--json"]);
    fio(
        "classic.json",
        &["--lru=classic", "--timeline", "--output-format=json"],
    );
    let mut a = vec![
        "compare",
        "--json",
        "--set",
        "mglru",
        "--set",
        "mglru,pf-set-active",
        "--",
        "fio",
    ];
    a.extend_from_slice(JOB);
    a.push("--timeline");
    let p = dir.join("compare.json");
    std::fs::write(&p, ok(&a)).unwrap();
    out.push(p);
    // A sweep's table (memcg size x lru, 2 repeats) in the sweep's schema.
    let mut csv = String::from(
        "point,repeat,seed,param.memcg_limit,param.lru,memcg.workingset_refault_file,memcg.pgpgin,memcg.pgmajfault,memcg.pgscan_direct,vmstat.pgpgin,elapsed_s\n",
    );
    let mut point = 0;
    for lim in ["16M", "24M", "48M"] {
        for lru in ["classic", "mglru"] {
            for rep in 0..2u32 {
                let seed = (rep + 1).to_string();
                // Zipf-skewed random reads of a file larger than the group.
                let mut a = vec![
                    "fio",
                    "--name=ws",
                    "--rw=randread",
                    "--bs=4K",
                    "--size=64M",
                    "--number_ios=30000",
                    "--random_distribution=zipf:0.8",
                    "--filename=d",
                    "--ioengine=psync",
                    "--randrepeat=0",
                    "--json",
                ];
                let l = format!("--memcg-limit={lim}");
                let r = format!("--lru={lru}");
                a.extend([l.as_str(), r.as_str(), "--seed", seed.as_str()]);
                let v: Value = serde_json::from_slice(&ok(&a)).unwrap();
                let m = |k: &str| v["memcg"][k].as_u64().unwrap();
                csv.push_str(&format!(
                    "{point},{rep},{seed},{lim},{lru},{},{},{},{},{},{}\n",
                    m("workingset_refault_file"),
                    m("pgpgin"),
                    m("pgmajfault"),
                    m("pgscan_direct"),
                    v["vmstat"]["pgpgin"].as_u64().unwrap(),
                    v["elapsed_ns"].as_u64().unwrap() as f64 / 1e9
                ));
            }
            point += 1;
        }
    }
    let p = dir.join("sweep.csv");
    std::fs::write(&p, csv).unwrap();
    out.push(p);
    out
}

fn report(dir: &Path, inputs: &[PathBuf], extra: &[&str], out: &str) -> PathBuf {
    let o = dir.join(out);
    let mut a: Vec<String> = vec!["report".into()];
    a.extend(inputs.iter().map(|p| p.display().to_string()));
    a.extend(["-o".into(), o.display().to_string()]);
    a.extend(extra.iter().map(|s| s.to_string()));
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    ok(&a);
    o
}

#[test]
fn the_page_is_self_contained_and_repeats_byte_for_byte() {
    let dir = outdir("report-page");
    let inputs = results(&dir);
    // The timeline carries the memcg's usage (the usage plot): charged
    // pages, never over the 32M limit, never none while the job reads.
    let run: Value = serde_json::from_slice(&std::fs::read(&inputs[0]).unwrap()).unwrap();
    let tl = run["timeline"].as_array().unwrap();
    assert_eq!(tl.len(), 4);
    for s in tl {
        let u = s["memcg"]["usage_in_bytes"].as_u64().unwrap();
        assert!(u > 0 && u <= 32 << 20, "{u}");
    }
    let a = std::fs::read_to_string(report(&dir, &inputs, &[], "a.html")).unwrap();
    let b = std::fs::read_to_string(report(&dir, &inputs, &[], "b.html")).unwrap();
    assert!(a == b, "same inputs, different pages");
    // Nothing to fetch: no script, stylesheet link, image or frame source,
    // and no URL but SVG's namespace name.
    for bad in ["<script", "<link", "src=", "@import", "url("] {
        assert!(!a.contains(bad), "{bad} in the page");
    }
    let urls = a.matches("http").count();
    assert_eq!(
        urls,
        a.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
    );
    // The kernel's names where people look for them.
    for s in [
        "Run: mglru",
        "Run: classic",
        "Run: mglru,pf-set-active",
        "Sweep: sweep",
        "workingset_refault_file",
        "MGLRU generation sizes",
        "memcg usage",
        "memory.stat (the workload",
        "/proc/vmstat (the machine)",
        "pgpgin over memcg_limit and lru",
    ] {
        assert!(a.contains(s), "no {s:?} in the page");
    }
}

#[test]
fn plots_as_files_svg_and_png() {
    let dir = outdir("report-files");
    let inputs = results(&dir);
    let svg = report(&dir, &inputs[..1], &["--format", "svg"], "svg");
    let png = report(
        &dir,
        &inputs[..1],
        &["--format", "png", "--scale", "1"],
        "png",
    );
    let names = |d: &Path| {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    };
    let (s, p) = (names(&svg), names(&png));
    assert!(s.len() >= 5, "{s:?}");
    assert!(s.iter().any(|n| n.ends_with("-mglru-lru-gen.svg")), "{s:?}");
    assert_eq!(
        s.iter().map(|n| n.replace(".svg", "")).collect::<Vec<_>>(),
        p.iter().map(|n| n.replace(".png", "")).collect::<Vec<_>>()
    );
    for n in &p {
        let b = std::fs::read(png.join(n)).unwrap();
        assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n", "{n}");
    }
    let again = report(
        &dir,
        &inputs[..1],
        &["--format", "png", "--scale", "1"],
        "png2",
    );
    for n in &p {
        assert!(
            std::fs::read(png.join(n)).unwrap() == std::fs::read(again.join(n)).unwrap(),
            "{n} differs"
        );
    }
}

#[test]
fn bad_inputs_get_one_line_and_exit_2() {
    let dir = outdir("report-bad");
    let notjson = dir.join("x.json");
    std::fs::write(&notjson, "[1,2]").unwrap();
    let csv = dir.join("s.csv");
    std::fs::write(
        &csv,
        "point,repeat,param.a,memcg.pgpgin\n0,0,1,5\n1,0,2,7\n",
    )
    .unwrap();
    let out = dir.join("o.html").display().to_string();
    let cases: Vec<(Vec<String>, String)> = vec![
        (
            vec![dir.join("none.json").display().to_string()],
            format!("{}: No such file", dir.join("none.json").display()),
        ),
        (
            vec![notjson.display().to_string()],
            format!("{}: not a foliosim result", notjson.display()),
        ),
        (
            vec![
                csv.display().to_string(),
                "--metric".into(),
                "pgpgout".into(),
            ],
            "--metric: 'pgpgout' is not a result column of s (memcg.pgpgin)".into(),
        ),
        (
            vec![csv.display().to_string(), "--format".into(), "pdf".into()],
            "--format: 'pdf' is not html, svg or png".into(),
        ),
    ];
    for (args, want) in cases {
        let mut a = vec!["report".to_string()];
        a.extend(args);
        a.extend(["-o".into(), out.clone()]);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let o = foliosim(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{a:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with(&format!("foliosim: {want}")),
            "{a:?}: {err}"
        );
    }
}

// ---- headless Chromium over the DevTools protocol (--remote-debugging-pipe)

fn find_chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("FOLIOSIM_CHROMIUM") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser"]
        .iter()
        .flat_map(|n| std::env::split_paths(&path).map(move |d| d.join(n)))
        .find(|p| p.is_file())
}

/// Chromium speaking CDP on fds 3 (its input) and 4 (its output): no
/// port, nothing on the network.
struct Browser {
    child: std::process::Child,
    to: std::io::PipeWriter,
    from: mpsc::Receiver<Value>,
    next_id: u64,
    /// Events seen so far, in order.
    events: Vec<Value>,
    deadline: Instant,
}

impl Browser {
    fn start(exe: &Path, profile: &Path) -> Browser {
        use std::os::fd::AsRawFd;
        use std::os::unix::process::CommandExt;
        let (cdp_in_r, cdp_in_w) = std::io::pipe().unwrap();
        let (cdp_out_r, cdp_out_w) = std::io::pipe().unwrap();
        let (r, w) = (cdp_in_r.as_raw_fd(), cdp_out_w.as_raw_fd());
        let mut cmd = Command::new(exe);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--remote-debugging-pipe",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                // Above 4 first, so that dup2 never meets its own source.
                let a = libc::fcntl(r, libc::F_DUPFD_CLOEXEC, 10);
                let b = libc::fcntl(w, libc::F_DUPFD_CLOEXEC, 10);
                if a < 0 || b < 0 || libc::dup2(a, 3) < 0 || libc::dup2(b, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("chromium starts");
        drop((cdp_in_r, cdp_out_w));
        let (tx, rx) = mpsc::channel();
        let mut from = cdp_out_r;
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 65536];
            while let Ok(n) = from.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
                while let Some(i) = buf.iter().position(|&b| b == 0) {
                    let msg: Vec<u8> = buf.drain(..=i).collect();
                    if let Ok(v) = serde_json::from_slice(&msg[..msg.len() - 1]) {
                        if tx.send(v).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Browser {
            child,
            to: cdp_in_w,
            from: rx,
            next_id: 0,
            events: Vec::new(),
            deadline: Instant::now() + Duration::from_secs(120),
        }
    }

    fn recv(&mut self) -> Value {
        let left = self.deadline.saturating_duration_since(Instant::now());
        self.from
            .recv_timeout(left)
            .expect("chromium stopped answering the DevTools protocol (or took over 120 s)")
    }

    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut m = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            m["sessionId"] = s.into();
        }
        let mut bytes = serde_json::to_vec(&m).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).unwrap();
        loop {
            let v = self.recv();
            if v["id"].as_u64() == Some(id) {
                assert!(v.get("error").is_none(), "{method}: {}", v["error"]);
                return v["result"].clone();
            }
            self.events.push(v);
        }
    }

    fn wait_event(&mut self, method: &str) {
        if self.events.iter().any(|e| e["method"] == method) {
            return;
        }
        loop {
            let v = self.recv();
            let hit = v["method"] == method;
            self.events.push(v);
            if hit {
                return;
            }
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Chromium, or None where a developer said to skip (never in CI).
fn chromium_or_skip(test: &str) -> Option<PathBuf> {
    if let Some(exe) = find_chromium() {
        return Some(exe);
    }
    // In CI the test fails; a developer may skip it only by saying so.
    let ci = require::in_ci();
    if !ci && std::env::var("FOLIOSIM_SKIP_CHROMIUM").as_deref() == Ok("1") {
        eprintln!("SKIPPED {test}: no chromium (FOLIOSIM_SKIP_CHROMIUM=1)");
        return None;
    }
    panic!("no chromium on PATH: install Debian's package (apt-get install -y chromium; .ci/run does), \
            or point FOLIOSIM_CHROMIUM at one; to skip locally, FOLIOSIM_SKIP_CHROMIUM=1");
}

/// What Chromium made of a page: each plot's size and marks, the
/// problems it reported (console errors and warnings, exceptions, any
/// request but the page's own), and a full-page screenshot.
struct Seen {
    plots: Vec<Value>,
    problems: Vec<String>,
    png: Vec<u8>,
}

fn open_page(exe: &Path, dir: &Path, page: &Path) -> Seen {
    let url = format!("file://{}", page.display());
    let mut b = Browser::start(exe, &dir.join("profile"));
    let t = b.call(None, "Target.createTarget", json!({ "url": "about:blank" }));
    let target = t["targetId"].as_str().unwrap().to_string();
    let s = b.call(
        None,
        "Target.attachToTarget",
        json!({ "targetId": target, "flatten": true }),
    );
    let sid = s["sessionId"].as_str().unwrap().to_string();
    let sid = Some(sid.as_str());
    for m in [
        "Runtime.enable",
        "Log.enable",
        "Network.enable",
        "Page.enable",
    ] {
        b.call(sid, m, json!({}));
    }
    b.call(
        sid,
        "Emulation.setDeviceMetricsOverride",
        json!({ "width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": false }),
    );
    b.call(sid, "Page.navigate", json!({ "url": url }));
    b.wait_event("Page.loadEventFired");
    let probe = r#"(() => {
        const figs = [...document.querySelectorAll('figure.plot')];
        return {
            height: document.documentElement.scrollHeight,
            plots: figs.map(f => {
                const s = f.querySelector('svg');
                if (!s) return { id: f.id, w: 0, h: 0, marks: 0, texts: 0 };
                const r = s.getBoundingClientRect();
                return {
                    id: f.id, w: r.width, h: r.height,
                    marks: s.querySelectorAll('rect,polyline,path,line,circle,polygon').length,
                    texts: [...s.querySelectorAll('text')].filter(t => t.getBBox().width > 0).length,
                };
            }),
        };
    })()"#;
    let v = b.call(
        sid,
        "Runtime.evaluate",
        json!({ "expression": probe, "returnByValue": true }),
    );
    let v = &v["result"]["value"];
    let plots = v["plots"].as_array().expect("the probe ran").clone();
    let height = v["height"].as_f64().unwrap().min(16000.0);
    let shot = b.call(
        sid,
        "Page.captureScreenshot",
        json!({
            "format": "png", "captureBeyondViewport": true,
            "clip": { "x": 0, "y": 0, "width": 1400, "height": height, "scale": 1 },
        }),
    );
    use base64::Engine;
    let png = base64::engine::general_purpose::STANDARD
        .decode(shot["data"].as_str().unwrap())
        .unwrap();
    let _ = b.call(None, "Browser.close", json!({}));

    let mut problems: Vec<String> = Vec::new();
    for e in &b.events {
        let p = &e["params"];
        match e["method"].as_str().unwrap_or("") {
            "Runtime.consoleAPICalled"
                if matches!(p["type"].as_str(), Some("error" | "assert" | "warning")) =>
            {
                problems.push(format!("console {}: {}", p["type"], p["args"]))
            }
            "Runtime.exceptionThrown" => {
                problems.push(format!("exception: {}", p["exceptionDetails"]))
            }
            "Log.entryAdded"
                if matches!(p["entry"]["level"].as_str(), Some("error" | "warning")) =>
            {
                problems.push(format!("log: {}", p["entry"]))
            }
            "Network.requestWillBeSent" if p["request"]["url"] != url.as_str() => {
                problems.push(format!("fetched {}", p["request"]["url"]))
            }
            _ => {}
        }
    }
    // The page itself was requested: network events are being seen.
    if !b
        .events
        .iter()
        .any(|e| e["method"] == "Network.requestWillBeSent")
    {
        problems.push("no request seen, not even the page's".into());
    }
    Seen {
        plots,
        problems,
        png,
    }
}

#[test]
fn the_page_renders_in_headless_chromium() {
    let Some(exe) = chromium_or_skip("the_page_renders_in_headless_chromium") else {
        return;
    };
    let dir = outdir("report-chromium");
    let inputs = results(&dir);
    let page = report(&dir, &inputs, &[], "report.html");
    let expected_plots = std::fs::read_to_string(&page)
        .unwrap()
        .matches("<figure class=\"plot\"")
        .count();
    assert!(expected_plots >= 20, "{expected_plots} plots");
    let seen = open_page(&exe, &dir, &page);
    assert_eq!(&seen.png[..4], b"\x89PNG");
    let shot = dir.join("report.png");
    std::fs::write(&shot, &seen.png).unwrap();
    eprintln!("screenshot: {}", shot.display());
    assert!(seen.problems.is_empty(), "{:#?}", seen.problems);
    assert_eq!(seen.plots.len(), expected_plots);
    for p in &seen.plots {
        let (w, h) = (p["w"].as_f64().unwrap(), p["h"].as_f64().unwrap());
        // Drawn: laid out at its size, with marks and a title and axis labels.
        assert!(w >= 300.0 && h >= 200.0, "{p}");
        assert!(p["marks"].as_u64().unwrap() >= 8, "{p}");
        assert!(p["texts"].as_u64().unwrap() >= 4, "{p}");
    }
}

/// The checks above can fail: a page with a script error, a fetch and an
/// empty plot is caught on each count.
#[test]
fn the_chromium_check_sees_errors_fetches_and_empty_plots() {
    let Some(exe) = chromium_or_skip("the_chromium_check_sees_errors_fetches_and_empty_plots")
    else {
        return;
    };
    let dir = outdir("report-chromium-neg");
    let page = dir.join("bad.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body>\
        <figure class=\"plot\" id=\"plot-empty\"><svg width=\"400\" height=\"300\"></svg></figure>\
        <img src=\"http://127.0.0.1:9/x.png\">\
        <script>console.error('broken'); undefined_function();</script></body></html>",
    )
    .unwrap();
    let seen = open_page(&exe, &dir, &page);
    let p = seen.problems.join("\n");
    assert!(p.contains("console \"error\""), "{p}");
    assert!(p.contains("exception"), "{p}");
    assert!(p.contains("fetched \"http://127.0.0.1:9/x.png\""), "{p}");
    assert_eq!(seen.plots.len(), 1);
    assert_eq!(seen.plots[0]["marks"], 0);
}
