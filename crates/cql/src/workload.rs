//! Workload files: the queries a heterogeneous table's replica orders are chosen for.
//!
//! The optimizer (the heterogeneous-replicas paper's cost model and annealing) weighs
//! candidate clustering orders against the queries a table serves. A workload file lists
//! them, one per line:
//!
//! ```text
//! # comments start with '#' or '--'; blank lines are skipped
//! 10 SELECT * FROM ks.t WHERE k = 1 AND b = 5 ALLOW FILTERING;
//! 2.5 SELECT * FROM ks.t WHERE k = 1 AND c > 3 AND c < 9 LIMIT 10 ALLOW FILTERING
//! SELECT * FROM ks.t WHERE k = 1 AND a IN (1, 2)
//! ```
//!
//! A line is an optional weight (a positive number, 1 when left out: how often the query
//! runs, relative to the others) then one SELECT, optionally ended by `;`. Every SELECT
//! reads the same table and gives its values as literals (no bind markers), and is checked
//! as executing it would check it, so a workload only holds queries a client could run.
//! Each query is reduced to what orders are judged by: the filter of its clustering
//! restrictions, built by the same code as the filter a read sends to replicas
//! ([`crate::coordinator::ReadCommand::filter`]), and its LIMIT.
//!
//! Must not depend on anything that executes: parsing a workload reads a catalog, nothing
//! else, so the optimizer can run offline on a schema and a file.

use mosaic_rows::ClusteringFilter;

use crate::ast::Statement;
use crate::schema::{Catalog, TableId};

/// One query of a workload.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadQuery {
    /// Its line in the file, from 1.
    pub line: usize,
    /// How much it counts, relative to the others (positive; 1 when not given).
    pub weight: f64,
    /// Its clustering restrictions, one per declared clustering column
    /// (`ColumnFilter::Any` where unrestricted); multi-column relations are not in it.
    pub filter: ClusteringFilter,
    /// Its LIMIT.
    pub limit: Option<u64>,
}

/// A parsed workload file: one table and its weighted queries, in file order.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    /// The table every query reads.
    pub table: TableId,
    /// Its keyspace.
    pub keyspace: String,
    /// Its name.
    pub table_name: String,
    /// The queries.
    pub queries: Vec<WorkloadQuery>,
}

/// A workload file that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WorkloadError {
    /// A line is not a weighted SELECT of the workload's table.
    #[error("line {line}: {message}")]
    Line {
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// The file holds no query.
    #[error("the workload has no queries: expected lines such as `[WEIGHT] SELECT … ;`")]
    Empty,
}

/// Parses a workload file against `catalog`; unqualified table names are in
/// `default_keyspace`. Time functions such as `now()` are evaluated at the Unix epoch
/// ([`parse_workload_at`] gives the time).
pub fn parse_workload(
    catalog: &Catalog,
    default_keyspace: Option<&str>,
    text: &str,
) -> Result<Workload, WorkloadError> {
    parse_workload_at(catalog, default_keyspace, text, 0)
}

/// [`parse_workload`], with time functions evaluated at `now_micros` (microseconds since
/// the Unix epoch).
pub fn parse_workload_at(
    catalog: &Catalog,
    default_keyspace: Option<&str>,
    text: &str,
    now_micros: i64,
) -> Result<Workload, WorkloadError> {
    let mut workload: Option<Workload> = None;
    // The line that named the table, for the error when another names a different one.
    let mut first_line = 0;
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let err = |message: String| WorkloadError::Line { line, message };
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with("--") {
            continue;
        }
        let (weight, cql) = split_weight(trimmed).map_err(err)?;
        let statement = crate::parse::parse_statement(cql).map_err(|e| err(e.to_string()))?;
        let Statement::Select(select) = statement else {
            return Err(err(format!(
                "expected a SELECT, got `{cql}`: a workload lists the queries a table serves"
            )));
        };
        if !select.bind_markers.is_empty() {
            return Err(err(
                "bind markers (? or :name) are not allowed: give the query's values as literals"
                    .to_owned(),
            ));
        }
        let (table, filter, limit) = crate::processor::analyse_workload_select(
            catalog,
            default_keyspace,
            &select,
            now_micros,
        )
        .map_err(|e| err(e.message))?;
        let query = WorkloadQuery {
            line,
            weight,
            filter,
            limit,
        };
        match &mut workload {
            None => {
                first_line = line;
                workload = Some(Workload {
                    table: table.id,
                    keyspace: table.keyspace.clone(),
                    table_name: table.name.clone(),
                    queries: vec![query],
                });
            }
            Some(w) if w.table == table.id => w.queries.push(query),
            Some(w) => {
                return Err(err(format!(
                    "reads {}.{}, but line {first_line} reads {}.{}: a workload describes one \
                     table",
                    table.keyspace, table.name, w.keyspace, w.table_name
                )))
            }
        }
    }
    workload.ok_or(WorkloadError::Empty)
}

/// A line's weight and statement: a leading number is the weight (it must be positive
/// and finite), otherwise the weight is 1 and the whole line is the statement.
fn split_weight(line: &str) -> Result<(f64, &str), String> {
    let (first, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let looks_numeric = first
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_digit() || matches!(c, '.' | '+' | '-'));
    match first.parse::<f64>() {
        Ok(w) if w.is_finite() && w > 0.0 => Ok((w, rest.trim_start())),
        Ok(_) => Err(format!(
            "invalid weight '{first}': a weight must be a positive number"
        )),
        Err(_) if looks_numeric => Err(format!(
            "invalid weight '{first}': a weight must be a positive number"
        )),
        Err(_) => Ok((1.0, line)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_are_positive_numbers_before_the_statement() {
        assert_eq!(split_weight("SELECT 1"), Ok((1.0, "SELECT 1")));
        assert_eq!(split_weight("2.5  SELECT x"), Ok((2.5, "SELECT x")));
        assert_eq!(split_weight("3\tSELECT x"), Ok((3.0, "SELECT x")));
        assert_eq!(split_weight("1e2 SELECT x"), Ok((100.0, "SELECT x")));
        for bad in [
            "0 SELECT x",
            "-1 SELECT x",
            "2x SELECT x",
            "inf SELECT x",
            "NaN SELECT",
        ] {
            assert!(split_weight(bad).is_err(), "{bad}");
        }
    }
}
