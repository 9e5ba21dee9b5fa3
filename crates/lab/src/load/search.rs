//! Where a sweep tries next, and what it has learned: the rate doubles
//! from a start until a trial fails, then bisects between the highest
//! pass and the lowest failure; once the bracket is narrow enough, the
//! two rates that decide it are run again until each has a majority of
//! `repeats` runs (one short trial at a rate is a coin toss where rare
//! tail events decide a p99). A rate run more than once is judged on all
//! its runs together when the sweep says how they did (their merged
//! latencies: a p99 from three times the requests, and three times the
//! rare stalls that decide it), else by its runs' majority; a rate whose
//! runs are tied has none and is run again before anything else, so a
//! repeat that overturns a rate reopens the bisection only once its
//! result says so. The breaking point is the highest rate whose majority
//! passed below the lowest whose majority failed; its range is the spread
//! of what each round of repeats alone would have said. Owns the search;
//! must not run trials.

/// The next rate of a plain bisection, or `None` when it is over. `pass`
/// is the highest passing rate, `fail` the lowest failing one.
pub fn next_rate(
    pass: Option<f64>,
    fail: Option<f64>,
    start: f64,
    max: f64,
    precision: f64,
) -> Option<f64> {
    match (pass, fail) {
        (None, None) => Some(start.min(max)),
        (Some(p), None) => (p < max).then(|| (p * 2.0).min(max)),
        // Down to a hundredth of the start (and 1 req/s): a target that
        // fails there fails at any rate worth sweeping.
        (None, Some(f)) => {
            let r = f / 2.0;
            (r >= 1.0 && r >= start / 100.0).then_some(r)
        }
        (Some(p), Some(f)) => ((f - p) / p > precision).then(|| (p + f) / 2.0),
    }
}

/// A sweep's search.
#[derive(Clone, Debug)]
pub struct Search {
    pub start: f64,
    pub max: f64,
    pub precision: f64,
    /// Runs of each deciding rate.
    pub repeats: u32,
    /// Every run: its rate and whether it met the SLO, in order.
    pub runs: Vec<(f64, bool)>,
    /// Rates run more than once, judged on all their runs together.
    pub pooled: Vec<(f64, bool)>,
}

impl Search {
    pub fn new(start: f64, max: f64, precision: f64, repeats: u32) -> Search {
        Search {
            start,
            max,
            precision,
            repeats: repeats.max(1),
            runs: Vec::new(),
            pooled: Vec::new(),
        }
    }

    pub fn record(&mut self, rate: f64, met: bool) {
        self.runs.push((rate, met));
    }

    /// Whether all the runs at `rate` so far, taken together, met the SLO.
    pub fn record_pooled(&mut self, rate: f64, met: bool) {
        self.pooled.retain(|(r, _)| *r != rate);
        self.pooled.push((rate, met));
    }

    fn pooled(&self, rate: f64) -> Option<bool> {
        (self.at(rate).len() > 1)
            .then(|| self.pooled.iter().find(|(r, _)| *r == rate).map(|p| p.1))
            .flatten()
    }

    /// The runs at `rate`, in order.
    pub fn at(&self, rate: f64) -> Vec<bool> {
        self.runs
            .iter()
            .filter(|(r, _)| *r == rate)
            .map(|(_, m)| *m)
            .collect()
    }

    /// A rate's result: all its runs together, when they were judged so,
    /// else their majority; `None` for a tie (or no run).
    pub fn result(&self, rate: f64) -> Option<bool> {
        if let Some(met) = self.pooled(rate) {
            return Some(met);
        }
        let runs = self.at(rate);
        let passed = runs.iter().filter(|m| **m).count();
        let failed = runs.len() - passed;
        match passed.cmp(&failed) {
            std::cmp::Ordering::Greater => Some(true),
            std::cmp::Ordering::Less => Some(false),
            std::cmp::Ordering::Equal => None,
        }
    }

    fn rates(&self) -> Vec<f64> {
        let mut r: Vec<f64> = self.runs.iter().map(|(r, _)| *r).collect();
        r.sort_by(f64::total_cmp);
        r.dedup();
        r
    }

