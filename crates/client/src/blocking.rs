//! The same client for code without an async runtime (scripts, tools,
//! tests): [`Client`] owns a small runtime of its own (one thread) and
//! runs the async client's calls on it, so the routing, failover, named
//! writes and errors are the same ones. Calling it from inside an async
//! runtime's task would block that runtime's thread: use the async
//! client there. Owns the runtime; must not do anything the async client
//! does not.

use std::sync::Arc;

use bytes::Bytes;

use crate::builder::Builder;
use crate::ops::Options;
use crate::Error;

impl Builder {
    /// A blocking client with these settings (for scripts and tools).
    pub fn connect_blocking(self) -> Result<Client, Error> {
        Client::connect(self)
    }
}

/// A blocking client (`Client::builder().connect_blocking()`); cheap to
/// clone, clones share the runtime and the connections.
#[derive(Clone)]
pub struct Client {
    rt: Arc<tokio::runtime::Runtime>,
    inner: crate::Client,
}

impl Client {
    /// Connect with `b`'s settings.
    pub fn connect(b: Builder) -> Result<Client, Error> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("strata-client")
            .enable_all()
            .build()
            .map_err(|e| Error::View(format!("could not start the client's runtime: {e}")))?;
        let inner = rt.block_on(b.connect())?;
        Ok(Client {
            rt: Arc::new(rt),
            inner,
        })
    }

    /// The async client underneath (its members, stats and sessions).
    pub fn as_async(&self) -> &crate::Client {
        &self.inner
    }

    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<(), Error> {
        self.rt.block_on(self.inner.put(key, value))
    }

    pub fn put_with(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        o: &Options,
    ) -> Result<(), Error> {
        self.rt.block_on(self.inner.put_with(key, value, o))
    }

    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Bytes>, Error> {
        self.rt.block_on(self.inner.get(key))
    }

    pub fn get_with(&self, key: impl AsRef<[u8]>, o: &Options) -> Result<Option<Bytes>, Error> {
        self.rt.block_on(self.inner.get_with(key, o))
    }

    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<(), Error> {
        self.rt.block_on(self.inner.delete(key))
    }

    pub fn delete_with(&self, key: impl AsRef<[u8]>, o: &Options) -> Result<(), Error> {
        self.rt.block_on(self.inner.delete_with(key, o))
    }

    /// The entries with `start <= key < end` as an iterator, streamed.
    pub fn range(&self, start: impl AsRef<[u8]>, end: Option<&[u8]>) -> Range {
        Range {
            rt: self.rt.clone(),
            inner: self.inner.range(start, end),
        }
    }
}

/// A range's entries, one at a time (`Client::range`).
pub struct Range {
    rt: Arc<tokio::runtime::Runtime>,
    inner: crate::ops::Range,
}

impl Iterator for Range {
    type Item = Result<(Bytes, Bytes), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        self.rt.block_on(self.inner.next())
    }
}
