//! Counts as the checker's reports and the lab's tables write them. Owns
//! the wording; must not judge anything.

/// `n` with its thousands grouped by commas (12,345), as the checker's
/// reports and the lab's tables write counts.
pub fn group(n: u64) -> String {
    let digits = n.to_string().into_bytes();
    let groups: Vec<&str> = digits
        .rchunks(3)
        .rev()
        .map(|c| std::str::from_utf8(c).expect("ASCII digits"))
        .collect();
    groups.join(",")
}
