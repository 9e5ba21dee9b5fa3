//! A generator's share of one run, in the manner of k6's execution
//! segments: share `index` of `count` sends every `count`-th slot of the
//! run's constant schedule (a Poisson stream at 1/`count` of the rate,
//! seeded apart), inserts every `count`-th new key and preloads every
//! `count`-th record, so that the `count` shares, run on as many machines,
//! are together the one run. Owns the arithmetic of shares; must not send
//! nor time anything.

use std::fmt;

/// Share `index` (from 0) of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub index: u64,
    pub count: u64,
}

impl Default for Segment {
    /// The whole run.
    fn default() -> Segment {
        Segment { index: 0, count: 1 }
    }
}

impl fmt::Display for Segment {
    /// As `--segment` takes it: `2/4` is the second of four.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index + 1, self.count)
    }
}

/// The most shares a run may be cut into.
pub const MAX_COUNT: u64 = 10_000;

impl Segment {
    /// Share `index` (from 0, as Kubernetes' `JOB_COMPLETION_INDEX`) of
    /// `count`.
    pub fn new(index: u64, count: u64) -> Result<Segment, String> {
        if count == 0 || count > MAX_COUNT {
            return Err(format!(
                "a run is cut into 1 to {MAX_COUNT} segments, not {count}"
            ));
        }
        if index >= count {
            return Err(format!(
                "segment index {index} is past the last of {count} (indexes run from 0 to {})",
                count - 1
            ));
        }
        Ok(Segment { index, count })
    }

    /// `I/N`, the I-th (from 1) of N shares (`units::share`).
    pub fn parse(s: &str) -> Result<Segment, String> {
        let (index, count) = crate::units::share(s)?;
        Segment::new(index, count)
    }

    /// The whole run, not a share of it.
    pub fn is_whole(&self) -> bool {
        self.count == 1
    }

    /// Of `lanes` = `count` × `threads` interleaved lanes over the run's
    /// constant schedule, the one thread `thread` of this share takes:
    /// slots `lane`, `lane + lanes`, ...
    pub fn lane(&self, thread: usize) -> u64 {
        self.index + self.count * thread as u64
    }

    /// This share of `n` things (connections, a rate's worth), at least
    /// `min`: the first `n % count` shares take one more.
    pub fn share_of(&self, n: usize, min: usize) -> usize {
        let (n64, c) = (n as u64, self.count);
        let mine = n64 / c + u64::from(self.index < n64 % c);
        (mine as usize).max(min)
    }

    /// This share's `k`-th item (from 0) of a sequence striped over the
    /// shares: `index + count × k`.
    pub fn stripe(&self, k: u64) -> u64 {
        self.index.saturating_add(self.count.saturating_mul(k))
    }

    /// Whether item `i` of a striped sequence is this share's.
    pub fn owns(&self, i: u64) -> bool {
        i % self.count == self.index
    }

    /// The seed this share draws its streams from: the run's own for the
    /// whole run, another for each share (shares must not send the same
    /// keys in the same order).
    pub fn seed(&self, seed: u64) -> u64 {
        if self.is_whole() {
            seed
        } else {
            seed ^ (self.index + 1).wrapping_mul(0xA076_1D64_78BD_642F)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_ith_of_n_and_refuses_the_rest() {
        assert_eq!(Segment::parse("2/4"), Ok(Segment { index: 1, count: 4 }));
        assert_eq!(Segment::parse("1/1"), Ok(Segment::default()));
        assert_eq!(Segment::parse("2/4").unwrap().to_string(), "2/4");
        for bad in ["0/4", "5/4", "4", "a/4", "1/0", "", "1/20000"] {
            assert!(Segment::parse(bad).is_err(), "{bad}");
        }
        assert!(Segment::new(3, 4).is_ok());
        assert!(Segment::new(4, 4).unwrap_err().contains("from 0 to 3"));
    }

    #[test]
    fn shares_together_are_the_whole() {
        for count in 1..=7u64 {
            for n in [0usize, 1, 5, 64, 257] {
                let total: usize = (0..count)
                    .map(|i| Segment::new(i, count).unwrap().share_of(n, 0))
                    .sum();
                assert_eq!(total, n, "{n} over {count}");
            }
            // Every slot of the schedule, every new key: exactly one share's.
            let threads = 3usize;
            let lanes = count * threads as u64;
            let mut seen = vec![0u32; 1000];
            for i in 0..count {
                let s = Segment::new(i, count).unwrap();
                for t in 0..threads {
                    let mut slot = s.lane(t);
                    while slot < 1000 {
                        seen[slot as usize] += 1;
                        slot += lanes;
                    }
                }
                for k in 0..(1000 / count) {
                    assert!(s.owns(s.stripe(k)));
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "{count} shares");
        }
        let a = Segment::new(0, 2).unwrap();
        let b = Segment::new(1, 2).unwrap();
        assert_ne!(a.seed(7), b.seed(7));
        assert_eq!(Segment::default().seed(7), 7);
    }
}
