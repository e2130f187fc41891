//! Values of fio options: directions, distributions, per-direction
//! lists, block-size ranges and splits, zones, booleans, integers, sizes
//! and times, with fio's syntax (options.c, parse.c).

use super::*;
pub(super) fn parse_rw(v: &str) -> Result<Rw, String> {
    Ok(match v {
        "read" => Rw::Read,
        "write" => Rw::Write,
        "randread" => Rw::RandRead,
        "randwrite" => Rw::RandWrite,
        "rw" | "readwrite" => Rw::ReadWrite,
        "randrw" => Rw::RandRw,
        "trim" => Rw::Trim,
        "randtrim" => Rw::RandTrim,
        "trimwrite" | "randtrimwrite" => {
            return Err(format!(
                "'{v}': trim-then-write workloads are not supported"
            ))
        }
        _ => {
            return Err(format!(
                "bad rw '{v}' (read, write, randread, randwrite, rw, readwrite, randrw)"
            ))
        }
    })
}

pub(super) fn parse_random_distribution(v: &str) -> Result<RandomDist, String> {
    let (kind, arg) = match v.split_once(':') {
        Some((k, a)) => (k, Some(a)),
        None => (v, None),
    };
    let num = |default: f64| -> Result<f64, String> {
        match arg {
            None => Ok(default),
            Some(a) => {
                if a.contains(':') {
                    return Err(format!("'{v}': a distribution center is not supported"));
                }
                a.parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| format!("bad random_distribution '{v}': '{a}' is not a number"))
            }
        }
    };
    match kind {
        "random" if arg.is_none() => Ok(RandomDist::Random),
        "zipf" => {
            let t = num(1.1)?;
            if t == 1.0 || t <= 0.0 {
                return Err(format!(
                    "bad random_distribution '{v}': zipf theta must be > 0 and != 1"
                ));
            }
            Ok(RandomDist::Zipf(t))
        }
        "pareto" => {
            let h = num(0.2)?;
            if h <= 0.0 || h >= 1.0 {
                return Err(format!(
                    "bad random_distribution '{v}': pareto h must be in (0, 1)"
                ));
            }
            Ok(RandomDist::Pareto(h))
        }
        "normal" => {
            let d = num(0.0)?;
            if !(0.0..100.0).contains(&d) {
                return Err(format!(
                    "bad random_distribution '{v}': normal deviation must be in [0, 100)"
                ));
            }
            Ok(RandomDist::Normal(d))
        }
        "zoned" | "zoned_abs" if arg.is_some() => Ok(if kind == "zoned" {
            RandomDist::Zoned
        } else {
            RandomDist::ZonedAbs
        }),
        _ => Err(format!(
            "bad random_distribution '{v}' (random, zipf[:theta], pareto[:h], normal[:dev], zoned:a/s:..., zoned_abs:a/size:...)"
        )),
    }
}

/// Split a per-direction value the way fio's handle_option() walks it:
/// each round cuts at the first ',', or failing that ':', or '-'. Empty
/// values (",8k") leave their direction alone, as in fio.
pub(super) fn split_values(v: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = v;
    loop {
        let cut = rest
            .find(',')
            .or_else(|| rest.find(':'))
            .or_else(|| rest.find('-'));
        match cut {
            Some(p) => {
                out.push(&rest[..p]);
                rest = &rest[p + 1..];
            }
            None => {
                out.push(rest);
                return out;
            }
        }
    }
}

pub(super) fn parse_per_ddir_with<T>(
    v: &str,
    f: impl Fn(&str) -> Result<T, String>,
) -> Result<Vec<Option<T>>, String> {
    let vals = split_values(v);
    if vals.len() > 3 {
        return Err(format!("'{v}': at most 3 values (read,write,trim)"));
    }
    vals.into_iter()
        .map(|s| {
            let s = s.trim();
            if s.is_empty() {
                Ok(None)
            } else {
                f(s).map(Some)
            }
        })
        .collect()
}

