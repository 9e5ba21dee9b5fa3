//! Leveled compaction: choosing what to compact (score per level) and
//! merging input tables into new output tables. Must not install results
//! (the db does that atomically with the manifest) nor block the foreground.
//!
//! Policy (LevelDB/RocksDB style leveled): level 0 holds flushed tables that
//! may overlap; once it has `l0_compaction_trigger` tables all of them merge
//! with the overlapping level-1 tables. Level n (n >= 1) holds at most
//! `level1_size * level_multiplier^(n-1)` bytes; past that, one table
//! (round-robin by key) merges with the overlapping tables of level n+1.
//! Leveled keeps read and space amplification low (one table per level per
//! lookup, ~1.1x space), at the price of more write amplification than
//! tiered policies; a store serving random point reads wants that trade.

use std::path::Path;
use std::sync::Arc;

use crate::error::Result;
use crate::iterator::{InternalIterator, MergeIterator};
use crate::key::{self, Kind};
use crate::manifest::VersionEdit;
use crate::options::Options;
use crate::sstable::{Compression, Table, TableBuilder};
use crate::version::{meta_of, Version};

/// A chosen compaction.
pub struct Compaction {
    pub level: usize,
    pub output_level: usize,
    pub inputs: Vec<Arc<Table>>,
    pub next_inputs: Vec<Arc<Table>>,
}

impl Compaction {
    pub fn input_bytes(&self) -> u64 {
        self.inputs
            .iter()
            .chain(&self.next_inputs)
            .map(|t| t.size())
            .sum()
    }

    /// A single table with nothing below it to merge moves by a manifest edit.
    pub fn is_trivial_move(&self) -> bool {
        self.inputs.len() == 1 && self.next_inputs.is_empty()
    }
}

pub fn level_target(opts: &Options, level: usize) -> u64 {
    let mut t = opts.level1_size;
    for _ in 1..level {
        t = t.saturating_mul(opts.level_multiplier);
    }
    t
}

/// Scores per level: >= 1.0 means the level needs compaction.
pub fn scores(v: &Version, opts: &Options) -> Vec<f64> {
    let last = v.levels.len() - 1;
    (0..last)
        .map(|l| {
            if l == 0 {
                v.levels[0].len() as f64 / opts.l0_compaction_trigger as f64
            } else {
                v.level_bytes(l) as f64 / level_target(opts, l) as f64
            }
        })
        .collect()
}

/// Pick the most urgent compaction, if any level scores >= 1.
/// `pointers[l]` remembers where the last level-l compaction ended.
pub fn pick(v: &Version, opts: &Options, pointers: &mut [Vec<u8>]) -> Option<Compaction> {
    let s = scores(v, opts);
    let (level, score) = s
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.partial_cmp(b.1).unwrap())?;
    if *score < 1.0 {
        return None;
    }
    if level == 0 {
        return Some(whole_level(v, 0));
    }
    let tables = &v.levels[level];
    let ptr = &pointers[level];
    let t = tables
        .iter()
        .find(|t| ptr.is_empty() || t.first_user_key() > ptr.as_slice())
        .unwrap_or(&tables[0])
        .clone();
    pointers[level] = t.last_user_key().to_vec();
    let next_inputs = v.overlapping(level + 1, t.first_user_key(), t.last_user_key());
    Some(Compaction {
        level,
        output_level: level + 1,
        inputs: vec![t],
        next_inputs,
    })
}

/// All tables of `level` merged with what overlaps them one level down.
pub fn whole_level(v: &Version, level: usize) -> Compaction {
    let inputs = v.levels[level].clone();
    let lo = inputs
        .iter()
        .map(|t| t.first_user_key())
        .min()
        .unwrap_or(&[]);
    let hi = inputs
        .iter()
        .map(|t| t.last_user_key())
        .max()
        .unwrap_or(&[]);
    let next_inputs = if inputs.is_empty() {
        vec![]
    } else {
        v.overlapping(level + 1, lo, hi)
    };
    Compaction {
        level,
        output_level: level + 1,
        inputs,
        next_inputs,
    }
}

/// What a finished compaction produced.
pub struct Output {
    pub edit: VersionEdit,
    pub tables: Vec<Arc<Table>>,
    pub bytes_read: u64,
    pub bytes_written: u64,
}

/// Opens tables the compaction writes; supplied by the db.
pub trait TableSink {
    fn new_table_path(&self) -> (u64, std::path::PathBuf);
    fn open_table(&self, id: u64, path: &Path) -> Result<Arc<Table>>;
}

