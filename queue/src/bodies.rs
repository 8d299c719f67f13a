//! Body files: the bytes of large messages, in append-only files beside RocksDB, so that
//! a message is written to disk once.
//!
//! Kept in RocksDB, a 100 KB message went to the write-ahead log, into the memtable and,
//! when the memtable flushed, into a blob file (which blob garbage collection could copy
//! again): two writes of every kept message at least. Here the commit thread appends the
//! group's large messages to the current body file and syncs it, then writes each one's
//! [`Place`] (20 bytes) where the message would have been, in the group's synced write.
//!
//! - **Order.** A place is committed only after its bytes (and, for a new file, the
//!   directory entry) are synced, so a durable place never points at bytes that are not.
//!   Bytes whose place was never committed (a crash between the two syncs, a failed write)
//!   are never read, and go with their file.
//! - **Removal.** Deleting a message in [`Table::MESSAGES`] deletes its place in the same
//!   write. Once that is durable its range of the file is punched out, which gives the
//!   space back and erases the bytes, and a file that holds no message any more is
//!   removed. [`Table::BODY_FILES`] counts each file's messages (a merge in the same
//!   write), so open removes the files that hold none without reading every place.
//! - **Checks.** A place carries the CRC-32 of its bytes; a read that does not match is a
//!   corrupt record, not mail.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

use rustix::fs::FallocateFlags;

use crate::error::Refusal;

/// Messages at least this long go to body files. Shorter ones stay in
/// [`Table::MESSAGES`](crate::Table::MESSAGES), where RocksDB keeps them inline.
pub(crate) const BODY_MIN: usize = 4096;

/// A body file takes new messages until it is this long.
const FILE_MAX: u64 = 64 * 1024 * 1024;

/// The directory under the store's that holds the body files.
const DIR: &str = "bodies";

/// Where a message's bytes lie.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Place {
    /// The body file's number.
    pub(crate) file: u32,
    /// Where the bytes start in it.
    pub(crate) offset: u64,
    /// How many there are.
    pub(crate) len: u32,
    /// Their CRC-32.
    pub(crate) crc: u32,
}

impl Place {
    /// Bytes of an encoded place.
    const LEN: usize = 20;

    /// The stored form: big-endian file, offset, length and checksum.
    pub(crate) fn encode(&self) -> [u8; Place::LEN] {
        let mut bytes = [0; Place::LEN];
        bytes[..4].copy_from_slice(&self.file.to_be_bytes());
        bytes[4..12].copy_from_slice(&self.offset.to_be_bytes());
        bytes[12..16].copy_from_slice(&self.len.to_be_bytes());
        bytes[16..].copy_from_slice(&self.crc.to_be_bytes());
        bytes
    }

    /// The place stored as `bytes`, `None` when they are not one.
    pub(crate) fn decode(bytes: &[u8]) -> Option<Place> {
        let bytes: &[u8; Place::LEN] = bytes.try_into().ok()?;
        let word =
            |range: std::ops::Range<usize>| -> u32 { u32::from_be_bytes(bytes[range].try_into().unwrap_or_default()) };
        Some(Place {
            file: word(0..4),
            offset: u64::from_be_bytes(bytes[4..12].try_into().ok()?),
            len: word(12..16),
            crc: word(16..20),
        })
    }
}

/// The key of a body file's message count in [`Table::BODY_FILES`](crate::Table::BODY_FILES).
pub(crate) fn count_key(file: u32) -> [u8; 4] {
    file.to_be_bytes()
}

/// The body files of one store.
pub(crate) struct Bodies {
    dir: PathBuf,
    /// Open files by number. Opening and removing happen under the write lock, so a file
    /// removed is never opened again into this map.
    open: RwLock<HashMap<u32, Arc<File>>>,
    /// The commit thread's: the file appended to and each file's committed messages.
    state: Mutex<State>,
}

