//! Keyspace and table options: replication, `durable_writes`, the `WITH` properties a
//! table keeps (Cassandra's, verbatim where Mosaic does not use them), extensions and the
//! replica layout, with Cassandra's validation and messages.

use super::*;
use mosaic_types::SpeculativeRetry;

pub(super) fn s_props(s: &AlterKeyspaceStatement) -> Vec<Property> {
    s.properties.clone()
}

pub(super) fn keyspace_from_create(
    s: &CreateKeyspaceStatement,
) -> Result<(String, KeyspaceMeta), ErrorResponse> {
    let name = s.name.as_str().to_owned();
    check_name("Keyspace", &name)?;
    if is_system_keyspace(&name) {
        return Err(not_modifiable(&name));
    }
    let (replication, durable) = keyspace_options(&s.properties, true)?;
    let replication =
        replication.ok_or_else(|| config("Missing mandatory replication strategy class"))?;
    Ok((
        name.clone(),
        KeyspaceMeta {
            name,
            replication,
            durable_writes: durable.unwrap_or(true),
            tables: BTreeMap::new(),
            types: BTreeMap::new(),
        },
    ))
}

/// The datacenters of the cluster's nodes, as this node knows them (ascending).
pub(super) fn datacenters<C: Coordinator>(coordinator: &C) -> Vec<String> {
    let mut dcs: Vec<String> = std::iter::once(coordinator.local_node())
        .chain(coordinator.peers())
        .map(|n| n.data_center)
        .collect();
    dcs.sort();
    dcs.dedup();
    dcs
}

/// NetworkTopologyStrategy's options as Cassandra 4.1 stores them (its `prepareOptions`):
/// a `replication_factor` sets that factor for every datacenter of `dcs` not named
/// explicitly — and, altering a keyspace (`previous`), keeps the factors the keyspace had
/// for the others; a change from SimpleStrategy naming no datacenter keeps its factor in
/// every datacenter; datacenters of factor 0 are dropped. Other strategies are unchanged.
pub(super) fn expand_replication(
    mut replication: Replication,
    previous: Option<&Replication>,
    dcs: &[String],
) -> Replication {
    if !replication.class.ends_with("NetworkTopologyStrategy") {
        return replication;
    }
    let options = &mut replication.options;
    let mut factor = options.remove("replication_factor");
    match (&factor, previous) {
        (None, Some(old)) if options.is_empty() => {
            factor = old.options.get("replication_factor").cloned();
        }
        (Some(_), Some(old)) => {
            for (dc, rf) in &old.options {
                if dc != "replication_factor" {
                    options.entry(dc.clone()).or_insert_with(|| rf.clone());
                }
            }
        }
        _ => {}
    }
    if let Some(rf) = factor {
        for dc in dcs {
            options.entry(dc.clone()).or_insert_with(|| rf.clone());
        }
    }
    options.retain(|_, rf| rf.as_str() != "0");
    replication
}

/// Parses `replication` and `durable_writes`.
pub(super) fn keyspace_options(
    properties: &[Property],
    creating: bool,
) -> Result<(Option<Replication>, Option<bool>), ErrorResponse> {
    let mut replication = None;
    let mut durable = None;
    for p in properties {
        match (p.name.as_str(), &p.value) {
            ("replication", PropertyValue::Map(entries)) => {
                replication = Some(parse_replication(entries)?);
            }
            ("durable_writes", PropertyValue::Constant(lit)) => {
                durable = Some(
                    property_bool(lit)
                        .ok_or_else(|| invalid("Invalid boolean value for durable_writes"))?,
                );
            }
            ("replication" | "durable_writes", _) => {
                return Err(ErrorResponse::new(
                    ErrorKind::Syntax,
                    format!("Invalid value for property '{}'", p.name.as_str()),
                ))
            }
            (other, _) => {
                return Err(ErrorResponse::new(
                    ErrorKind::Syntax,
                    format!("Unknown property '{other}'"),
                ))
            }
        }
    }
    if creating && replication.is_none() {
        return Err(config("Missing mandatory replication strategy class"));
    }
    Ok((replication, durable))
}

