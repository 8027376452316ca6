//! The pieces of a response body: column specs, Rows and Prepared metadata, schema-change
//! targets and events, as §4.2.5 and §4.2.6 of the v4 spec lay them out (v3 and v5 where
//! they differ).

use super::*;

pub(super) fn response_opcode(response: &Response) -> Opcode {
    match response {
        Response::Error(_) => Opcode::Error,
        Response::Ready => Opcode::Ready,
        Response::Authenticate { .. } => Opcode::Authenticate,
        Response::AuthChallenge { .. } => Opcode::AuthChallenge,
        Response::AuthSuccess { .. } => Opcode::AuthSuccess,
        Response::Supported(_) => Opcode::Supported,
        Response::Result(_) => Opcode::Result,
        Response::Event(_) => Opcode::Event,
    }
}

/// The table all columns share, if they share one (Global_tables_spec).
pub(super) fn global_table(columns: &[ColumnSpec]) -> Option<(&str, &str)> {
    let first = columns.first()?;
    columns
        .iter()
        .all(|c| c.keyspace == first.keyspace && c.table == first.table)
        .then_some((first.keyspace.as_str(), first.table.as_str()))
}

pub(super) fn column_count(columns: &[ColumnSpec]) -> Result<i32, EncodeError> {
    i32::try_from(columns.len()).map_err(|_| EncodeError::TooManyElements {
        what: "columns",
        length: columns.len(),
    })
}

/// `[<global_table_spec>]<col_spec_1>...<col_spec_n>`.
pub(super) fn put_column_specs(
    out: &mut BytesMut,
    columns: &[ColumnSpec],
    global: Option<(&str, &str)>,
    version: ProtocolVersion,
) -> Result<(), EncodeError> {
    if let Some((keyspace, table)) = global {
        put_string(out, keyspace)?;
        put_string(out, table)?;
    }
    for column in columns {
        if global.is_none() {
            put_string(out, &column.keyspace)?;
            put_string(out, &column.table)?;
        }
        put_string(out, &column.name)?;
        column.ty.put_option(out, version)?;
    }
    Ok(())
}

/// `<metadata>` of Rows (§4.2.5.2); v5 adds Metadata_changed and `<new_metadata_id>`.
pub(super) fn put_rows_metadata(
    out: &mut BytesMut,
    metadata: &RowsMetadata,
    version: ProtocolVersion,
) -> Result<(), EncodeError> {
    let global = if metadata.no_metadata {
        None
    } else {
        global_table(&metadata.columns)
    };
    let new_metadata_id = metadata
        .new_metadata_id
        .as_ref()
        .filter(|_| version >= ProtocolVersion::V5 && !metadata.no_metadata);
    let mut flags = 0;
    if new_metadata_id.is_some() {
        flags |= rows_flag::METADATA_CHANGED;
    }
    if global.is_some() {
        flags |= rows_flag::GLOBAL_TABLES_SPEC;
    }
    if metadata.paging_state.is_some() {
        flags |= rows_flag::HAS_MORE_PAGES;
    }
    if metadata.no_metadata {
        flags |= rows_flag::NO_METADATA;
    }
    out.put_i32(flags);
    out.put_i32(column_count(&metadata.columns)?);
    if let Some(paging_state) = &metadata.paging_state {
        put_bytes(out, Some(paging_state))?;
    }
    if let Some(id) = new_metadata_id {
        put_short_bytes(out, id)?;
    }
    if !metadata.no_metadata {
        put_column_specs(out, &metadata.columns, global, version)?;
    }
    Ok(())
}

/// `<metadata>` of Prepared (§4.2.5.4); v3 has no partition-key indexes.
pub(super) fn put_prepared_metadata(
    out: &mut BytesMut,
    metadata: &PreparedMetadata,
    version: ProtocolVersion,
) -> Result<(), EncodeError> {
    let global = global_table(&metadata.columns);
    out.put_i32(if global.is_some() {
        rows_flag::GLOBAL_TABLES_SPEC
    } else {
        0
    });
    out.put_i32(column_count(&metadata.columns)?);
    if version >= ProtocolVersion::V4 {
        let n =
            i32::try_from(metadata.pk_indexes.len()).map_err(|_| EncodeError::TooManyElements {
                what: "partition key indexes",
                length: metadata.pk_indexes.len(),
            })?;
        out.put_i32(n);
        for &index in &metadata.pk_indexes {
            out.put_u16(index);
        }
    }
    put_column_specs(out, &metadata.columns, global, version)
}

/// `<change_type><target><options>`. v3 has no FUNCTION/AGGREGATE targets: like Cassandra,
/// tell v3 clients the keyspace was updated.
pub(super) fn put_schema_change(
    out: &mut BytesMut,
    change: &SchemaChange,
    version: ProtocolVersion,
) -> Result<(), EncodeError> {
    match &change.target {
        SchemaChangeTarget::Function { keyspace, .. }
        | SchemaChangeTarget::Aggregate { keyspace, .. }
            if version < ProtocolVersion::V4 =>
        {
            put_string(out, SchemaChangeType::Updated.name())?;
            put_string(out, "KEYSPACE")?;
            return put_string(out, keyspace);
        }
        _ => {}
    }
    put_string(out, change.change.name())?;
    match &change.target {
        SchemaChangeTarget::Keyspace { keyspace } => {
            put_string(out, "KEYSPACE")?;
            put_string(out, keyspace)
        }
        SchemaChangeTarget::Table { keyspace, table } => {
            put_string(out, "TABLE")?;
            put_string(out, keyspace)?;
            put_string(out, table)
        }
        SchemaChangeTarget::Type { keyspace, name } => {
            put_string(out, "TYPE")?;
            put_string(out, keyspace)?;
            put_string(out, name)
        }
        SchemaChangeTarget::Function {
            keyspace,
            name,
            arg_types,
        } => {
            put_string(out, "FUNCTION")?;
            put_string(out, keyspace)?;
            put_string(out, name)?;
            put_string_list(out, arg_types)
        }
        SchemaChangeTarget::Aggregate {
            keyspace,
            name,
            arg_types,
        } => {
            put_string(out, "AGGREGATE")?;
            put_string(out, keyspace)?;
            put_string(out, name)?;
            put_string_list(out, arg_types)
        }
    }
}

pub(super) fn put_event(
    out: &mut BytesMut,
    event: &Event,
    version: ProtocolVersion,
) -> Result<(), EncodeError> {
    match event {
        Event::TopologyChange { change, node } => {
            put_string(out, "TOPOLOGY_CHANGE")?;
            put_string(out, change.name())?;
            put_inet(out, *node);
        }
        Event::StatusChange { change, node } => {
            put_string(out, "STATUS_CHANGE")?;
            put_string(out, change.name())?;
            put_inet(out, *node);
        }
        Event::SchemaChange(change) => {
            put_string(out, "SCHEMA_CHANGE")?;
            put_schema_change(out, change, version)?;
        }
    }
    Ok(())
}