struct State {
    /// The file new messages go to; none until the first, and none after a failed write
    /// (the next append starts a new file rather than trust the old one's length).
    writer: Option<Writer>,
    /// The next file's number: numbers are never used twice.
    next: u32,
    /// Messages in each file, as committed.
    live: HashMap<u32, u64>,
}

struct Writer {
    number: u32,
    file: Arc<File>,
    len: u64,
}

impl Bodies {
    /// Opens the body files under `store_path`, given `live`, each file's committed
    /// message count. Removes the files that hold none (emptied before a stop, or written
    /// by a group whose commit never happened) and answers the counts that are zero, for
    /// the caller to delete.
    pub(crate) fn open(store_path: &Path, live: HashMap<u32, u64>) -> std::io::Result<(Bodies, Vec<u32>)> {
        let dir = store_path.join(DIR);
        std::fs::create_dir_all(&dir)?;
        let mut highest = live.keys().copied().max().unwrap_or(0);
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let Some(number) = number_of(&entry.file_name().to_string_lossy()) else {
                continue;
            };
            highest = highest.max(number);
            if live.get(&number).copied().unwrap_or(0) == 0 {
                std::fs::remove_file(entry.path())?;
            }
        }
        let mut zero = Vec::new();
        for (&number, &count) in &live {
            if count == 0 {
                zero.push(number);
            } else if !file_path(&dir, number).exists() {
                tracing::error!(
                    file = %file_path(&dir, number).display(),
                    messages = count,
                    "a body file the store counts messages in is missing: their bytes are lost"
                );
            }
        }
        let live = live.into_iter().filter(|&(_, count)| count > 0).collect();
        let bodies = Bodies {
            dir,
            open: RwLock::new(HashMap::new()),
            state: Mutex::new(State {
                writer: None,
                next: highest.saturating_add(1),
                live,
            }),
        };
        Ok((bodies, zero))
    }

    /// Appends `bodies` to the current file (a new one when it is full) and syncs it:
    /// their places, in order. Only the commit thread appends.
    pub(crate) fn append(&self, bodies: &[&[u8]]) -> Result<Vec<Place>, Refusal> {
        let mut state = self.lock_state();
        let total: u64 = bodies.iter().map(|body| body.len() as u64).sum();
        let full = state
            .writer
            .as_ref()
            .is_none_or(|writer| writer.len > 0 && writer.len + total > FILE_MAX);
        if full {
            self.start_file(&mut state)
                .map_err(|error| self.refusal("new body file", &error))?;
        }
        let Some(writer) = state.writer.as_mut() else {
            return Err(Refusal::Storage("no body file".to_owned()));
        };
        let mut places = Vec::with_capacity(bodies.len());
        let mut offset = writer.len;
        for body in bodies {
            let len = u32::try_from(body.len()).map_err(|_| Refusal::Storage("a message over 4 GiB".to_owned()))?;
            places.push(Place {
                file: writer.number,
                offset,
                len,
                crc: crc32fast::hash(body),
            });
            offset += u64::from(len);
        }
        let written = places
            .iter()
            .zip(bodies)
            .try_for_each(|(place, body)| writer.file.write_all_at(body, place.offset))
            .and_then(|()| writer.file.sync_data());
        match written {
            Ok(()) => {
                writer.len = offset;
                metrics::counter!("herald_spool_body_bytes_written_total").increment(total);
                Ok(places)
            }
            Err(error) => {
                let refusal = self.refusal(&format!("body file {}", writer.number), &error);
                state.writer = None;
                Err(refusal)
            }
        }
    }

    /// After a durable write: the messages at `added` were placed and those at `removed`
    /// are gone. Punches the removed ranges out and removes the files left empty.
    pub(crate) fn committed(&self, added: &[Place], removed: &[Place]) {
        let mut state = self.lock_state();
        for place in added {
            *state.live.entry(place.file).or_default() += 1;
        }
        for place in removed {
            self.punch(*place);
            if let Some(count) = state.live.get_mut(&place.file) {
                *count = count.saturating_sub(1);
            }
        }
        let current = state.writer.as_ref().map(|writer| writer.number);
        for place in removed {
            let empty = state.live.get(&place.file) == Some(&0);
            if empty && Some(place.file) != current {
                state.live.remove(&place.file);
                self.remove(place.file);
            }
        }
    }

    /// The bytes at `place`, checked against its checksum.
    pub(crate) fn read(&self, place: Place) -> std::io::Result<Vec<u8>> {
        let file = self.file(place.file)?;
        let mut bytes = vec![0; place.len as usize];
        file.read_exact_at(&mut bytes, place.offset)?;
        if crc32fast::hash(&bytes) != place.crc {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "the bytes do not match their checksum",
            ));
        }
        Ok(bytes)
    }

    /// Bytes the body files take on disk (what is punched out takes none).
    pub(crate) fn disk_bytes(&self) -> u64 {
        use std::os::unix::fs::MetadataExt;
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        entries
            .filter_map(|entry| entry.ok()?.metadata().ok())
            .map(|metadata| metadata.blocks() * 512)
            .sum()
    }

    fn start_file(&self, state: &mut State) -> std::io::Result<()> {
        let number = state.next;
        let path = file_path(&self.dir, number);
        let file = OpenOptions::new().read(true).write(true).create_new(true).open(&path)?;
        // The name must be durable before any committed place names the file.
        File::open(&self.dir)?.sync_all()?;
        state.next = number.saturating_add(1);
        let file = Arc::new(file);
        self.lock_open().insert(number, Arc::clone(&file));
        let previous = state.writer.replace(Writer { number, file, len: 0 });
        if let Some(previous) = previous
            && state.live.get(&previous.number).copied().unwrap_or(0) == 0
        {
            state.live.remove(&previous.number);
            self.remove(previous.number);
        }
        Ok(())
    }

    fn file(&self, number: u32) -> std::io::Result<Arc<File>> {
        if let Some(file) = self.open.read().unwrap_or_else(PoisonError::into_inner).get(&number) {
            return Ok(Arc::clone(file));
        }
        let mut open = self.lock_open();
        if let Some(file) = open.get(&number) {
            return Ok(Arc::clone(file));
        }
        let file = Arc::new(
            OpenOptions::new()
                .read(true)
                .write(true)
                .open(file_path(&self.dir, number))?,
        );
        open.insert(number, Arc::clone(&file));
        Ok(file)
    }

    /// Gives the range of `place` back to the file system; where it cannot punch holes,
    /// writes zeros over it instead, so that the bytes are gone either way.
    fn punch(&self, place: Place) {
        let Ok(file) = self.file(place.file) else {
            return;
        };
        let len = u64::from(place.len);
        let flags = FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE;
        let result = match rustix::fs::fallocate(&*file, flags, place.offset, len) {
            Err(rustix::io::Errno::OPNOTSUPP) => zero(&file, place.offset, len),
            other => other.map_err(std::io::Error::from),
        };
        if let Err(error) = result {
            tracing::warn!(%error, file = place.file, offset = place.offset, "cannot clear a removed message's bytes");
        }
    }

    fn remove(&self, number: u32) {
        let mut open = self.lock_open();
        let path = file_path(&self.dir, number);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => tracing::warn!(%error, file = %path.display(), "cannot remove an empty body file"),
        }
        open.remove(&number);
    }

    fn refusal(&self, what: &str, error: &std::io::Error) -> Refusal {
        tracing::error!(%error, dir = %self.dir.display(), "{what}: write failed");
        Refusal::Storage(format!("{what}: {error}"))
    }

    fn lock_state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_open(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<u32, Arc<File>>> {
        self.open.write().unwrap_or_else(PoisonError::into_inner)
    }
}

