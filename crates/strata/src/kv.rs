//! `strata kv`: single keys and ranges from the command line, through the
//! typed client (`strata-client`, blocking face) with the command's global
//! credentials (`--token`, `--tls-ca`, `--tls-client-cert`). Owns the
//! command's arguments and output; must not speak HTTP itself.

use std::io::{Read, Write};
use std::process::ExitCode;

use strata_client::{Client, Error, Options};

/// Exit status of `strata kv get` for a key with no value.
pub const EXIT_NOT_FOUND: u8 = 4;

#[derive(clap::Args)]
pub struct KvArgs {
    /// A node, or any member of a cluster (one is enough: the members come
    /// from it); the default is where `strata serve` listens by default.
    #[arg(long, env = "STRATA_URL", default_value = "http://127.0.0.1:8080")]
    url: String,
    /// ack/from of the request, as ACK/FROM (e.g. 3/3) [default: the
    /// nodes' own].
    #[arg(long, value_parser = replication)]
    replication: Option<(usize, usize)>,
    #[command(subcommand)]
    op: Op,
}

#[derive(clap::Subcommand)]
enum Op {
    /// Store VALUE under KEY (`-` reads the value from stdin).
    Put { key: String, value: String },
    /// Print KEY's value to stdout, as bytes; exit status 4 when it has
    /// none.
    Get { key: String },
    /// Delete KEY.
    Delete { key: String },
    /// Print the entries with START <= key < END, one per line as
    /// key<TAB>value (bytes outside printable ASCII escaped).
    Range { start: String, end: Option<String> },
}

fn replication(s: &str) -> Result<(usize, usize), String> {
    let (a, f) = s.split_once('/').ok_or("give ACK/FROM, e.g. 2/3")?;
    let n = |x: &str| x.trim().parse::<usize>().map_err(|e| format!("{x}: {e}"));
    Ok((n(a)?, n(f)?))
}

/// The credentials the command was given.
pub struct Credentials {
    pub token: Option<String>,
    pub tls_ca: Option<std::path::PathBuf>,
    pub cert_and_key: Option<(std::path::PathBuf, std::path::PathBuf)>,
}

pub fn run(a: &KvArgs, c: Credentials) -> ExitCode {
    match go(a, c) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("strata kv: {e}");
            ExitCode::FAILURE
        }
    }
}

fn go(a: &KvArgs, c: Credentials) -> Result<ExitCode, Error> {
    let mut b = Client::builder().seed(a.url.clone());
    if let Some(t) = c.token {
        b = b.token(t);
    }
    if let Some(ca) = c.tls_ca {
        b = b.tls_ca(ca);
    }
    if let Some((cert, key)) = c.cert_and_key {
        b = b.client_certificate(cert, key);
    }
    let client = b.connect_blocking()?;
    let o = Options {
        replication: a.replication,
        timeout: None,
    };
    let out = |bytes: &[u8]| {
        let mut s = std::io::stdout().lock();
        s.write_all(bytes).and_then(|()| s.flush())
    };
    match &a.op {
        Op::Put { key, value } => {
            let value = if value == "-" {
                let mut v = Vec::new();
                std::io::stdin()
                    .read_to_end(&mut v)
                    .map_err(|e| Error::View(format!("stdin: {e}")))?;
                v
            } else {
                value.clone().into_bytes()
            };
            client.put_with(key, value, &o)?;
        }
        Op::Get { key } => match client.get_with(key, &o)? {
            Some(v) => out(&v).map_err(|e| Error::View(format!("stdout: {e}")))?,
            None => {
                eprintln!("strata kv: {key}: not found");
                return Ok(ExitCode::from(EXIT_NOT_FOUND));
            }
        },
        Op::Delete { key } => client.delete_with(key, &o)?,
        Op::Range { start, end } => {
            for e in client.range(start, end.as_deref().map(str::as_bytes)) {
                let (k, v) = e?;
                let line = format!("{}\t{}\n", k.escape_ascii(), v.escape_ascii());
                out(line.as_bytes()).map_err(|e| Error::View(format!("stdout: {e}")))?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
