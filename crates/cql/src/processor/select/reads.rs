//! Reading rows for a plan: one partition (a slice of it, in either order), every
//! partition of a token range, or the whole table, chunk by chunk from the coordinator, with
//! partition and range deletions and TTLs resolved before rows reach the [`Run`].

use super::*;

/// The key just after `key` in byte order.
pub(super) fn successor(key: &[u8]) -> Vec<u8> {
    let mut k = key.to_vec();
    k.push(0);
    k
}

/// Reads every entry of a key range (every row passing `filter`, and every other entry).
pub(super) async fn read_all<C: Coordinator>(
    coordinator: &C,
    exec: &Exec<'_>,
    table: &TableMeta,
    range: KeyRange,
    filter: Option<&ClusteringFilter>,
) -> Result<Vec<(Vec<u8>, Vec<u8>)>, ErrorResponse> {
    let mut out = Vec::new();
    let mut start = range.start.clone();
    loop {
        let result = coordinator
            .read(
                ReadCommand {
                    table: table.id,
                    range: KeyRange {
                        start: start.clone(),
                        end: range.end.clone(),
                    },
                    limit: CHUNK_ENTRIES,
                    filter: filter.cloned(),
                    index: None,
                },
                exec.params.consistency,
            )
            .await?;
        // The coordinator says when the range is done; an empty answer can only mean that.
        let exhausted = result.exhausted || result.entries.is_empty();
        if let Some((last, _)) = result.entries.last() {
            start = successor(last);
        }
        out.extend(result.entries);
        if exhausted {
            return Ok(out);
        }
    }
}

pub(super) fn resolve_err(e: mosaic_rows::ResolveError) -> ErrorResponse {
    ErrorResponse::new(ErrorKind::Server, format!("Unreadable stored row: {e}"))
}

/// Reads one partition: its head, then its clustering ranges (after `after`, or before it
/// when reversed), handing live rows to the run.
pub(super) async fn read_partition<C: Coordinator>(
    coordinator: &C,
    exec: &Exec<'_>,
    run: &mut Run<'_>,
    prefix: &PartitionPrefix,
    after: Option<&[u8]>,
) -> Result<Next, ErrorResponse> {
    let plan = run.plan;
    let schema = &plan.schema;
    let table = plan.table.as_ref();
    let slices =
        plan.restrictions.has_clustering() && plan.restrictions.clustering_problem(table).is_none();
    if after.is_none() && !plan.reversed && !slices {
        // The whole partition, head and rows, in one streamed range.
        let whole = schema.partition_range(prefix);
        return Ok(
            match scan(coordinator, exec, run, whole.start, whole.end).await? {
                Next::Stop => Next::Stop,
                _ => Next::Continue,
            },
        );
    }
    // The head holds no rows, so there is nothing to filter.
    let head = read_all(
        coordinator,
        exec,
        table,
        schema.partition_head_range(prefix),
        None,
    )
    .await?;
    let mut resolver = PartitionResolver::new(schema, plan.now_secs);
    for (k, v) in &head {
        run.tombstones.push(&mut resolver, k, v)?;
    }
    let ranges = clustering_ranges(plan, prefix, slices)?;
    if after.is_none() {
        run.partition_rows = 0;
    }
    let mut cursor = PartitionCursor {
        schema,
        token: prefix.token(),
        static_row: resolver.static_row().cloned(),
        resolver,
        partition_key: None,
        any_row: after.is_some(),
    };
    let next = if plan.reversed {
        cursor
            .backward(coordinator, exec, run, ranges, after)
            .await?
    } else {
        cursor
            .forward(coordinator, exec, run, ranges, after)
            .await?
    };
    if let Some(next) = next {
        return Ok(next);
    }
    Ok(cursor.static_only(run, prefix))
}

/// The key ranges of a partition's rows a read covers: the clustering slices the
/// restrictions select, or all its rows.
fn clustering_ranges(
    plan: &Plan,
    prefix: &PartitionPrefix,
    slices: bool,
) -> Result<Vec<KeyRange>, ErrorResponse> {
    let schema = &plan.schema;
    if !slices {
        return Ok(vec![schema.rows_range(prefix)]);
    }
    plan.restrictions
        .clustering_bounds(schema)?
        .iter()
        .map(|(lo, hi)| {
            schema
                .clustering_range(prefix, lo, hi)
                .map_err(|e| invalid(format!("Invalid clustering bound: {e}")))
        })
        .collect()
}