/// `bs=4k`, `bs=4k,8k`, and fio 3.33's reading of `bs=4k-16k` and
/// `bs=4k:16k`: read 4k, write (and trim) 16k -- not a range (bsrange is).
pub(super) fn parse_per_ddir(v: &str, kb: u64) -> Result<Vec<Option<u64>>, String> {
    parse_per_ddir_with(v, |s| parse_size(s, kb))
}

/// Store per-direction values like fio's val_store() rounds: value i goes
/// to direction i; the last value given also fills the directions after it.
pub(super) fn store_per_ddir<T: Copy + Default + PartialEq>(
    dst: &mut [T; 3],
    vals: Vec<Option<T>>,
    what: &str,
) -> Result<(), String> {
    let last = vals.len() - 1;
    for (i, v) in vals.into_iter().enumerate() {
        let Some(v) = v else { continue };
        if !what.is_empty() && v == T::default() {
            return Err(format!("{what} must be > 0"));
        }
        let upto = if i == last { 3 } else { i + 1 };
        for d in dst.iter_mut().take(upto).skip(i) {
            *d = v;
        }
    }
    Ok(())
}

/// fio's bsrange (FIO_OPT_RANGE): up to three ','-separated `lo-hi` (or
/// `lo:hi`) ranges, stored like [`store_per_ddir`]; reversed bounds swap.
pub(super) fn parse_bsrange(v: &str, kb: u64) -> Result<[Option<(u64, u64)>; 3], String> {
    let parts: Vec<&str> = v.split(',').collect();
    if parts.len() > 3 {
        return Err(format!("'{v}': at most 3 ranges (read,write,trim)"));
    }
    let mut vals = Vec::with_capacity(parts.len());
    for p in &parts {
        let p = p.trim();
        if p.is_empty() {
            vals.push(None);
            continue;
        }
        let Some((a, b)) = p.split_once('-').or_else(|| p.split_once(':')) else {
            return Err(format!("'{p}': a range is lo-hi"));
        };
        let (a, b) = (parse_size(a.trim(), kb)?, parse_size(b.trim(), kb)?);
        if a == 0 || b == 0 {
            return Err("block sizes must be > 0".into());
        }
        vals.push(Some((a.min(b), a.max(b))));
    }
    let mut out = [None; 3];
    let last = vals.len() - 1;
    for (i, v) in vals.into_iter().enumerate() {
        if v.is_none() {
            continue;
        }
        let upto = if i == last { 3 } else { i + 1 };
        for o in out.iter_mut().take(upto).skip(i) {
            *o = v;
        }
    }
    Ok(out)
}

/// fio's str_split_parse(): "r,w,t" per direction; "r,w" gives trim the
/// write part; no ',' gives all three the same.
pub(super) fn split_ddir_parts(v: &str) -> [&str; 3] {
    match v.split_once(',') {
        Some((r, rest)) => match rest.split_once(',') {
            Some((w, t)) => [r, w, t],
            None => [r, rest, rest],
        },
        None => [v, v, v],
    }
}

