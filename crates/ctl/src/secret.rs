//! `strata secret new`: a cluster secret nobody can guess (32 bytes from
//! the system's random generator, hex), printed or written to a new file
//! only its owner reads (`--out`, mode 0600: `private`). Owns making
//! secrets; must not judge one (the node refuses one no generator could
//! have written, or a published one, at start: `strata_cluster::strength`).

use std::path::PathBuf;

use strata_api::access::random_secret as new_secret;

#[derive(clap::Subcommand, Clone, Debug)]
pub enum SecretCmd {
    /// A new random secret (64 hex digits) on stdout, or in a new file
    /// (--out FILE, mode 0600; an existing file is left alone unless
    /// --force): a cluster's, given to every member with
    /// --cluster-secret-file, or a worker's, given to it and its
    /// controllers with --worker-token-file.
    New(NewArgs),
}

#[derive(clap::Args, Clone, Debug)]
pub struct NewArgs {
    /// Write the secret to this new file (mode 0600) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Replace --out FILE if it exists (with a new file of mode 0600).
    #[arg(long, requires = "out")]
    pub force: bool,
}

pub fn main(cmd: &SecretCmd) -> Result<(), String> {
    match cmd {
        SecretCmd::New(a) => {
            let secret = new_secret();
            match &a.out {
                None => println!("{secret}"),
                Some(f) => {
                    crate::private::write(f, &secret, a.force, "a new secret").map_err(|e| {
                        if a.force {
                            e
                        } else {
                            format!("{e}; a cluster's members share one secret: keep it")
                        }
                    })?;
                    eprintln!(
                        "a new secret in {} (mode 0600): for a cluster, give every member --cluster-secret-file {}; for a worker, start it and its controllers with --worker-token-file {}",
                        f.display(),
                        f.display(),
                        f.display()
                    );
                }
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_secret_is_random_hex_and_its_file_private_and_never_overwritten_unless_forced() {
        let (a, b) = (new_secret(), new_secret());
        assert_ne!(a, b);
        assert!(a.len() == 64 && a.bytes().all(|c| c.is_ascii_hexdigit()));
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("s");
        let cmd = |force| {
            SecretCmd::New(NewArgs {
                out: Some(f.clone()),
                force,
            })
        };
        main(&cmd(false)).unwrap();
        let first = std::fs::read_to_string(&f).unwrap();
        assert_eq!(first.trim().len(), 64);
        assert_eq!(crate::private::tests::mode(&f), 0o600);
        let e = main(&cmd(false)).unwrap_err();
        assert!(e.contains("already exists") && e.contains("--force"), "{e}");
        assert_eq!(std::fs::read_to_string(&f).unwrap(), first);
        main(&cmd(true)).unwrap();
        let second = std::fs::read_to_string(&f).unwrap();
        assert!(second != first && second.trim().len() == 64);
        assert_eq!(crate::private::tests::mode(&f), 0o600);
    }
}
