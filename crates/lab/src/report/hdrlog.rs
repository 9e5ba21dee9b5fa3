//! HdrHistogram interval logs (interim: not written yet; the full writer
//! and `strata report merge` land separately). Owns the log format; must
//! not run load.

use std::io;
use std::path::Path;
use std::time::SystemTime;

use hdrhistogram::Histogram;

pub struct HdrLogWriter;

impl HdrLogWriter {
    pub fn create(_path: &Path, _start: SystemTime) -> io::Result<HdrLogWriter> {
        Err(io::Error::other("HDR interval logs are not supported yet"))
    }

    pub fn interval(
        &mut self,
        _start_s: f64,
        _dur_s: f64,
        _tag: &str,
        _h: &Histogram<u64>,
    ) -> io::Result<()> {
        Ok(())
    }

    pub fn finish(self) -> io::Result<()> {
        Ok(())
    }
}
