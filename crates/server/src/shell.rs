//! `mosaic shell`: a line-oriented shell over one storage engine.
//!
//! Commands (one per line; keys and values are UTF-8 words, timestamps default to the
//! current time in microseconds):
//! `put KEY VALUE [TS]`, `get KEY`, `del KEY [TS]`, `scan [FROM [TO]] [LIMIT n]`, `flush`,
//! `compact`, `stats`, `levels`, `help`, `quit`.

use std::io::{BufRead, Write};
use std::ops::Bound;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use mosaic_lsm::{Compression, Db, Options, SyncMode};

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum SyncArg {
    /// fsync every write before acknowledging it.
    PerWrite,
    /// group commit: one fsync for writes arriving together.
    Batch,
    /// fsync every --sync-interval-ms (Cassandra's default).
    Periodic,
}

/// Options of `mosaic shell`.
#[derive(Args, Debug)]
pub struct ShellArgs {
    /// Data directory (created if absent).
    #[arg(long, default_value = "./mosaic-data")]
    pub data: PathBuf,
    /// When writes reach stable storage.
    #[arg(long, value_enum, default_value = "periodic")]
    pub sync: SyncArg,
    /// Interval of periodic sync.
    #[arg(long, default_value_t = 10_000)]
    pub sync_interval_ms: u64,
    /// Memtable size in MiB.
    #[arg(long, default_value_t = 64)]
    pub memtable_mib: usize,
    /// Block cache size in MiB (0 disables it).
    #[arg(long, default_value_t = 64)]
    pub block_cache_mib: u64,
    /// Bloom filter bits per key (0 disables filters).
    #[arg(long, default_value_t = 10)]
    pub bloom_bits: u32,
    /// Compress data blocks with LZ4.
    #[arg(long)]
    pub lz4: bool,
    /// Read tables with O_DIRECT.
    #[arg(long)]
    pub direct_io: bool,
}

impl ShellArgs {
    fn options(&self) -> Options {
        let mut o = Options {
            sync_mode: match self.sync {
                SyncArg::PerWrite => SyncMode::PerWrite,
                SyncArg::Batch => SyncMode::Batch,
                SyncArg::Periodic => SyncMode::Periodic {
                    interval_ms: self.sync_interval_ms,
                },
            },
            memtable_size_bytes: self.memtable_mib << 20,
            block_cache_bytes: self.block_cache_mib << 20,
            direct_io: self.direct_io,
            ..Options::default()
        };
        o.table.bloom_bits_per_key = self.bloom_bits;
        o.table.compression = if self.lz4 {
            Compression::Lz4
        } else {
            Compression::None
        };
        o
    }
}

fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

fn parse_ts(word: Option<&str>) -> Result<u64> {
    match word {
        None => Ok(now_micros()),
        Some(w) => w
            .parse()
            .with_context(|| format!("timestamp {w:?} is not a number")),
    }
}

/// Runs the shell until `quit` or end of input.
pub fn run(args: ShellArgs) -> Result<()> {
    let db = Db::open(&args.data, args.options())
        .with_context(|| format!("opening {}", args.data.display()))?;
    let report = db.recovery_report();
    eprintln!(
        "mosaic shell on {} (replayed {} WAL records; {} torn tails dropped). Type `help`.",
        args.data.display(),
        report.records_replayed,
        report.dropped.len()
    );
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let line = line?;
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.first() == Some(&"quit") || words.first() == Some(&"exit") {
            break;
        }
        match execute(&db, &words, &mut out) {
            Ok(()) => {}
            Err(e) => writeln!(out, "error: {e:#}")?,
        }
        out.flush()?;
    }
    db.close()?;
    Ok(())
}

