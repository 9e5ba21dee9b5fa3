//! Sorted string tables: immutable files of sorted internal keys. `block`
//! owns the data/index block format, `bloom` the filter, `cache` the shared block cache, `builder` writes a
//! table, `table` reads one. See docs/engine.md for the byte layout.

pub mod block;
pub mod bloom;
pub mod builder;
pub mod cache;
pub mod table;

pub use builder::TableBuilder;
pub use table::{Table, TableIter};

/// Magic number at the very end of every table file ("STRATAST").
pub const MAGIC: [u8; 8] = *b"STRATAST";
/// Version of the table format written by this code.
pub const FORMAT_VERSION: u32 = 1;
/// Footer length in bytes.
pub const FOOTER_LEN: usize = 64;
/// Every block on disk is followed by a compression byte and a CRC-32.
pub const BLOCK_TRAILER_LEN: usize = 5;