/// One direction of `bssplit=bs/perc:bs/perc:...` (fio's bssplit_ddir()):
/// None when empty. Entries without a percentage (or with 0, which fio
/// reads as "none given") share what the others leave of 100, each
/// getting `(100 - given) / missing`; the list is then sorted by
/// percentage, stably (glibc's qsort is a merge sort here).
pub(super) fn parse_bssplit(v: &str, kb: u64) -> Result<Option<Vec<BsSplit>>, String> {
    const MISSING: u32 = u32::MAX;
    let mut list = Vec::new();
    for entry in v.split(':') {
        if entry.is_empty() {
            break; // fio stops at the first empty entry
        }
        let (b, perc) = match entry.split_once('/') {
            Some((b, p)) => {
                // fio's atoi(): an empty percentage is 0, i.e. missing.
                let p: u32 = match p.trim() {
                    "" => 0,
                    t => t
                        .parse()
                        .map_err(|_| format!("'{entry}': bad percentage '{p}'"))?,
                };
                (b, if p == 0 { MISSING } else { p.min(100) })
            }
            None => (entry, MISSING),
        };
        let bs = parse_size(b.trim(), kb)?;
        if bs == 0 {
            return Err(format!("'{entry}': block size must be > 0"));
        }
        list.push(BsSplit { bs, perc });
        if list.len() > 64 {
            return Err(format!("'{v}': more than 64 bssplit entries"));
        }
    }
    if list.is_empty() {
        return Ok(None);
    }
    let missing = list.iter().filter(|b| b.perc == MISSING).count() as u32;
    let mut given: u32 = list
        .iter()
        .filter(|b| b.perc != MISSING)
        .map(|b| b.perc)
        .sum();
    if given > 100 {
        // fio refuses this only when two or more entries lack a
        // percentage; otherwise it wraps (100 - given) around.
        return Err(format!(
            "'{v}': bssplit percentages add up to {given} (more than 100)"
        ));
    }
    if missing > 0 {
        if missing == 1 && list.len() == 1 {
            given = 100;
        }
        for b in list.iter_mut().filter(|b| b.perc == MISSING) {
            b.perc = (100 - given) / missing;
        }
    }
    list.sort_by_key(|b| b.perc);
    Ok(Some(list))
}

/// `zoned:` / `zoned_abs:` zones for each direction (fio's
/// zone_split_ddir()): `access/size` pairs; access percentages must add up
/// to exactly 100, size percentages to at most 100 (missing ones share the
/// rest); zoned_abs sizes are byte counts.
pub(super) fn parse_zoned(v: &str, absolute: bool, kb: u64) -> Result<[Vec<ZoneSplit>; 3], String> {
    const MISSING: u8 = u8::MAX;
    let mut out: [Vec<ZoneSplit>; 3] = Default::default();
    for (d, part) in split_ddir_parts(v.trim()).into_iter().enumerate() {
        let mut list = Vec::new();
        for entry in part.split(':') {
            if entry.is_empty() {
                break;
            }
            let (a, rest) = match entry.split_once('/') {
                Some((a, r)) => (a, Some(r)),
                None => (entry, None),
            };
            let access = parse_int(a.trim(), 0, 100)
                .map_err(|e| format!("'{entry}': access percentage: {e}"))?
                as u8;
            let mut z = ZoneSplit {
                access_perc: access,
                size_perc: 0,
                size: 0,
            };
            match (rest, absolute) {
                (Some(r), true) => z.size = parse_size(r.trim(), kb)?,
                (Some(r), false) => {
                    let p: u64 = match r.trim() {
                        "" => 0,
                        t => t
                            .parse()
                            .map_err(|_| format!("'{entry}': bad size percentage '{r}'"))?,
                    };
                    z.size_perc = if p == 0 { MISSING } else { p.min(100) as u8 };
                }
                (None, true) => {}
                (None, false) => z.size_perc = MISSING,
            }
            list.push(z);
            if list.len() > 256 {
                return Err(format!("'{v}': too many zones"));
            }
        }
        if list.is_empty() {
            continue;
        }
        let access: u32 = list.iter().map(|z| z.access_perc as u32).sum();
        let smissing = list.iter().filter(|z| z.size_perc == MISSING).count() as u32;
        let mut sizes: u32 = list
            .iter()
            .filter(|z| z.size_perc != MISSING)
            .map(|z| z.size_perc as u32)
            .sum();
        if !absolute && sizes > 100 {
            return Err(format!(
                "'{v}': zone size percentages add up to {sizes} (more than 100)"
            ));
        }
        if access != 100 {
            return Err(format!(
                "'{v}': zone access percentages add up to {access}, not 100"
            ));
        }
        if !absolute && smissing > 0 {
            if smissing == 1 && list.len() == 1 {
                sizes = 100;
            }
            for z in list.iter_mut().filter(|z| z.size_perc == MISSING) {
                z.size_perc = ((100 - sizes) / smissing) as u8;
            }
        }
        out[d] = list;
    }
    Ok(out)
}

