//! Sorted string tables: immutable files of sorted internal keys. `block`
//! owns the data/index block format, `bloom` the filter, `cache` the shared block cache,
//! `compress` the codecs a data block is stored with, `builder` writes a table,
//! `table` reads one, `iter` moves through one in order. See docs/engine.md for the byte layout.

pub mod block;
pub mod bloom;
pub mod builder;
pub mod cache;
pub mod compress;
pub mod iter;
pub mod table;

pub use builder::TableBuilder;
pub use compress::Compression;
pub use iter::TableIter;
pub use table::Table;

/// Magic number at the very end of every table file ("STRATAST").
pub const MAGIC: [u8; 8] = *b"STRATAST";
/// Version of the table format written by this code: 2 may hold
/// compressed data blocks; 1 (read as well) never does.
pub const FORMAT_VERSION: u32 = 2;
/// Footer length in bytes.
pub const FOOTER_LEN: usize = 64;
/// Every block on disk is followed by a compression byte and a CRC-32.
pub const BLOCK_TRAILER_LEN: usize = 5;
