//! Query-string parsing for the API: strict percent-decoding (a `%` not
//! followed by two hex digits is an error, not passed through) and the
//! parameters the API knows. Owns nothing else; must not look at paths.

/// The decoded parameters of one request; keys and values are bytes.
#[derive(Debug, Default)]
pub struct Query {
    pairs: Vec<(Vec<u8>, Vec<u8>)>,
}

/// Why a query string could not be read.
#[derive(Debug, PartialEq, Eq)]
pub struct BadQuery(pub String);

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Percent-decode one component. `+` stays `+` (the contract sends keys
/// percent-encoded; a literal `+` is a plus).
pub fn decode(s: &[u8]) -> Result<Vec<u8>, BadQuery> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'%' {
            let h = s.get(i + 1).copied().and_then(hex);
            let l = s.get(i + 2).copied().and_then(hex);
            match (h, l) {
                (Some(h), Some(l)) => out.push(h << 4 | l),
                _ => return Err(BadQuery(format!("bad percent-encoding at byte {i}"))),
            }
            i += 3;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    Ok(out)
}

impl Query {
    pub fn parse(q: Option<&str>) -> Result<Query, BadQuery> {
        let mut pairs = Vec::new();
        for part in q.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            pairs.push((decode(k.as_bytes())?, decode(v.as_bytes())?));
        }
        Ok(Query { pairs })
    }

    /// The first value of `name`, if present.
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.pairs
            .iter()
            .find(|(k, _)| k.as_slice() == name.as_bytes())
            .map(|(_, v)| v.as_slice())
    }

    /// A required, non-empty parameter.
    pub fn required(&self, name: &str) -> Result<&[u8], BadQuery> {
        match self.get(name) {
            Some(v) if !v.is_empty() => Ok(v),
            Some(_) => Err(BadQuery(format!("{name} is empty"))),
            None => Err(BadQuery(format!("{name} is missing"))),
        }
    }

    /// An optional positive integer parameter.
    pub fn number(&self, name: &str) -> Result<Option<usize>, BadQuery> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => std::str::from_utf8(v)
                .ok()
                .and_then(|s| s.parse::<usize>().ok())
                .map(Some)
                .ok_or_else(|| BadQuery(format!("{name} is not a non-negative integer"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding() {
        assert_eq!(decode(b"a%20b%2Fc+d").unwrap(), b"a b/c+d");
        assert_eq!(decode(b"%00%ff").unwrap(), [0u8, 255]);
        assert!(decode(b"%2").is_err());
        assert!(decode(b"%zz").is_err());
        assert!(decode(b"100%").is_err());
    }

    #[test]
    fn parameters() {
        let q = Query::parse(Some("id=k%31&ack=2&from=x&empty=&flag")).unwrap();
        assert_eq!(q.required("id").unwrap(), b"k1");
        assert_eq!(q.number("ack").unwrap(), Some(2));
        assert!(q.number("from").is_err());
        assert!(q.required("empty").is_err());
        assert!(q.required("missing").is_err());
        assert_eq!(q.get("flag"), Some(&b""[..]));
        assert!(Query::parse(Some("id=%G1")).is_err());
        assert_eq!(q.number("nope").unwrap(), None);
    }
}
