//! The simulator's random numbers: xoshiro256++ seeded through SplitMix64,
//! written here so that a seed gives the same run on every platform and
//! every version of `rand`. One stream per stage (and one for the clients),
//! so changing one stage of a scenario does not reshuffle the draws of the
//! others (common random numbers across a sweep). Owns the generator; must
//! not know what the numbers are for.

use rand::RngCore;

#[derive(Clone, Debug)]
pub struct SimRng {
    s: [u64; 4],
}

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl SimRng {
    /// The generator of stream `stream` under seed `seed`.
    pub fn new(seed: u64, stream: u64) -> SimRng {
        let mut x = seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03);
        let mut s = [0; 4];
        for v in &mut s {
            *v = splitmix(&mut x);
        }
        if s == [0; 4] {
            s[0] = 1;
        }
        SimRng { s }
    }

    #[inline]
    pub fn bits(&mut self) -> u64 {
        let s = &mut self.s;
        let r = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        r
    }

    /// Uniform in [0, 1).
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.bits() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

impl RngCore for SimRng {
    #[inline]
    fn next_u32(&mut self) -> u32 {
        (self.bits() >> 32) as u32
    }

    #[inline]
    fn next_u64(&mut self) -> u64 {
        self.bits()
    }

    fn fill_bytes(&mut self, dst: &mut [u8]) {
        for chunk in dst.chunks_mut(8) {
            let v = self.bits().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_differ_and_repeat() {
        let mut a = SimRng::new(1, 0);
        let mut b = SimRng::new(1, 1);
        let mut c = SimRng::new(1, 0);
        let va: Vec<u64> = (0..4).map(|_| a.bits()).collect();
        let vb: Vec<u64> = (0..4).map(|_| b.bits()).collect();
        let vc: Vec<u64> = (0..4).map(|_| c.bits()).collect();
        assert_ne!(va, vb);
        assert_eq!(va, vc);
        let mut r = SimRng::new(7, 3);
        let mean = (0..100_000).map(|_| r.unit()).sum::<f64>() / 100_000.0;
        assert!((mean - 0.5).abs() < 0.005, "{mean}");
    }
}
