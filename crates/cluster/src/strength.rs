//! How guessable a cluster secret is: the fewest bits a guesser needs to
//! name it, as the cheapest description of it in pieces a guesser tries
//! first (common words, letters as English spells them, runs along the
//! alphabet or a keyboard row, repeats of what came before, a symbol used
//! again, a short number), with every
//! other byte costing what a random byte of the secret's own alphabet
//! costs. A secret machines made costs about its length times its
//! alphabet's bits; one people made costs a few bits a word. And the
//! secrets Strata's own files have published, refused whatever they cost.
//! Owns the estimate and the published list; must not read files or
//! decide what a node does with a weak secret (`auth::Secret::new` does).

use std::collections::HashMap;
use std::sync::OnceLock;

/// The fewest bits a cluster secret must cost: 2^80 HMAC-SHA256 guesses
/// against a recorded upgrade token is out of reach of any attacker
/// (2^64 is not, for one with a data centre).
pub const MIN_BITS: f64 = 80.0;

/// Secrets that Strata's repository has published as placeholders,
/// examples or test fixtures, in any version: anyone who has read it knows
/// them. (`crates/strata/tests/public_secrets.rs` checks that every secret
/// written in the repository is refused.)
pub const PUBLISHED: &[(&str, &str)] = &[
    (
        "replace-me-with-32-random-bytes-0123456789abcdef",
        "the placeholder of deploy/kubernetes/secret.yaml",
    ),
    (
        "test-cluster-secret-0123456789",
        "the test suite's fixed secret",
    ),
    (
        "strata-simulation-cluster-secret",
        "the cluster simulation's fixed secret",
    ),
    (
        "transport-test-secret-0123",
        "the transport tests' fixed secret",
    ),
    (
        "0123456789abcdef-secret",
        "the authentication tests' fixed secret",
    ),
];

/// Words people build secrets from beyond the thousand most common
/// English ones: this product's and its neighbours' names, what a secret
/// is called, the famous examples.
const MORE_WORDS: &[&str] = &[
    "strata",
    "cluster",
    "secret",
    "secrets",
    "password",
    "passwd",
    "pass",
    "token",
    "key",
    "keys",
    "replace",
    "change",
    "changeme",
    "default",
    "example",
    "sample",
    "test",
    "testing",
    "admin",
    "root",
    "user",
    "prod",
    "production",
    "staging",
    "stage",
    "dev",
    "develop",
    "qa",
    "local",
    "localhost",
    "kubernetes",
    "kube",
    "node",
    "nodes",
    "member",
    "members",
    "shared",
    "random",
    "bytes",
    "byte",
    "hex",
    "base",
    "super",
    "letmein",
    "welcome",
    "qwerty",
    "dragon",
    "monkey",
    "master",
    "hello",
    "login",
    "internal",
    "private",
    "public",
    "server",
    "service",
    "database",
    "store",
    "storage",
    "data",
    "backup",
    "company",
    "corp",
    "team",
    "ops",
    "devops",
    "horse",
    "battery",
    "staple",
    "correct",
    "insecure",
    "unsafe",
    "dummy",
    "placeholder",
    "demo",
    "trust",
    "access",
    "auth",
    "hmac",
    "sha",
    "docker",
    "compose",
    "helm",
    "deploy",
    "simulation",
    "transport",
    "replica",
    "replicas",
    "ring",
    "etcd",
    "redis",
    "rocks",
    "lsm",
];

/// Keyboard rows, for runs along them (`qwerty`, `asdf`, `1234`).
const ROWS: &[&str] = &[
    "1234567890",
    "qwertyuiop",
    "asdfghjkl",
    "zxcvbnm",
    "!@#$%^&*()",
];

/// What a piece of the cheapest description is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Bytes no pattern explains: each costs the alphabet's bits.
    Random,
    /// A common word (any case).
    Word,
    /// Letters as English spells them (a word not in the list, a name).
    Spelt,
    /// A run along the alphabet, the digits or a keyboard row, up or down.
    Run,
    /// A copy of bytes that came before.
    Repeat,
    /// A symbol the secret has used before.
    Symbol,
    /// A short number (a PIN; a year, 1900-2099, costs less).
    Number,
}

/// One piece of the cheapest description.
#[derive(Clone, Debug, PartialEq)]
pub struct Piece {
    pub kind: Kind,
    pub text: String,
    pub bits: f64,
}

/// The cheapest description found and what it costs.
#[derive(Clone, Debug)]
pub struct Estimate {
    pub bits: f64,
    pub pieces: Vec<Piece>,
}

