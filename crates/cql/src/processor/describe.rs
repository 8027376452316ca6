//! `DESCRIBE`: Cassandra 4.0's server-side schema description, which cqlsh (6.x) sends
//! as a query and prints.
//!
//! Result shapes, as Cassandra's: listings (`KEYSPACES`, `TABLES`, `TYPES`, `FUNCTIONS`,
//! `AGGREGATES`) return `keyspace_name, type, name` (text, names quoted when CQL needs
//! it); element descriptions (`SCHEMA`, `KEYSPACE`, `TABLE`, a bare name, …) add
//! `create_statement`; `CLUSTER` returns `cluster, partitioner, snitch` and, when a
//! non-system keyspace is in use, `range_ownership` (`map<text, frozen<list<text>>>`: the
//! end token of each range to its replicas). Columns belong to the pseudo-table
//! `system.describe`.
//!
//! Errors, as Cassandra's (Invalid, 0x2200): `'x' not found in keyspaces`, `Table 't' not
//! found in keyspace 'ks'`, `No keyspace specified and no current keyspace`, and, for the
//! objects Mosaic never has (types, functions, aggregates, indexes, views), the message
//! Cassandra gives when one does not exist.
//!
//! Results page like Cassandra's: by row offset, with the schema version in the paging
//! state so a page after a schema change is refused rather than inconsistent.

use std::collections::HashSet;

use bytes::{BufMut, Bytes, BytesMut};
use mosaic_types::CqlType;

use crate::ast::{DescribeStatement, DescribeTarget, QualifiedName};
use crate::coordinator::{Coordinator, NodeInfo};
use crate::frame::{ColumnSpec, ColumnType, ErrorResponse, ResultBody, Rows, RowsMetadata};
use crate::schema::{Catalog, Replication, Uuid};
use crate::system::cell;
use crate::system::describe::{self as elements, quoted, Keyspace, Table};

use super::{bad_paging_state, invalid, Exec, Processor};

/// The keyspace and table the result columns belong to, as in Cassandra.
const RESULT_KEYSPACE: &str = "system";
const RESULT_TABLE: &str = "describe";

/// Where Cassandra's partitioners live; `DESCRIBE CLUSTER` shows their short names.
const PARTITIONER_PACKAGE: &str = "org.apache.cassandra.dht.";

/// The snitch `DESCRIBE CLUSTER` reports. Each Mosaic node reads its datacenter and rack
/// from its own configuration file and tells its peers, which is what Cassandra's
/// `GossipingPropertyFileSnitch` does.
const SNITCH: &str = "GossipingPropertyFileSnitch";

const PAGING_VERSION: u8 = 1;

const SCHEMA_CHANGED_WHILE_PAGING: &str = "The schema has changed since the previous page of the DESCRIBE statement result. Please retry the DESCRIBE statement.";

/// Result rows: a cell per column.
type RowCells = Vec<Vec<Option<Bytes>>>;

/// One row of an element listing or description.
struct Element {
    keyspace: String,
    kind: &'static str,
    name: String,
    create_statement: Option<String>,
}

impl Element {
    /// A keyspace in a listing (no statement).
    fn listed_keyspace(k: &Keyspace<'_>) -> Element {
        Element {
            keyspace: quoted(k.name()),
            kind: "keyspace",
            name: quoted(k.name()),
            create_statement: None,
        }
    }

    /// A keyspace with the statement that recreates it.
    fn described_keyspace(k: &Keyspace<'_>) -> Element {
        Element {
            create_statement: Some(k.create_statement()),
            ..Element::listed_keyspace(k)
        }
    }

    /// A table in a listing (no statement).
    fn listed_table(t: &Table<'_>) -> Element {
        Element {
            keyspace: quoted(t.keyspace()),
            kind: "table",
            name: quoted(t.name()),
            create_statement: None,
        }
    }

    /// A table with the statement that recreates it (`internals`: with its id).
    fn described_table(t: &Table<'_>, internals: bool) -> Element {
        Element {
            create_statement: Some(t.create_statement(internals)),
            ..Element::listed_table(t)
        }
    }