pub(super) fn property_bool(lit: &Literal) -> Option<bool> {
    match lit {
        Literal::Boolean(b) => Some(*b),
        Literal::String(s) => s.parse::<bool>().ok(),
        _ => None,
    }
}

pub(super) fn parse_replication(
    entries: &[(String, String)],
) -> Result<Replication, ErrorResponse> {
    let mut class = None;
    let mut options = BTreeMap::new();
    for (k, v) in entries {
        if k == "class" {
            class = Some(v.clone());
        } else {
            options.insert(k.clone(), v.clone());
        }
    }
    let class = class.ok_or_else(|| config("Missing replication strategy class"))?;
    let short = class.rsplit('.').next().unwrap_or(&class);
    let full = match short {
        "SimpleStrategy" => "org.apache.cassandra.locator.SimpleStrategy",
        "NetworkTopologyStrategy" => "org.apache.cassandra.locator.NetworkTopologyStrategy",
        _ => {
            return Err(config(format!(
                "Unable to find replication strategy class '{}'",
                if class.contains('.') {
                    class.clone()
                } else {
                    format!("org.apache.cassandra.locator.{class}")
                }
            )))
        }
    };
    let check_rf = |key: &str, v: &str| -> Result<(), ErrorResponse> {
        match v.parse::<i64>() {
            Ok(n) if n >= 0 => Ok(()),
            _ => Err(config(format!(
                "Replication factor must be non-negative integer; found {v} for {key}"
            ))),
        }
    };
    if short == "SimpleStrategy" {
        let Some(rf) = options.get("replication_factor") else {
            return Err(config(
                "SimpleStrategy requires a replication_factor strategy option.",
            ));
        };
        check_rf("replication_factor", rf)?;
        if let Some(unknown) = options.keys().find(|k| *k != "replication_factor") {
            return Err(config(format!(
                "Unrecognized strategy option {{{unknown}}} passed to SimpleStrategy for keyspace"
            )));
        }
    } else {
        for (k, v) in &options {
            check_rf(k, v)?;
        }
    }
    Ok(Replication {
        class: full.to_owned(),
        options,
    })
}

/// Table options Cassandra 4.0 accepts that Mosaic keeps verbatim without using them
/// (shown in `system_schema.tables` and by `DESCRIBE`).
pub(super) const KNOWN_TABLE_OPTIONS: [&str; 11] = [
    "bloom_filter_fp_chance",
    "caching",
    "cdc",
    "compaction",
    "compression",
    "crc_check_chance",
    "max_index_interval",
    "memtable_flush_period_in_ms",
    "min_index_interval",
    "read_repair",
    "id",
];

/// Cassandra 3.11's read repair chances, which Cassandra 4.0 no longer has: accepted so
/// 3.11 schema dumps still load, and ignored.
pub(super) const OBSOLETE_TABLE_OPTIONS: [&str; 2] =
    ["dclocal_read_repair_chance", "read_repair_chance"];

pub(super) fn literal_text(lit: &Literal) -> String {
    match lit {
        Literal::String(s) => s.clone(),
        Literal::Integer(s) | Literal::Float(s) => s.clone(),
        Literal::Boolean(b) => b.to_string(),
        other => other.to_string(),
    }
}

/// The map text kept for map options (normalized later by
/// [`crate::system::canonical_table_options`]); a repeated key keeps its last value.
pub(super) fn map_text<'e>(entries: impl IntoIterator<Item = (&'e str, &'e str)>) -> String {
    let map: BTreeMap<String, String> = entries
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    crate::system::map_text(&map)
}

/// The layout a `layout` option names (case-insensitively).
pub(super) fn check_layout(layout: &str) -> Result<Layout, ErrorResponse> {
    let layout = layout.to_ascii_lowercase();
    Layout::parse(&layout).ok_or_else(|| {
        config(format!(
            "Unknown layout '{layout}'; this build stores: {}",
            Layout::valid_names()
        ))
    })
}

