//! BATCH: `BEGIN [UNLOGGED | COUNTER] BATCH … APPLY BATCH` sent as one statement, and the
//! BATCH request (each statement with its own values and keyspace): one write timestamp
//! for all, conditional batches as one compare-and-set, counter batches as increments.
//! A batch of ordinary or counter writes over several partitions is measured against
//! `batch_size_warn_threshold_bytes` and `batch_size_fail_threshold_bytes`
//! ([`StatementLimits::check_batch_size`], [`StatementLimits::check_counter_batch_size`]);
//! past the warning its client gets a warning. A conditional batch is not measured, as in
//! Cassandra 4.1: it is refused unless on one partition, which the check exempts.

use std::sync::Arc;

use super::*;

/// Executes a `BEGIN BATCH … APPLY BATCH` sent as one QUERY (or prepared); a warning for
/// the client goes to `warnings`.
pub(crate) async fn execute_batch_statement<C: Coordinator>(
    p: &Processor<C>,
    exec: &Exec<'_>,
    batch: &BatchStatement,
    warnings: &mut Vec<String>,
) -> Result<ResultBody, ErrorResponse> {
    let coordinator = p.coordinator();
    let catalog = coordinator.catalog();
    let bindings = Bindings::new(&exec.params.values, &batch.bind_markers)?;
    let now_micros = coordinator.new_timestamp();
    let ctx = EvalContext {
        bindings: &bindings,
        now_micros,
    };
    let conditional = batch.statements.iter().any(|s| s.conditions().is_some());
    if conditional && batch.timestamp.is_some() {
        return Err(invalid(
            "Cannot provide custom timestamp for conditional BATCH",
        ));
    }
    let batch_ts = match &batch.timestamp {
        Some(v) => eval_int(v, mosaic_types::CqlType::BigInt, "[timestamp]", &ctx)?,
        None => None,
    };
    let time = WriteTime {
        ts: batch_ts.or(exec.params.timestamp).unwrap_or(now_micros),
        ts_from_batch: batch_ts.is_some(),
        now_secs: exec.now_secs(coordinator.now_secs()),
        now_micros,
    };
    let statements: Vec<Statement> = batch
        .statements
        .iter()
        .map(|s| to_statement(s.clone()))
        .collect();
    let kind = match batch.kind {
        BatchKind::Logged => BatchType::Logged,
        BatchKind::Unlogged => BatchType::Unlogged,
        BatchKind::Counter => BatchType::Counter,
    };
    let counters = statements
        .iter()
        .map(|s| Ok(counter::counter_table(&catalog, exec, s)?.is_some()))
        .collect::<Result<Vec<bool>, ErrorResponse>>()?;
    if counter::check_batch(kind, batch.timestamp.is_some(), counters)? {
        let mut writes = counter::CounterWrites::default();
        for statement in &statements {
            writes.add(&WriteSource {
                catalog: &catalog,
                exec,
                statement,
                bindings: &bindings,
                time,
            })?;
        }
        warnings.extend(exec.limits.check_counter_batch_size(
            &catalog,
            &writes.mutations,
            &writes.increments,
        )?);
        return writes
            .apply(coordinator.as_ref(), exec.params.consistency)
            .await;
    }
    if conditional {
        let parts = statements
            .into_iter()
            .map(|s| cas::part(s, exec.keyspace, exec.params, bindings.clone()))
            .collect();
        return cas::execute(p, cas::input(parts, true, exec.params, time)).await;
    }
    let consistency = exec.params.consistency;
    let mutations = with_prior_reads(coordinator.as_ref(), consistency, time, |prior, out| {
        for statement in &statements {
            mutations_of(&catalog, exec, statement, &bindings, time, prior, out)?;
        }
        Ok(())
    })
    .await?;
    warnings.extend(exec.limits.check_batch_size(&catalog, &mutations)?);
    apply(coordinator.as_ref(), mutations, consistency).await
}

/// Executes a BATCH request: each statement with its own values and keyspace; a warning
/// for the client goes to `warnings`.
pub(crate) async fn execute_batch<C: Coordinator>(
    p: &Processor<C>,
    batch: &Batch,
    statements: Vec<(Arc<Statement>, Option<String>, BoundValues)>,
    warnings: &mut Vec<String>,
) -> Result<ResultBody, ErrorResponse> {
    let limits = *p.limits();
    let coordinator = p.coordinator();
    let catalog = coordinator.catalog();
    let now_micros = coordinator.new_timestamp();
    let time = WriteTime {
        ts: batch.timestamp.unwrap_or(now_micros),
        ts_from_batch: false,
        now_secs: batch
            .now_in_seconds
            .map_or_else(|| coordinator.now_secs(), i64::from),
        now_micros,
    };
    let mut prepared = Vec::with_capacity(statements.len());
    for (statement, keyspace, values) in statements {
        if !matches!(
            statement.as_ref(),
            Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_)
        ) {
            return Err(invalid(format!(
                "Invalid statement in batch: only UPDATE, INSERT and DELETE statements are allowed, not {}",
                statement_kind(&statement)
            )));
        }
        let mut params = QueryParameters::new(batch.consistency);
        params.values = values;
        params.serial_consistency = batch.serial_consistency;
        let bindings = Bindings::new(&params.values, statement.bind_markers())?;
        prepared.push((statement, keyspace, params, bindings));
    }
    let counters = prepared
        .iter()
        .map(|(s, ks, params, _)| {
            Ok(counter::counter_table(&catalog, &exec_of(ks, params, limits), s)?.is_some())
        })
        .collect::<Result<Vec<bool>, ErrorResponse>>()?;
    if counter::check_batch(batch.batch_type, false, counters)? {
        let mut writes = counter::CounterWrites::default();
        for (statement, keyspace, params, bindings) in &prepared {
            writes.add(&WriteSource {
                catalog: &catalog,
                exec: &exec_of(keyspace, params, limits),
                statement,
                bindings,
                time,
            })?;
        }
        warnings.extend(limits.check_counter_batch_size(
            &catalog,
            &writes.mutations,
            &writes.increments,
        )?);
        return writes.apply(coordinator.as_ref(), batch.consistency).await;
    }
    if prepared.iter().any(|(s, ..)| s.has_conditions()) {
        let parts = prepared
            .into_iter()
            .map(|(s, ks, params, b)| cas::part((*s).clone(), ks.as_deref(), &params, b))
            .collect();
        let mut params = QueryParameters::new(batch.consistency);
        params.serial_consistency = batch.serial_consistency;
        return cas::execute(p, cas::input(parts, true, &params, time)).await;
    }
    let mutations = with_prior_reads(
        coordinator.as_ref(),
        batch.consistency,
        time,
        |prior, out| {
            for (statement, keyspace, params, bindings) in &prepared {
                let exec = exec_of(keyspace, params, limits);
                mutations_of(&catalog, &exec, statement, bindings, time, prior, out)?;
            }
            Ok(())
        },
    )
    .await?;
    warnings.extend(limits.check_batch_size(&catalog, &mutations)?);
    apply(coordinator.as_ref(), mutations, batch.consistency).await
}

/// The [`Exec`] of a statement of a BATCH request.
fn exec_of<'a>(
    keyspace: &'a Option<String>,
    params: &'a QueryParameters,
    limits: StatementLimits,
) -> Exec<'a> {
    Exec {
        keyspace: keyspace.as_deref(),
        params,
        limits,
    }
}
