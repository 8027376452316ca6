//! The operations of a YCSB phase over CQL: insert, read, update, read-modify-write and
//! scan of one record, each with the user bytes it moved or why it failed.

use rand::rngs::StdRng;
use scylla::errors::ExecutionError;

use super::{error_kind, Shared};
use crate::workload::{key_name, Chooser, Operation, ValuePool, Workload};

/// What one operation did, when it succeeded.
#[derive(Default)]
pub(super) struct Done {
    pub(super) bytes_written: u64,
    pub(super) bytes_read: u64,
}

/// Why one operation failed.
pub(super) enum Failed {
    NotFound,
    /// The driver's error, by kind ([`error_kind`]).
    Driver(String),
}

impl From<ExecutionError> for Failed {
    fn from(e: ExecutionError) -> Failed {
        Failed::Driver(error_kind(&e))
    }
}

/// Inserts record `n` with every field.
pub(super) async fn insert(
    shared: &Shared,
    values: &Values,
    rng: &mut StdRng,
    n: u64,
) -> Result<Done, Failed> {
    let key = key_name(n);
    let mut row: Vec<&str> = Vec::with_capacity(shared.config.workload.field_count + 1);
    row.push(&key);
    for _ in 0..shared.config.workload.field_count {
        row.push(values.of(&shared.config.workload, n).value(rng));
    }
    shared
        .session
        .execute_unpaged(&shared.statements(n).insert, &row)
        .await?;
    Ok(Done {
        bytes_written: (key.len() + shared.config.workload.record_bytes_of(n)) as u64,
        bytes_read: 0,
    })
}

/// Bytes of `rows` full records, key included, the first of them record `n`.
pub(super) fn record_bytes(shared: &Shared, key: &str, rows: usize, n: u64) -> u64 {
    let w = &shared.config.workload;
    match rows {
        0 => 0,
        // A scan's other records: the usual size (their numbers are not known here).
        _ => (key.len() * rows + w.record_bytes_of(n) + (rows - 1) * w.record_bytes()) as u64,
    }
}

/// Field values of the usual and the large length.
pub(super) struct Values {
    usual: ValuePool,
    large: Option<ValuePool>,
}

impl Values {
    pub(super) fn new(rng: &mut StdRng, workload: &Workload) -> Values {
        Values {
            usual: ValuePool::new(rng, workload.field_length),
            large: (workload.large_fraction > 0.0)
                .then(|| ValuePool::new(rng, workload.large_field_length)),
        }
    }

    /// The pool for record `n`'s fields.
    pub(super) fn of(&self, workload: &Workload, n: u64) -> &ValuePool {
        match &self.large {
            Some(large) if workload.is_large(n) => large,
            _ => &self.usual,
        }
    }
}

/// Reads record `n`.
pub(super) async fn read(shared: &Shared, n: u64) -> Result<Done, Failed> {
    let key = &key_name(n);
    let result = shared
        .session
        .execute_unpaged(&shared.statements(n).read, (key,))
        .await?;
    let rows = result.into_rows_result().map_or(0, |r| r.rows_num());
    if rows == 0 {
        return Err(Failed::NotFound);
    }
    Ok(Done {
        bytes_written: 0,
        bytes_read: record_bytes(shared, key, rows, n),
    })
}

/// Updates one field of record `n`.
pub(super) async fn update(
    shared: &Shared,
    chooser: &Chooser,
    values: &Values,
    rng: &mut StdRng,
    n: u64,
) -> Result<Done, Failed> {
    let key = &key_name(n);
    let field = chooser.field(rng);
    let Some(statement) = shared.statements(n).update.get(field) else {
        // The chooser draws below field_count, the number of statements prepared.
        unreachable!("field {field} has no prepared update");
    };
    let value = values.of(&shared.config.workload, n).value(rng);
    shared
        .session
        .execute_unpaged(statement, (value, key))
        .await?;
    Ok(Done {
        bytes_written: (key.len() + value.len()) as u64,
        bytes_read: 0,
    })
}

/// One operation of the run phase.
pub(super) async fn operation(
    shared: &Shared,
    chooser: &mut Chooser,
    values: &Values,
    rng: &mut StdRng,
    op: Operation,
) -> (u64, Result<Done, Failed>) {
    match op {
        Operation::Insert => {
            let n = chooser.new_key();
            let done = insert(shared, values, rng, n).await;
            // A failed insert is acknowledged too (as YCSB does): later reads may then miss
            // it and count `not_found`, rather than every later key waiting on the gap.
            chooser.acknowledge(n);
            return (n, done);
        }
        Operation::Scan => return scan(shared, chooser, rng).await,
        Operation::Read | Operation::Update | Operation::ReadModifyWrite => {}
    }
    let n = chooser.existing_key(rng);
    let outcome = match op {
        Operation::Update => update(shared, chooser, values, rng, n).await,
        Operation::ReadModifyWrite => match read(shared, n).await {
            Ok(r) => update(shared, chooser, values, rng, n).await.map(|w| Done {
                bytes_written: w.bytes_written,
                bytes_read: r.bytes_read,
            }),
            Err(e) => Err(e),
        },
        _ => read(shared, n).await,
    };
    (n, outcome)
}

/// A scan from an existing record: the record it starts at, and its outcome.
pub(super) async fn scan(
    shared: &Shared,
    chooser: &mut Chooser,
    rng: &mut StdRng,
) -> (u64, Result<Done, Failed>) {
    let n = chooser.existing_key(rng);
    let length = i32::try_from(chooser.scan_length(rng)).unwrap_or(i32::MAX);
    (n, scan_from(shared, n, length).await)
}

/// Scans `length` records from record `n` (in the table of the record it starts at).
pub(super) async fn scan_from(shared: &Shared, n: u64, length: i32) -> Result<Done, Failed> {
    let key = key_name(n);
    let scan = shared.statements(n).scan_for(&shared.session, &key);
    let result = shared
        .session
        .execute_unpaged(scan, (key.as_str(), length))
        .await?;
    let rows = result.into_rows_result().map_or(0, |r| r.rows_num());
    Ok(Done {
        bytes_written: 0,
        bytes_read: record_bytes(shared, &key, rows, n),
    })
}