    /// A table described: its statement, then one per index on it (by name), as
    /// Cassandra describes a table.
    fn described_table_with_indexes(t: &Table<'_>, internals: bool) -> Vec<Element> {
        let mut out = vec![Element::described_table(t, internals)];
        if let Table::User(meta) = t {
            out.extend(
                meta.indexes
                    .values()
                    .map(|i| Element::index(&meta.keyspace, &meta.name, i)),
            );
        }
        out
    }

    /// A secondary index with the statement that recreates it.
    fn index(keyspace: &str, table: &str, index: &crate::schema::IndexMeta) -> Element {
        Element {
            keyspace: quoted(keyspace),
            kind: "index",
            name: quoted(&index.name),
            create_statement: Some(index.create_statement(keyspace, table)),
        }
    }

    /// A user-defined type, listed or (`described`) with the statement that recreates it.
    fn user_type(t: &mosaic_types::UserType, described: bool) -> Element {
        let keyspace = quoted(&t.keyspace);
        let name = quoted(&t.name);
        let create_statement = described.then(|| {
            let fields: Vec<String> = t
                .fields
                .iter()
                .map(|(n, ty)| format!("    {} {ty}", quoted(n)))
                .collect();
            format!(
                "CREATE TYPE {keyspace}.{name} (\n{}\n);",
                fields.join(",\n")
            )
        });
        Element {
            keyspace,
            kind: "type",
            name,
            create_statement,
        }
    }

    fn cells(self) -> Vec<Option<Bytes>> {
        let mut out = vec![
            cell::text(&self.keyspace),
            cell::text(self.kind),
            cell::text(&self.name),
        ];
        if let Some(text) = self.create_statement {
            out.push(cell::text(&text));
        }
        out
    }
}

/// The columns a `DESCRIBE` returns in a session whose keyspace is `keyspace` (for
/// PREPARE; execution returns the same).
pub(crate) fn result_columns(s: &DescribeStatement, keyspace: Option<&str>) -> Vec<ColumnSpec> {
    let spec =
        |name: &str, ty: ColumnType| ColumnSpec::new(RESULT_KEYSPACE, RESULT_TABLE, name, ty);
    let text = |name: &str| spec(name, ColumnType::Native(CqlType::Text));
    match s.target {
        DescribeTarget::Cluster => {
            let mut out = vec![text("cluster"), text("partitioner"), text("snitch")];
            if shows_ranges(keyspace) {
                out.push(spec(
                    "range_ownership",
                    ColumnType::Map(
                        Box::new(ColumnType::Native(CqlType::Text)),
                        Box::new(ColumnType::List(Box::new(ColumnType::Native(
                            CqlType::Text,
                        )))),
                    ),
                ));
            }
            out
        }
        DescribeTarget::Keyspaces
        | DescribeTarget::Tables
        | DescribeTarget::Types
        | DescribeTarget::Functions
        | DescribeTarget::Aggregates => vec![text("keyspace_name"), text("type"), text("name")],
        DescribeTarget::Schema { .. }
        | DescribeTarget::Keyspace { .. }
        | DescribeTarget::Table(_)
        | DescribeTarget::Index(_)
        | DescribeTarget::MaterializedView(_)
        | DescribeTarget::Type(_)
        | DescribeTarget::Function(_)
        | DescribeTarget::Aggregate(_)
        | DescribeTarget::Generic(_) => vec![
            text("keyspace_name"),
            text("type"),
            text("name"),
            text("create_statement"),
        ],
    }
}

/// Whether `DESCRIBE CLUSTER` shows range ownership: only for a user keyspace in use.
fn shows_ranges(keyspace: Option<&str>) -> bool {
    keyspace.is_some_and(|k| !crate::schema::is_system_keyspace(k))
}

