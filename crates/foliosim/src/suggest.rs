//! "Did you mean": the nearest of a list of valid names to a mistyped
//! one, for the one-line errors of bad input.

/// Edit distance (insertions, deletions, substitutions) of two names.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The name in `valid` nearest to `typed`, when near enough to be a typo:
/// at most a third of its length away (two edits for short names). The
/// first of equally near names wins, so the answer is deterministic.
pub fn nearest<'a>(typed: &str, valid: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (typed.chars().count() / 3).max(2);
    let mut best: Option<(usize, &str)> = None;
    for v in valid {
        let d = distance(typed, v);
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, v));
        }
    }
    best.map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_takes_typos_only() {
        let opts = ["memcg-limit", "memory", "seed"];
        assert_eq!(nearest("memcg-limt", opts), Some("memcg-limit"));
        assert_eq!(nearest("memroy", opts), Some("memory"));
        assert_eq!(nearest("sed", opts), Some("seed"));
        assert_eq!(nearest("bandwidth", opts), None);
        assert_eq!(distance("kitten", "sitting"), 3);
    }
}