fn execute(db: &Db, words: &[&str], out: &mut impl Write) -> Result<()> {
    match words {
        [] => {}
        ["put", key, value, rest @ ..] => {
            db.put(
                key.as_bytes(),
                parse_ts(rest.first().copied())?,
                value.as_bytes(),
            )?;
            writeln!(out, "ok")?;
        }
        ["get", key] => match db.get(key.as_bytes())? {
            Some(e) => writeln!(out, "{} (ts {})", String::from_utf8_lossy(&e.value), e.ts)?,
            None => writeln!(out, "(not found)")?,
        },
        ["del", key, rest @ ..] => {
            db.delete(key.as_bytes(), parse_ts(rest.first().copied())?)?;
            writeln!(out, "ok")?;
        }
        ["scan", rest @ ..] => scan(db, rest, out)?,
        ["flush"] => {
            db.flush()?;
            writeln!(out, "ok")?;
        }
        ["compact"] => {
            db.compact()?;
            writeln!(out, "ok")?;
        }
        ["stats"] => {
            let c = db.counters();
            writeln!(out, "{c:#?}")?;
            writeln!(
                out,
                "write amplification {:.2}, tables probed per get {:.2}, disk bytes per get {:.0}",
                c.write_amplification(),
                c.tables_probed_per_get(),
                c.bytes_read_per_get()
            )?;
        }
        ["levels"] => levels(db, out)?,
        ["help"] => writeln!(
            out,
            "put KEY VALUE [TS] | get KEY | del KEY [TS] | scan [FROM [TO]] [limit N] | \
             flush | compact | stats | levels | quit"
        )?,
        [cmd, ..] => bail!("unknown command {cmd:?} (try `help`)"),
    }
    Ok(())
}

/// `scan [FROM [TO]] [limit N]`: entries from FROM (inclusive) to TO (exclusive).
fn scan(db: &Db, words: &[&str], out: &mut impl Write) -> Result<()> {
    let (bounds, limit) = match words {
        [b @ .., "limit", n] => (b, n.parse().context("limit must be a number")?),
        b => (b, usize::MAX),
    };
    let from = bounds
        .first()
        .map_or(Bound::Unbounded, |k| Bound::Included(k.as_bytes()));
    let to = bounds
        .get(1)
        .map_or(Bound::Unbounded, |k| Bound::Excluded(k.as_bytes()));
    for item in db.scan(from, to)?.take(limit) {
        let (k, e) = item?;
        writeln!(
            out,
            "{} = {} (ts {})",
            String::from_utf8_lossy(&k),
            String::from_utf8_lossy(&e.value),
            e.ts
        )?;
    }
    Ok(())
}

/// `levels`: every level's tables with their key ranges and read counts.
fn levels(db: &Db, out: &mut impl Write) -> Result<()> {
    for l in db.levels() {
        let bytes: u64 = l.tables.iter().map(|t| t.size_bytes).sum();
        writeln!(
            out,
            "L{}: {} tables, {} bytes",
            l.level,
            l.tables.len(),
            bytes
        )?;
        for t in &l.tables {
            writeln!(
                out,
                "  #{} {} bytes, {} entries, keys {:?}..{:?}, reads {}",
                t.id,
                t.size_bytes,
                t.entries,
                String::from_utf8_lossy(&t.smallest_key),
                String::from_utf8_lossy(&t.largest_key),
                t.reads
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_lines(db: &Db, lines: &[&str]) -> String {
        let mut out = Vec::new();
        for l in lines {
            let words: Vec<&str> = l.split_whitespace().collect();
            if let Err(e) = execute(db, &words, &mut out) {
                out.extend_from_slice(format!("error: {e:#}\n").as_bytes());
            }
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn shell_commands_read_back_what_they_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        let out = run_lines(
            &db,
            &[
                "put a 1 10",
                "put b 2 10",
                "put a old 5",
                "del b 11",
                "get a",
                "get b",
                "scan",
            ],
        );
        assert!(out.contains("1 (ts 10)"), "{out}");
        assert!(out.contains("(not found)"), "{out}");
        assert!(out.ends_with("a = 1 (ts 10)\n"), "{out}");
        let out = run_lines(&db, &["flush", "levels", "bogus", "put x y notanumber"]);
        assert!(out.contains("1 tables"), "{out}");
        assert!(out.contains("unknown command"), "{out}");
        assert!(out.contains("not a number"), "{out}");
    }
}
