//! The runtimes that serve connections. Per core (the default): one
//! current-thread tokio runtime per worker thread, and each accepted
//! connection handed to the one serving the fewest connections, where it
//! stays from its first byte to its close: a request's parsing, its work
//! and its answer run on one thread, with no wake-up or steal across cores
//! (a multi-threaded runtime's cost a deployment pays when nothing is
//! pinned: docs/benchmarks.md, "A request on its core"). Shared
//! (`--runtime shared`): one multi-threaded runtime, every connection on
//! it. Owns building the runtimes, placing connections and stopping the
//! runtimes' threads; must not interpret requests.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::net::TcpStream;
use tokio::runtime::{Handle, Runtime};

/// How the node's threads serve connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// One current-thread runtime per worker thread; a connection stays on
    /// one.
    PerCore,
    /// One multi-threaded runtime.
    Shared,
}

impl std::str::FromStr for Shape {
    type Err = String;
    fn from_str(s: &str) -> Result<Shape, String> {
        match s {
            "per-core" => Ok(Shape::PerCore),
            "shared" => Ok(Shape::Shared),
            _ => Err(format!("runtime must be per-core or shared, not {s:?}")),
        }
    }
}

/// Thread name of every runtime thread (the lab's reading of a node's
/// threads knows it).
pub const THREAD_NAME: &str = strata_api::threads::names::RUNTIME;

/// The node's runtimes: `main` runs the node's own tasks (the accept loop,
/// the cluster's timers) and, per core, is also the first shard; the
/// other shards run on threads of their own until `Runtimes::block_on`
/// returns.
pub struct Runtimes {
    main: Runtime,
    shards: Arc<Shards>,
    others: Vec<(
        std::thread::JoinHandle<()>,
        tokio::sync::oneshot::Sender<()>,
    )>,
}

impl Runtimes {
    /// `threads` runtime threads shaped as `shape`; each runtime's blocking
    /// pool holds at most `max_blocking` threads.
    pub fn build(shape: Shape, threads: usize, max_blocking: usize) -> Result<Runtimes, String> {
        let err = |e: std::io::Error| format!("runtime: {e}");
        if shape == Shape::Shared {
            let main = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads)
                .max_blocking_threads(max_blocking)
                .enable_all()
                // Workers and the blocking pool alike (tokio names them
                // from one function, and which thread serves as a worker
                // is its own).
                .thread_name(THREAD_NAME)
                .build()
                .map_err(err)?;
            let shards = Shards::new(vec![main.handle().clone()], false);
            return Ok(Runtimes {
                main,
                shards,
                others: Vec::new(),
            });
        }
        let one = || {
            tokio::runtime::Builder::new_current_thread()
                .max_blocking_threads(max_blocking)
                .enable_all()
                .thread_name(THREAD_NAME)
                .build()
                .map_err(err)
        };
        let main = one()?;
        let mut handles = vec![main.handle().clone()];
        let mut others = Vec::new();
        for _ in 1..threads.max(1) {
            let rt = one()?;
            handles.push(rt.handle().clone());
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let thread = std::thread::Builder::new()
                .name(THREAD_NAME.into())
                .spawn(move || {
                    rt.block_on(async {
                        let _ = stopped.await;
                    });
                    // Connections still open past the shutdown timeout are
                    // dropped with the runtime, here.
                })
                .map_err(err)?;
            others.push((thread, stop));
        }
        Ok(Runtimes {
            main,
            shards: Shards::new(handles, true),
            others,
        })
    }

    /// Where connections go.
    pub fn shards(&self) -> Arc<Shards> {
        self.shards.clone()
    }

    /// Run `f` on the main runtime (on this thread, which per core is the
    /// first shard's), then stop the other shards and wait for their
    /// threads.
    pub fn block_on<F: Future>(self, f: F) -> F::Output {
        let r = self.main.block_on(f);
        for (thread, stop) in self.others {
            let _ = stop.send(());
            let _ = thread.join();
        }
        r
    }
}

/// The runtimes connections are placed on, with how many each serves.
pub struct Shards {
    handles: Vec<Handle>,
    open: Vec<AtomicUsize>,
    /// A stream moves to another runtime's reactor (per core); under one
    /// shared runtime it stays registered where it was accepted.
    move_streams: bool,
    /// Ties go round: two shards with as many connections take turns.
    turn: AtomicUsize,
}

