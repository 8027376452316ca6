//! CQL's JSON support, as Cassandra 4.1 behaves (docs/cql.md, "JSON").
//!
//! - `SELECT JSON …`: each result row becomes one JSON object in a text column named
//!   `[json]`, keyed by the result's column names (a name with upper-case letters in double
//!   quotes inside the key, as Cassandra writes it);
//! - `toJson(selector)`: a selected value as JSON text, named `system.tojson(…)`;
//! - `INSERT … JSON '{…}' [DEFAULT NULL | DEFAULT UNSET]`: the row an object describes;
//! - `fromJson('…')`: a term read from JSON as a value of the type it is assigned to or
//!   compared with.
//!
//! Layout: `text` (JSON text to a tree that keeps what Cassandra's messages need), `decode`
//! (a tree to a value of a CQL type, with Cassandra's messages), `render` (a value to JSON
//! text); this module ties them to statements.

mod decode;
mod render;
mod text;

#[cfg(test)]
mod tests;

pub(crate) use render::to_json;

use bytes::Bytes;
use mosaic_types::{CqlType, CqlValue, DataType};

use crate::ast::{InsertJson, Literal, SelectStatement, Selection, SelectorExpr, Term};
use crate::frame::{ColumnSpec, ColumnType, ErrorKind, ErrorResponse, Rows};
use crate::schema::TableMeta;

use super::invalid;
use super::values::{eval_native, Eval, EvalContext};
use decode::{decode, DecodeError};
use text::{case_sensitive_keys, Json};

/// `text` read as JSON and decoded as a value of `ty`, as `fromJson()` reads it (errors as
/// their messages): for fuzzing and tests.
pub fn decode_json_text(text: &str, ty: &DataType) -> Result<Option<CqlValue>, String> {
    let json = text::parse(text).map_err(|e| e.to_string())?;
    decode(&json, ty).map_err(|e| match e {
        DecodeError::Marshal(m) | DecodeError::Invalid(m) => m,
    })
}

/// `value` of type `ty` as JSON text, as `toJson()` writes it: for fuzzing and tests.
pub fn render_json(value: Option<&CqlValue>, ty: &DataType) -> String {
    to_json(value, ty)
}

/// The `[json]` text an INSERT names: a string literal or a bound value (an unset one is
/// empty text, as Cassandra reads it).
fn insert_text(json: &InsertJson, ctx: &EvalContext<'_>) -> Result<String, ErrorResponse> {
    match eval_native(&json.value, CqlType::Text, "[json]", ctx)? {
        Eval::Value(CqlValue::Text(t)) => Ok(t),
        Eval::Value(_) => Err(invalid("INSERT JSON values must be a string")),
        Eval::Null => Err(invalid("Got null for INSERT JSON values")),
        Eval::Unset => Ok(String::new()),
    }
}

/// Jackson's location of the first token of `text`: ` at [Source: …; line: L, column: C]`.
fn jackson_location(text: &str) -> String {
    let start = text.trim_start_matches([' ', '\t', '\n', '\r']);
    let before = text.get(..text.len() - start.len()).unwrap_or_default();
    let line = 1 + before.matches('\n').count();
    let column = 1 + before.rsplit('\n').next().map_or(0, |l| l.chars().count());
    format!("\n at [Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: {line}, column: {column}]")
}

/// What Jackson says when the top-level value is not an object.
fn not_an_object(json: &Json, text: &str) -> String {
    let (what, token) = match json {
        Json::Array(_) => ("Array value", "START_ARRAY"),
        Json::Bool(true) => ("Boolean value", "VALUE_TRUE"),
        Json::Bool(false) => ("Boolean value", "VALUE_FALSE"),
        Json::String(s) => {
            return format!("com.fasterxml.jackson.databind.exc.MismatchedInputException: Cannot construct instance of `java.util.LinkedHashMap` (although at least one Creator exists): no String-argument constructor/factory method to deserialize from String value ('{s}'){}", jackson_location(text));
        }
        Json::Number(n) if n.contains(['.', 'e', 'E']) => {
            ("Floating-point value", "VALUE_NUMBER_FLOAT")
        }
        _ => ("Integer value", "VALUE_NUMBER_INT"),
    };
    format!("com.fasterxml.jackson.databind.exc.MismatchedInputException: Cannot deserialize value of type `java.util.LinkedHashMap<java.lang.Object,java.lang.Object>` from {what} (token `JsonToken.{token}`){}", jackson_location(text))
}