    /// The lowest rate that failed, and the highest below it that passed.
    pub fn bracket(&self) -> (Option<f64>, Option<f64>) {
        let rates = self.rates();
        let fail = rates
            .iter()
            .copied()
            .find(|&r| self.result(r) == Some(false));
        let pass = rates
            .iter()
            .copied()
            .rfind(|&r| fail.is_none_or(|f| r < f) && self.result(r) == Some(true));
        (pass, fail)
    }

    /// Whether `rate` has its majority for good (no run left could turn
    /// it), or all its runs. Runs judged together need all of them.
    fn settled(&self, rate: f64) -> bool {
        let runs = self.at(rate);
        if self.pooled(rate).is_some() {
            return runs.len() as u32 >= self.repeats;
        }
        let passed = runs.iter().filter(|m| **m).count() as u32;
        let failed = runs.len() as u32 - passed;
        let half = self.repeats / 2;
        runs.len() as u32 >= self.repeats || passed > half || failed > half
    }

    /// The next rate to run, or `None` when the search is over.
    pub fn next(&self) -> Option<f64> {
        if self.runs.is_empty() {
            return Some(self.start.min(self.max));
        }
        // The first run meets a cold target (connections, caches, the
        // first files): a failure there runs once more, and the second
        // decides, rather than sending the whole search below it.
        if let [(r, false)] = self.runs[..] {
            return Some(r);
        }
        // A tie is broken by one more run before anything else.
        if let Some(r) = self.rates().into_iter().find(|&r| self.result(r).is_none()) {
            return Some(r);
        }
        let (pass, fail) = self.bracket();
        if let Some(r) = next_rate(pass, fail, self.start, self.max, self.precision) {
            return Some(r);
        }
        [pass, fail]
            .into_iter()
            .flatten()
            .find(|&r| !self.settled(r))
    }

