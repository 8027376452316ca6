//! [`CrashFs`]: an in-memory file system that remembers what a power loss would keep, for
//! crash-image tests (as redb and TigerBeetle test theirs).
//!
//! A running process sees every write at once, as with a page cache. What survives a
//! crash is only what was made durable, each kind separately, as POSIX promises and no
//! more:
//! - a file's bytes up to its last `sync_data` (appends after it may be lost — or, in part,
//!   kept: the image keeps a random prefix of them, a torn last write); `create` of an
//!   existing file truncates it in place, so its old bytes are gone too;
//! - a directory's entries (creations, renames, removals, links) as of its last
//!   `sync_dir`: a file created and synced but whose directory was not synced is gone;
//!   a file renamed or removed without a directory sync is back under its old name.
//!
//! Directories themselves are durable once created (their creation is not what the
//! engine's crash safety rests on); a renamed directory keeps its new name only once the
//! parent directories of both names were synced since. A crash image is taken at any
//! moment with [`CrashFs::image`], or automatically at chosen operation counts
//! ([`CrashFs::crash_at`]) — in the middle of whatever the engine was doing, since every
//! file-system call counts — each with a mark the test chooses (e.g. how many writes were acknowledged by then).
//! The image is an independent `CrashFs`: open the store on it and check what it holds.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::fs::{Fs, RandomAccessFile, WritableFile};
use crate::rng::SplitMix64;

/// See the module doc.
#[derive(Clone)]
pub struct CrashFs {
    state: Arc<Mutex<State>>,
}

/// What the test reads at an automatic crash point, stored with its image.
pub type Mark = Arc<dyn Fn() -> u64 + Send + Sync>;

#[derive(Default)]
struct State {
    files: HashMap<u64, File>,
    next_inode: u64,
    dirs: BTreeMap<PathBuf, Dir>,
    locks: BTreeSet<PathBuf>,
    /// File-system calls so far.
    ops: u64,
    /// Operation counts at which to take an image, and what to mark it with.
    crash_at: BTreeSet<u64>,
    mark: Option<Mark>,
    rng: SplitMix64Cell,
    images: Vec<(u64, u64, CrashFs)>,
    /// Directory renames not yet durable, oldest first: `(from, to)` and the parent
    /// directories still to be synced before a crash keeps the new name.
    dir_renames: Vec<(PathBuf, PathBuf, BTreeSet<PathBuf>)>,
}

#[derive(Clone, Default)]
struct File {
    data: Vec<u8>,
    /// Bytes made durable by `sync_data`.
    synced: usize,
}

#[derive(Clone, Default)]
struct Dir {
    entries: BTreeMap<String, u64>,
    durable: BTreeMap<String, u64>,
}

/// A seeded generator (`Default`: seed 0).
struct SplitMix64Cell(SplitMix64);

impl Default for SplitMix64Cell {
    fn default() -> Self {
        SplitMix64Cell(SplitMix64::new(0))
    }
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file or directory", path.display()),
    )
}

/// `(parent directory, file name)` of `path`.
fn split(path: &Path) -> io::Result<(PathBuf, String)> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let parent = path.parent().unwrap_or(Path::new("")).to_path_buf();
    Ok((parent, name.to_owned()))
}

impl State {
    /// Counts a call, taking an image first if one is due.
    fn tick(&mut self) {
        self.ops += 1;
        if self.crash_at.remove(&self.ops) {
            let mark = self.mark.as_ref().map_or(0, |m| m());
            let seed = self.rng.0.next_u64();
            let image = self.image(seed);
            self.images.push((self.ops, mark, image));
        }
    }

    fn inode(&self, path: &Path) -> Option<u64> {
        let (dir, name) = split(path).ok()?;
        self.dirs.get(&dir)?.entries.get(&name).copied()
    }