/// `INSERT … JSON`'s values by column, as Cassandra's `Json.parseJson` reads them: each
/// key names a column (`"\"Name\""` a case-sensitive one); values are read in the table's
/// column order, then a key naming no column is refused; a column the object leaves out is
/// null (`DEFAULT NULL`) or left alone (`DEFAULT UNSET`, not in the result); a primary key
/// column must end up with a value.
pub(crate) fn insert_values(
    table: &TableMeta,
    json: &InsertJson,
    ctx: &EvalContext<'_>,
) -> Result<Vec<(String, Eval)>, ErrorResponse> {
    let text = insert_text(json, ctx)?;
    let parsed = text::parse(&text).map_err(|e| {
        invalid(format!(
            "Could not decode JSON string as a map: {e}. (String was: {text})"
        ))
    })?;
    let mut members = match parsed {
        Json::Object(members) => case_sensitive_keys(members),
        Json::Null => return Err(invalid("Got null for INSERT JSON values")),
        other => {
            return Err(invalid(format!(
                "Could not decode JSON string as a map: {}. (String was: {text})",
                not_an_object(&other, &text)
            )))
        }
    };
    let mut values = Vec::with_capacity(table.columns.len());
    for col in table.select_star_order() {
        let name = col.name.as_str();
        let value = match members.iter().position(|(k, _)| k == name) {
            Some(at) => {
                let (_, value) = members.remove(at);
                match decode(&value, &col.ty) {
                    Ok(Some(v)) => Eval::Value(v),
                    Ok(None) => Eval::Null,
                    Err(DecodeError::Marshal(m)) => {
                        return Err(invalid(format!(
                            "Error decoding JSON value for {name}: {m}"
                        )))
                    }
                    Err(DecodeError::Invalid(m)) => return Err(invalid(m)),
                }
            }
            None if json.default_unset => Eval::Unset,
            None => Eval::Null,
        };
        values.push((col, value));
    }
    if let Some((unknown, _)) = members.first() {
        return Err(invalid(format!(
            "JSON values map contains unrecognized column: {unknown}"
        )));
    }
    for col in table.partition_key().into_iter().chain(table.clustering()) {
        match values.iter().find(|(c, _)| c.name == col.name) {
            Some((_, Eval::Value(_))) => {}
            Some((_, Eval::Unset)) => {
                return Err(invalid(format!(
                    "Invalid unset value for column {}",
                    col.name
                )))
            }
            _ => {
                return Err(invalid(format!(
                    "Invalid null value in condition for column {}",
                    col.name
                )))
            }
        }
    }
    Ok(values
        .into_iter()
        .filter(|(_, v)| !matches!(v, Eval::Unset))
        .map(|(c, v)| (c.name.clone(), v))
        .collect())
}

/// The error of `fromJson()` failing on its argument (Cassandra's FunctionFailure).
fn function_failure(message: String) -> ErrorResponse {
    ErrorResponse::new(
        ErrorKind::FunctionFailure {
            keyspace: "system".to_owned(),
            function: "fromjson".to_owned(),
            arg_types: vec!["text".to_owned()],
        },
        message,
    )
}

/// `fromJson(text)` as a value of `ty`: null for a null argument or JSON `null`.
pub(crate) fn from_json_call(
    args: &[Term],
    ty: &DataType,
    ctx: &EvalContext<'_>,
) -> Result<Eval, ErrorResponse> {
    let [arg] = args else {
        return Err(invalid(format!(
            "Invalid number of arguments in call to function system.fromjson: 1 required but {} provided",
            args.len()
        )));
    };
    if let Term::Literal(lit) = arg {
        if !matches!(lit, Literal::String(_) | Literal::Null) {
            return Err(invalid(format!(
                "Type error: {arg} cannot be passed as argument 0 of function system.fromjson of type text"
            )));
        }
    }
    let text = match eval_native(arg, CqlType::Text, "arg0(system.fromjson)", ctx)? {
        Eval::Value(CqlValue::Text(t)) => t,
        Eval::Value(_) | Eval::Null => return Ok(Eval::Null),
        Eval::Unset => {
            return Err(invalid(
                "Invalid unset value for argument in call to function fromjson",
            ))
        }
    };
    let json = text::parse(&text).map_err(|e| {
        function_failure(format!(
            "execution of 'system.fromjson[text]' failed: Could not decode JSON string '{text}': {e}"
        ))
    })?;
    match decode(&json, ty) {
        Ok(Some(v)) => Ok(Eval::Value(v)),
        Ok(None) => Ok(Eval::Null),
        Err(DecodeError::Marshal(m)) => Err(function_failure(format!(
            "org.apache.cassandra.serializers.MarshalException: {m}"
        ))),
        Err(DecodeError::Invalid(m)) => Err(invalid(m)),
    }
}

