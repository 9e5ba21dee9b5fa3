//! The live progress line of a load run or a sweep's trial: elapsed,
//! sent, achieved rate, p50 and p99, errors. Owns that line; must not
//! measure anything.

use crate::load::driver;

/// The progress line: elapsed, sent, achieved rate, p50 and p99, errors.
pub struct Progress(Option<indicatif::ProgressBar>);

impl Progress {
    pub fn new(quiet: bool) -> Progress {
        if quiet {
            return Progress(None);
        }
        let pb = indicatif::ProgressBar::new_spinner();
        pb.set_style(indicatif::ProgressStyle::with_template("{spinner} {msg}").expect("template"));
        Progress(Some(pb))
    }

    pub fn show(&self, prefix: &str, s: &driver::Snapshot) {
        let Some(pb) = &self.0 else { return };
        let secs = s.elapsed.as_secs_f64();
        let msg = if s.warming {
            format!("{prefix}warming up: sent {}", s.sent)
        } else {
            format!(
                "{prefix}{secs:>5.1}s  sent {}  {:.0} req/s  p50 {:.2} ms  p99 {:.2} ms  errors {}",
                s.sent,
                s.done as f64 / secs.max(1e-3),
                s.p50_us as f64 / 1000.0,
                s.p99_us as f64 / 1000.0,
                s.errors
            )
        };
        pb.set_message(msg);
        pb.tick();
    }

    pub fn finish(&self) {
        if let Some(pb) = &self.0 {
            pb.finish_and_clear();
        }
    }
}