/// Runs a `DESCRIBE`.
pub(crate) fn execute<C: Coordinator>(
    p: &Processor<C>,
    exec: &Exec<'_>,
    s: &DescribeStatement,
) -> Result<ResultBody, ErrorResponse> {
    let coordinator = p.coordinator();
    let catalog = coordinator.catalog();
    let rows = match &s.target {
        DescribeTarget::Cluster => vec![cluster_row(coordinator.as_ref(), &catalog, exec)],
        target => elements_of(&catalog, exec.keyspace, target, s.internals)?
            .into_iter()
            .map(Element::cells)
            .collect(),
    };
    let (rows, paging_state) = page(rows, exec, catalog.version)?;
    let mut metadata = RowsMetadata::new(result_columns(s, exec.keyspace));
    metadata.paging_state = paging_state;
    metadata.no_metadata = exec.params.skip_metadata;
    Ok(ResultBody::Rows(Rows { metadata, rows }))
}

/// The rows of this page and the paging state of the next, if any.
fn page(
    rows: RowCells,
    exec: &Exec<'_>,
    schema_version: Uuid,
) -> Result<(RowCells, Option<Bytes>), ErrorResponse> {
    let offset = match &exec.params.paging_state {
        Some(state) if !state.is_empty() => decode_offset(state, schema_version)?,
        _ => 0,
    };
    let page_size = match exec.params.page_size {
        Some(n) if n > 0 => usize::try_from(n).unwrap_or(usize::MAX),
        _ => usize::MAX,
    };
    let total = rows.len();
    let start = usize::try_from(offset).unwrap_or(usize::MAX).min(total);
    let page: Vec<_> = rows.into_iter().skip(start).take(page_size).collect();
    let next = start.saturating_add(page.len());
    let state = (page.len() == page_size && next < total).then(|| {
        let mut body = BytesMut::with_capacity(32);
        body.put_u8(PAGING_VERSION);
        body.put_slice(&schema_version.0);
        body.put_u64(next as u64);
        super::seal_paging_state(body)
    });
    Ok((page, state))
}

/// The row offset a paging state resumes at; refused if the schema changed since.
fn decode_offset(state: &[u8], schema_version: Uuid) -> Result<u64, ErrorResponse> {
    let body = super::unseal_paging_state(state)?;
    let (&version, rest) = body.split_first().ok_or_else(bad_paging_state)?;
    if version != PAGING_VERSION {
        return Err(bad_paging_state());
    }
    let (schema, rest) = rest.split_at_checked(16).ok_or_else(bad_paging_state)?;
    let offset: [u8; 8] = rest.try_into().map_err(|_| bad_paging_state())?;
    if schema != schema_version.0 {
        return Err(invalid(SCHEMA_CHANGED_WHILE_PAGING));
    }
    Ok(u64::from_be_bytes(offset))
}

/// The keyspace a statement without one refers to, or Cassandra's error.
fn current_keyspace(session: Option<&str>) -> Result<&str, ErrorResponse> {
    session.ok_or_else(|| invalid("No keyspace specified and no current keyspace"))
}

/// A keyspace by name, or Cassandra's error.
fn find_keyspace<'a>(catalog: &'a Catalog, name: &str) -> Result<Keyspace<'a>, ErrorResponse> {
    elements::keyspace(catalog, name)
        .ok_or_else(|| invalid(format!("'{name}' not found in keyspaces")))
}

/// The keyspace of an element name: as written, else the session's.
fn keyspace_of<'a>(
    catalog: &'a Catalog,
    session: Option<&str>,
    name: &QualifiedName,
) -> Result<Keyspace<'a>, ErrorResponse> {
    let keyspace = match &name.keyspace {
        Some(k) => k.as_str(),
        None => current_keyspace(session)?,
    };
    find_keyspace(catalog, keyspace)
}

/// A keyspace described: its statement, then (unless `only`) its tables'.
/// A user keyspace's types, each after the types it uses (then by name).
fn user_types<'a>(k: &Keyspace<'a>) -> Vec<&'a mosaic_types::UserType> {
    let Keyspace::User(k) = k else {
        return Vec::new();
    };
    let mut out: Vec<&mosaic_types::UserType> = Vec::new();
    let mut left: Vec<&mosaic_types::UserType> = k.types.values().collect();
    while !left.is_empty() {
        let before = left.len();
        left.retain(|t| {
            let ready = t.fields.iter().all(|(_, f)| {
                f.user_types()
                    .iter()
                    .all(|u| u.name == t.name || out.iter().any(|o| o.name == u.name))
            });
            if ready {
                out.push(t);
            }
            !ready
        });
        if left.len() == before {
            out.append(&mut left);
        }
    }
    out
}