fn zero(file: &File, offset: u64, len: u64) -> std::io::Result<()> {
    const CHUNK: u64 = 64 * 1024;
    let zeros = vec![0; CHUNK.min(len) as usize];
    let mut at = 0;
    while at < len {
        let n = CHUNK.min(len - at);
        file.write_all_at(&zeros[..n as usize], offset + at)?;
        at += n;
    }
    file.sync_data()
}

fn file_path(dir: &Path, number: u32) -> PathBuf {
    dir.join(format!("{number:010}.body"))
}

fn number_of(name: &str) -> Option<u32> {
    let digits = name.strip_suffix(".body")?;
    (digits.len() == 10 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allocated(path: &Path) -> u64 {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).expect("metadata").blocks() * 512
    }

    #[test]
    fn places_round_trip_and_refuse_other_lengths() {
        let place = Place {
            file: 7,
            offset: u64::MAX - 1,
            len: 123_456,
            crc: 0xdead_beef,
        };
        assert_eq!(Place::decode(&place.encode()), Some(place));
        assert_eq!(Place::decode(&place.encode()[..19]), None);
        assert_eq!(number_of("0000000012.body"), Some(12));
        assert_eq!(number_of("12.body"), None);
        assert_eq!(number_of("000000001x.body"), None);
    }

    #[test]
    fn appended_bytes_read_back_and_a_removed_range_is_punched_out() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (bodies, zero) = Bodies::open(dir.path(), HashMap::new()).expect("open");
        assert!(zero.is_empty());
        let (a, b) = (vec![b'a'; 64 * 1024], vec![b'b'; 64 * 1024]);
        let places = bodies.append(&[&a, &b]).expect("appended");
        bodies.committed(&places, &[]);
        assert_eq!(bodies.read(places[0]).expect("a"), a);
        assert_eq!(bodies.read(places[1]).expect("b"), b);
        let path = file_path(&bodies.dir, places[0].file);
        let before = allocated(&path);
        bodies.committed(&[], &places[..1]);
        assert!(allocated(&path) < before, "the range is given back");
        assert!(bodies.read(places[0]).is_err(), "punched bytes fail their checksum");
        assert_eq!(bodies.read(places[1]).expect("b"), b, "the neighbour is intact");
    }

    #[test]
    fn a_file_left_empty_goes_once_it_is_not_the_current_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (bodies, _) = Bodies::open(dir.path(), HashMap::new()).expect("open");
        let first = bodies.append(&[&[b'x'; 5000][..]]).expect("first");
        bodies.committed(&first, &[]);
        let first_path = file_path(&bodies.dir, first[0].file);
        bodies.committed(&[], &first);
        assert!(first_path.exists(), "the current file stays");
        // Filling the current file moves appends to a new one, and the empty one goes.
        let big = vec![b'y'; FILE_MAX as usize];
        let second = bodies.append(&[&big]).expect("second");
        assert_ne!(second[0].file, first[0].file);
        assert!(
            !first_path.exists(),
            "the empty file went when it stopped being current"
        );
    }

    #[test]
    fn open_removes_files_without_messages_and_numbers_past_every_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let kept_place = {
            let (bodies, _) = Bodies::open(dir.path(), HashMap::new()).expect("open");
            let kept = bodies.append(&[&[b'k'; 5000][..]]).expect("kept");
            bodies.committed(&kept, &[]);
            // Written but never committed: a crash between the two syncs.
            let live = HashMap::from([(kept[0].file, 1)]);
            let orphan = Bodies::open(dir.path(), live).expect("second handle").0;
            orphan.append(&[&[b'o'; 5000][..]]).expect("orphan");
            kept[0]
        };
        let live = HashMap::from([(kept_place.file, 1), (99, 0)]);
        let (bodies, zero) = Bodies::open(dir.path(), live).expect("reopen");
        assert_eq!(zero, vec![99]);
        let names: Vec<String> = std::fs::read_dir(&bodies.dir)
            .expect("list")
            .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            vec![format!("{:010}.body", kept_place.file)],
            "the orphan's file is gone"
        );
        assert_eq!(bodies.read(kept_place).expect("kept").len(), 5000);
        let next = bodies.append(&[&[b'n'; 5000][..]]).expect("next");
        assert!(next[0].file > 99, "a new file, numbered past every one seen");
    }
}
