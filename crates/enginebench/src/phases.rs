//! The phases' loops: random and sequential writes, random and sequential reads, seeks,
//! spread over threads, each read checked against what the last write of its key stored.

use super::*;

pub(super) fn write_phase(
    config: &Config,
    engine: &dyn Engine,
    data: &mut DataSet,
    kind: PhaseKind,
    label: &str,
    seed: u64,
) -> Result<PhaseResult> {
    let mut rng = Rng::new(seed);
    let order: Vec<u64> = match kind {
        PhaseKind::FillRandom => permutation(data.keys, &mut rng),
        _ => (0..data.keys).map(|_| rng.below(data.keys)).collect(),
    };
    let mut hist = new_histogram();
    let mut key = vec![0u8; data.key_bytes];
    let progress = Progress::new(config.progress, engine.name(), label, order.len() as u64);
    let start = Instant::now();
    for (i, &n) in order.iter().enumerate() {
        if kind == PhaseKind::Overwrite {
            data.generations[n as usize] += 1;
        }
        key_into(n, &mut key);
        let value = data.expected(n);
        let t = Instant::now();
        engine.put(&key, value)?;
        hist.saturating_record(t.elapsed().as_nanos() as u64);
        progress.tick(i as u64 + 1);
    }
    let op_secs = start.elapsed().as_secs_f64();
    let drain = Instant::now();
    engine.flush_and_wait()?;
    let drain_secs = drain.elapsed().as_secs_f64();
    let mut r = empty_result(kind, label);
    r.ops = order.len() as u64;
    r.op_secs = op_secs;
    r.drain_secs = drain_secs;
    r.latency = Latency::of(&hist);
    r.user_bytes_written = r.ops * (data.key_bytes + data.values.value_bytes()) as u64;
    Ok(r)
}

#[derive(Default)]
pub(super) struct ReadTally {
    pub(super) entries: u64,
    pub(super) bytes: u64,
    pub(super) missing: u64,
    pub(super) mismatched: u64,
}

impl ReadTally {
    pub(super) fn add(&mut self, o: &ReadTally) {
        self.entries += o.entries;
        self.bytes += o.bytes;
        self.missing += o.missing;
        self.mismatched += o.mismatched;
    }
}

/// Runs `per_thread(thread index, ops)` on `threads` threads, splitting `ops` between them,
/// and merges their histograms and tallies.
pub(super) fn in_threads<F>(
    threads: usize,
    ops: u64,
    per_thread: F,
) -> Result<(Histogram<u64>, ReadTally)>
where
    F: Fn(usize, u64) -> Result<(Histogram<u64>, ReadTally)> + Sync,
{
    let mut hist = new_histogram();
    let mut tally = ReadTally::default();
    if threads <= 1 {
        return per_thread(0, ops);
    }
    let results: Vec<Result<(Histogram<u64>, ReadTally)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let share = ops / threads as u64 + u64::from((t as u64) < ops % threads as u64);
                let f = &per_thread;
                s.spawn(move || f(t, share))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("reader thread panicked")))
            })
            .collect()
    });
    for r in results {
        let (h, t) = r?;
        hist.add(&h)
            .map_err(|e| anyhow::anyhow!("merging histograms: {e:?}"))?;
        tally.add(&t);
    }
    Ok((hist, tally))
}

pub(super) fn read_random(
    config: &Config,
    engine: &dyn Engine,
    data: &DataSet,
    label: &str,
    seed: u64,
) -> Result<PhaseResult> {
    let progress = Progress::new(
        config.progress && config.threads == 1,
        engine.name(),
        label,
        config.reads,
    );
    let start = Instant::now();
    let (hist, tally) = in_threads(config.threads, config.reads, |t, ops| {
        let mut rng = Rng::new(seed ^ workload::mix(t as u64 + 1));
        let mut hist = new_histogram();
        let mut tally = ReadTally::default();
        let mut key = vec![0u8; data.key_bytes];
        let mut out = Vec::with_capacity(data.values.value_bytes());
        for i in 0..ops {
            let n = rng.below(data.keys);
            key_into(n, &mut key);
            let t0 = Instant::now();
            let found = engine.get(&key, &mut out)?;
            hist.saturating_record(t0.elapsed().as_nanos() as u64);
            if !found {
                tally.missing += 1;
            } else {
                tally.entries += 1;
                tally.bytes += (key.len() + out.len()) as u64;
                if out.as_slice() != data.expected(n) {
                    tally.mismatched += 1;
                }
            }
            progress.tick(i + 1);
        }
        Ok((hist, tally))
    })?;
    let mut r = empty_result(PhaseKind::ReadRandom, label);
    r.ops = config.reads;
    r.op_secs = start.elapsed().as_secs_f64();
    r.latency = Latency::of(&hist);
    r.entries_read = tally.entries;
    r.user_bytes_read = tally.bytes;
    r.missing = tally.missing;
    r.mismatched = tally.mismatched;
    Ok(r)
}

