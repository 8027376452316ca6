//! YCSB's core workload: the six presets A–F, record keys and values, and the per-worker
//! choice of the next operation and key, with the semantics of YCSB's `CoreWorkload`.
//!
//! Keys are `user` followed by [`fnv_hash64`] of the record number (YCSB's default
//! `insertorder=hashed`, `zeropadding=1`). The load phase inserts record numbers
//! `0..records`; inserts of the run phase continue from `records` and become readable once
//! acknowledged ([`AcknowledgedCounter`]). Pure: no I/O, every draw from the caller's rng.

use std::sync::Arc;

use rand::Rng;

use crate::generator::{
    fnv_hash64, AcknowledgedCounter, Discrete, Hotspot, LengthGenerator, ScrambledZipfian,
    SkewedLatest, ZipfTable, Zipfian,
};

/// One kind of operation of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
    /// Read one record (all fields).
    Read,
    /// Overwrite one field of one record.
    Update,
    /// Insert a new record (all fields).
    Insert,
    /// Read a number of records in key (token) order from a start key.
    Scan,
    /// Read a record, then update one of its fields.
    ReadModifyWrite,
}

impl Operation {
    /// Every kind, in report order.
    pub const ALL: [Operation; 5] = [
        Operation::Read,
        Operation::Update,
        Operation::Insert,
        Operation::Scan,
        Operation::ReadModifyWrite,
    ];

    /// The name in reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Operation::Read => "read",
            Operation::Update => "update",
            Operation::Insert => "insert",
            Operation::Scan => "scan",
            Operation::ReadModifyWrite => "read_modify_write",
        }
    }
}

/// How keys of existing records are chosen (YCSB's `requestdistribution`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RequestDistribution {
    /// Every existing record equally likely.
    Uniform,
    /// YCSB's scrambled zipfian, constant 0.99.
    Zipfian,
    /// Skewed towards the most recent inserts.
    Latest,
    /// A Zipf law of this exponent over the records (`zipf:S`; Hector's experiments use
    /// 0.1, nearly uniform, and 1.5, very skewed).
    Zipf {
        /// The exponent.
        exponent: f64,
    },
    /// A hot fraction of the records receives a fraction of the operations.
    Hotspot {
        /// Fraction of the records that is hot (YCSB's `hotspotdatafraction`, 0.2).
        data_fraction: f64,
        /// Fraction of operations sent to them (YCSB's `hotspotopnfraction`, 0.8).
        op_fraction: f64,
    },
}

/// How scan lengths are chosen (YCSB's `scanlengthdistribution`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanLengthDistribution {
    /// Uniform in `[min, max]`.
    Uniform,
    /// Zipfian in `[min, max]`.
    Zipfian,
}

/// A YCSB core workload's parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    /// The preset's letter, or `custom`.
    pub name: String,
    /// Proportion of reads.
    pub read_proportion: f64,
    /// Proportion of single-field updates.
    pub update_proportion: f64,
    /// Proportion of inserts.
    pub insert_proportion: f64,
    /// Proportion of scans.
    pub scan_proportion: f64,
    /// Proportion of read-modify-writes.
    pub read_modify_write_proportion: f64,
    /// Key choice for reads, updates, scans and read-modify-writes.
    pub request_distribution: RequestDistribution,
    /// Fields per record (YCSB's `fieldcount`, 10).
    pub field_count: usize,
    /// Bytes per field (YCSB's `fieldlength`, 100, constant).
    pub field_length: usize,
    /// Share of the records whose fields are `large_field_length` bytes instead (a
    /// heterogeneous data set, as in Hector's local-scheduling experiment); 0 for none.
    pub large_fraction: f64,
    /// Bytes per field of a large record.
    pub large_field_length: usize,
    /// Shortest scan (YCSB's `minscanlength`, 1).
    pub min_scan_length: u64,
    /// Longest scan (YCSB's `maxscanlength`, 1000; 100 in workload E).
    pub max_scan_length: u64,
    /// Scan length choice.
    pub scan_length_distribution: ScanLengthDistribution,
}

