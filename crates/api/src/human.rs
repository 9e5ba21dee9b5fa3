//! Numbers for people, as every command's output writes them (the
//! operator commands, the lab's reports). Owns their wording; must not
//! parse anything.

/// A byte count for people: B, KiB or MiB, one decimal.
pub fn bytes(b: u64) -> String {
    if b < 1024 {
        format!("{b} B")
    } else if b < 1 << 20 {
        format!("{:.1} KiB", b as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
    }
}