    /// Moves directory `from` and everything under it to `to` (a directory rename).
    fn move_dirs(dirs: &mut BTreeMap<PathBuf, Dir>, from: &Path, to: &Path) {
        let moved: Vec<PathBuf> = dirs
            .keys()
            .filter(|d| d.starts_with(from))
            .cloned()
            .collect();
        for d in moved {
            if let (Some(dir), Ok(rest)) = (dirs.remove(&d), d.strip_prefix(from)) {
                dirs.insert(to.join(rest), dir);
            }
        }
    }

    fn dir_mut(&mut self, dir: &Path) -> io::Result<&mut Dir> {
        self.dirs.get_mut(dir).ok_or_else(|| not_found(dir))
    }

    /// What a power loss now would leave (see the module doc).
    fn image(&self, seed: u64) -> CrashFs {
        let mut rng = SplitMix64::new(seed);
        // A directory renamed since its parents were last synced is back under its old name.
        let mut live = self.dirs.clone();
        for (from, to, _) in self.dir_renames.iter().rev() {
            State::move_dirs(&mut live, to, from);
        }
        let mut dirs = BTreeMap::new();
        let mut files = HashMap::new();
        for (path, dir) in &live {
            for inode in dir.durable.values() {
                if files.contains_key(inode) {
                    continue;
                }
                let Some(f) = self.files.get(inode) else {
                    continue;
                };
                let unsynced = f.data.len().saturating_sub(f.synced) as u64;
                let torn = rng.below(unsynced + 1) as usize;
                let keep = f.data.get(..f.synced + torn).unwrap_or(&f.data).to_vec();
                let synced = keep.len();
                files.insert(*inode, File { data: keep, synced });
            }
            dirs.insert(
                path.clone(),
                Dir {
                    entries: dir.durable.clone(),
                    durable: dir.durable.clone(),
                },
            );
        }
        CrashFs {
            state: Arc::new(Mutex::new(State {
                files,
                next_inode: self.next_inode,
                dirs,
                rng: SplitMix64Cell(SplitMix64::new(seed ^ 0x9e37_79b9_7f4a_7c15)),
                ..State::default()
            })),
        }
    }
}

impl Default for CrashFs {
    fn default() -> Self {
        CrashFs::new()
    }
}

impl CrashFs {
    /// An empty file system holding only the root directory `/`.
    pub fn new() -> CrashFs {
        let mut state = State::default();
        state.dirs.insert(PathBuf::from("/"), Dir::default());
        CrashFs {
            state: Arc::new(Mutex::new(state)),
        }
    }

    /// What a power loss now would leave; `seed` picks how much of each file's unsynced
    /// tail survives.
    pub fn image(&self, seed: u64) -> CrashFs {
        self.state.lock().image(seed)
    }

    /// Takes an image by itself at each of these operation counts (every file-system call
    /// counts), marked with what `mark` returns then; torn tails drawn from `seed`.
    pub fn crash_at(&self, ops: impl IntoIterator<Item = u64>, seed: u64, mark: Mark) {
        let mut s = self.state.lock();
        s.crash_at.extend(ops);
        s.mark = Some(mark);
        s.rng = SplitMix64Cell(SplitMix64::new(seed));
    }

    /// A file system holding directory `root`, set to take `count` images at operation
    /// counts drawn from `rng` in `1..=ops_max`, each marked with the value of the returned
    /// counter then (a test stores there, say, how many writes were acknowledged).
    pub fn with_crash_points(
        rng: &mut SplitMix64,
        root: &Path,
        count: usize,
        ops_max: u64,
    ) -> io::Result<(CrashFs, Arc<AtomicU64>)> {
        let fs = CrashFs::new();
        fs.create_dir_all(root)?;
        let counter = Arc::new(AtomicU64::new(0));
        let points: Vec<u64> = (0..count).map(|_| rng.between(1, ops_max)).collect();
        let mark = counter.clone();
        fs.crash_at(
            points,
            rng.next_u64(),
            Arc::new(move || mark.load(Ordering::SeqCst)),
        );
        Ok((fs, counter))
    }

    /// The images taken so far: `(operation count, mark, image)`.
    pub fn take_images(&self) -> Vec<(u64, u64, CrashFs)> {
        std::mem::take(&mut self.state.lock().images)
    }