impl Estimate {
    /// The pieces a guesser would try first, for a refusal: `words
    /// "secret", "cluster"; a run "0123456789"`.
    pub fn patterns(&self) -> String {
        let mut out = Vec::new();
        for (kind, name) in [
            (Kind::Word, "common words"),
            (Kind::Spelt, "word-like letters"),
            (Kind::Run, "runs"),
            (Kind::Repeat, "repeats"),
            (Kind::Number, "short numbers"),
        ] {
            let seen: Vec<String> = self
                .pieces
                .iter()
                .filter(|p| p.kind == kind)
                .map(|p| format!("{:?}", p.text))
                .collect();
            if !seen.is_empty() {
                out.push(format!("{name} {}", seen.join(", ")));
            }
        }
        if out.is_empty() {
            "a small alphabet".to_string()
        } else {
            out.join("; ")
        }
    }
}

/// Why a secret is published, if it is.
pub fn published(secret: &[u8]) -> Option<&'static str> {
    PUBLISHED
        .iter()
        .find(|(s, _)| s.as_bytes() == secret)
        .map(|(_, why)| *why)
}

/// The longest prefix estimated: bytes past it add nothing (so the
/// estimate is a lower bound).
const LONGEST: usize = 512;
/// The longest word looked up.
const LONGEST_WORD: usize = 16;

/// Common words and their rank (most common first): the thousand most
/// common English words, then `MORE_WORDS`.
fn words() -> &'static HashMap<String, usize> {
    static WORDS: OnceLock<HashMap<String, usize>> = OnceLock::new();
    WORDS.get_or_init(|| {
        let mut m = HashMap::new();
        let all = top_english_words::get_words::<String>()
            .into_iter()
            .chain(MORE_WORDS.iter().map(|w| w.to_string()))
            .filter(|w| w.len() >= 2);
        for (rank, w) in all.enumerate() {
            m.entry(w).or_insert(rank);
        }
        m
    })
}

/// What each letter pair counts before the word list's are added (so
/// that no pair is impossible).
const SMOOTH: f64 = 0.1;

/// How English spells: letter pairs counted over the word list, as bits.
struct Bigrams {
    first: [f64; 26],
    next: [[f64; 26]; 26],
}

impl Bigrams {
    fn get() -> &'static Bigrams {
        static B: OnceLock<Bigrams> = OnceLock::new();
        B.get_or_init(|| {
            let mut first = [SMOOTH; 26];
            let mut next = [[SMOOTH; 26]; 26];
            for w in words().keys() {
                let w: Vec<usize> = w
                    .bytes()
                    .filter(u8::is_ascii_lowercase)
                    .map(|b| usize::from(b - b'a'))
                    .collect();
                if let Some(&f) = w.first() {
                    first[f] += 1.0;
                }
                for p in w.windows(2) {
                    next[p[0]][p[1]] += 1.0;
                }
            }
            let bits = |row: &mut [f64; 26]| {
                let total: f64 = row.iter().sum();
                for x in row.iter_mut() {
                    *x = -(*x / total).log2();
                }
            };
            bits(&mut first);
            for row in next.iter_mut() {
                bits(row);
            }
            Bigrams { first, next }
        })
    }

    fn first(&self, b: u8) -> f64 {
        self.first[usize::from(b.to_ascii_lowercase() - b'a')]
    }

    fn next(&self, a: u8, b: u8) -> f64 {
        self.next[usize::from(a.to_ascii_lowercase() - b'a')]
            [usize::from(b.to_ascii_lowercase() - b'a')]
    }
}

/// Bits a random byte of this secret's alphabet costs: the character
/// classes it uses (hex digits alone count 16; bytes beyond ASCII add 128).
fn alphabet_bits(s: &[u8]) -> f64 {
    if s.iter().all(u8::is_ascii_digit) {
        return 10f64.log2();
    }
    if s.iter().all(u8::is_ascii_hexdigit)
        && !(s.iter().any(u8::is_ascii_lowercase) && s.iter().any(u8::is_ascii_uppercase))
    {
        return 16f64.log2();
    }
    let mut n = 0u32;
    for (has, size) in [
        (s.iter().any(u8::is_ascii_digit), 10),
        (s.iter().any(u8::is_ascii_lowercase), 26),
        (s.iter().any(u8::is_ascii_uppercase), 26),
        (
            s.iter().any(|b| b.is_ascii() && !b.is_ascii_alphanumeric()),
            33,
        ),
        (s.iter().any(|b| !b.is_ascii()), 128),
    ] {
        if has {
            n += size;
        }
    }
    f64::from(n.max(2)).log2()
}

