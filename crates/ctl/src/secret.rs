//! `strata secret new`: a cluster secret nobody can guess (32 bytes from
//! the system's random generator, hex), printed or written to a new file
//! only its owner reads (mode 0600). Owns making secrets; must not judge
//! one (the node refuses a guessable or published secret at start:
//! `strata_cluster::strength`).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use strata_api::access::random_secret as new_secret;

#[derive(clap::Subcommand, Clone, Debug)]
pub enum SecretCmd {
    /// A new random cluster secret (64 hex digits) on stdout, or in a new
    /// file (--out, mode 0600; an existing file is left alone): give every
    /// member the same one with --cluster-secret-file.
    New(NewArgs),
}

#[derive(clap::Args, Clone, Debug)]
pub struct NewArgs {
    /// Write the secret to this new file (mode 0600) instead of stdout.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn main(cmd: &SecretCmd) -> Result<(), String> {
    match cmd {
        SecretCmd::New(a) => {
            let secret = new_secret();
            match &a.out {
                None => println!("{secret}"),
                Some(f) => {
                    let mut file = std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .mode(0o600)
                        .open(f)
                        .map_err(|e| match e.kind() {
                            std::io::ErrorKind::AlreadyExists => format!(
                                "{}: already exists (a cluster's members share one secret: keep it, or remove it first)",
                                f.display()
                            ),
                            _ => format!("{}: {e}", f.display()),
                        })?;
                    writeln!(file, "{secret}").map_err(|e| format!("{}: {e}", f.display()))?;
                    eprintln!(
                        "a new cluster secret in {} (mode 0600): give every member --cluster-secret-file {}",
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
    fn a_new_secret_is_random_hex_and_its_file_private_and_never_overwritten() {
        let (a, b) = (new_secret(), new_secret());
        assert_ne!(a, b);
        assert!(a.len() == 64 && a.bytes().all(|c| c.is_ascii_hexdigit()));
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("s");
        let cmd = SecretCmd::New(NewArgs {
            out: Some(f.clone()),
        });
        main(&cmd).unwrap();
        let first = std::fs::read_to_string(&f).unwrap();
        assert_eq!(first.trim().len(), 64);
        let mode = std::fs::metadata(&f).unwrap().permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o600
        );
        assert!(main(&cmd).unwrap_err().contains("already exists"));
        assert_eq!(std::fs::read_to_string(&f).unwrap(), first);
    }
}
