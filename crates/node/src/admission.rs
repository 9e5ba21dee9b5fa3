//! Admission control between the network and the store: at most
//! `max_in_service` requests in service, at most `max_waiting` waiting, each
//! for at most `max_wait`. A request that finds no room, or waits too long,
//! is refused at once (the API answers 503 with `Retry-After`). Owns the
//! limits and the counts of admitted-at-once, admitted-after-waiting and
//! refused (the node's `request-nonblock` / `request-block` figures); must
//! not know about HTTP.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub struct Admission {
    permits: Arc<Semaphore>,
    max_in_service: usize,
    max_waiting: usize,
    max_wait: Duration,
    waiting: AtomicUsize,
    pub admitted_at_once: AtomicU64,
    pub admitted_after_wait: AtomicU64,
    pub refused_full: AtomicU64,
    pub refused_timeout: AtomicU64,
}

/// Why a request was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// No permit and the waiting line is full.
    QueueFull,
    /// Waited `max_wait` without getting a permit.
    WaitedTooLong,
}

/// A place in service; dropping it frees the place.
pub struct Ticket {
    _permit: OwnedSemaphorePermit,
    /// True if the request had to wait.
    pub waited: bool,
}

impl Admission {
    pub fn new(max_in_service: usize, max_waiting: usize, max_wait: Duration) -> Self {
        Admission {
            permits: Arc::new(Semaphore::new(max_in_service)),
            max_in_service,
            max_waiting,
            max_wait,
            waiting: AtomicUsize::new(0),
            admitted_at_once: AtomicU64::new(0),
            admitted_after_wait: AtomicU64::new(0),
            refused_full: AtomicU64::new(0),
            refused_timeout: AtomicU64::new(0),
        }
    }

    /// Take a place in service. `on_wait` runs once if the request has to
    /// wait (the node fires its `request-block` probe there).
    pub async fn admit(&self, on_wait: impl FnOnce()) -> Result<Ticket, Refused> {
        if let Ok(p) = self.permits.clone().try_acquire_owned() {
            self.admitted_at_once.fetch_add(1, Ordering::Relaxed);
            return Ok(Ticket {
                _permit: p,
                waited: false,
            });
        }
        // Take a place in the waiting line, if there is one.
        let mut w = self.waiting.load(Ordering::Relaxed);
        loop {
            if w >= self.max_waiting {
                self.refused_full.fetch_add(1, Ordering::Relaxed);
                return Err(Refused::QueueFull);
            }
            match self
                .waiting
                .compare_exchange_weak(w, w + 1, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(now) => w = now,
            }
        }
        on_wait();
        let r = tokio::time::timeout(self.max_wait, self.permits.clone().acquire_owned()).await;
        self.waiting.fetch_sub(1, Ordering::AcqRel);
        match r {
            Ok(Ok(p)) => {
                self.admitted_after_wait.fetch_add(1, Ordering::Relaxed);
                Ok(Ticket {
                    _permit: p,
                    waited: true,
                })
            }
            _ => {
                self.refused_timeout.fetch_add(1, Ordering::Relaxed);
                Err(Refused::WaitedTooLong)
            }
        }
    }

    /// The current limit of requests in service.
    pub fn limit(&self) -> usize {
        self.max_in_service
    }

    pub fn in_service(&self) -> usize {
        self.max_in_service - self.permits.available_permits()
    }

    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn limits_in_service_waiting_and_wait_time() {
        let a = Arc::new(Admission::new(2, 1, Duration::from_millis(50)));
        let t1 = a.admit(|| ()).await.unwrap();
        let _t2 = a.admit(|| ()).await.unwrap();
        assert!(!t1.waited);
        assert_eq!(a.in_service(), 2);
        // Third waits (line of 1), fourth finds the line full.
        let a2 = a.clone();
        let waiter = tokio::spawn(async move { a2.admit(|| ()).await.map(|t| t.waited) });
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(a.waiting(), 1);
        assert_eq!(a.admit(|| ()).await.err(), Some(Refused::QueueFull));
        drop(t1);
        assert_eq!(waiter.await.unwrap(), Ok(true));
        // Nobody leaves now: a waiter times out.
        let t = a.admit(|| ()).await; // the freed permit went to the waiter, which dropped it
        assert!(t.is_ok());
        assert_eq!(a.admit(|| ()).await.err(), Some(Refused::WaitedTooLong));
        assert_eq!(a.admitted_at_once.load(Ordering::Relaxed), 3);
        assert_eq!(a.admitted_after_wait.load(Ordering::Relaxed), 1);
        assert_eq!(a.refused_full.load(Ordering::Relaxed), 1);
        assert_eq!(a.refused_timeout.load(Ordering::Relaxed), 1);
    }
}
