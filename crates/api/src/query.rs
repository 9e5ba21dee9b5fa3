//! How a key travels in a query string (`?id=KEY`): percent-encoded, the
//! unreserved bytes as they are. The node decodes what clients encode
//! here. Owns the encoding; must not parse requests.

/// Percent-encode a key for a query string (unreserved bytes as they are).
pub fn encode_into(out: &mut String, key: impl AsRef<[u8]>) {
    for &b in key.as_ref() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            const HEX: &[u8; 16] = b"0123456789ABCDEF";
            out.push('%');
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 15) as usize] as char);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn unreserved_bytes_stay_and_the_rest_is_escaped() {
        let mut s = String::new();
        super::encode_into(&mut s, b"a-Z_0.~ /\xff");
        assert_eq!(s, "a-Z_0.~%20%2F%FF");
    }
}
