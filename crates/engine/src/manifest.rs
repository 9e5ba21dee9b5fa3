//! The manifest: an edit log recording which tables are live at which level,
//! the oldest WAL still needed, the next file number and the last sequence.
//! `CURRENT` names the live manifest. Owns the edit encoding, checkpoints
//! (a fresh manifest holding one snapshot edit) and recovery of the state.
//! Must not open tables or decide compactions.
//!
//! Every new file (manifest checkpoint, `CURRENT`) is written under a
//! temporary name, fsynced, renamed, and the directory fsynced.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::coding::{put_bytes, put_varint, Reader};
use crate::error::{synced, Error, IoContext, Result};
use crate::record::{self, Next, RecordReader};

/// Where one live table sits and what it covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableMeta {
    pub level: usize,
    pub id: u64,
    pub size: u64,
    /// First and last internal keys.
    pub first: Vec<u8>,
    pub last: Vec<u8>,
    pub min_seq: u64,
    pub max_seq: u64,
}

/// One atomic change to the tree's shape.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionEdit {
    /// WAL files numbered below this are no longer needed.
    pub log_number: Option<u64>,
    pub next_file: Option<u64>,
    pub last_seq: Option<u64>,
    pub added: Vec<TableMeta>,
    pub deleted: Vec<(usize, u64)>,
}

const TAG_LOG: u8 = 1;
const TAG_NEXT_FILE: u8 = 2;
const TAG_LAST_SEQ: u8 = 3;
const TAG_ADD: u8 = 4;
const TAG_DELETE: u8 = 5;

impl VersionEdit {
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        for (tag, v) in [
            (TAG_LOG, self.log_number),
            (TAG_NEXT_FILE, self.next_file),
            (TAG_LAST_SEQ, self.last_seq),
        ] {
            if let Some(v) = v {
                b.push(tag);
                put_varint(&mut b, v);
            }
        }
        for t in &self.added {
            b.push(TAG_ADD);
            put_varint(&mut b, t.level as u64);
            put_varint(&mut b, t.id);
            put_varint(&mut b, t.size);
            put_bytes(&mut b, &t.first);
            put_bytes(&mut b, &t.last);
            put_varint(&mut b, t.min_seq);
            put_varint(&mut b, t.max_seq);
        }
        for (level, id) in &self.deleted {
            b.push(TAG_DELETE);
            put_varint(&mut b, *level as u64);
            put_varint(&mut b, *id);
        }
        b
    }

    pub fn decode(buf: &[u8]) -> Option<VersionEdit> {
        let mut r = Reader::new(buf);
        let mut e = VersionEdit::default();
        while !r.done() {
            match r.u8()? {
                TAG_LOG => e.log_number = Some(r.varint()?),
                TAG_NEXT_FILE => e.next_file = Some(r.varint()?),
                TAG_LAST_SEQ => e.last_seq = Some(r.varint()?),
                TAG_ADD => e.added.push(TableMeta {
                    level: r.varint()? as usize,
                    id: r.varint()?,
                    size: r.varint()?,
                    first: r.bytes()?.to_vec(),
                    last: r.bytes()?.to_vec(),
                    min_seq: r.varint()?,
                    max_seq: r.varint()?,
                }),
                TAG_DELETE => e.deleted.push((r.varint()? as usize, r.varint()?)),
                _ => return None,
            }
        }
        Some(e)
    }
}

/// The state the manifest describes.
#[derive(Clone, Debug, Default)]
pub struct ManifestState {
    pub levels: Vec<Vec<TableMeta>>,
    pub log_number: u64,
    pub next_file: u64,
    pub last_seq: u64,
}

impl ManifestState {
    pub fn new(num_levels: usize) -> Self {
        ManifestState {
            levels: vec![Vec::new(); num_levels],
            log_number: 0,
            next_file: 1,
            last_seq: 0,
        }
    }