/// One partition being read: its resolver (deletions and TTLs), static row and decoded key.
struct PartitionCursor<'s> {
    schema: &'s KeySchema,
    token: Token,
    static_row: Option<LiveRow>,
    resolver: PartitionResolver<'s>,
    partition_key: Option<Vec<CqlValue>>,
    /// Whether a row was handed over (or the partition was entered mid-way).
    any_row: bool,
}

impl PartitionCursor<'_> {
    /// Hands a live row to the run; `Some` when the partition's read ends here.
    fn emit(&mut self, run: &mut Run<'_>, key: &[u8], row: &LiveRow) -> Option<Next> {
        self.any_row = true;
        let schema = self.schema;
        let pk = self
            .partition_key
            .get_or_insert_with(|| decode_pk(schema, key));
        let view = RowView {
            token: self.token,
            partition_key: pk,
            static_row: self.static_row.as_ref(),
            row: Some(row),
        };
        match run.row(key, &view) {
            Next::Continue => None,
            Next::SkipPartition => Some(Next::Continue),
            Next::Stop => Some(Next::Stop),
        }
    }

    /// Reads the ranges in clustering order, chunk by chunk, from just after `after`.
    async fn forward<C: Coordinator>(
        &mut self,
        coordinator: &C,
        exec: &Exec<'_>,
        run: &mut Run<'_>,
        ranges: Vec<KeyRange>,
        after: Option<&[u8]>,
    ) -> Result<Option<Next>, ErrorResponse> {
        let table = run.plan.table.id;
        for range in ranges {
            let mut start = range.start.clone();
            if let Some(a) = after {
                let s = successor(a);
                if s > start {
                    start = s;
                }
            }
            loop {
                let r = KeyRange {
                    start: start.clone(),
                    end: range.end.clone(),
                };
                if r.is_empty() {
                    break;
                }
                let result = coordinator
                    .read(
                        ReadCommand {
                            table,
                            range: r,
                            limit: CHUNK_ENTRIES,
                            filter: run.plan.filter.clone(),
                            index: run.plan.index.clone(),
                        },
                        exec.params.consistency,
                    )
                    .await?;
                // The coordinator says when the range is done; an empty answer can only mean that.
                let exhausted = result.exhausted || result.entries.is_empty();
                for (k, v) in &result.entries {
                    start = successor(k);
                    let Some(row) = run.tombstones.push(&mut self.resolver, k, v)? else {
                        continue;
                    };
                    if let Some(next) = self.emit(run, k, &row) {
                        return Ok(Some(next));
                    }
                }
                if exhausted {
                    break;
                }
            }
        }
        Ok(None)
    }

    /// Reads the ranges (up to `after`) whole, then hands the rows over last first.
    async fn backward<C: Coordinator>(
        &mut self,
        coordinator: &C,
        exec: &Exec<'_>,
        run: &mut Run<'_>,
        ranges: Vec<KeyRange>,
        after: Option<&[u8]>,
    ) -> Result<Option<Next>, ErrorResponse> {
        let table = run.plan.table.as_ref();
        let mut rows = Vec::new();
        for range in ranges {
            let mut range = range;
            if let Some(a) = after {
                if range.end.as_deref().is_none_or(|e| a < e) {
                    range.end = Some(a.to_vec());
                }
                if range.is_empty() {
                    continue;
                }
            }
            let filter = run.plan.filter.as_ref();
            for (k, v) in read_all(coordinator, exec, table, range, filter).await? {
                if let Some(row) = run.tombstones.push(&mut self.resolver, &k, &v)? {
                    rows.push((k, row));
                }
            }
        }
        for (k, row) in rows.iter().rev() {
            if let Some(next) = self.emit(run, k, row) {
                return Ok(Some(next));
            }
        }
        Ok(None)
    }

    /// A partition with only a live static row shows as one row of its static columns,
    /// unless clustering columns are restricted.
    fn static_only(&mut self, run: &mut Run<'_>, prefix: &PartitionPrefix) -> Next {
        if self.any_row || run.plan.restrictions.has_clustering() {
            return Next::Continue;
        }
        let Some(st) = &self.static_row else {
            return Next::Continue;
        };
        let key = self.schema.static_key(prefix);
        let schema = self.schema;
        let pk = self
            .partition_key
            .get_or_insert_with(|| decode_pk(schema, &key));
        let view = RowView {
            token: self.token,
            partition_key: pk,
            static_row: Some(st),
            row: None,
        };
        if run.row(&key, &view) == Next::Stop {
            return Next::Stop;
        }
        Next::Continue
    }
}