fn keyspace_elements(k: &Keyspace<'_>, only: bool, internals: bool) -> Vec<Element> {
    let mut out = vec![Element::described_keyspace(k)];
    if !only {
        out.extend(
            user_types(k)
                .into_iter()
                .map(|t| Element::user_type(t, true)),
        );
        out.extend(
            k.tables()
                .iter()
                .flat_map(|t| Element::described_table_with_indexes(t, internals)),
        );
    }
    out
}

/// The keyspaces a listing covers: the session's, or all of them.
fn listed_keyspaces<'a>(
    catalog: &'a Catalog,
    session: Option<&str>,
) -> Result<Vec<Keyspace<'a>>, ErrorResponse> {
    match session {
        Some(name) => Ok(vec![find_keyspace(catalog, name)?]),
        None => Ok(elements::keyspaces(catalog)),
    }
}

/// The rows of every target but `CLUSTER`.
fn elements_of(
    catalog: &Catalog,
    session: Option<&str>,
    target: &DescribeTarget,
    internals: bool,
) -> Result<Vec<Element>, ErrorResponse> {
    // Mosaic has no user-defined functions, aggregates or materialized views: their listings are empty and naming one is Cassandra's "not
    // found" error (after the keyspace itself is checked).
    let missing = |name: &QualifiedName, what: &str| -> Result<Vec<Element>, ErrorResponse> {
        let k = keyspace_of(catalog, session, name)?;
        Err(invalid(format!(
            "{what} '{}' not found in '{}'",
            name.name.as_str(),
            k.name()
        )))
    };
    match target {
        // CLUSTER describes the ring, not schema elements: `cluster_row` answers it.
        DescribeTarget::Cluster => Ok(Vec::new()),
        DescribeTarget::Schema { full } => Ok(elements::keyspaces(catalog)
            .iter()
            .filter(|k| *full || !k.is_system())
            .flat_map(|k| keyspace_elements(k, false, internals))
            .collect()),
        DescribeTarget::Keyspaces => Ok(elements::keyspaces(catalog)
            .iter()
            .map(Element::listed_keyspace)
            .collect()),
        DescribeTarget::Keyspace { name, only } => {
            let name = match name {
                Some(n) => n.as_str(),
                None => current_keyspace(session)?,
            };
            let k = find_keyspace(catalog, name)?;
            Ok(keyspace_elements(&k, *only, internals))
        }
        DescribeTarget::Tables => Ok(listed_keyspaces(catalog, session)?
            .iter()
            .flat_map(|k| k.tables())
            .map(|t| Element::listed_table(&t))
            .collect()),
        DescribeTarget::Types => Ok(listed_keyspaces(catalog, session)?
            .iter()
            .flat_map(|k| user_types(k))
            .map(|t| Element::user_type(t, false))
            .collect()),
        DescribeTarget::Functions | DescribeTarget::Aggregates => {
            listed_keyspaces(catalog, session)?;
            Ok(Vec::new())
        }
        DescribeTarget::Table(name) => {
            let k = keyspace_of(catalog, session, name)?;
            let table = k.table(name.name.as_str()).ok_or_else(|| {
                invalid(format!(
                    "Table '{}' not found in keyspace '{}'",
                    name.name.as_str(),
                    k.name()
                ))
            })?;
            Ok(Element::described_table_with_indexes(&table, internals))
        }
        DescribeTarget::Index(name) => {
            let k = keyspace_of(catalog, session, name)?;
            match catalog.index(k.name(), name.name.as_str()) {
                Some((t, i)) => Ok(vec![Element::index(&t.keyspace, &t.name, i)]),
                // Cassandra's words.
                None => missing(name, "Table for existing index"),
            }
        }
        DescribeTarget::MaterializedView(name) => missing(name, "Materialized view"),
        DescribeTarget::Type(name) => {
            let k = keyspace_of(catalog, session, name)?;
            match user_types(&k)
                .into_iter()
                .find(|t| t.name == name.name.as_str())
            {
                Some(t) => Ok(vec![Element::user_type(t, true)]),
                None => missing(name, "User defined type"),
            }
        }
        DescribeTarget::Function(name) => missing(name, "User defined function"),
        DescribeTarget::Aggregate(name) => missing(name, "User defined aggregate"),
        DescribeTarget::Generic(name) => generic_elements(catalog, session, name, internals),
    }
}