    /// Apply an edit; a delete of an unknown table or an add at an unknown
    /// level is an error (the log disagrees with itself).
    pub fn apply(&mut self, e: &VersionEdit) -> std::result::Result<(), String> {
        if let Some(v) = e.log_number {
            self.log_number = self.log_number.max(v);
        }
        if let Some(v) = e.next_file {
            self.next_file = self.next_file.max(v);
        }
        if let Some(v) = e.last_seq {
            self.last_seq = self.last_seq.max(v);
        }
        for (level, id) in &e.deleted {
            let l = self
                .levels
                .get_mut(*level)
                .ok_or(format!("delete at unknown level {level}"))?;
            let before = l.len();
            l.retain(|t| t.id != *id);
            if l.len() == before {
                return Err(format!("delete of unknown table {id} at level {level}"));
            }
        }
        for t in &e.added {
            let l = self
                .levels
                .get_mut(t.level)
                .ok_or(format!("add at unknown level {}", t.level))?;
            l.push(t.clone());
            self.next_file = self.next_file.max(t.id + 1);
        }
        Ok(())
    }

    /// One edit that recreates this whole state.
    pub fn snapshot(&self) -> VersionEdit {
        VersionEdit {
            log_number: Some(self.log_number),
            next_file: Some(self.next_file),
            last_seq: Some(self.last_seq),
            added: self.levels.iter().flatten().cloned().collect(),
            deleted: vec![],
        }
    }
}

pub fn manifest_name(n: u64) -> String {
    format!("MANIFEST-{n:06}")
}

/// fsync a directory so that renames and creations in it are durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    let d = File::open(dir).ctx(dir)?;
    synced(d.sync_all(), dir)
}

/// Write `bytes` to `dir/name` via a temporary file, fsync, rename, fsync dir.
pub fn write_atomically(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    let mut f = File::create(&tmp).ctx(&tmp)?;
    if let Err(e) = f.write_all(bytes) {
        // A full disk: leave nothing half-written behind.
        drop(f);
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(&tmp, e));
    }
    synced(f.sync_all(), &tmp)?;
    drop(f);
    let dst = dir.join(name);
    std::fs::rename(&tmp, &dst).ctx(&dst)?;
    sync_dir(dir)
}

/// An open manifest being appended to.
pub struct Manifest {
    path: PathBuf,
    file: File,
    number: u64,
    size: u64,
}

impl Manifest {
    /// Write a checkpoint manifest numbered `number` holding `state`, point
    /// `CURRENT` at it, and delete the manifest it replaces.
    pub fn checkpoint(
        dir: &Path,
        number: u64,
        state: &ManifestState,
        old: Option<u64>,
    ) -> Result<Manifest> {
        let name = manifest_name(number);
        let mut buf = Vec::new();
        record::encode(&mut buf, &state.snapshot().encode());
        write_atomically(dir, &name, &buf)?;
        write_atomically(dir, "CURRENT", format!("{name}\n").as_bytes())?;
        if let Some(o) = old {
            if o != number {
                let _ = std::fs::remove_file(dir.join(manifest_name(o)));
            }
        }
        let path = dir.join(&name);
        let file = OpenOptions::new().append(true).open(&path).ctx(&path)?;
        Ok(Manifest {
            path,
            file,
            number,
            size: buf.len() as u64,
        })
    }

