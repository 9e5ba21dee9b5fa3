//! `strata token`: credentials for nodes that check them
//! (`docs/security.md`). `new` makes a random bearer token, printed or
//! written to a new file only its owner reads (`--out`, mode 0600:
//! `private`), and the line a node's tokens file (`--auth-tokens`) holds
//! for it (its role, a name, its SHA-256: the file never holds the
//! token); `operator` prints the operator token every member derives from
//! the cluster secret. Owns making tokens; must not talk to a node (the
//! node checks them).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

#[cfg(test)]
use strata_api::access::token_digest;
use strata_api::access::{operator_token, random_token, token_line, Role};

#[derive(clap::Subcommand, Clone, Debug)]
pub enum TokenCmd {
    /// A new random token for ROLE (read, readwrite, monitor, operator):
    /// the token on stdout or in a new file (--out FILE, mode 0600; an
    /// existing file is left alone unless --force), and its line for the
    /// tokens file appended to --append FILE (created mode 0600) or
    /// printed on stderr.
    New(NewArgs),
    /// The cluster's operator token, derived from its secret (every member
    /// accepts it): `export STRATA_TOKEN=$(strata token operator
    /// --cluster-secret-file DIR/cluster-secret)`.
    Operator(OperatorArgs),
}

#[derive(clap::Args, Clone, Debug)]
pub struct NewArgs {
    /// read, readwrite, monitor or operator.
    pub role: String,
    /// A name for the holder (logs and refusals name it; no spaces).
    pub name: String,
    /// The tokens file to append the token's line to.
    #[arg(long)]
    pub append: Option<PathBuf>,
    /// Write the token to this new file (mode 0600) instead of stdout:
    /// what `--token-file` reads.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Replace --out FILE if it exists (with a new file of mode 0600).
    #[arg(long, requires = "out")]
    pub force: bool,
}

#[derive(clap::Args, Clone, Debug)]
pub struct OperatorArgs {
    /// The cluster secret.
    #[arg(
        long,
        env = "STRATA_CLUSTER_SECRET",
        conflicts_with = "cluster_secret_file"
    )]
    pub cluster_secret: Option<String>,
    /// A file holding the cluster secret.
    #[arg(long, env = "STRATA_CLUSTER_SECRET_FILE")]
    pub cluster_secret_file: Option<PathBuf>,
}

pub fn main(cmd: &TokenCmd) -> Result<(), String> {
    match cmd {
        TokenCmd::New(a) => {
            let (token, line) = new_token(&a.role, &a.name)?;
            // The token first: a line appended for a token nobody holds
            // would admit nobody, but a token without its line is useless.
            if let Some(f) = &a.out {
                crate::private::write(f, &token, a.force, "a new token")?;
            }
            let appended = match &a.append {
                Some(f) => append_line(f, &line),
                None => {
                    eprintln!("the tokens file's line for it:\n{line}");
                    Ok(())
                }
            };
            if let Err(e) = appended {
                if let Some(f) = &a.out {
                    let _ = std::fs::remove_file(f);
                }
                return Err(e);
            }
            match &a.out {
                Some(f) => eprintln!(
                    "a new {} token in {} (mode 0600): give it with --token-file {}",
                    a.role,
                    f.display(),
                    f.display()
                ),
                None => println!("{token}"),
            }
            Ok(())
        }
        TokenCmd::Operator(a) => {
            let secret = match (&a.cluster_secret, &a.cluster_secret_file) {
                (Some(s), _) => s.clone().into_bytes(),
                (None, Some(f)) => std::fs::read(f).map_err(|e| format!("{}: {e}", f.display()))?,
                (None, None) => return Err("give --cluster-secret or --cluster-secret-file".into()),
            };
            if secret.trim_ascii().len() < 16 {
                return Err("the cluster secret must be at least 16 bytes".into());
            }
            println!("{}", operator_token(&secret));
            Ok(())
        }
    }
}

/// Append `line` to the tokens file `f` (created mode 0600).
fn append_line(f: &std::path::Path, line: &str) -> Result<(), String> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(crate::private::MODE)
        .open(f)
        .map_err(|e| format!("{}: {e}", f.display()))?;
    writeln!(file, "{line}").map_err(|e| format!("{}: {e}", f.display()))
}

/// A random token for `role` and its tokens-file line.
pub fn new_token(role: &str, name: &str) -> Result<(String, String), String> {
    let r = Role::parse(role)
        .filter(|r| *r != Role::Node)
        .ok_or_else(|| format!("unknown role {role:?}: read, readwrite, monitor or operator"))?;
    if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c == '#') {
        return Err(format!("name {name:?}: one word, no '#'"));
    }
    let token = random_token();
    let line = token_line(r, name, &token);
    Ok((token, line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_token_is_random_and_its_line_holds_its_digest_only() {
        let (a, la) = new_token("readwrite", "app").unwrap();
        let (b, _) = new_token("readwrite", "app").unwrap();
        assert_ne!(a, b);
        assert!(a.starts_with("st0_") && a.len() == 4 + 48);
        assert_eq!(la, format!("readwrite app {}", token_digest(&a)));
        assert!(!la.contains(&a));
        assert!(new_token("node", "x").is_err());
        assert!(new_token("admin", "x").is_err());
        assert!(new_token("read", "two words").is_err());
    }

    #[test]
    fn a_token_written_to_a_file_is_private_and_its_line_appended() {
        let d = tempfile::tempdir().unwrap();
        let (out, tokens) = (d.path().join("lab.token"), d.path().join("tokens"));
        let cmd = |force| {
            TokenCmd::New(NewArgs {
                role: "readwrite".into(),
                name: "lab".into(),
                append: Some(tokens.clone()),
                out: Some(out.clone()),
                force,
            })
        };
        main(&cmd(false)).unwrap();
        let token = std::fs::read_to_string(&out).unwrap();
        assert!(
            token.starts_with("st0_") && token.ends_with('\n'),
            "{token:?}"
        );
        assert_eq!(crate::private::tests::mode(&out), 0o600);
        let lines = std::fs::read_to_string(&tokens).unwrap();
        assert_eq!(lines, format!("readwrite lab {}\n", token_digest(&token)));
        // An existing token file: left alone, and no line appended.
        let e = main(&cmd(false)).unwrap_err();
        assert!(e.contains("already exists"), "{e}");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), token);
        assert_eq!(std::fs::read_to_string(&tokens).unwrap(), lines);
        // Replaced when asked: a new token, private, its line appended.
        main(&cmd(true)).unwrap();
        let again = std::fs::read_to_string(&out).unwrap();
        assert_ne!(again, token);
        assert_eq!(crate::private::tests::mode(&out), 0o600);
        assert!(std::fs::read_to_string(&tokens)
            .unwrap()
            .ends_with(&format!("readwrite lab {}\n", token_digest(&again))));
    }
}