/// `DESCRIBE name`: a keyspace first, then a table, then an index (Mosaic has no views), in
/// the keyspace written, else the session's, else the name itself.
fn generic_elements(
    catalog: &Catalog,
    session: Option<&str>,
    name: &QualifiedName,
    internals: bool,
) -> Result<Vec<Element>, ErrorResponse> {
    let element = name.name.as_str();
    if name.keyspace.is_none() {
        if let Some(k) = elements::keyspace(catalog, element) {
            return Ok(keyspace_elements(&k, false, internals));
        }
    }
    let keyspace = match &name.keyspace {
        Some(k) => k.as_str(),
        None => session.unwrap_or(element),
    };
    let k = find_keyspace(catalog, keyspace)?;
    if let Some(t) = k.table(element) {
        return Ok(Element::described_table_with_indexes(&t, internals));
    }
    match catalog.index(k.name(), element) {
        Some((t, i)) => Ok(vec![Element::index(&t.keyspace, &t.name, i)]),
        None => Err(invalid(format!(
            "'{element}' not found in keyspace '{}'",
            k.name()
        ))),
    }
}

/// The one row of `DESCRIBE CLUSTER`.
fn cluster_row<C: Coordinator>(
    coordinator: &C,
    catalog: &Catalog,
    exec: &Exec<'_>,
) -> Vec<Option<Bytes>> {
    let info = coordinator.cluster_info();
    let partitioner = info
        .partitioner
        .strip_prefix(PARTITIONER_PACKAGE)
        .unwrap_or(&info.partitioner);
    let mut row = vec![
        cell::text(&info.cluster_name),
        cell::text(partitioner),
        cell::text(SNITCH),
    ];
    if shows_ranges(exec.keyspace) {
        let mut nodes = vec![coordinator.local_node()];
        for peer in coordinator.peers() {
            if nodes.iter().all(|n| n.host_id != peer.host_id) {
                nodes.push(peer);
            }
        }
        // A keyspace in use that was dropped since has no ranges to show.
        let ranges = exec
            .keyspace
            .and_then(|k| catalog.keyspace(k))
            .map(|k| range_ownership(&nodes, &k.replication))
            .unwrap_or_default();
        row.push(cell::text_list_map(&ranges));
    }
    row
}