pub(super) fn decode_pk(schema: &KeySchema, key: &[u8]) -> Vec<CqlValue> {
    schema
        .decode_key(key)
        .map(|d| d.partition_key)
        .unwrap_or_default()
}

pub(super) fn prefix_of_key(
    schema: &KeySchema,
    key: &[u8],
) -> Result<PartitionPrefix, ErrorResponse> {
    let decoded = schema.decode_key(key).map_err(|e| {
        ErrorResponse::new(ErrorKind::Server, format!("Unreadable stored key: {e}"))
    })?;
    schema
        .partition_prefix_with_token(decoded.token, &decoded.partition_key)
        .map_err(|e| ErrorResponse::new(ErrorKind::Server, format!("Unreadable stored key: {e}")))
}

/// The partition a range scan is in.
pub(super) struct ScanPartition<'s> {
    pub(super) prefix: Vec<u8>,
    pub(super) token: Token,
    pub(super) partition_key: Vec<CqlValue>,
    pub(super) resolver: PartitionResolver<'s>,
    pub(super) any_row: bool,
}

/// Shows a finished partition's static row if it had no live clustering row.
pub(super) fn finish_partition(run: &mut Run<'_>, part: Option<ScanPartition<'_>>) -> Next {
    let Some(part) = part else {
        return Next::Continue;
    };
    if part.any_row || run.plan.restrictions.has_clustering() {
        return Next::Continue;
    }
    let Some(st) = part.resolver.static_row() else {
        return Next::Continue;
    };
    let mut key = part.prefix.clone();
    // The static key: the prefix and the static tag, as `KeySchema::static_key` builds it.
    if let Ok(prefix) = run
        .plan
        .schema
        .partition_prefix_with_token(part.token, &part.partition_key)
    {
        key = run.plan.schema.static_key(&prefix);
    }
    let view = RowView {
        token: part.token,
        partition_key: &part.partition_key,
        static_row: Some(st),
        row: None,
    };
    match run.row(&key, &view) {
        Next::Stop => Next::Stop,
        _ => Next::Continue,
    }
}