    /// Append an edit and fsync it.
    pub fn append(&mut self, e: &VersionEdit) -> Result<()> {
        let mut buf = Vec::new();
        record::encode(&mut buf, &e.encode());
        if let Err(err) = self.file.write_all(&buf) {
            // A full disk can leave part of the record written: cut it off,
            // so that the next edit follows the last whole one (recovery
            // would stop at the torn record and lose every edit after it).
            let _ = self.file.set_len(self.size);
            return Err(Error::io(&self.path, err));
        }
        synced(self.file.sync_data(), &self.path)?;
        self.size += buf.len() as u64;
        Ok(())
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn number(&self) -> u64 {
        self.number
    }
}

/// What recovery found: the state, the manifest number, and a torn final
/// record if there was one.
pub struct Recovered {
    pub state: ManifestState,
    pub number: u64,
    pub torn: Option<(PathBuf, u64, String)>,
}

/// Read `CURRENT` and replay its manifest. `Ok(None)` if there is no
/// `CURRENT` (a new database).
pub fn recover(dir: &Path, num_levels: usize) -> Result<Option<Recovered>> {
    let current = dir.join("CURRENT");
    let name = match std::fs::read_to_string(&current) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(&current, e)),
    };
    let name = name.trim_end_matches('\n');
    let number = name
        .strip_prefix("MANIFEST-")
        .and_then(|n| n.parse::<u64>().ok())
        .ok_or_else(|| {
            Error::corruption(
                &current,
                0,
                format!("CURRENT names {name:?}, not a manifest"),
            )
        })?;
    let path = dir.join(name);
    let mut r = RecordReader::open(&path)?;
    let mut state = ManifestState::new(num_levels);
    let mut torn = None;
    let mut first = true;
    loop {
        match r.next()? {
            Next::Record { offset, payload } => {
                let e = VersionEdit::decode(&payload)
                    .ok_or_else(|| Error::corruption(&path, offset, "malformed manifest edit"))?;
                state
                    .apply(&e)
                    .map_err(|m| Error::corruption(&path, offset, m))?;
                first = false;
            }
            Next::End => break,
            Next::Torn { offset, reason } => {
                if first {
                    // A checkpoint is fsynced before CURRENT names it, so its
                    // first record can never be torn.
                    return Err(Error::corruption(
                        &path,
                        offset,
                        format!("manifest checkpoint damaged: {reason}"),
                    ));
                }
                torn = Some((path.clone(), offset, reason));
                break;
            }
        }
    }
    if first {
        return Err(Error::corruption(&path, 0, "manifest is empty"));
    }
    Ok(Some(Recovered {
        state,
        number,
        torn,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(level: usize, id: u64) -> TableMeta {
        TableMeta {
            level,
            id,
            size: 100,
            first: b"a\0\0\0\0\0\0\0\0".to_vec(),
            last: b"z\0\0\0\0\0\0\0\0".to_vec(),
            min_seq: 1,
            max_seq: 2,
        }
    }

    #[test]
    fn edit_roundtrip() {
        let e = VersionEdit {
            log_number: Some(3),
            next_file: Some(9),
            last_seq: Some(100),
            added: vec![meta(0, 4), meta(2, 5)],
            deleted: vec![(1, 2)],
        };
        assert_eq!(VersionEdit::decode(&e.encode()), Some(e));
        assert_eq!(VersionEdit::decode(&[99]), None);
    }

    #[test]
    fn checkpoint_append_recover() {
        let d = tempfile::tempdir().unwrap();
        let mut st = ManifestState::new(3);
        let mut m = Manifest::checkpoint(d.path(), 1, &st, None).unwrap();
        let e1 = VersionEdit {
            added: vec![meta(0, 7)],
            last_seq: Some(10),
            ..Default::default()
        };
        let e2 = VersionEdit {
            added: vec![meta(1, 8)],
            deleted: vec![(0, 7)],
            log_number: Some(6),
            ..Default::default()
        };
        for e in [&e1, &e2] {
            m.append(e).unwrap();
            st.apply(e).unwrap();
        }
        let r = recover(d.path(), 3).unwrap().unwrap();
        assert_eq!(r.number, 1);
        assert!(r.torn.is_none());
        assert_eq!(r.state.levels[1], vec![meta(1, 8)]);
        assert!(r.state.levels[0].is_empty());
        assert_eq!(r.state.log_number, 6);
        assert_eq!(r.state.next_file, 9);
        // A new checkpoint replaces the old manifest.
        let m2 = Manifest::checkpoint(d.path(), 2, &r.state, Some(1)).unwrap();
        assert!(!d.path().join(manifest_name(1)).exists());
        drop(m2);
        let r2 = recover(d.path(), 3).unwrap().unwrap();
        assert_eq!(r2.state.levels[1], vec![meta(1, 8)]);
    }

    #[test]
    fn unknown_delete_is_corruption() {
        let d = tempfile::tempdir().unwrap();
        let st = ManifestState::new(3);
        let mut m = Manifest::checkpoint(d.path(), 1, &st, None).unwrap();
        m.append(&VersionEdit {
            deleted: vec![(0, 42)],
            ..Default::default()
        })
        .unwrap();
        m.append(&VersionEdit::default()).unwrap();
        assert!(matches!(
            recover(d.path(), 3),
            Err(Error::Corruption { .. })
        ));
    }
}