/// For each token range of the ring (named by its end token, in token order), the
/// endpoints that replicate it under `replication`: walking the ring clockwise from the
/// range, the first distinct nodes — `replication_factor` of them for SimpleStrategy, the
/// factor of each datacenter within it for NetworkTopologyStrategy.
fn range_ownership(nodes: &[NodeInfo], replication: &Replication) -> Vec<(String, Vec<String>)> {
    let mut ring: Vec<(i64, usize)> = nodes
        .iter()
        .enumerate()
        .flat_map(|(i, n)| n.tokens.iter().map(move |t| (t.0, i)))
        .collect();
    ring.sort_unstable();
    let per_dc = !replication.options.contains_key("replication_factor");
    let wanted = |dc: &str| -> usize {
        let factor = if per_dc {
            replication.options.get(dc)
        } else {
            replication.options.get("replication_factor")
        };
        factor.and_then(|f| f.parse().ok()).unwrap_or(0)
    };
    let mut out = Vec::with_capacity(ring.len());
    for start in 0..ring.len() {
        let mut chosen: Vec<usize> = Vec::new();
        let mut seen: HashSet<usize> = HashSet::new();
        for step in 0..ring.len() {
            let Some(&(_, node)) = ring.get((start + step) % ring.len()) else {
                break;
            };
            if !seen.insert(node) {
                continue;
            }
            let Some(info) = nodes.get(node) else {
                continue;
            };
            let taken = if per_dc {
                chosen
                    .iter()
                    .filter(|&&c| {
                        nodes
                            .get(c)
                            .is_some_and(|n| n.data_center == info.data_center)
                    })
                    .count()
            } else {
                chosen.len()
            };
            if taken < wanted(&info.data_center) {
                chosen.push(node);
            }
        }
        let Some(&(token, _)) = ring.get(start) else {
            break;
        };
        let endpoints = chosen
            .iter()
            .filter_map(|&i| nodes.get(i))
            // Endpoints as Cassandra prints them, `/address:storage port`.
            .map(|n| format!("/{}:{}", n.broadcast_address, crate::system::PEER_PORT))
            .collect();
        out.push((token.to_string(), endpoints));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::net::{IpAddr, Ipv4Addr};

    use mosaic_types::Token;

    use super::*;

    fn node(last_octet: u8, dc: &str, tokens: &[i64]) -> NodeInfo {
        NodeInfo {
            host_id: mosaic_types::HostId([last_octet; 16]),
            rpc_address: IpAddr::V4(Ipv4Addr::new(127, 0, 0, last_octet)),
            native_port: 9042,
            broadcast_address: IpAddr::V4(Ipv4Addr::new(127, 0, 0, last_octet)),
            data_center: dc.to_owned(),
            rack: "rack1".to_owned(),
            tokens: tokens.iter().map(|&t| Token(t)).collect(),
            schema_version: Uuid::default(),
            release_version: "4.0.17".to_owned(),
            up: true,
        }
    }

    #[test]
    fn ranges_are_replicated_on_the_next_distinct_nodes() {
        let nodes = [
            node(1, "dc1", &[-100, 50]),
            node(2, "dc1", &[0]),
            node(3, "dc2", &[10]),
        ];
        let ranges = range_ownership(&nodes, &Replication::simple(2));
        let at = |t: &str| {
            ranges
                .iter()
                .find(|(k, _)| k == t)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        assert_eq!(ranges.len(), 4);
        assert_eq!(ranges.first().map(|r| r.0.as_str()), Some("-100"));
        assert_eq!(at("-100"), ["/127.0.0.1:7000", "/127.0.0.2:7000"]);
        assert_eq!(at("10"), ["/127.0.0.3:7000", "/127.0.0.1:7000"]);
        assert_eq!(at("50"), ["/127.0.0.1:7000", "/127.0.0.2:7000"]);

        let nts = Replication {
            class: "org.apache.cassandra.locator.NetworkTopologyStrategy".to_owned(),
            options: BTreeMap::from([
                ("dc1".to_owned(), "1".to_owned()),
                ("dc2".to_owned(), "1".to_owned()),
            ]),
        };
        let ranges = range_ownership(&nodes, &nts);
        assert_eq!(
            ranges
                .iter()
                .find(|(k, _)| k == "0")
                .map(|(_, v)| v.clone()),
            Some(vec![
                "/127.0.0.2:7000".to_owned(),
                "/127.0.0.3:7000".to_owned()
            ])
        );
    }

    #[test]
    fn a_factor_above_the_node_count_takes_every_node_once() {
        let nodes = [node(1, "dc1", &[1, 2, 3])];
        let ranges = range_ownership(&nodes, &Replication::simple(3));
        assert_eq!(ranges.len(), 3);
        assert!(ranges.iter().all(|(_, v)| v == &["/127.0.0.1:7000"]));
    }

    #[test]
    fn paging_states_carry_the_schema_version() {
        let version = Uuid([7; 16]);
        let mut body = BytesMut::new();
        body.put_u8(PAGING_VERSION);
        body.put_slice(&version.0);
        body.put_u64(42);
        let state = super::super::seal_paging_state(body);
        assert_eq!(decode_offset(&state, version).ok(), Some(42));
        let changed = decode_offset(&state, Uuid([8; 16])).err();
        assert_eq!(
            changed.map(|e| e.message),
            Some(SCHEMA_CHANGED_WHILE_PAGING.to_owned())
        );
        assert!(decode_offset(&state[1..], version).is_err());
        assert!(decode_offset(&[], version).is_err());
    }
}