impl Workload {
    fn core(name: &str, distribution: RequestDistribution) -> Workload {
        Workload {
            name: name.to_string(),
            read_proportion: 0.0,
            update_proportion: 0.0,
            insert_proportion: 0.0,
            scan_proportion: 0.0,
            read_modify_write_proportion: 0.0,
            request_distribution: distribution,
            field_count: 10,
            field_length: 100,
            large_fraction: 0.0,
            large_field_length: 0,
            min_scan_length: 1,
            max_scan_length: 1000,
            scan_length_distribution: ScanLengthDistribution::Uniform,
        }
    }

    /// YCSB's `workloads/workload{a..f}`: A update heavy (50/50 read/update), B read
    /// mostly (95/5), C read only, D read latest (95% reads skewed to 5% inserts), E short
    /// ranges (95% scans of 1–100 records, 5% inserts), F read-modify-write (50/50).
    /// Zipfian requests except D (latest).
    pub fn preset(letter: &str) -> Option<Workload> {
        use RequestDistribution::{Latest, Zipfian};
        let letter = letter.to_ascii_lowercase();
        let mut w = Workload::core(&letter, Zipfian);
        match letter.as_str() {
            "a" => (w.read_proportion, w.update_proportion) = (0.5, 0.5),
            "b" => (w.read_proportion, w.update_proportion) = (0.95, 0.05),
            "c" => w.read_proportion = 1.0,
            "d" => {
                (w.read_proportion, w.insert_proportion) = (0.95, 0.05);
                w.request_distribution = Latest;
            }
            "e" => {
                (w.scan_proportion, w.insert_proportion) = (0.95, 0.05);
                w.max_scan_length = 100;
            }
            "f" => (w.read_proportion, w.read_modify_write_proportion) = (0.5, 0.5),
            _ => return None,
        }
        Some(w)
    }

    /// Bytes a full record carries (key excluded), for a record of the usual size.
    pub fn record_bytes(&self) -> usize {
        self.field_count * self.field_length
    }

    /// Whether record `n` is one of the large ones (a fixed share of the record numbers,
    /// scattered by hash, so load and run agree).
    pub fn is_large(&self, n: u64) -> bool {
        self.large_fraction > 0.0
            && ((fnv_hash64(n ^ 0x5bd1_e995) % 1_000_000) as f64) < self.large_fraction * 1e6
    }

    /// Bytes per field of record `n`.
    pub fn field_length_of(&self, n: u64) -> usize {
        if self.is_large(n) {
            self.large_field_length
        } else {
            self.field_length
        }
    }

    /// Bytes record `n` carries (key excluded).
    pub fn record_bytes_of(&self, n: u64) -> usize {
        self.field_count * self.field_length_of(n)
    }

    /// The weighted operation choice; `None` when no proportion is positive.
    pub fn operation_chooser(&self) -> Option<Discrete<Operation>> {
        let weights = [
            (self.read_proportion, Operation::Read),
            (self.update_proportion, Operation::Update),
            (self.insert_proportion, Operation::Insert),
            (self.scan_proportion, Operation::Scan),
            (
                self.read_modify_write_proportion,
                Operation::ReadModifyWrite,
            ),
        ];
        weights
            .iter()
            .any(|(w, _)| *w > 0.0)
            .then(|| Discrete::new(weights))
    }
}

/// The key of record number `n`: `user` + [`fnv_hash64`]`(n)` in decimal.
pub fn key_name(n: u64) -> String {
    format!("user{}", fnv_hash64(n))
}

/// The name of field `i`.
pub fn field_name(i: usize) -> String {
    format!("field{i}")
}

/// Everything a worker of the run phase needs to choose operations, keys, fields and scan
/// lengths; one per worker (cheap to clone), all sharing the insert counter.
#[derive(Clone, Debug)]
pub struct Chooser {
    operations: Discrete<Operation>,
    keys: KeyChooser,
    scan_length: LengthGenerator,
    field_count: usize,
    inserts: Arc<AcknowledgedCounter>,
}

#[derive(Clone, Debug)]
enum KeyChooser {
    Uniform { items: u64 },
    Zipfian(ScrambledZipfian),
    Zipf(ZipfTable),
    Latest(SkewedLatest),
    Hotspot(Hotspot),
}

/// Draws of a key chooser that land beyond the acknowledged inserts are drawn again, as in
/// YCSB; this bounds the retries (the scrambled zipfian's range is at most
/// `1 + 2 × insert proportion` times the records, so a few draws nearly always suffice).
const KEY_DRAWS_MAX: u32 = 64;