pub(super) fn parse_bool(v: Option<&str>) -> Result<bool, String> {
    match v {
        None | Some("") | Some("1") => Ok(true),
        Some("0") => Ok(false),
        Some(o) => Err(format!("bad boolean '{o}' (0 or 1)")),
    }
}

pub(super) fn parse_int(v: &str, min: u64, max: u64) -> Result<u64, String> {
    let n: u64 = v.parse().map_err(|_| format!("bad number '{v}'"))?;
    if n < min || n > max {
        return Err(format!("{n} out of range [{min}, {max}]"));
    }
    Ok(n)
}

/// Split "123abc" into ("123", "abc"); hex ("0x...") has no suffix.
pub(super) fn split_number(v: &str) -> Result<(u64, &str), String> {
    let v = v.trim();
    if let Some(h) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        return u64::from_str_radix(h, 16)
            .map(|n| (n, ""))
            .map_err(|_| format!("bad number '{v}'"));
    }
    let end = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    if end == 0 {
        return Err(format!("bad number '{v}'"));
    }
    let n = v[..end]
        .parse::<u64>()
        .map_err(|_| format!("number too large '{v}'"))?;
    Ok((n, &v[end..]))
}

/// A byte count with fio's suffixes (see the module comment for kb_base).
pub fn parse_size(v: &str, kb_base: u64) -> Result<u64, String> {
    let (n, suffix) = split_number(v).map_err(|_| format!("bad size '{v}'"))?;
    let s = suffix.to_ascii_lowercase();
    let other = if kb_base == 1024 { 1000 } else { 1024 };
    let (base, pow) = match s.as_str() {
        "" | "b" => (1, 0),
        "k" | "kb" => (kb_base, 1),
        "m" | "mb" => (kb_base, 2),
        "g" | "gb" => (kb_base, 3),
        "t" | "tb" => (kb_base, 4),
        "p" | "pb" => (kb_base, 5),
        "kib" => (other, 1),
        "mib" => (other, 2),
        "gib" => (other, 3),
        "tib" => (other, 4),
        "pib" => (other, 5),
        "%" => {
            return Err(format!(
                "'{v}': percentages are not supported, give a byte count"
            ))
        }
        "ki" | "mi" | "gi" | "ti" | "pi" => {
            return Err(format!(
                "'{v}': ambiguous suffix (fio's docs and parser disagree); use k/m/g or kib/mib/gib"
            ))
        }
        _ => return Err(format!("bad size '{v}'")),
    };
    let mult = base
        .checked_pow(pow)
        .ok_or_else(|| format!("size too large '{v}'"))?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("size too large '{v}'"))
}

/// A time in microseconds with fio's suffixes (us/usec, ms/msec, s, m, h,
/// d; not case sensitive). Without a suffix the unit is seconds for
/// `runtime`/`ramp_time` and microseconds for `thinktime`, as in fio.
pub fn parse_time_us(v: &str, default_seconds: bool) -> Result<u64, String> {
    let (n, suffix) = split_number(v).map_err(|_| format!("bad time '{v}'"))?;
    let mult: u64 = match suffix.to_ascii_lowercase().as_str() {
        "" => {
            if default_seconds {
                1_000_000
            } else {
                1
            }
        }
        "us" | "usec" => 1,
        "ms" | "msec" => 1000,
        "s" => 1_000_000,
        "m" => 60_000_000,
        "h" => 3_600_000_000,
        "d" => 86_400_000_000,
        _ => return Err(format!("bad time '{v}' (units: us, ms, s, m, h, d)")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("time too large '{v}'"))
}
