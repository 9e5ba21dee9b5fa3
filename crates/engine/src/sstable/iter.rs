//! A cursor over a whole table, in key order: the data block that holds
//! the position loaded (through the block cache, or around it for a scan
//! that must not evict), exhausted blocks skipped, a malformed entry
//! reported as corruption with the table's file and the block's offset.
//! Owns moving through a table; must not read a table's footer or index
//! (that is `table`).

use std::sync::Arc;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::iterator::InternalIterator;
use crate::sstable::block::BlockIter;
use crate::sstable::table::Table;

/// A cursor over a whole table.
pub struct TableIter {
    table: Arc<Table>,
    block: Option<BlockIter>,
    idx: usize,
    fill_cache: bool,
}

impl Table {
    /// An iterator over the whole table. `fill_cache` is false for
    /// compaction reads so that they do not evict the foreground's blocks.
    pub fn iter(self: &Arc<Self>, fill_cache: bool) -> TableIter {
        TableIter {
            table: self.clone(),
            block: None,
            idx: 0,
            fill_cache,
        }
    }
}

impl TableIter {
    fn load(&mut self, i: usize) -> Result<()> {
        self.idx = i;
        if i >= self.table.index.len() {
            self.block = None;
            return Ok(());
        }
        self.block = Some(self.table.block(i, self.fill_cache)?.iter());
        Ok(())
    }

    fn check(&self) -> Result<()> {
        if let Some(b) = &self.block {
            if b.corrupt() {
                return Err(Error::corruption(
                    &self.table.path,
                    self.table.index[self.idx].offset,
                    "malformed data block entry",
                ));
            }
        }
        Ok(())
    }

    /// Skip past exhausted blocks.
    fn settle(&mut self) -> Result<()> {
        loop {
            self.check()?;
            match &self.block {
                Some(b) if !b.valid() => {
                    self.load(self.idx + 1)?;
                    if let Some(b) = &mut self.block {
                        b.seek_to_first();
                    }
                }
                _ => return Ok(()),
            }
        }
    }
}

impl InternalIterator for TableIter {
    fn valid(&self) -> bool {
        self.block.as_ref().is_some_and(|b| b.valid())
    }
    fn seek_to_first(&mut self) -> Result<()> {
        self.load(0)?;
        if let Some(b) = &mut self.block {
            b.seek_to_first();
        }
        self.settle()
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let i = self.table.find_block(target);
        self.load(i)?;
        if let Some(b) = &mut self.block {
            b.seek(target);
        }
        self.settle()
    }
    fn next(&mut self) -> Result<()> {
        if let Some(b) = &mut self.block {
            b.next();
        }
        self.settle()
    }
    fn key(&self) -> &[u8] {
        self.block.as_ref().expect("valid").key()
    }
    fn value_ref(&self) -> &[u8] {
        self.block.as_ref().expect("valid").value_ref()
    }
    fn value(&self) -> Bytes {
        self.block.as_ref().expect("valid").value()
    }
}
