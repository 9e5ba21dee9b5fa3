//! A CPU server's stalls (a `workers` stage's `stalls`): the time a
//! service takes when the server loses its core now and then. Owns the
//! stretching of one service; must not queue requests (the stage does).

use super::{serve, StageStats};
use crate::dist::Sampler;
use crate::rng::SimRng;

/// A CPU server's stalls at run time: their rate per nanosecond, their
/// lengths, and the share of the time a server is away.
pub(super) struct StallRt {
    pub(super) per_ns: f64,
    pub(super) length: Sampler,
    pub(super) away: f64,
}

impl StallRt {
    /// The time a service of `x` ns takes with the server's stalls: each
    /// stall that falls within it (a Poisson process) adds its length,
    /// and a server found idle (`fresh`) is away `away` of the time, the
    /// request then waiting out a part of a stall (uniform over its
    /// length: the length-biased residual is not modelled).
    fn stretch(&self, x: u64, fresh: bool, rng: &mut SimRng) -> u64 {
        let mut extra = 0u64;
        if fresh && rng.unit() < self.away {
            extra += (self.length.sample(rng) as f64 * rng.unit()) as u64;
        }
        if self.per_ns > 0.0 {
            let mut t = -rng.unit().max(1e-300).ln() / self.per_ns;
            while t < x as f64 {
                extra += self.length.sample(rng);
                t += -rng.unit().max(1e-300).ln() / self.per_ns;
            }
        }
        x + extra
    }
}

/// `serve`, on a server that stalls.
pub(super) fn serve_stalled(
    d: &Sampler,
    stalls: &Option<StallRt>,
    fresh: bool,
    rng: &mut SimRng,
    st: &mut StageStats,
    win: bool,
) -> u64 {
    let x = serve(d, rng, st, win);
    match stalls {
        Some(s) => s.stretch(x, fresh, rng),
        None => x,
    }
}
