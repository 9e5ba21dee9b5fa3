//! Write ids (`strata-write-id`): 128 bits drawn afresh for every write
//! from the operating system's randomness (`rand`'s thread-local
//! generator, seeded from the OS and reseeded as it goes), as
//! `docs/consistency.md` says: one id tells nothing of the next, and two
//! writes share an id with a chance of 2⁻¹²⁸ per pair (and then only
//! matter if they write the same key within the nodes' memory of ids).
//! Owns the ids; must not send anything.

/// A fresh write id: 128 random bits, never zero (a zero id reads as
/// "no id" nowhere, but an all-zero draw would look like one).
pub fn next() -> u128 {
    loop {
        let id: u128 = rand::random();
        if id != 0 {
            return id;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_share_nothing_that_predicts_the_next() {
        let ids: Vec<u128> = (0..256).map(|_| super::next()).collect();
        // No two equal, and neither half is shared or counted up: each of
        // the 128 bit positions takes both values across the draws.
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), ids.len());
        for bit in 0..128 {
            let ones = ids.iter().filter(|&&i| (i >> bit) & 1 == 1).count();
            assert!(ones > 64 && ones < 192, "bit {bit} set in {ones} of 256");
        }
        assert!(ids.windows(2).all(|w| w[1] != w[0].wrapping_add(1)));
    }
}