/// Where a byte sits on a keyboard row, if it does.
fn key(b: u8) -> Option<(usize, usize)> {
    let b = b.to_ascii_lowercase();
    ROWS.iter()
        .enumerate()
        .find_map(|(r, row)| row.bytes().position(|k| k == b).map(|c| (r, c)))
}

/// Whether `next` follows `prev` in a run going `step` (±1) along the
/// byte values or a keyboard row.
fn follows(prev: u8, next: u8, step: i32, keyboard: bool) -> bool {
    if keyboard {
        match (key(prev), key(next)) {
            (Some((r1, c1)), Some((r2, c2))) => r1 == r2 && c2 as i32 - c1 as i32 == step,
            _ => false,
        }
    } else {
        prev.is_ascii_alphanumeric()
            && next.is_ascii_alphanumeric()
            && i32::from(next.to_ascii_lowercase()) - i32::from(prev.to_ascii_lowercase()) == step
    }
}

/// What a word costs a guesser who tries words in order of how common
/// they are (its rank's bits), with its case: lower, Capitalized or UPPER
/// cost one bit more than the word; mixed case a bit a letter.
fn word_bits(piece: &[u8], rank: usize) -> f64 {
    let lower = piece.iter().all(u8::is_ascii_lowercase);
    let upper = piece.iter().all(u8::is_ascii_uppercase);
    let capital = piece[0].is_ascii_uppercase() && piece[1..].iter().all(u8::is_ascii_lowercase);
    ((rank + 2) as f64).log2()
        + if lower {
            0.0
        } else if upper || capital {
            1.0
        } else {
            piece.len() as f64
        }
}