/// Sets `params`' layout from the map form `{'class': 'decoupled', 'sorted_runs_max': '20'}`:
/// the class is required, and every other entry must be one of the layout's options
/// ([`Layout::check_options`]).
pub(super) fn apply_layout_map<'e>(
    params: &mut TableParams,
    entries: impl IntoIterator<Item = (&'e str, &'e str)>,
) -> Result<(), ErrorResponse> {
    let mut class = None;
    let mut options = BTreeMap::new();
    for (name, value) in entries {
        if name == "class" {
            class = Some(check_layout(value)?);
        } else {
            options.insert(name.to_owned(), value.trim().to_owned());
        }
    }
    let layout = class.ok_or_else(|| {
        config("Missing 'class' in layout: expected a map such as {'class': 'decoupled', 'sorted_runs_max': '20'}")
    })?;
    let options = layout.check_options(&options).map_err(config)?;
    params.layout = layout;
    params.layout_options = options;
    Ok(())
}

/// Sets `params`' layout from its text: a name, or the map form's text (as the
/// `mosaic.layout` extension keeps it).
pub(super) fn apply_layout_text(params: &mut TableParams, text: &str) -> Result<(), ErrorResponse> {
    if text.trim_start().starts_with('{') {
        let map = crate::system::parse_map(text)
            .ok_or_else(|| config(format!("Invalid layout map {text}")))?;
        return apply_layout_map(params, map.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    }
    set_layout_name(params, text)
}

/// Sets `params`' layout from its name alone (the string form: no options).
fn set_layout_name(params: &mut TableParams, name: &str) -> Result<(), ErrorResponse> {
    params.layout = check_layout(name)?;
    params.layout_options.clear();
    Ok(())
}

/// `extensions = {'name': 0x…, …}`: blob values, as `DESCRIBE` prints them. The
/// `mosaic.layout` extension is the table's layout (how `system_schema.tables` and
/// `DESCRIBE` show it), so it sets the layout; the others are kept.
pub(super) fn apply_extensions(
    params: &mut TableParams,
    entries: &[(String, String)],
) -> Result<(), ErrorResponse> {
    let mut kept = Vec::new();
    for (name, value) in entries {
        let invalid_value = || {
            config(format!(
                "Invalid value for extension '{name}': expected a blob constant such as 0x0102"
            ))
        };
        let bytes = decode_blob_literal(value).ok_or_else(invalid_value)?;
        if name == LAYOUT_EXTENSION {
            let layout = String::from_utf8(bytes).map_err(|_| invalid_value())?;
            apply_layout_text(params, &layout)?;
        } else {
            kept.push((name.as_str(), value.as_str()));
        }
    }
    if kept.is_empty() {
        params.extra.remove("extensions");
    } else {
        params.extra.insert("extensions".to_owned(), map_text(kept));
    }
    Ok(())
}

pub(super) fn int_property(
    name: &str,
    value: &PropertyValue,
    min: i64,
) -> Result<i32, ErrorResponse> {
    let n = match value {
        PropertyValue::Constant(Literal::Integer(s))
        | PropertyValue::Constant(Literal::String(s)) => s.parse::<i64>().ok(),
        _ => None,
    };
    match n.and_then(|n| i32::try_from(n).ok()) {
        Some(n) if i64::from(n) >= min => Ok(n),
        _ => Err(config(format!(
            "Invalid value for {name}: must be an integer >= {min}"
        ))),
    }
}

/// Applies `WITH` properties to table params.
pub(super) fn apply_table_properties(
    params: &mut TableParams,
    properties: &[Property],
) -> Result<(), ErrorResponse> {
    for p in properties {
        let name = p.name.as_str();
        match name {
            "layout" => match &p.value {
                PropertyValue::Constant(Literal::String(layout)) => {
                    set_layout_name(params, layout)?
                }
                PropertyValue::Map(entries) => apply_layout_map(
                    params,
                    entries.iter().map(|(k, v)| (k.as_str(), v.as_str())),
                )?,
                PropertyValue::Constant(_) => {
                    return Err(config(
                        "Invalid value for layout: expected a string such as 'uniform' or a map such as {'class': 'decoupled', 'sorted_runs_max': '20'}",
                    ));
                }
            },
            "extensions" => {
                let PropertyValue::Map(entries) = &p.value else {
                    return Err(config(
                        "Invalid value for extensions: expected a map such as {'name': 0x0102}",
                    ));
                };
                apply_extensions(params, entries)?;
            }
            "read_repair" => {
                let value = match &p.value {
                    PropertyValue::Constant(Literal::String(s)) => s.to_ascii_uppercase(),
                    _ => String::new(),
                };
                if !matches!(value.as_str(), "BLOCKING" | "NONE") {
                    return Err(config(
                        "Invalid value for read_repair: expected 'BLOCKING' or 'NONE'",
                    ));
                }
                params.extra.insert(name.to_owned(), value);
            }
            "speculative_retry" | "additional_write_policy" => {
                let PropertyValue::Constant(lit) = &p.value else {
                    return Err(config(format!("Invalid value for option '{name}'")));
                };
                let text = literal_text(lit);
                let policy = SpeculativeRetry::parse(&text)
                    .map_err(|e| config(e.replace("'speculative_retry'", &format!("'{name}'"))))?;
                params.extra.insert(name.to_owned(), policy.to_string());
            }
            obsolete if OBSOLETE_TABLE_OPTIONS.contains(&obsolete) => {}
            "comment" => {
                let PropertyValue::Constant(lit) = &p.value else {
                    return Err(config("Invalid value for comment"));
                };
                params.comment = literal_text(lit);
            }
            "default_time_to_live" => {
                let ttl = int_property(name, &p.value, 0)?;
                if ttl > crate::processor::write::TTL_MAX {
                    return Err(config(format!(
                        "default_time_to_live must be less than or equal to {} (got {ttl})",
                        crate::processor::write::TTL_MAX
                    )));
                }
                params.default_time_to_live = ttl;
            }
            "gc_grace_seconds" => params.gc_grace_seconds = int_property(name, &p.value, 0)?,
            known if KNOWN_TABLE_OPTIONS.contains(&known) => {
                let text = match &p.value {
                    PropertyValue::Constant(lit) => literal_text(lit),
                    PropertyValue::Map(entries) => {
                        map_text(entries.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                    }
                };
                params.extra.insert(known.to_owned(), text);
            }
            other => {
                return Err(ErrorResponse::new(
                    ErrorKind::Syntax,
                    format!("Unknown property '{other}'"),
                ))
            }
        }
    }
    // Kept in normalized form, defaults left out: equal options, equal parameters.
    params.extra = crate::system::canonical_table_options(params);
    Ok(())
}

/// Checks the layout against the table's columns, which the layout's own option check
/// ([`Layout::check_options`]) cannot see: a `heterogeneous` table needs clustering
/// columns to order, and each of its `replica_orders` must list every clustering column
/// exactly once. `defaulted`: the layout is the cluster's default, not the statement's.
pub(super) fn check_layout_columns(
    table: &TableMeta,
    defaulted: bool,
) -> Result<(), ErrorResponse> {
    if table.params.layout != Layout::Heterogeneous {
        return Ok(());
    }
    let clustering: Vec<&str> = table.clustering().iter().map(|c| c.name.as_str()).collect();
    if clustering.is_empty() {
        let hint = if defaulted {
            " ('heterogeneous' is the cluster's default layout: give this table another, \
             such as WITH layout = 'uniform')"
        } else {
            ""
        };
        return Err(config(format!(
            "Table {}.{} cannot use layout 'heterogeneous': it has no clustering columns, and \
             each replica of a heterogeneous table sorts a partition's rows by its own order \
             of the clustering columns{hint}",
            table.keyspace, table.name
        )));
    }
    let text = table
        .params
        .layout_options
        .get(REPLICA_ORDERS_OPTION)
        .map_or("", String::as_str);
    let orders = mosaic_types::parse_replica_orders(text).map_err(config)?;
    let all = mosaic_types::format_replica_orders(&[clustering
        .iter()
        .map(|c| (*c).to_owned())
        .collect()]);
    for (i, order) in orders.iter().enumerate() {
        let problem = order_problem(order, &clustering);
        if let Some(problem) = problem {
            return Err(config(format!(
                "Invalid replica_orders for table {}.{}: order {} {} {problem}; each order \
                 must list every clustering column {all} exactly once",
                table.keyspace,
                table.name,
                i + 1,
                mosaic_types::format_replica_orders(std::slice::from_ref(order)),
            )));
        }
    }
    Ok(())
}

/// What keeps `order` from being a permutation of `clustering`, in words.
fn order_problem(order: &[String], clustering: &[&str]) -> Option<String> {
    let name = |n: &str| crate::ast::Ident::new(n).to_string();
    for (i, column) in order.iter().enumerate() {
        if !clustering.contains(&column.as_str()) {
            return Some(format!(
                "names {}, which is not a clustering column",
                name(column)
            ));
        }
        if order.iter().take(i).any(|c| c == column) {
            return Some(format!("names {} more than once", name(column)));
        }
    }
    let missing: Vec<String> = clustering
        .iter()
        .filter(|c| !order.iter().any(|o| o == *c))
        .map(|c| name(c))
        .collect();
    (!missing.is_empty()).then(|| format!("leaves out {}", missing.join(", ")))
}

/// `table`'s `replica_orders` with clustering column `from` renamed `to` (the orders name
/// columns, so a rename carries over to them).
pub(super) fn rename_in_replica_orders(table: &mut TableMeta, from: &str, to: &str) {
    let Some(text) = table.params.layout_options.get_mut(REPLICA_ORDERS_OPTION) else {
        return;
    };
    let Ok(mut orders) = mosaic_types::parse_replica_orders(text) else {
        return;
    };
    for name in orders.iter_mut().flatten() {
        if name == from {
            to.clone_into(name);
        }
    }
    *text = mosaic_types::format_replica_orders(&orders);
}

#[cfg(test)]
mod replication_tests {
    use super::*;

    fn nts(options: &[(&str, &str)]) -> Replication {
        Replication {
            class: "org.apache.cassandra.locator.NetworkTopologyStrategy".to_owned(),
            options: options
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    #[test]
    fn replication_factor_expands_to_every_datacenter_as_cassandra_does() {
        let dcs = ["dc1".to_owned(), "dc2".to_owned()];
        // CREATE: every datacenter, explicit ones kept; zeros dropped.
        assert_eq!(
            expand_replication(
                nts(&[("replication_factor", "3"), ("dc2", "1")]),
                None,
                &dcs
            ),
            nts(&[("dc1", "3"), ("dc2", "1")])
        );
        assert_eq!(
            expand_replication(nts(&[("dc1", "2"), ("dc2", "0")]), None, &dcs),
            nts(&[("dc1", "2")])
        );
        // ALTER with the shorthand: the datacenters the keyspace had keep their factors.
        let old = nts(&[("dc1", "1")]);
        assert_eq!(
            expand_replication(nts(&[("replication_factor", "3")]), Some(&old), &dcs),
            nts(&[("dc1", "1"), ("dc2", "3")])
        );
        // From SimpleStrategy naming no datacenter: its factor everywhere.
        let simple = Replication::simple(2);
        assert_eq!(
            expand_replication(nts(&[]), Some(&simple), &dcs),
            nts(&[("dc1", "2"), ("dc2", "2")])
        );
        // SimpleStrategy is left alone.
        assert_eq!(
            expand_replication(Replication::simple(3), None, &dcs),
            Replication::simple(3)
        );
    }
}