impl Chooser {
    /// A chooser for a run of `operations` over `records` loaded records. `None` when the
    /// workload has no positive proportion or no records.
    pub fn new(workload: &Workload, records: u64, operations: u64) -> Option<Chooser> {
        let operations_chooser = workload.operation_chooser()?;
        if records == 0 || workload.field_count == 0 {
            return None;
        }
        let inserts = Arc::new(AcknowledgedCounter::new(records));
        let keys = match workload.request_distribution {
            RequestDistribution::Uniform => KeyChooser::Uniform { items: records },
            RequestDistribution::Zipfian => {
                // YCSB sizes the zipfian for the records the run will insert, with slack.
                let expected_new = (operations as f64 * workload.insert_proportion * 2.0) as u64;
                KeyChooser::Zipfian(ScrambledZipfian::new(0, records - 1 + expected_new))
            }
            RequestDistribution::Zipf { exponent } => {
                let expected_new = (operations as f64 * workload.insert_proportion * 2.0) as u64;
                KeyChooser::Zipf(ZipfTable::new(records + expected_new, exponent))
            }
            RequestDistribution::Latest => KeyChooser::Latest(SkewedLatest::new(records - 1)),
            RequestDistribution::Hotspot {
                data_fraction,
                op_fraction,
            } => KeyChooser::Hotspot(Hotspot::new(0, records - 1, data_fraction, op_fraction)),
        };
        let (min, max) = (
            workload.min_scan_length.max(1),
            workload
                .max_scan_length
                .max(workload.min_scan_length.max(1)),
        );
        let scan_length = match workload.scan_length_distribution {
            ScanLengthDistribution::Uniform => LengthGenerator::Uniform { min, max },
            ScanLengthDistribution::Zipfian => LengthGenerator::Zipfian(Zipfian::new(min, max)),
        };
        Some(Chooser {
            operations: operations_chooser,
            keys,
            scan_length,
            field_count: workload.field_count,
            inserts,
        })
    }

    /// The next operation.
    pub fn operation<R: Rng + ?Sized>(&self, rng: &mut R) -> Operation {
        self.operations.next(rng)
    }

    /// The record number for a read, update, scan or read-modify-write: an acknowledged
    /// record, chosen by the request distribution.
    pub fn existing_key<R: Rng + ?Sized>(&mut self, rng: &mut R) -> u64 {
        let last = self.inserts.last_value();
        for _ in 0..KEY_DRAWS_MAX {
            let n = match &mut self.keys {
                KeyChooser::Uniform { items } => rng.gen_range(0..*items),
                KeyChooser::Zipfian(z) => z.next(rng),
                KeyChooser::Zipf(z) => z.next(rng),
                KeyChooser::Latest(l) => l.next(rng, last),
                KeyChooser::Hotspot(h) => h.next(rng),
            };
            if n <= last {
                return n;
            }
        }
        rng.gen_range(0..=last)
    }

    /// A record number for an insert; call [`Chooser::acknowledge`] once it is written.
    pub fn new_key(&self) -> u64 {
        self.inserts.next()
    }

    /// Marks an inserted record number as written (readable by later operations).
    pub fn acknowledge(&self, n: u64) {
        self.inserts.acknowledge(n);
    }

    /// The field an update writes (uniform).
    pub fn field<R: Rng + ?Sized>(&self, rng: &mut R) -> usize {
        rng.gen_range(0..self.field_count)
    }

    /// The number of records a scan reads.
    pub fn scan_length<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        self.scan_length.next(rng)
    }
}

/// Field values: windows of a pool of random printable ASCII, so values cost no random
/// generation per byte and do not compress much (YCSB's `RandomByteIterator` is likewise
/// random printable bytes).
#[derive(Clone, Debug)]
pub struct ValuePool {
    pool: Arc<str>,
    length: usize,
}

const VALUE_POOL_BYTES: usize = 1 << 16;

impl ValuePool {
    /// A pool of values of `length` bytes.
    pub fn new<R: Rng + ?Sized>(rng: &mut R, length: usize) -> ValuePool {
        let bytes = VALUE_POOL_BYTES.max(length * 2);
        let pool: String = (0..bytes)
            .map(|_| char::from(rng.gen_range(b' '..=b'~')))
            .collect();
        ValuePool {
            pool: pool.into(),
            length,
        }
    }