    /// File-system calls so far.
    pub fn ops(&self) -> u64 {
        self.state.lock().ops
    }
}

struct Writer {
    state: Arc<Mutex<State>>,
    inode: u64,
    len: u64,
}

impl WritableFile for Writer {
    fn append(&mut self, buf: &[u8]) -> io::Result<()> {
        let mut s = self.state.lock();
        s.tick();
        let f = s
            .files
            .get_mut(&self.inode)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "the file was removed"))?;
        f.data.extend_from_slice(buf);
        self.len = f.data.len() as u64;
        Ok(())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        let mut s = self.state.lock();
        s.tick();
        if let Some(f) = s.files.get_mut(&self.inode) {
            f.synced = f.data.len();
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }
}

struct Reader(Vec<u8>);

impl RandomAccessFile for Reader {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let bytes = start
            .checked_add(buf.len())
            .and_then(|end| self.0.get(start..end))
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "read past the end"))?;
        buf.copy_from_slice(bytes);
        Ok(())
    }

    fn len(&self) -> u64 {
        self.0.len() as u64
    }
}

/// Releases a [`CrashFs::lock`] when dropped.
struct LockGuard {
    state: Arc<Mutex<State>>,
    path: PathBuf,
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        self.state.lock().locks.remove(&self.path);
    }
}

impl Fs for CrashFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let mut s = self.state.lock();
        s.tick();
        let (dir, name) = split(path)?;
        // An existing file is truncated in place, as `File::create` does: its old bytes
        // are gone at once, durable or not (only a rename replaces a file atomically).
        let inode = match s.dir_mut(&dir)?.entries.get(&name).copied() {
            Some(inode) => inode,
            None => {
                s.next_inode += 1;
                let inode = s.next_inode;
                s.dir_mut(&dir)?.entries.insert(name, inode);
                inode
            }
        };
        s.files.insert(inode, File::default());
        Ok(Box::new(Writer {
            state: self.state.clone(),
            inode,
            len: 0,
        }))
    }

    fn open_read(&self, path: &Path, _direct: bool) -> io::Result<Arc<dyn RandomAccessFile>> {
        Ok(Arc::new(Reader(self.read_all(path)?)))
    }

    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut s = self.state.lock();
        s.tick();
        let inode = s.inode(path).ok_or_else(|| not_found(path))?;
        Ok(s.files
            .get(&inode)
            .map(|f| f.data.clone())
            .unwrap_or_default())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut s = self.state.lock();
        s.tick();
        let (from_dir, from_name) = split(from)?;
        let (to_dir, to_name) = split(to)?;
        s.dir_mut(&to_dir)?;
        if s.dirs.contains_key(from) && s.inode(from).is_none() {
            // A directory: durable under its new name once both parents are synced.
            // As POSIX: an empty directory is replaced, anything else is not.
            let empty = s.dirs.get(to).is_some_and(|d| d.entries.is_empty())
                && !s.dirs.keys().any(|d| d.parent() == Some(to));
            if s.inode(to).is_some() || (s.dirs.contains_key(to) && !empty) {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists", to.display()),
                ));
            }
            s.dirs.remove(to);
            State::move_dirs(&mut s.dirs, from, to);
            let parents = BTreeSet::from([from_dir, to_dir]);
            s.dir_renames
                .push((from.to_path_buf(), to.to_path_buf(), parents));
            return Ok(());
        }
        let inode = s
            .dir_mut(&from_dir)?
            .entries
            .remove(&from_name)
            .ok_or_else(|| not_found(from))?;
        s.dir_mut(&to_dir)?.entries.insert(to_name, inode);
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut s = self.state.lock();
        s.tick();
        let (dir, name) = split(path)?;
        s.dir_mut(&dir)?
            .entries
            .remove(&name)
            .map(|_| ())
            .ok_or_else(|| not_found(path))
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut s = self.state.lock();
        s.tick();
        let d = s.dirs.get(dir).ok_or_else(|| not_found(dir))?;
        let mut names: Vec<String> = d.entries.keys().cloned().collect();
        for sub in s.dirs.keys() {
            if sub.parent() == Some(dir) {
                if let Some(name) = sub.file_name().and_then(|n| n.to_str()) {
                    names.push(name.to_owned());
                }
            }
        }
        names.sort();
        Ok(names)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut s = self.state.lock();
        s.tick();
        let mut at = Some(dir);
        while let Some(d) = at {
            if d.as_os_str().is_empty() {
                break;
            }
            s.dirs.entry(d.to_path_buf()).or_default();
            at = d.parent();
        }
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut s = self.state.lock();
        s.tick();
        let d = s.dir_mut(dir)?;
        d.durable = d.entries.clone();
        for (_, _, parents) in &mut s.dir_renames {
            parents.remove(dir);
        }
        s.dir_renames.retain(|(_, _, parents)| !parents.is_empty());
        Ok(())
    }

    fn exists(&self, path: &Path) -> bool {
        let mut s = self.state.lock();
        s.tick();
        s.dirs.contains_key(path) || s.inode(path).is_some()
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn std::any::Any + Send + Sync>> {
        let mut s = self.state.lock();
        s.tick();
        if !s.locks.insert(path.to_path_buf()) {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} is locked", path.display()),
            ));
        }
        Ok(Box::new(LockGuard {
            state: self.state.clone(),
            path: path.to_path_buf(),
        }))
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut s = self.state.lock();
        s.tick();
        let inode = s.inode(from).ok_or_else(|| not_found(from))?;
        let (dir, name) = split(to)?;
        let d = s.dir_mut(&dir)?;
        if d.entries.contains_key(&name) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} exists", to.display()),
            ));
        }
        d.entries.insert(name, inode);
        Ok(())
    }
}

