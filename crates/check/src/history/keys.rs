//! The naming conventions the checker relies on: which role a key plays
//! (`set/…` written once, `reg/…` one client's register, `lin/…` shared
//! by every client), the keys and register values a checked run writes,
//! and a run's tag. Owns the names; must not judge anything.

/// The two kinds of key the checker knows, by prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyRole {
    /// `set/…`: written once, with a value of its own, and never
    /// overwritten: an acknowledged write must still be there at the end.
    Set,
    /// `reg/…`: overwritten by one client, sequentially, with values
    /// `<client>:<seq>` whose sequence numbers increase.
    Register,
    /// `lin/…`: written, read and deleted by every client, each value
    /// once (`<client>:<seq>`); judged by the linearizability check only.
    Shared,
    /// Anything else: recorded and counted, not checked.
    Other,
}

impl KeyRole {
    pub fn of(key: &[u8]) -> KeyRole {
        if key.starts_with(SET_PREFIX.as_bytes()) {
            KeyRole::Set
        } else if key.starts_with(REG_PREFIX.as_bytes()) {
            KeyRole::Register
        } else if key.starts_with(SHARED_PREFIX.as_bytes()) {
            KeyRole::Shared
        } else {
            KeyRole::Other
        }
    }
}

pub const SET_PREFIX: &str = "set/";
pub const REG_PREFIX: &str = "reg/";
pub const SHARED_PREFIX: &str = "lin/";

/// `set/<run>/<client>/<n>`: the run's tag keeps what earlier runs
/// wrote on the same cluster out of this run's history.
pub fn set_key(run: &str, client: u32, n: u64) -> String {
    format!("{SET_PREFIX}{run}/{client}/{n}")
}

/// `reg/<run>/<client>/<i>`.
pub fn register_key(run: &str, client: u32, i: u32) -> String {
    format!("{REG_PREFIX}{run}/{client}/{i}")
}

/// `lin/<run>/<i>`.
pub fn shared_key(run: &str, i: u32) -> String {
    format!("{SHARED_PREFIX}{run}/{i}")
}

/// A tag for a run, different from run to run (time and process id).
pub fn run_tag() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let x = (t ^ (std::process::id() as u64).rotate_left(32)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    format!("{:08x}", x >> 32)
}

/// A register value: `<client>:<seq>`.
pub fn register_value(client: u32, seq: u64) -> String {
    format!("{client}:{seq}")
}

/// The `(client, seq)` of a register value, if it is one.
pub fn parse_register_value(v: &[u8]) -> Option<(u32, u64)> {
    let s = std::str::from_utf8(v).ok()?;
    let (c, q) = s.split_once(':')?;
    Some((c.parse().ok()?, q.parse().ok()?))
}