    /// One value.
    pub fn value<R: Rng + ?Sized>(&self, rng: &mut R) -> &str {
        let start = rng.gen_range(0..=self.pool.len() - self.length);
        // The pool is ASCII, so every byte offset is a char boundary.
        self.pool
            .get(start..start + self.length)
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    #[test]
    fn presets_match_ycsb() {
        let a = Workload::preset("a").unwrap();
        assert_eq!((a.read_proportion, a.update_proportion), (0.5, 0.5));
        assert_eq!(a.request_distribution, RequestDistribution::Zipfian);
        assert_eq!((a.field_count, a.field_length), (10, 100));
        let d = Workload::preset("D").unwrap();
        assert_eq!(d.request_distribution, RequestDistribution::Latest);
        let e = Workload::preset("e").unwrap();
        assert_eq!((e.scan_proportion, e.insert_proportion), (0.95, 0.05));
        assert_eq!((e.min_scan_length, e.max_scan_length), (1, 100));
        assert!(Workload::preset("g").is_none());
        for letter in ["a", "b", "c", "d", "e", "f"] {
            let w = Workload::preset(letter).unwrap();
            let sum = w.read_proportion
                + w.update_proportion
                + w.insert_proportion
                + w.scan_proportion
                + w.read_modify_write_proportion;
            assert!((sum - 1.0).abs() < 1e-9, "{letter}: {sum}");
        }
    }

    #[test]
    fn keys_are_user_plus_hashed_number() {
        assert_eq!(key_name(0), format!("user{}", fnv_hash64(0)));
        assert_ne!(key_name(1), key_name(2));
        assert!(key_name(12345).starts_with("user"));
    }

    #[test]
    fn operation_proportions_are_honored() {
        let mut rng = StdRng::seed_from_u64(7);
        for letter in ["a", "b", "d", "e", "f"] {
            let w = Workload::preset(letter).unwrap();
            let c = Chooser::new(&w, 1000, 100_000).unwrap();
            let mut counts = std::collections::HashMap::<Operation, u32>::new();
            let n = 200_000;
            for _ in 0..n {
                *counts.entry(c.operation(&mut rng)).or_default() += 1;
            }
            for (op, p) in [
                (Operation::Read, w.read_proportion),
                (Operation::Update, w.update_proportion),
                (Operation::Insert, w.insert_proportion),
                (Operation::Scan, w.scan_proportion),
                (Operation::ReadModifyWrite, w.read_modify_write_proportion),
            ] {
                let observed = f64::from(counts.get(&op).copied().unwrap_or(0)) / f64::from(n);
                assert!(
                    (observed - p).abs() < 0.005,
                    "{letter} {op:?}: {observed} vs {p}"
                );
            }
        }
    }

    #[test]
    fn existing_keys_never_pass_the_acknowledged_inserts() {
        let mut rng = StdRng::seed_from_u64(3);
        for letter in ["a", "d", "e"] {
            let w = Workload::preset(letter).unwrap();
            let mut c = Chooser::new(&w, 500, 10_000).unwrap();
            for _ in 0..20_000 {
                assert!(c.existing_key(&mut rng) < 500, "{letter}");
            }
            if w.insert_proportion == 0.0 {
                // The zipfian's range is exactly the loaded records when nothing is inserted.
                continue;
            }
            let n = c.new_key();
            assert_eq!(n, 500);
            c.acknowledge(n);
            let seen = (0..200_000).any(|_| c.existing_key(&mut rng) == 500);
            assert!(seen, "{letter}: the new record is never chosen");
        }
    }

    #[test]
    fn scan_lengths_stay_in_range() {
        let mut rng = StdRng::seed_from_u64(5);
        let c = Chooser::new(&Workload::preset("e").unwrap(), 100, 100).unwrap();
        let lengths: Vec<u64> = (0..10_000).map(|_| c.scan_length(&mut rng)).collect();
        assert!(lengths.iter().all(|l| (1..=100).contains(l)));
        assert!(lengths.contains(&1) && lengths.contains(&100));
    }

    #[test]
    fn values_have_the_field_length() {
        let mut rng = StdRng::seed_from_u64(1);
        let pool = ValuePool::new(&mut rng, 100);
        for _ in 0..1000 {
            let v = pool.value(&mut rng);
            assert_eq!(v.len(), 100);
            assert!(v.bytes().all(|b| b.is_ascii_graphic() || b == b' '));
        }
    }
}
