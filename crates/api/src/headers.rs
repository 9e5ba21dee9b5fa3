//! Headers a node adds beyond HTTP's own, and what they promise to a
//! client. Owns the names; must not set or read them.

/// On a `503`: the node refused the request before acting on it (admission
/// control, a node not serving, a connection that waited too long to be
/// accepted), so a write refused with it was not applied anywhere and a
/// client may send it to another node. A `503` without it (a replica
/// queue full part way through a write) promises nothing.
pub const NOT_APPLIED: &str = "strata-not-applied";

/// On a `PUT` or `DELETE`: the client's name for this write, 32 hex
/// digits (128 bits, random), the same on every attempt of it. A write
/// sent again with the same name after an attempt was applied takes
/// effect once: the node finishes it at the version it was applied at
/// (`docs/consistency.md`, "Writes safe to repeat"). Anything but 32 hex
/// digits is a `400`.
pub const WRITE_ID: &str = "strata-write-id";

/// A write id's text (`WRITE_ID`): 32 lowercase hex digits.
pub fn format_write_id(id: u128) -> String {
    format!("{id:032x}")
}

/// Parse a write id's text: exactly 32 hex digits, either case.
pub fn parse_write_id(s: &[u8]) -> Option<u128> {
    if s.len() != 32 || !s.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u128::from_str_radix(std::str::from_utf8(s).ok()?, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_ids_round_trip_and_only_32_hex_digits_parse() {
        for id in [0, 1, u128::MAX, 0x0123_4567_89ab_cdef_u128 << 64] {
            assert_eq!(parse_write_id(format_write_id(id).as_bytes()), Some(id));
        }
        assert_eq!(
            parse_write_id(b"ABCDEF0123456789abcdef0123456789"),
            Some(0xabcdef0123456789abcdef0123456789)
        );
        for bad in [
            &b""[..],
            b"abc",
            b"+bcdef0123456789abcdef0123456789",
            b"0123456789abcdef0123456789abcdef0",
            b"g123456789abcdef0123456789abcdef",
        ] {
            assert_eq!(
                parse_write_id(bad),
                None,
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
