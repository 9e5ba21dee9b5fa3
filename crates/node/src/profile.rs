//! `GET /debug/pprof/profile?seconds=N[&format=svg]`: a CPU profile of the
//! node, sampled at 99 Hz with the `pprof` crate, answered as a gzip-free
//! pprof protobuf (`go tool pprof` reads it) or as a flamegraph SVG. One
//! profile at a time. Owns the profiler; must not know about other routes.

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
