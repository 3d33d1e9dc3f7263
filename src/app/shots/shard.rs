//! `-shard I/N`: which shots of a list one process renders.

use crate::base::error::{Error, Result};
use std::fmt;

/// Shard `index` of `count`: the shots whose index ≡ `index` (mod `count`).
///
/// The shots of a shard depend only on the shot indices, never on timing or on the order of
/// rendering, so the union of shards `0/N … N−1/N` is exactly the unsharded list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// The whole list (`0/1`).
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// Parses `I/N` with 0 ≤ I < N; errors name the flag `-shard`.
    pub fn parse(text: &str) -> Result<Shard> {
        let bad = |why: &str| Error::flag("-shard", format!("expected I/N with 0 <= I < N, got '{text}' ({why})"));
        let (i, n) = text.split_once('/').ok_or_else(|| bad("no '/'"))?;
        let index: usize = i.trim().parse().map_err(|_| bad("I is not a non-negative integer"))?;
        let count: usize = n.trim().parse().map_err(|_| bad("N is not a non-negative integer"))?;
        if count == 0 {
            return Err(bad("N must be at least 1"));
        }
        if index >= count {
            return Err(bad("I must be less than N"));
        }
        Ok(Shard { index, count })
    }

    /// Whether shot `shot` (0-based index in the list) belongs to this shard.
    pub fn contains(&self, shot: usize) -> bool {
        shot % self.count == self.index
    }

    /// Whether this is the whole list.
    pub fn is_all(&self) -> bool {
        self.count == 1
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::Shard;

    #[test]
    fn parses_and_partitions() {
        let s = Shard::parse("2/4").unwrap();
        assert_eq!(s, Shard { index: 2, count: 4 });
        assert_eq!(s.to_string(), "2/4");
        let mine: Vec<usize> = (0..11).filter(|&k| s.contains(k)).collect();
        assert_eq!(mine, vec![2, 6, 10]);
        // every shot in exactly one shard
        for k in 0..50 {
            let owners = (0..4).filter(|&i| Shard { index: i, count: 4 }.contains(k)).count();
            assert_eq!(owners, 1);
        }
    }

    #[test]
    fn rejects_bad_text() {
        for bad in ["4/4", "1/0", "-1/4", "a/4", "1", "1/", "/4", "1/4/2"] {
            let e = Shard::parse(bad).unwrap_err().to_string();
            assert!(e.contains("-shard") && e.contains(bad), "{bad}: {e}");
        }
    }
}