pub(super) fn read_seq(
    config: &Config,
    engine: &dyn Engine,
    data: &DataSet,
    label: &str,
) -> Result<PhaseResult> {
    let mut hist = new_histogram();
    let mut tally = ReadTally::default();
    let mut expected_key = vec![0u8; data.key_bytes];
    let progress = Progress::new(config.progress, engine.name(), label, data.keys);
    let mut i: u64 = 0;
    let start = Instant::now();
    let mut last = start;
    let visited = engine.scan(b"", usize::MAX, &mut |k, v| {
        let now = Instant::now();
        hist.saturating_record(now.duration_since(last).as_nanos() as u64);
        last = now;
        tally.entries += 1;
        tally.bytes += (k.len() + v.len()) as u64;
        // Every key exists, so the scan returns key i at position i. Values are checked on
        // a sample to keep the check cheap next to the scan.
        if i < data.keys {
            key_into(i, &mut expected_key);
            if k != expected_key.as_slice() || (i % 16 == 0 && v != data.expected(i)) {
                tally.mismatched += 1;
            }
        } else {
            tally.mismatched += 1;
        }
        i += 1;
        progress.tick(i);
        true
    })?;
    let op_secs = start.elapsed().as_secs_f64();
    let mut r = empty_result(PhaseKind::ReadSeq, label);
    r.ops = visited as u64;
    r.op_secs = op_secs;
    r.latency = Latency::of(&hist);
    r.entries_read = tally.entries;
    r.user_bytes_read = tally.bytes;
    r.missing = data.keys.saturating_sub(visited as u64);
    r.mismatched = tally.mismatched;
    Ok(r)
}

pub(super) fn seek_random(
    config: &Config,
    engine: &dyn Engine,
    data: &DataSet,
    label: &str,
    seed: u64,
) -> Result<PhaseResult> {
    let progress = Progress::new(
        config.progress && config.threads == 1,
        engine.name(),
        label,
        config.seeks,
    );
    let start = Instant::now();
    let (hist, tally) = in_threads(config.threads, config.seeks, |t, ops| {
        let mut rng = Rng::new(seed ^ workload::mix(t as u64 + 1));
        let mut hist = new_histogram();
        let mut tally = ReadTally::default();
        let mut start_key = vec![0u8; data.key_bytes];
        let mut expected_key = vec![0u8; data.key_bytes];
        for i in 0..ops {
            let n = rng.below(data.keys);
            key_into(n, &mut start_key);
            let want = (config.scan_len as u64).min(data.keys - n);
            let mut j: u64 = 0;
            let mut bad = 0;
            let mut bytes = 0;
            let t0 = Instant::now();
            let got = engine.scan(&start_key, config.scan_len, &mut |k, v| {
                bytes += (k.len() + v.len()) as u64;
                key_into(n + j, &mut expected_key);
                if k != expected_key.as_slice() || (j % 16 == 0 && v != data.expected(n + j)) {
                    bad += 1;
                }
                j += 1;
                true
            })?;
            hist.saturating_record(t0.elapsed().as_nanos() as u64);
            tally.entries += got as u64;
            tally.bytes += bytes;
            tally.mismatched += bad;
            if (got as u64) < want {
                tally.missing += 1;
            }
            progress.tick(i + 1);
        }
        Ok((hist, tally))
    })?;
    let mut r = empty_result(PhaseKind::SeekRandom, label);
    r.ops = config.seeks;
    r.op_secs = start.elapsed().as_secs_f64();
    r.latency = Latency::of(&hist);
    r.entries_read = tally.entries;
    r.user_bytes_read = tally.bytes;
    r.missing = tally.missing;
    r.mismatched = tally.mismatched;
    Ok(r)
}
