//! YCSB's zipfian generator (Gray et al., "Quickly generating billion-record
//! synthetic databases", SIGMOD 1994), as YCSB's `ZipfianGenerator` and
//! `ScrambledZipfianGenerator` implement it: ranks in `[0, n)` where rank 0
//! is the most popular, the item count may grow (the zeta constant is then
//! extended incrementally), and the scrambled form hashes a rank drawn from
//! 10^10 items with 64-bit FNV-1a so hot items are spread over the key space.
//! Owns the arithmetic only; must not know keys, strings or workloads.

/// YCSB's default zipfian constant.
pub const DEFAULT_THETA: f64 = 0.99;

/// The item count of YCSB's `ScrambledZipfianGenerator`.
pub const SCRAMBLED_ITEMS: u64 = 10_000_000_000;

/// Exact summation up to this many terms; above, an Euler–Maclaurin tail.
const EXACT_TERMS: u64 = 1 << 20;

/// zeta(n, theta) = sum over i in 1..=n of 1 / i^theta. Exact up to 2^20
/// terms, then the Euler–Maclaurin formula for the rest (relative error far
/// below 1e-9), so a key space of 10^10 costs milliseconds, not minutes.
pub fn zeta(n: u64, theta: f64) -> f64 {
    let exact = n.min(EXACT_TERMS);
    let mut sum = zeta_range(0, exact, theta);
    if n > exact {
        let (m, n) = (exact as f64, n as f64);
        let f = |x: f64| x.powf(-theta);
        let df = |x: f64| -theta * x.powf(-theta - 1.0);
        let integral = (n.powf(1.0 - theta) - m.powf(1.0 - theta)) / (1.0 - theta);
        sum += integral + (f(n) - f(m)) / 2.0 + (df(n) - df(m)) / 12.0;
    }
    sum
}

/// sum over i in (from, to] of 1 / i^theta.
fn zeta_range(from: u64, to: u64, theta: f64) -> f64 {
    let mut sum = 0.0;
    for i in from + 1..=to {
        sum += 1.0 / (i as f64).powf(theta);
    }
    sum
}

/// Check a zipfian constant: the algorithm needs 0 < theta < 1.
pub fn check_theta(theta: f64) -> Result<(), String> {
    if theta > 0.0 && theta < 1.0 {
        Ok(())
    } else {
        Err(format!(
            "zipfian theta must be in (0, 1) (YCSB's algorithm), got {theta}"
        ))
    }
}

/// One zipfian generator's state. Cheap to clone: each worker holds its own
/// copy so the (rare) zeta extension for a grown item count needs no lock.
#[derive(Clone, Debug)]
pub struct Zipfian {
    items: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    zeta2: f64,
    eta: f64,
    /// 1 + 0.5^theta: below it (times zetan) the answer is rank 1.
    half_pow_theta: f64,
}

impl Zipfian {
    /// A generator over `items` ranks (at least 1).
    pub fn new(items: u64, theta: f64) -> Zipfian {
        let items = items.max(1);
        Zipfian::with_zetan(items, theta, zeta(items, theta))
    }

    /// As YCSB does for its scrambled generator: a known zeta constant.
    pub fn with_zetan(items: u64, theta: f64, zetan: f64) -> Zipfian {
        let zeta2 = zeta(2, theta);
        let mut z = Zipfian {
            items: items.max(1),
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            zeta2,
            eta: 0.0,
            half_pow_theta: 1.0 + 0.5f64.powf(theta),
        };
        z.eta = z.eta_for();
        z
    }

    fn eta_for(&self) -> f64 {
        (1.0 - (2.0 / self.items as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2 / self.zetan)
    }

    pub fn items(&self) -> u64 {
        self.items
    }

    /// Grow the item count to `items`, extending zeta by the new terms only
    /// (YCSB's incremental recomputation). Shrinking is ignored, as YCSB does
    /// by default.
    pub fn grow_to(&mut self, items: u64) {
        if items > self.items {
            self.zetan += zeta_range(self.items, items, self.theta);
            self.items = items;
            self.eta = self.eta_for();
        }
    }

    /// A rank in `[0, items)` from a uniform `u` in `[0, 1)`; 0 is hottest.
    #[inline]
    pub fn rank(&self, u: f64) -> u64 {
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < self.half_pow_theta {
            return 1.min(self.items - 1);
        }
        let r = (self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.items - 1)
    }
}

/// YCSB's `Utils.fnvhash64`: FNV-1a over the 8 little-endian bytes of `v`,
/// then the absolute value of the result as a signed 64-bit number.
#[inline]
pub fn fnv_hash64(mut v: u64) -> u64 {
    const OFFSET: u64 = 0xCBF2_9CE4_8422_2325;
    const PRIME: u64 = 1_099_511_628_211;
    let mut h = OFFSET;
    for _ in 0..8 {
        h ^= v & 0xff;
        h = h.wrapping_mul(PRIME);
        v >>= 8;
    }
    (h as i64).unsigned_abs()
}

/// YCSB's `ScrambledZipfianGenerator`: a zipfian rank over 10^10 items,
/// hashed, modulo the current item count.
#[derive(Clone, Debug)]
pub struct Scrambled {
    zipf: Zipfian,
}

/// YCSB's precomputed zeta(10^10, 0.99).
const SCRAMBLED_ZETAN_099: f64 = 26.469_028_201_783_02;

impl Scrambled {
    pub fn new(theta: f64) -> Scrambled {
        let zetan = if theta == DEFAULT_THETA {
            SCRAMBLED_ZETAN_099
        } else {
            zeta(SCRAMBLED_ITEMS, theta)
        };
        Scrambled {
            zipf: Zipfian::with_zetan(SCRAMBLED_ITEMS, theta, zetan),
        }
    }

    /// An item in `[0, items)`.
    #[inline]
    pub fn item(&self, u: f64, items: u64) -> u64 {
        fnv_hash64(self.zipf.rank(u)) % items.max(1)
    }
}
