//! How an application makes a [`Client`]: seed URLs (one is enough), the
//! client's own credentials (a bearer token; for https:// a certificate
//! authority to trust and a client certificate to present), the timeout of
//! one attempt, the default `ack`/`from`, and the rest of [`Config`] for
//! those who tune it. Credentials belong to the client built, never to
//! the process: two clients of one program may show different ones. Owns
//! the settings; must not send anything but the discovery `connect` does.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::stream::Access;
use crate::{Client, Config, Error};

/// Settings of a [`Client`] to be connected (`Client::builder()`).
#[derive(Clone, Debug, Default)]
#[must_use = "a builder does nothing until connect()"]
pub struct Builder {
    seeds: Vec<String>,
    token: Option<String>,
    ca: Option<PathBuf>,
    identity: Option<(PathBuf, PathBuf)>,
    config: Config,
}

impl Client {
    /// Start building a client.
    pub fn builder() -> Builder {
        Builder::default()
    }
}

impl Builder {
    /// A node URL to learn the cluster from (`http://host:port` or
    /// `https://host:port`); more than one is tried in turn.
    pub fn seed(mut self, url: impl Into<String>) -> Builder {
        self.seeds.push(url.into());
        self
    }

    /// Several seed URLs at once.
    pub fn seeds<I, S>(mut self, urls: I) -> Builder
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.seeds.extend(urls.into_iter().map(Into::into));
        self
    }

    /// The bearer token shown to every node (a node started with
    /// `--token` or `--token-file` wants one; `docs/security.md`).
    pub fn token(mut self, token: impl Into<String>) -> Builder {
        self.token = Some(token.into().trim().to_string());
        self
    }

    /// Trust this certificate authority (a PEM file) for https:// nodes,
    /// instead of the system's roots.
    pub fn tls_ca(mut self, pem: impl Into<PathBuf>) -> Builder {
        self.ca = Some(pem.into());
        self
    }

    /// Present this certificate and key (PEM files) to a node that asks
    /// for a client certificate.
    pub fn client_certificate(
        mut self,
        cert: impl Into<PathBuf>,
        key: impl Into<PathBuf>,
    ) -> Builder {
        self.identity = Some((cert.into(), key.into()));
        self
    }

    /// How long one attempt on one node may take before the client counts
    /// it failed and tries another (2 s).
    pub fn timeout(mut self, t: Duration) -> Builder {
        self.config.timeout = t;
        self
    }

    /// The `ack`/`from` of every request that does not set its own (the
    /// nodes' defaults otherwise).
    pub fn replication(mut self, ack: usize, from: usize) -> Builder {
        self.config.replication = Some((ack, from));
        self
    }

    /// Every other setting (routing, failover, hedging, the retry
    /// budget). It replaces the timeout and replication set so far: call
    /// it first.
    pub fn config(mut self, config: Config) -> Builder {
        self.config = config;
        self
    }

    /// The client's credentials, from the settings.
    fn access(&self) -> Result<Access, Error> {
        let tls = if self.ca.is_some() || self.identity.is_some() {
            let own = match &self.identity {
                Some((cert, key)) => Some(
                    strata_tls::Certificate::load(cert, key)
                        .map_err(|e| Error::View(format!("the client certificate: {e}")))?,
                ),
                None => None,
            };
            Some(
                strata_tls::client_config(self.ca.as_deref(), strata_tls::HTTP11, own)
                    .map_err(|e| Error::View(format!("the TLS settings: {e}")))?,
            )
        } else {
            None
        };
        Ok(Access {
            token: self.token.as_deref().map(Arc::from),
            tls,
            // Its own, never the process's.
            process: false,
        })
    }

    /// Learn the cluster from the seeds and return the client: asks every
    /// seed for its cluster view within the timeout.
    pub async fn connect(mut self) -> Result<Client, Error> {
        self.config.access = self.access()?;
        Client::connect(&self.seeds, self.config).await
    }
}
