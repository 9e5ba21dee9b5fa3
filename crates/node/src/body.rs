//! Reading a PUT's body before the request is admitted: a client that
//! sends its body slowly then holds a connection and the bytes it has sent,
//! never a place in service, so slow clients cannot crowd out
//! well-behaved ones (issue 29). The bytes of bodies being read or held
//! are bounded node-wide ([`Bodies`]): each frame takes its size from the
//! budget as it arrives, and the whole is given back when the request is
//! answered. Owns that budget and the reading; must not decide what a
//! request means (`api` does).

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The node-wide budget of request-body bytes held in memory.
pub struct Bodies {
    budget: Arc<Semaphore>,
    bytes: usize,
}

/// Why a body was not read.
#[derive(Debug, PartialEq, Eq)]
pub enum BodyError {
    /// More than the value limit (`413`).
    TooLarge { limit: usize },
    /// Not whole within the body timeout (`408`).
    TimedOut,
    /// Every byte of the budget is held by other bodies (`503`).
    Full { budget: usize },
    /// The connection failed mid-body (`400`).
    Broken(String),
}

/// A body read whole, and its bytes' place in the budget (given back when
/// dropped).
pub struct Body {
    pub value: Bytes,
    _held: Option<OwnedSemaphorePermit>,
}

impl Bodies {
    /// A budget of `bytes` (at least the largest value, so one body of the
    /// limit always fits an otherwise idle node).
    pub fn new(bytes: usize) -> Bodies {
        let bytes = bytes.min(Semaphore::MAX_PERMITS).min(u32::MAX as usize);
        Bodies {
            budget: Arc::new(Semaphore::new(bytes)),
            bytes,
        }
    }

    /// Bytes held by bodies now.
    pub fn held(&self) -> usize {
        self.bytes - self.budget.available_permits()
    }

    /// Read `body` whole: at most `limit` bytes, within `timeout`, each
    /// frame's bytes taken from the budget as it arrives.
    pub async fn read(
        &self,
        mut body: Incoming,
        limit: usize,
        timeout: Duration,
    ) -> Result<Body, BodyError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut frames: Vec<Bytes> = Vec::new();
        let mut len = 0usize;
        let mut held: Option<OwnedSemaphorePermit> = None;
        loop {
            let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
                Err(_) => return Err(BodyError::TimedOut),
                Ok(None) => break,
                Ok(Some(Err(e))) => return Err(BodyError::Broken(e.to_string())),
                Ok(Some(Ok(f))) => f,
            };
            let Ok(data) = frame.into_data() else {
                continue; // trailers
            };
            if data.is_empty() {
                continue;
            }
            len += data.len();
            if len > limit {
                return Err(BodyError::TooLarge { limit });
            }
            let permit = self
                .budget
                .clone()
                .try_acquire_many_owned(data.len() as u32)
                .map_err(|_| BodyError::Full { budget: self.bytes })?;
            match &mut held {
                Some(h) => h.merge(permit),
                None => held = Some(permit),
            }
            frames.push(data);
        }
        let value = match frames.len() {
            0 => Bytes::new(),
            1 => frames.pop().expect("one frame"),
            _ => {
                let mut all = BytesMut::with_capacity(len);
                for f in frames {
                    all.extend_from_slice(&f);
                }
                all.freeze()
            }
        };
        Ok(Body { value, _held: held })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_is_at_least_one_and_counts_what_is_held() {
        let b = Bodies::new(1000);
        assert_eq!(b.held(), 0);
        let p = b.budget.clone().try_acquire_many_owned(400).unwrap();
        assert_eq!(b.held(), 400);
        drop(p);
        assert_eq!(b.held(), 0);
    }
}