/// Scans `[start, end)` in key order, partition after partition, in chunks.
pub(super) async fn scan<C: Coordinator>(
    coordinator: &C,
    exec: &Exec<'_>,
    run: &mut Run<'_>,
    mut start: Vec<u8>,
    end: Option<Vec<u8>>,
) -> Result<Next, ErrorResponse> {
    let plan = run.plan;
    let schema = &plan.schema;
    let mut current: Option<ScanPartition<'_>> = None;
    let mut round: u32 = 0;
    loop {
        let range = KeyRange {
            start: start.clone(),
            end: end.clone(),
        };
        if range.is_empty() {
            break;
        }
        let range_start = range.start.clone();
        let result = coordinator
            .read(
                ReadCommand {
                    table: plan.table.id,
                    range,
                    limit: run.chunk_entries(round),
                    filter: plan.filter.clone(),
                    index: plan.index.clone(),
                },
                exec.params.consistency,
            )
            .await?;
        round = round.saturating_add(1);
        // The coordinator says when the range is done; an empty answer can only mean that.
        let exhausted = result.exhausted || result.entries.is_empty();
        let next_start = result.entries.last().map(|(k, _)| successor(k));
        let entries = if plan.index.is_some() && several_replicas(exec.params.consistency) {
            let disputed = result.disputed.as_deref();
            protect(
                coordinator,
                exec,
                plan,
                &range_start,
                result.entries,
                disputed,
            )
            .await?
        } else {
            result.entries
        };
        let mut jumped = false;
        for (k, v) in &entries {
            start = successor(k);
            let prefix_len = schema.partition_prefix_len(k).map_err(|e| {
                ErrorResponse::new(ErrorKind::Server, format!("Unreadable stored key: {e}"))
            })?;
            let prefix = k.get(..prefix_len).unwrap_or_default();
            if current.as_ref().is_none_or(|c| c.prefix != prefix) {
                if finish_partition(run, current.take()) == Next::Stop {
                    return Ok(Next::Stop);
                }
                run.partition_rows = 0;
                current = Some(open_partition(schema, plan.now_secs, prefix, k)?);
            }
            let Some(part) = current.as_mut() else {
                continue;
            };
            let Some(row) = run.tombstones.push(&mut part.resolver, k, v)? else {
                continue;
            };
            part.any_row = true;
            let view = RowView {
                token: part.token,
                partition_key: &part.partition_key,
                static_row: part.resolver.static_row(),
                row: Some(&row),
            };
            match run.row(k, &view) {
                Next::Continue => {}
                Next::Stop => return Ok(Next::Stop),
                Next::SkipPartition => {
                    start = past_partition(schema, &part.prefix, k)?;
                    jumped = true;
                    break;
                }
            }
        }
        if !jumped {
            if let Some(next) = next_start {
                start = start.max(next);
            }
        }
        if exhausted && !jumped {
            break;
        }
    }
    Ok(finish_partition(run, current.take()))
}

/// Whether reads at `consistency` merge several replicas' answers.
fn several_replicas(consistency: crate::frame::Consistency) -> bool {
    !matches!(
        consistency,
        crate::frame::Consistency::One
            | crate::frame::Consistency::LocalOne
            | crate::frame::Consistency::Any
    )
}

/// Replica filtering protection (Cassandra's, for reads through an index at a level that
/// merges replicas): each replica answers only the rows its own index and data match, so a
/// row one replica returns may be one another replica has newer data for — an overwrite
/// or a deletion it does not return, having no entry for the value. As Cassandra does,
/// only the entries the replicas' answers disagreed on (`disputed`: one replica silent on
/// it, or holding another version; `None`: unknown, so every entry) are read again, whole
/// with their partition's head, at the same level, and those answers stand instead; when
/// every replica answered alike there is no second read. `from`: where the index read
/// started (entries before it were not asked for).
async fn protect<C: Coordinator>(
    coordinator: &C,
    exec: &Exec<'_>,
    plan: &Plan,
    from: &[u8],
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    disputed: Option<&[Vec<u8>]>,
) -> Result<Vec<(Vec<u8>, Vec<u8>)>, ErrorResponse> {
    use mosaic_rows::key::tag;
    let disputed: Option<std::collections::BTreeSet<&[u8]>> =
        disputed.map(|d| d.iter().map(Vec::as_slice).collect());
    if disputed.as_ref().is_some_and(|d| d.is_empty()) {
        return Ok(entries);
    }
    let schema = &plan.schema;
    let table = plan.table.as_ref();
    let clustered = !schema.clustering_columns().is_empty();
    let mut out = Vec::with_capacity(entries.len());
    let mut agreed = Vec::new();
    let mut last_prefix: Option<Vec<u8>> = None;
    for (key, value) in entries {
        if disputed
            .as_ref()
            .is_some_and(|d| !d.contains(key.as_slice()))
        {
            agreed.push((key, value));
            continue;
        }
        let len = schema.partition_prefix_len(&key).map_err(|e| {
            ErrorResponse::new(ErrorKind::Server, format!("Unreadable stored key: {e}"))
        })?;
        let prefix = key.get(..len).unwrap_or_default().to_vec();
        let is_row = key.get(len).is_some_and(|t| *t >= tag::BEFORE);
        let new_partition = last_prefix.as_deref() != Some(prefix.as_slice());
        if new_partition {
            let end_tag = if clustered {
                tag::BEFORE
            } else {
                tag::PARTITION_END
            };
            let mut end = prefix.clone();
            end.push(end_tag);
            let head = KeyRange {
                start: prefix.clone().max(from.to_vec()),
                end: Some(end),
            };
            if !head.is_empty() {
                out.extend(read_all(coordinator, exec, table, head, None).await?);
            }
            last_prefix = Some(prefix);
        }
        if is_row && clustered {
            let range = KeyRange {
                start: key.clone(),
                end: Some(successor(&key)),
            };
            out.extend(read_all(coordinator, exec, table, range, None).await?);
        }
    }
    // What was read again stands over what the replicas agreed on (a stable sort keeps
    // it first among equal keys, and the dedup keeps the first).
    out.extend(agreed);
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out.dedup_by(|a, b| a.0 == b.0);
    Ok(out)
}

