//! The highload-dht wrk2 scripts of seed 002 (polis-vk/2024-highload-dht,
//! `dariasupriadkina/scripts`): `upsertrand.lua` PUTs a key of 3–100 random
//! lowercase letters with a value of 3–100 random lowercase letters;
//! `getrand.lua` GETs the decimal id `math.random(0, N)` (N = 4,000,000 in
//! the script; our `keys`). Unlike the scripts, which seeded every wrk
//! thread with `os.time()` and so sent the same keys (lesson 5), each worker
//! here has its own seed. Owns those two streams; must not pace them.

use std::time::Duration;

use rand::rngs::SmallRng;
use rand::Rng;

use super::{Generator, Next, Op};

/// `math.random(3, 100)`: key and value lengths of upsertrand.lua.
pub const MIN_LEN: usize = 3;
pub const MAX_LEN: usize = 100;

/// upsertrand.lua: random-letter key, random-length value.
pub struct UpsertGenerator {
    rng: SmallRng,
}

impl UpsertGenerator {
    pub fn new(rng: SmallRng) -> UpsertGenerator {
        UpsertGenerator { rng }
    }
}

impl Generator for UpsertGenerator {
    #[inline]
    fn next(&mut self, _now: Duration) -> Next {
        // The script draws the value length first, then the key length.
        let value_len = self.rng.random_range(MIN_LEN..=MAX_LEN);
        let key_len = self.rng.random_range(MIN_LEN..=MAX_LEN);
        let mut key = String::with_capacity(key_len);
        // FNV-1a of the key while it is built: its index for counting
        // distinct keys (the key space, 26^3 + … + 26^100, is unbounded).
        let mut h: u64 = 0xCBF2_9CE4_8422_2325;
        for _ in 0..key_len {
            let c = self.rng.random_range(b'a'..=b'z');
            h = (h ^ c as u64).wrapping_mul(0x0100_0000_01B3);
            key.push(c as char);
        }
        Next {
            op: Op::Put { key, value_len },
            key_index: Some(h),
        }
    }
}

/// getrand.lua: GET a uniformly random decimal id in `[0, max_id]`.
pub struct GetGenerator {
    rng: SmallRng,
    max_id: u64,
}

impl GetGenerator {
    pub fn new(rng: SmallRng, max_id: u64) -> GetGenerator {
        GetGenerator { rng, max_id }
    }
}

impl Generator for GetGenerator {
    #[inline]
    fn next(&mut self, _now: Duration) -> Next {
        let id = self.rng.random_range(0..=self.max_id);
        Next {
            op: Op::Get {
                key: id.to_string(),
            },
            key_index: Some(id),
        }
    }
}

/// The ids getrand.lua reads, each with a value length as upsert.lua
/// wrote them (3–100 bytes), from a fixed seed.
pub struct GetPreload {
    next: u64,
    max_id: u64,
    rng: SmallRng,
}

impl GetPreload {
    pub fn new(max_id: u64) -> GetPreload {
        GetPreload {
            next: 0,
            max_id,
            rng: rand::SeedableRng::seed_from_u64(0x5EED_0002),
        }
    }
}

impl Iterator for GetPreload {
    type Item = (String, usize);
    fn next(&mut self) -> Option<(String, usize)> {
        if self.next > self.max_id {
            return None;
        }
        let k = self.next.to_string();
        self.next += 1;
        Some((k, self.rng.random_range(MIN_LEN..=MAX_LEN)))
    }
}
