//! A real node for the node's own tests: `strata serve`'s arguments parsed
//! as the binary parses them, the node started in this process on an
//! ephemeral loopback port (`server::spawn`) against a temporary
//! directory, spoken to over raw HTTP/1.1 (`http`).
#![allow(dead_code)]

pub mod http;

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};

use clap::Parser;
pub use http::*;
use strata_node::server::Spawned;
use strata_node::{Config, ServeArgs};

/// `strata serve`'s arguments, as the binary takes them.
#[derive(Parser)]
struct Serve {
    #[command(flatten)]
    args: ServeArgs,
}

pub struct Node {
    spawned: Option<Spawned>,
    pub addr: SocketAddr,
    pub dir: PathBuf,
}

impl Node {
    /// A node on `dir` with `extra` arguments of `strata serve`.
    pub fn start(dir: &Path, extra: &[&str]) -> Node {
        Node::try_start(dir, extra).unwrap_or_else(|e| panic!("starting the node: {e}"))
    }

    /// As `start`, or why the node would not start.
    pub fn try_start(dir: &Path, extra: &[&str]) -> Result<Node, String> {
        let mut argv = vec!["serve".to_string()];
        if !extra.contains(&"--listen") {
            argv.extend(["--listen".into(), "127.0.0.1:0".into()]);
        }
        argv.extend(["--data-dir".into(), dir.display().to_string()]);
        argv.extend(["--log-level".into(), "warn".into()]);
        argv.extend(extra.iter().map(|s| s.to_string()));
        let s = Serve::try_parse_from(&argv).map_err(|e| e.to_string())?;
        let config = Config::resolve(&s.args)?;
        let spawned = strata_node::server::spawn(config)?;
        Ok(Node {
            addr: spawned.addr,
            spawned: Some(spawned),
            dir: dir.to_path_buf(),
        })
    }

    /// Drain and close as on SIGTERM; whether it closed cleanly.
    pub fn stop(mut self) -> Result<(), String> {
        self.spawned.take().expect("running").stop()
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn connect(&self) -> TcpStream {
        connect(self.addr)
    }

    /// One request on a fresh connection.
    pub fn request(&self, method: &str, target: &str, body: &[u8]) -> Response {
        request_to(self.addr, method, target, &[], body)
    }

    /// As `request`, with more headers.
    pub fn request_with(
        &self,
        method: &str,
        target: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Response {
        request_to(self.addr, method, target, headers, body)
    }
}