/// The cheapest description of `secret` (its first `LONGEST` bytes).
pub fn estimate(secret: &[u8]) -> Estimate {
    let s = &secret[..secret.len().min(LONGEST)];
    let n = s.len();
    let byte = alphabet_bits(s);
    let words = words();
    let english = Bigrams::get();
    // best[j]: the cheapest description of s[..j], and its last piece.
    let mut best: Vec<(f64, usize, Kind)> = vec![(f64::INFINITY, 0, Kind::Random); n + 1];
    best[0].0 = 0.0;
    let mut symbols_seen: Vec<u8> = Vec::new();
    for i in 0..n {
        let here = best[i].0;
        let mut offer = |j: usize, bits: f64, kind: Kind| {
            if here + bits < best[j].0 {
                best[j] = (here + bits, i, kind);
            }
        };
        offer(i + 1, byte, Kind::Random);
        let b = s[i];
        if !b.is_ascii_alphanumeric() && symbols_seen.contains(&b) {
            offer(
                i + 1,
                1.0 + (symbols_seen.len() as f64).log2(),
                Kind::Symbol,
            );
        }
        if !b.is_ascii_alphanumeric() && !symbols_seen.contains(&b) {
            symbols_seen.push(b);
        }
        // Words.
        for j in i + 2..=n.min(i + LONGEST_WORD) {
            let piece = &s[i..j];
            if !piece.iter().all(u8::is_ascii_alphabetic) {
                break;
            }
            let lower = String::from_utf8_lossy(piece).to_ascii_lowercase();
            if let Some(&rank) = words.get(&lower) {
                offer(j, word_bits(piece, rank), Kind::Word);
            }
        }
        // Letters spelt as English spells them, in or out of the list.
        let mut spelt = 0.0;
        for j in i + 1..=n.min(i + LONGEST_WORD) {
            let b = s[j - 1];
            if !b.is_ascii_alphabetic() {
                break;
            }
            spelt += match j - i {
                1 => english.first(b),
                _ => english.next(s[j - 2], b),
            };
            if j - i >= 3 {
                let case = word_bits(&s[i..j], 0) - 1.0;
                offer(j, spelt + case + 2.0, Kind::Spelt);
            }
        }
        // Short numbers.
        for j in i + 1..=n.min(i + 4) {
            if !s[i..j].iter().all(u8::is_ascii_digit) {
                break;
            }
            let year = j - i == 4 && (s[i..i + 2] == *b"19" || s[i..i + 2] == *b"20");
            let bits = if year {
                200f64.log2()
            } else {
                (j - i) as f64 * 10f64.log2()
            };
            offer(j, 2.0 + bits, Kind::Number);
        }
        // Runs: the same byte again, along the values or a keyboard row.
        for (step, keyboard) in [(0, false), (1, false), (-1, false), (1, true), (-1, true)] {
            let mut j = i + 1;
            while j < n && follows(s[j - 1], s[j], step, keyboard) {
                j += 1;
            }
            for end in i + 3..=j {
                offer(end, byte + ((end - i) as f64).log2() + 2.0, Kind::Run);
            }
        }
        // Repeats of anything before (overlapping allowed, as in LZ77).
        if i > 0 {
            let longest = (0..i)
                .map(|p| (0..n - i).take_while(|&k| s[p + k] == s[i + k]).count())
                .max()
                .unwrap_or(0);
            for len in 3..=longest {
                offer(
                    i + len,
                    1.0 + (i as f64).log2() + (len as f64).log2(),
                    Kind::Repeat,
                );
            }
        }
    }
    // Walk back from the end for the pieces; merge neighbouring random bytes.
    let mut pieces: Vec<Piece> = Vec::new();
    let mut j = n;
    while j > 0 {
        let (total, i, kind) = best[j];
        let bits = total - best[i].0;
        let text = String::from_utf8_lossy(&s[i..j]).into_owned();
        match pieces.last_mut() {
            Some(p) if p.kind == Kind::Random && kind == Kind::Random => {
                p.text = text + &p.text;
                p.bits += bits;
            }
            _ => pieces.push(Piece { kind, text, bits }),
        }
        j = i;
    }
    pieces.reverse();
    Estimate {
        bits: best[n].0,
        pieces,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random secrets of the shapes machines make, made here (a secret
    /// written in the repository would be public).
    fn machine_made(i: usize) -> Vec<u8> {
        use rand::RngCore;
        let mut b = [0u8; 32];
        rand::rng().fill_bytes(&mut b);
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        match i % 6 {
            0 => hex(&b).into_bytes(),       // openssl rand -hex 32
            1 => hex(&b[..16]).into_bytes(), // openssl rand -hex 16
            2 => {
                let h = hex(&b[..16]); // uuidgen
                format!(
                    "{}-{}-4{}-a{}-{}",
                    &h[..8],
                    &h[8..12],
                    &h[13..16],
                    &h[17..20],
                    &h[20..32]
                )
                .into_bytes()
            }
            3 => b.iter().map(|x| B64[(x & 63) as usize]).collect(), // base64 of 24 bytes
            4 => b[..20].iter().map(|x| ALNUM[*x as usize % 62]).collect(),
            _ => b[..16].to_vec(), // head -c 16 /dev/urandom
        }
    }

    #[test]
    fn what_machines_make_is_strong() {
        for i in 0..600 {
            let s = machine_made(i);
            let e = estimate(&s);
            assert!(
                e.bits >= MIN_BITS,
                "{:?}: {e:?}",
                String::from_utf8_lossy(&s)
            );
        }
    }

    #[test]
    fn what_people_make_is_weak() {
        let mut strong = Vec::new();
        // (A long string people made can estimate just over the bar: the
        // old Kubernetes placeholder, 48 bytes of words, runs and symbols,
        // at 81 bits (refused as published), or four uncommon words and
        // separators, as `wasm-bindgen-macro-support` at 81: a word
        // outside the list costs about 4 bits a letter as English spells.)
        for s in [
            "test-cluster-secret-0123456789",
            "my-super-secret-cluster-password",
            "ThisIsMyClusterSecretForProduction2024!",
            "aaaaaaaaaaaaaaaaaaaaaaaa",
            "abababababababababababab",
            "0101010110101010101011110000",
            "passwordpasswordpassword",
            "qwertyuiopasdfghjkl1234567890",
            "1234567890123456",
            "strata-strata-strata",
            "deadbeefdeadbeefdeadbeef",
            "correct-horse-battery-staple-42",
            "9f86d081884c7d65",
            "strata_process_resident_anon_bytes",
        ] {
            let e = estimate(s.as_bytes());
            if e.bits >= MIN_BITS {
                strong.push(format!("{s}: {e:?}"));
            }
        }
        assert!(strong.is_empty(), "{strong:#?}");
    }

    #[test]
    fn the_cheapest_description_names_its_patterns() {
        let e = estimate(b"secret-cluster-0123456789");
        let p = e.patterns();
        assert!(p.contains("\"secret\"") && p.contains("\"cluster\""), "{p}");
        assert!(p.contains("runs \"0123456789\""), "{p}");
        let joined: String = e.pieces.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(joined, "secret-cluster-0123456789");
    }

    #[test]
    fn published_secrets_are_known() {
        assert!(published(b"replace-me-with-32-random-bytes-0123456789abcdef").is_some());
        assert!(published(b"replace-me-with-32-random-bytes-0123456789abcdeF").is_none());
    }
}