/// Merge the inputs into new tables at the output level. Keeps only the
/// newest version of each key (no snapshot outlives the tables it reads, as
/// scans pin their tables), and drops tombstones where no deeper level can
/// hold an older version of the key.
pub fn run(c: &Compaction, v: &Version, opts: &Options, sink: &dyn TableSink) -> Result<Output> {
    let mut edit = VersionEdit::default();
    for t in &c.inputs {
        edit.deleted.push((c.level, t.id()));
    }
    for t in &c.next_inputs {
        edit.deleted.push((c.output_level, t.id()));
    }
    if c.is_trivial_move() {
        let t = &c.inputs[0];
        edit.added.push(meta_of(c.output_level, t));
        return Ok(Output {
            edit,
            tables: vec![t.clone()],
            bytes_read: 0,
            bytes_written: 0,
        });
    }
    // Newest first: L0 tables are already ordered newest first, and level n
    // is newer than level n+1.
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    if c.level == 0 {
        for t in &c.inputs {
            children.push(Box::new(t.iter(false)));
        }
    } else {
        children.push(Box::new(crate::version::LevelIter::new(
            c.inputs.clone(),
            false,
        )));
    }
    if !c.next_inputs.is_empty() {
        children.push(Box::new(crate::version::LevelIter::new(
            c.next_inputs.clone(),
            false,
        )));
    }
    let mut it = MergeIterator::new(children);
    it.seek_to_first()?;
    let mut outputs: Vec<Arc<Table>> = Vec::new();
    let mut builder: Option<(u64, std::path::PathBuf, TableBuilder)> = None;
    let mut last_user: Vec<u8> = Vec::new();
    let mut has_last = false;
    let mut zeroed: Vec<u8> = Vec::new();
    let mut bytes_written = 0;
    let result = (|| -> Result<()> {
        while it.valid() {
            let k = it.key();
            let (user, trailer) = key::split(k);
            if has_last && user == last_user.as_slice() {
                it.next()?;
                continue;
            }
            last_user.clear();
            last_user.extend_from_slice(user);
            has_last = true;
            if key::trailer_kind(trailer) == Some(Kind::Delete)
                && v.is_bottommost_for(c.output_level, user)
            {
                it.next()?;
                continue;
            }
            if builder
                .as_ref()
                .is_some_and(|(_, _, b)| b.file_size() >= opts.target_file_size)
            {
                let (id, path, b) = builder.take().unwrap();
                let (size, _) = b.finish()?;
                bytes_written += size;
                outputs.push(sink.open_table(id, &path)?);
            }
            if builder.is_none() {
                let (id, path) = sink.new_table_path();
                let b = TableBuilder::create(
                    &path,
                    opts.block_size,
                    opts.block_restart_interval,
                    opts.bloom_bits_per_key,
                    Compression::for_level(&opts.compression, c.output_level),
                )?;
                builder = Some((id, path, b));
            }
            // A newest version with nothing of its key below it needs no
            // sequence number: this merge keeps one version per key, so
            // there is no older one for a snapshot to fall back to, and a
            // newer version in a level above sorts before sequence 0.
            // Zeroed, the trailers of a bottom level are alike and
            // compress away, as RocksDB's bottommost levels do.
            let b = &mut builder.as_mut().unwrap().2;
            if c.output_level >= 1
                && key::trailer_seq(trailer) != 0
                && key::trailer_kind(trailer) == Some(Kind::Put)
                && v.is_bottommost_for(c.output_level, user)
            {
                zeroed.clear();
                key::encode_into(&mut zeroed, user, key::trailer(0, Kind::Put));
                b.add(&zeroed, it.value_ref())?;
            } else {
                b.add(k, it.value_ref())?;
            }
            it.next()?;
        }
        if let Some((id, path, b)) = builder.take() {
            let (size, _) = b.finish()?;
            bytes_written += size;
            outputs.push(sink.open_table(id, &path)?);
        }
        Ok(())
    })();
    if let Err(e) = result {
        if let Some((_, _, b)) = builder.take() {
            b.abandon();
        }
        for t in &outputs {
            t.mark_obsolete();
        }
        return Err(e);
    }
    for t in &outputs {
        edit.added.push(meta_of(c.output_level, t));
    }
    Ok(Output {
        edit,
        tables: outputs,
        bytes_read: c.input_bytes(),
        bytes_written,
    })
}