    /// The breaking point, and the range of what each round of repeats
    /// alone says (lowest, highest, rounds) when the deciding rates were
    /// run more than once: round k takes the k-th run of the two deciding
    /// rates (the lowest failure's when it passed, else the highest
    /// pass's when it passed, else the next passing rate below).
    pub fn breaking_point(&self) -> (Option<f64>, Option<(f64, f64, u32)>) {
        let (pass, fail) = self.bracket();
        let (Some(p), Some(f)) = (pass, fail) else {
            return (pass, None);
        };
        let (rp, rf) = (self.at(p), self.at(f));
        let rounds = rp.len().max(rf.len());
        if rounds < 2 {
            return (pass, None);
        }
        let below = self
            .rates()
            .into_iter()
            .rfind(|&r| r < p && self.result(r) == Some(true));
        let mut lo = f64::INFINITY;
        let mut hi: f64 = 0.0;
        for k in 0..rounds {
            let bp = if rf.get(k).copied().unwrap_or(false) {
                Some(f)
            } else if rp.get(k).copied().unwrap_or(true) {
                Some(p)
            } else {
                below
            };
            if let Some(b) = bp {
                lo = lo.min(b);
                hi = hi.max(b);
            }
        }
        (pass, lo.is_finite().then_some((lo, hi, rounds as u32)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drive `next_rate` against a server that passes below `limit`.
    fn bisect(limit: f64, start: f64, max: f64) -> (Option<f64>, Vec<f64>) {
        let (mut pass, mut fail) = (None, None);
        let mut tried = Vec::new();
        while let Some(r) = next_rate(pass, fail, start, max, 0.05) {
            tried.push(r);
            if r <= limit {
                pass = Some(pass.map_or(r, |p: f64| p.max(r)));
            } else {
                fail = Some(fail.map_or(r, |f: f64| f.min(r)));
            }
            assert!(tried.len() < 40, "the search must end: {tried:?}");
        }
        (pass, tried)
    }

    #[test]
    fn doubles_then_bisects_to_within_the_precision() {
        let (pass, tried) = bisect(41_000.0, 1000.0, 1e6);
        assert_eq!(
            &tried[..7],
            &[1000.0, 2000.0, 4000.0, 8000.0, 16000.0, 32000.0, 64000.0]
        );
        let p = pass.unwrap();
        assert!((41_000.0 / 1.05..=41_000.0).contains(&p), "{p}");
    }

    #[test]
    fn halves_when_the_start_fails_and_stops_at_the_ceiling() {
        let (pass, tried) = bisect(300.0, 1000.0, 1e6);
        assert_eq!(&tried[..3], &[1000.0, 500.0, 250.0]);
        assert!(pass.unwrap() > 280.0);
        let (pass, tried) = bisect(1e9, 1000.0, 5000.0);
        assert_eq!(tried, vec![1000.0, 2000.0, 4000.0, 5000.0]);
        assert_eq!(pass, Some(5000.0));
    }

    /// Run a search against `met(rate, run)`.
    fn search(mut met: impl FnMut(f64, usize) -> bool) -> Search {
        let mut s = Search::new(1000.0, 1e6, 0.1, 3);
        while let Some(r) = s.next() {
            let k = s.at(r).len();
            s.record(r, met(r, k));
            assert!(s.runs.len() < 60, "{:?}", s.runs);
        }
        s
    }

    #[test]
    fn the_deciding_rates_are_repeated_to_a_majority() {
        // A steady target: each deciding rate settles after two runs.
        let s = search(|r, _| r <= 5000.0);
        let (bp, range) = s.breaking_point();
        let p = bp.unwrap();
        assert!((4500.0..=5000.0).contains(&p), "{p}");
        let (pass, fail) = s.bracket();
        assert_eq!(s.at(pass.unwrap()).len(), 2);
        assert_eq!(s.at(fail.unwrap()).len(), 2);
        assert_eq!(range, Some((p, p, 2)));
    }

    #[test]
    fn a_lucky_pass_is_overturned_and_the_bisection_reopens() {
        // 6,000 passes on its first run only (a rare tail missed once).
        let s = search(|r, k| r <= 4000.0 || (r == 6000.0 && k == 0));
        let (bp, range) = s.breaking_point();
        let p = bp.unwrap();
        assert!(p <= 4000.0 && p > 3500.0, "{p} {:?}", s.runs);
        assert_eq!(s.result(6000.0), Some(false));
        assert!(range.is_some());
        // A first failure on a cold target is run again, and a tie once
        // more.
        let s = search(|r, k| !(r == 1000.0 && k == 0) && r <= 3000.0);
        assert_eq!(
            &s.runs[..3],
            &[(1000.0, false), (1000.0, true), (1000.0, true)]
        );
        assert!(s.breaking_point().0.unwrap() > 2500.0);
    }

    #[test]
    fn a_rare_failure_below_the_limit_is_outvoted() {
        // 8,000 fails on its first run only (a flush in that trial); the
        // limit is 14,000.
        let s = search(|r, k| r <= 14_000.0 && !(r == 8000.0 && k == 0));
        assert_eq!(s.at(8000.0), vec![false, true, true]);
        let bp = s.breaking_point().0.unwrap();
        assert!((12_500.0..=14_000.0).contains(&bp), "{bp} {:?}", s.runs);
    }

    #[test]
    fn runs_judged_together_decide_a_rate() {
        // 6,000 fails once in three alone, but its runs together fail
        // (one stall in 30 s is more than the SLO allows): it fails.
        let mut s = Search::new(1000.0, 1e6, 0.1, 3);
        while let Some(r) = s.next() {
            let k = s.at(r).len();
            s.record(r, r < 6000.0 || (r == 6000.0 && k != 1));
            if k >= 1 {
                s.record_pooled(r, r < 6000.0);
            }
            assert!(s.runs.len() < 60, "{:?}", s.runs);
        }
        assert_eq!(s.at(6000.0).len(), 3, "{:?}", s.runs);
        assert_eq!(s.result(6000.0), Some(false));
        let bp = s.breaking_point().0.unwrap();
        assert!((5000.0..6000.0).contains(&bp), "{bp} {:?}", s.runs);
    }

    #[test]
    fn a_flaky_boundary_reports_its_range() {
        // 4,500 passes one time in two: the range shows it.
        let s = search(|r, k| r <= 4000.0 || (r <= 4500.0 && k % 2 == 0));
        let (_, range) = s.breaking_point();
        let (lo, hi, n) = range.unwrap();
        assert!(lo < hi, "{:?} {:?}", range, s.runs);
        assert!(n >= 2);
    }
}
