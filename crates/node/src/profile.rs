//! `GET /debug/pprof/profile?seconds=N[&format=svg]`: a CPU profile of the
//! node, sampled at 99 Hz with the `pprof` crate, answered as a gzip-free
//! pprof protobuf (`go tool pprof` reads it) or as a flamegraph SVG. One
//! profile at a time. `GET /debug/pprof/heap`: what the process has
//! allocated and not freed, from jemalloc's sampling heap profiler, as a
//! gzipped pprof protobuf with function names (`strata report heap` draws
//! it), in a binary built with the `heap-profile` feature. Owns the
//! profilers; must not know about other routes.

use std::time::Duration;

use pprof::protos::Message;
use tokio::sync::Mutex;

static BUSY: Mutex<()> = Mutex::const_new(());

pub enum Format {
    Protobuf,
    Svg,
}

pub enum ProfileError {
    Busy,
    Failed(String),
    /// This binary cannot make that profile (and how to get one that can).
    Unavailable(String),
}

/// The heap profile now: every sampled allocation not yet freed, with the
/// stack that made it.
#[cfg(feature = "heap-profile")]
pub async fn heap() -> Result<Vec<u8>, ProfileError> {
    let Some(ctl) = jemalloc_pprof::PROF_CTL.as_ref() else {
        return Err(ProfileError::Unavailable(
            "jemalloc's profiler is off in this process (MALLOC_CONF has prof:false)".into(),
        ));
    };
    let mut ctl = ctl
        .clone()
        .try_lock_owned()
        .map_err(|_| ProfileError::Busy)?;
    // Dumping writes a temporary file, parses it and resolves symbols. The
    // symbols' cache (the binary's debug information, tens of MiB) is
    // dropped after: kept, it would be the next profile's largest growth.
    tokio::task::spawn_blocking(move || {
        let p = ctl.dump_pprof();
        backtrace::clear_symbol_cache();
        p
    })
    .await
    .map_err(|e| ProfileError::Failed(e.to_string()))?
    .map_err(|e| ProfileError::Failed(format!("{e:#}")))
}

#[cfg(not(feature = "heap-profile"))]
pub async fn heap() -> Result<Vec<u8>, ProfileError> {
    Err(ProfileError::Unavailable(
        "this binary was built without heap profiling (it allocates with mimalloc): \
         build it with `cargo build --release --features heap-profile` (jemalloc with \
         its sampling profiler)"
            .into(),
    ))
}

/// Profile the whole process for `seconds`.
pub async fn cpu(seconds: u64, format: Format) -> Result<Vec<u8>, ProfileError> {
    let _one = BUSY.try_lock().map_err(|_| ProfileError::Busy)?;
    let guard = pprof::ProfilerGuardBuilder::default()
        .frequency(99)
        .blocklist(&["libc", "libgcc", "pthread", "vdso"])
        .build()
        .map_err(|e| ProfileError::Failed(e.to_string()))?;
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let report = guard
        .report()
        .build()
        .map_err(|e| ProfileError::Failed(e.to_string()))?;
    if report.data.is_empty() {
        return Err(ProfileError::Failed(
            "no samples: the node used no CPU while profiling".into(),
        ));
    }
    let mut out = Vec::new();
    match format {
        Format::Svg => report
            .flamegraph(&mut out)
            .map_err(|e| ProfileError::Failed(e.to_string()))?,
        Format::Protobuf => {
            let p = report
                .pprof()
                .map_err(|e| ProfileError::Failed(e.to_string()))?;
            p.encode(&mut out)
                .map_err(|e| ProfileError::Failed(e.to_string()))?;
        }
    }
    Ok(out)
}
