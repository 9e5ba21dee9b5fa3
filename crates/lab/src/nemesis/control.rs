//! The control socket of `strata cluster up`: a Unix socket in the
//! cluster's directory (`control.sock`, reachable only on this machine,
//! by whoever may open the directory) through which `strata load --fault`
//! injects faults into the cluster `up` started. One line per request:
//! `urls`, `advertised`, `proxied`, `netns`, or an [`Action`] (`kill 1`,
//! `restart 1`, `pause 0`, `resume 0`, `partition 2`, `heal 2`, `clock 1
//! -500`, `jump 1 30000`, `cut 2 isolate`, `mend 2`);
//! one line back, `ok[ DATA]` or `err WHY`. Owns both ends of that
//! protocol; must not decide when a fault happens (the schedule does) nor
//! how (the cluster does).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::local::LocalCluster;
use super::schedule::Target;
use super::step::Action;

/// The socket's file in a cluster directory.
pub fn socket_path(dir: &Path) -> PathBuf {
    dir.join("control.sock")
}

/// Serve the control socket of `cluster` in a thread of its own, until the
/// process ends. A stale socket file from an earlier run is replaced.
pub fn serve(dir: &Path, cluster: Arc<Mutex<LocalCluster>>) -> Result<PathBuf, String> {
    let path = socket_path(dir);
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    std::thread::Builder::new()
        .name("strata-control".into())
        .spawn(move || {
            for conn in listener.incoming().flatten() {
                let cluster = cluster.clone();
                std::thread::spawn(move || {
                    let _ = handle(conn, &cluster);
                });
            }
        })
        .map_err(|e| e.to_string())?;
    Ok(path)
}

fn handle(conn: UnixStream, cluster: &Mutex<LocalCluster>) -> std::io::Result<()> {
    let mut out = conn.try_clone()?;
    for line in BufReader::new(conn).lines() {
        let line = line?;
        let answer = {
            let mut c = cluster.lock().unwrap_or_else(|p| p.into_inner());
            match line.trim() {
                "urls" => Ok(Some(c.urls().join(","))),
                "advertised" => Ok(Some(c.advertised().join(","))),
                "proxied" => Ok(Some(c.proxied().to_string())),
                "netns" => Ok(Some(c.netns().to_string())),
                l => Action::parse_line(l)
                    .and_then(|a| c.apply(a))
                    .map(|()| None),
            }
        };
        match answer {
            Ok(Some(data)) => writeln!(out, "ok {data}")?,
            Ok(None) => writeln!(out, "ok")?,
            Err(e) => writeln!(out, "err {}", e.replace('\n', " "))?,
        }
    }
    Ok(())
}

/// The client end: a [`Target`] for the schedule.
pub struct Control {
    path: PathBuf,
    conn: BufReader<UnixStream>,
    urls: Vec<String>,
    advertised: Vec<String>,
    proxied: bool,
    netns: bool,
}

/// A restart waits for the node to be ready, which can take a while.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(120);

impl Control {
    /// Connect to the cluster whose directory is `dir`.
    pub fn connect(dir: &Path) -> Result<Control, String> {
        let path = socket_path(dir);
        let conn = UnixStream::connect(&path).map_err(|e| {
            format!(
                "{}: {e}; --fault needs a cluster the lab started: run `strata cluster up --data-dir {}` first (or give its --cluster-dir)",
                path.display(),
                dir.display()
            )
        })?;
        conn.set_read_timeout(Some(ANSWER_TIMEOUT))
            .map_err(|e| e.to_string())?;
        let mut c = Control {
            path,
            conn: BufReader::new(conn),
            urls: vec![],
            advertised: vec![],
            proxied: false,
            netns: false,
        };
        let split = |s: String| s.split(',').map(str::to_string).collect::<Vec<_>>();
        c.urls = split(c.ask("urls")?);
        c.advertised = split(c.ask("advertised")?);
        c.proxied = c.ask("proxied")? == "true";
        c.netns = c.ask("netns")? == "true";
        Ok(c)
    }

    fn ask(&mut self, line: &str) -> Result<String, String> {
        let e = |e: std::io::Error| format!("{}: {e}", self.path.display());
        let s = self.conn.get_mut();
        writeln!(s, "{line}").map_err(e)?;
        let mut answer = String::new();
        self.conn.read_line(&mut answer).map_err(e)?;
        let answer = answer.trim_end();
        if answer == "ok" {
            Ok(String::new())
        } else if let Some(data) = answer.strip_prefix("ok ") {
            Ok(data.to_string())
        } else if let Some(why) = answer.strip_prefix("err ") {
            Err(why.to_string())
        } else {
            Err(format!("{}: no answer to {line:?}", self.path.display()))
        }
    }
}

impl Target for Control {
    fn urls(&self) -> Vec<String> {
        self.urls.clone()
    }

    fn advertised(&self) -> Vec<String> {
        self.advertised.clone()
    }

    fn proxied(&self) -> bool {
        self.proxied
    }

    fn netns(&self) -> bool {
        self.netns
    }

    fn apply(&mut self, a: Action) -> Result<(), String> {
        self.ask(&a.line()).map(|_| ())
    }
}