/// The scan's state for the partition whose first entry is `key`.
fn open_partition<'s>(
    schema: &'s KeySchema,
    now_secs: i64,
    prefix: &[u8],
    key: &[u8],
) -> Result<ScanPartition<'s>, ErrorResponse> {
    let decoded = schema.decode_key(key).map_err(|e| {
        ErrorResponse::new(ErrorKind::Server, format!("Unreadable stored key: {e}"))
    })?;
    Ok(ScanPartition {
        prefix: prefix.to_vec(),
        token: decoded.token,
        partition_key: decoded.partition_key,
        resolver: PartitionResolver::new(schema, now_secs),
        any_row: false,
    })
}

/// The first key after the partition of `key` (whose encoded prefix is `prefix`).
fn past_partition(schema: &KeySchema, prefix: &[u8], key: &[u8]) -> Result<Vec<u8>, ErrorResponse> {
    let full = prefix_of_key(schema, key)?;
    Ok(schema
        .partition_range(&full)
        .end
        .unwrap_or_else(|| prefix.to_vec()))
}

/// Reads what the plan selects, from `resume` on.
pub(super) async fn read<C: Coordinator>(
    coordinator: &C,
    exec: &Exec<'_>,
    run: &mut Run<'_>,
    resume: Option<PagingState>,
) -> Result<(), ErrorResponse> {
    let plan = run.plan;
    let schema = &plan.schema;
    if let Some(r) = &resume {
        run.partition_rows = r.partition_rows;
    }
    if let Some(keys) = plan.restrictions.partition_keys() {
        let mut prefixes = keys
            .iter()
            .map(|k| {
                if k.iter().map(|v| v.to_cql_bytes().len()).sum::<usize>() == 0 {
                    return Err(invalid("Key may not be empty"));
                }
                schema
                    .partition_prefix(k)
                    .map_err(|e| invalid(format!("Invalid partition key: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        prefixes.sort();
        prefixes.dedup();
        let resume_key = resume.as_ref().map(|r| r.last_key.as_slice());
        for prefix in &prefixes {
            let after = match resume_key {
                Some(key) if key.starts_with(prefix.as_bytes()) => Some(key),
                Some(key) if key < prefix.as_bytes() => None,
                Some(_) => continue,
                None => None,
            };
            if read_partition(coordinator, exec, run, prefix, after).await? == Next::Stop {
                return Ok(());
            }
        }
        run.stop = false;
        return Ok(());
    }
    // Range mode.
    let (lo, hi) = plan
        .restrictions
        .token
        .unwrap_or((Bound::Unbounded, Bound::Unbounded));
    let range = token_range(lo, hi);
    if range.is_empty() {
        return Ok(());
    }
    let mut start = range.start.clone();
    if let Some(r) = &resume {
        // Finish the partition the last page stopped in, then scan on from its end.
        let prefix = prefix_of_key(schema, &r.last_key)?;
        if read_partition(coordinator, exec, run, &prefix, Some(&r.last_key)).await? == Next::Stop {
            return Ok(());
        }
        let end = schema.partition_range(&prefix).end.unwrap_or_default();
        if end > start {
            start = end;
        }
    }
    if scan(coordinator, exec, run, start, range.end).await? == Next::Stop {
        return Ok(());
    }
    run.stop = false;
    Ok(())
}