/// The seeds a crash-image test runs: `$MOSAIC_SEED` alone when set (to replay one),
/// else `$MOSAIC_CRASH_SEEDS` (or `default_count`) seeds derived from `salt`.
pub fn crash_seeds(default_count: u64, salt: u64) -> Vec<u64> {
    let var = |name: &str| std::env::var(name).ok().and_then(|s| s.parse::<u64>().ok());
    if let Some(seed) = var("MOSAIC_SEED") {
        return vec![seed];
    }
    let n = var("MOSAIC_CRASH_SEEDS").unwrap_or(default_count);
    let base = SplitMix64::new(salt).next_u64();
    (0..n).map(|i| base.wrapping_add(i)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(fs: &CrashFs, path: &str, bytes: &[u8], sync: bool) {
        let mut f = fs.create(Path::new(path)).unwrap();
        f.append(bytes).unwrap();
        if sync {
            f.sync_data().unwrap();
        }
    }

    #[test]
    fn an_image_keeps_only_synced_bytes_under_synced_names() {
        let fs = CrashFs::new();
        fs.create_dir_all(Path::new("/d")).unwrap();
        write(&fs, "/d/a", b"synced", true);
        write(&fs, "/d/b", b"unsynced", false);
        // Nothing of /d is durable yet: its entries were never synced.
        assert!(fs.image(1).list(Path::new("/d")).unwrap().is_empty());
        fs.sync_dir(Path::new("/d")).unwrap();
        let image = fs.image(1);
        assert_eq!(image.read_all(Path::new("/d/a")).unwrap(), b"synced");
        let b = image.read_all(Path::new("/d/b")).unwrap();
        assert!(b"unsynced".starts_with(&b), "a torn prefix: {b:?}");
        // A rename, then a removal, without a directory sync: undone by a crash.
        fs.rename(Path::new("/d/a"), Path::new("/d/c")).unwrap();
        fs.remove(Path::new("/d/b")).unwrap();
        assert_eq!(fs.list(Path::new("/d")).unwrap(), ["c"]);
        let image = fs.image(2);
        assert_eq!(image.list(Path::new("/d")).unwrap(), ["a", "b"]);
        fs.sync_dir(Path::new("/d")).unwrap();
        assert_eq!(fs.image(3).list(Path::new("/d")).unwrap(), ["c"]);
        // Torn tails differ by seed, and are always prefixes.
        let mut f = fs.create(Path::new("/d/t")).unwrap();
        f.append(&[7; 1000]).unwrap();
        fs.sync_dir(Path::new("/d")).unwrap();
        let lens: BTreeSet<usize> = (0..20)
            .map(|seed| fs.image(seed).read_all(Path::new("/d/t")).unwrap().len())
            .collect();
        assert!(lens.len() > 5, "{lens:?}");
    }

    #[test]
    fn creating_an_existing_file_truncates_it_in_place() {
        let fs = CrashFs::new();
        fs.create_dir_all(Path::new("/d")).unwrap();
        write(&fs, "/d/f", b"old", true);
        fs.sync_dir(Path::new("/d")).unwrap();
        // Rewritten in place and not yet synced: neither version survives whole.
        write(&fs, "/d/f", b"new", false);
        for seed in 0..10 {
            let f = fs.image(seed).read_all(Path::new("/d/f")).unwrap();
            assert!(b"new".starts_with(&f), "{f:?}");
        }
    }

    #[test]
    fn a_directory_rename_is_durable_once_its_parent_is_synced() {
        let fs = CrashFs::new();
        fs.create_dir_all(Path::new("/d/t")).unwrap();
        write(&fs, "/d/t/f", b"x", true);
        fs.sync_dir(Path::new("/d/t")).unwrap();
        fs.rename(Path::new("/d/t"), Path::new("/d/u")).unwrap();
        assert!(!fs.exists(Path::new("/d/t")));
        assert_eq!(fs.read_all(Path::new("/d/u/f")).unwrap(), b"x");
        // Not synced: a crash brings the old name back, with its files.
        let image = fs.image(1);
        assert!(!image.exists(Path::new("/d/u")));
        assert_eq!(image.read_all(Path::new("/d/t/f")).unwrap(), b"x");
        fs.sync_dir(Path::new("/d")).unwrap();
        let image = fs.image(2);
        assert!(!image.exists(Path::new("/d/t")));
        assert_eq!(image.read_all(Path::new("/d/u/f")).unwrap(), b"x");
        assert_eq!(image.list(Path::new("/d")).unwrap(), ["u"]);
    }

    #[test]
    fn images_are_taken_at_chosen_operation_counts_with_a_mark() {
        let fs = CrashFs::new();
        let marks = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let m = marks.clone();
        fs.crash_at(
            [3, 6],
            9,
            Arc::new(move || m.load(std::sync::atomic::Ordering::SeqCst)),
        );
        fs.create_dir_all(Path::new("/d")).unwrap(); // op 1
        write(&fs, "/d/a", b"x", true); // ops 2–4 (image at 3: after create)
        marks.store(5, std::sync::atomic::Ordering::SeqCst);
        fs.sync_dir(Path::new("/d")).unwrap(); // op 5
        fs.exists(Path::new("/d/a")); // op 6 (image)
        let images = fs.take_images();
        assert_eq!(images.len(), 2);
        assert_eq!((images[0].0, images[0].1), (3, 0));
        assert!(!images[0].2.exists(Path::new("/d/a")));
        assert_eq!((images[1].0, images[1].1), (6, 5));
        assert_eq!(images[1].2.read_all(Path::new("/d/a")).unwrap(), b"x");
        // An image is independent of its origin.
        let image = &images[1].2;
        image.remove(Path::new("/d/a")).unwrap();
        assert!(fs.exists(Path::new("/d/a")));
        // Locks are exclusive until dropped.
        let guard = fs.lock(Path::new("/d/LOCK")).unwrap();
        assert!(fs.lock(Path::new("/d/LOCK")).is_err());
        drop(guard);
        assert!(fs.lock(Path::new("/d/LOCK")).is_ok());
    }
}