impl Shards {
    fn new(handles: Vec<Handle>, move_streams: bool) -> Arc<Shards> {
        Arc::new(Shards {
            open: handles.iter().map(|_| AtomicUsize::new(0)).collect(),
            handles,
            move_streams,
            turn: AtomicUsize::new(0),
        })
    }

    /// The runtimes, for the metrics of each.
    pub fn handles(&self) -> &[Handle] {
        &self.handles
    }

    /// Connections each shard serves now.
    pub fn open(&self) -> Vec<usize> {
        self.open
            .iter()
            .map(|n| n.load(Ordering::Relaxed))
            .collect()
    }

    fn pick(&self) -> usize {
        let n = self.handles.len();
        let start = self.turn.fetch_add(1, Ordering::Relaxed) % n;
        (0..n)
            .map(|i| (start + i) % n)
            .min_by_key(|&i| self.open[i].load(Ordering::Relaxed))
            .unwrap_or(0)
    }

    /// Serve `stream` with `serve` on the shard with the fewest
    /// connections, until the future it returns ends.
    pub fn serve<F, Fut>(self: &Arc<Self>, stream: TcpStream, serve: F)
    where
        F: FnOnce(TcpStream) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let i = self.pick();
        self.open[i].fetch_add(1, Ordering::Relaxed);
        let shards = self.clone();
        /// Counts the connection out however its task ends.
        struct Open(Arc<Shards>, usize);
        impl Drop for Open {
            fn drop(&mut self) {
                self.0.open[self.1].fetch_sub(1, Ordering::Relaxed);
            }
        }
        let open = Open(shards, i);
        if !self.move_streams {
            self.handles[i].spawn(async move {
                let _open = open;
                serve(stream).await
            });
            return;
        }
        // Leave the accepting runtime's reactor: its readiness would wake
        // that runtime's thread, not the one serving the connection.
        let std = match stream.into_std() {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!(error = %e, "an accepted connection could not be moved");
                return;
            }
        };
        self.handles[i].spawn(async move {
            let _open = open;
            match TcpStream::from_std(std) {
                Ok(stream) => serve(stream).await,
                Err(e) => {
                    tracing::debug!(error = %e, "an accepted connection could not be registered")
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Connections spread over the shards, each served on its shard's own
    /// thread, and counted out when they end.
    #[test]
    fn connections_spread_over_shards_and_run_on_their_own_threads() {
        let rts = Runtimes::build(Shape::PerCore, 2, 4).unwrap();
        let shards = rts.shards();
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (s2, seen2) = (shards.clone(), seen.clone());
        rts.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let (done_tx, mut done_rx) = tokio::sync::mpsc::channel::<()>(4);
            let mut clients = Vec::new();
            for _ in 0..4 {
                clients.push(std::net::TcpStream::connect(addr).unwrap());
                let (stream, _) = listener.accept().await.unwrap();
                let (seen, done) = (seen2.clone(), done_tx.clone());
                s2.serve(stream, move |mut stream| async move {
                    use tokio::io::AsyncReadExt;
                    let mut b = [0u8; 1];
                    // Wait for the client's byte: served by this shard's
                    // reactor.
                    stream.read_exact(&mut b).await.unwrap();
                    seen.lock().unwrap().push(std::thread::current().id());
                    let _ = done.send(()).await;
                });
            }
            assert_eq!(s2.open(), vec![2, 2], "four connections over two shards");
            for c in &mut clients {
                std::io::Write::write_all(c, b"x").unwrap();
            }
            for _ in 0..4 {
                done_rx.recv().await.unwrap();
            }
            // Give the tasks' counters a moment to drop.
            for _ in 0..100 {
                if s2.open() == vec![0, 0] {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            assert_eq!(s2.open(), vec![0, 0]);
        });
        let mut threads = seen.lock().unwrap().clone();
        threads.sort_by_key(|t| format!("{t:?}"));
        threads.dedup();
        assert_eq!(threads.len(), 2, "served on two threads: {threads:?}");
        drop(shards);
    }
}