/// How many `toJson()` wrap each selector of a SELECT (none for `*`); `fromJson()` is
/// refused there, as in Cassandra.
pub(crate) fn to_json_depths(s: &SelectStatement) -> Vec<usize> {
    let Selection::Selectors(selectors) = &s.selection else {
        return Vec::new();
    };
    selectors
        .iter()
        .map(|sel| {
            let mut depth = 0;
            let mut expr = &sel.expr;
            while let SelectorExpr::Call { name, args } = expr {
                match args.as_slice() {
                    [inner] if name.as_str() == "tojson" => {
                        depth += 1;
                        expr = inner;
                    }
                    _ => break,
                }
            }
            depth
        })
        .collect()
}

/// `toJson(e)` in the SELECT clause: what is computed is `e`, named `system.tojson(e)`
/// (the caller renders it as JSON afterwards, [`to_json_depths`]). One argument, not
/// `fromJson()`.
pub(crate) fn check_to_json_args(args: &[SelectorExpr]) -> Result<&SelectorExpr, ErrorResponse> {
    match args {
        [inner] => Ok(inner),
        _ => Err(invalid(format!(
            "toJson() only accepts one argument (got {})",
            args.len()
        ))),
    }
}

/// The refusal of `fromJson()` in a SELECT clause.
pub(crate) fn from_json_in_selection() -> ErrorResponse {
    invalid("fromJson() cannot be used in the selection clause of a SELECT statement")
}

/// A SELECT's result columns after JSON: `toJson()` columns are text; `SELECT JSON` has one
/// `[json]` text column.
pub(crate) fn result_specs(
    table: &TableMeta,
    s: &SelectStatement,
    mut specs: Vec<ColumnSpec>,
) -> Vec<ColumnSpec> {
    if s.json {
        return vec![ColumnSpec::new(
            &table.keyspace,
            &table.name,
            "[json]",
            CqlType::Text,
        )];
    }
    for (spec, depth) in specs.iter_mut().zip(to_json_depths(s)) {
        if depth > 0 {
            spec.ty = ColumnType::Native(CqlType::Text);
        }
    }
    specs
}

/// `SELECT JSON` on a system table (`keyspace.table`): its rows as JSON objects.
pub(crate) fn system_rows(keyspace: &str, table: &str, rows: &mut Rows) {
    let columns: Vec<_> = rows
        .metadata
        .columns
        .iter()
        .map(|c| (c.name.clone(), c.ty.clone()))
        .collect();
    rows.rows = result_rows(true, &columns, &[], std::mem::take(&mut rows.rows));
    rows.metadata.columns = vec![ColumnSpec::new(keyspace, table, "[json]", CqlType::Text)];
}

/// One cell of type `ty` as JSON text (`null` for none).
fn cell_json(cell: Option<&Bytes>, ty: &ColumnType) -> String {
    let Some(ty) = ty.data_type() else {
        return "null".to_owned();
    };
    match cell {
        Some(bytes) => to_json(ty.decode(bytes).ok().as_ref(), &ty),
        None => "null".to_owned(),
    }
}

/// A SELECT's result rows after JSON, given the result's column names and types:
/// `toJson()` columns rendered (`depths` per column), then, for `SELECT JSON`, each row as
/// one object.
pub(crate) fn result_rows(
    json: bool,
    columns: &[(String, ColumnType)],
    depths: &[usize],
    rows: Vec<Vec<Option<Bytes>>>,
) -> Vec<Vec<Option<Bytes>>> {
    let text_type = ColumnType::Native(CqlType::Text);
    let types: Vec<&ColumnType> = columns
        .iter()
        .enumerate()
        .map(|(i, (_, ty))| match depths.get(i) {
            Some(d) if *d > 0 => &text_type,
            _ => ty,
        })
        .collect();
    rows.into_iter()
        .map(|mut row| {
            for (i, cell) in row.iter_mut().enumerate() {
                let depth = depths.get(i).copied().unwrap_or(0);
                if depth == 0 {
                    continue;
                }
                let ty = columns.get(i).map(|(_, t)| t).unwrap_or(&text_type);
                let mut out = cell_json(cell.as_ref(), ty);
                for _ in 1..depth {
                    out = text::quote(&out);
                }
                *cell = Some(Bytes::from(out));
            }
            if !json {
                return row;
            }
            let members: Vec<String> = columns
                .iter()
                .zip(&types)
                .zip(&row)
                .map(|(((name, _), ty), cell)| {
                    format!(
                        "{}: {}",
                        render::name_key(name),
                        cell_json(cell.as_ref(), ty)
                    )
                })
                .collect();
            vec![Some(Bytes::from(format!("{{{}}}", members.join(", "))))]
        })
        .collect()
}
