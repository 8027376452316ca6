//! From terms of a statement (literals, bind markers, function calls) to typed values.
//!
//! A term gets its type from where it stands (the column it is assigned to or compared
//! with), as in Cassandra; the same literal `1` is an `int` in one place and a `bigint` in
//! another. Bound values are the client's native-protocol bytes, checked against that type.

use bytes::Bytes;
use mosaic_types::{
    parse_inet, parse_time, uuid_version, CqlDuration, CqlType, CqlValue, DataType, Decimal,
    Varint, DATE_EPOCH,
};

use crate::ast::{BindMarker, IntValue, Literal, Term};
use crate::frame::{BoundValues, ErrorResponse, Value};

use super::invalid;

/// The values bound to one execution, by marker index.
#[derive(Clone, Debug, Default)]
pub(crate) struct Bindings {
    values: Vec<Option<Value>>,
}

impl Bindings {
    /// Matches the client's values with the statement's markers: positionally, or by name
    /// (names compared case-insensitively, as drivers lowercase them).
    pub(crate) fn new(
        bound: &BoundValues,
        markers: &[BindMarker],
    ) -> Result<Bindings, ErrorResponse> {
        let count = markers.iter().map(|m| m.index + 1).max().unwrap_or(0);
        match bound {
            BoundValues::Positional(values) => {
                if values.len() != count {
                    return Err(invalid(format!(
                        "There were {count} markers(?) in CQL but {} bound variables",
                        values.len()
                    )));
                }
                Ok(Bindings {
                    values: values.iter().cloned().map(Some).collect(),
                })
            }
            BoundValues::Named(named) => {
                let mut values = vec![None; count];
                for marker in markers {
                    let Some(name) = &marker.name else {
                        return Err(invalid(
                            "Values were bound by name, but the statement has positional markers",
                        ));
                    };
                    let found = named
                        .iter()
                        .find(|(n, _)| n.eq_ignore_ascii_case(name.as_str()))
                        .map(|(_, v)| v.clone());
                    let Some(value) = found else {
                        return Err(invalid(format!(
                            "No value bound for marker :{}",
                            name.as_str()
                        )));
                    };
                    if let Some(slot) = values.get_mut(marker.index) {
                        *slot = Some(value);
                    }
                }
                Ok(Bindings { values })
            }
        }
    }

    pub(crate) fn get(&self, marker: &BindMarker) -> Result<&Value, ErrorResponse> {
        self.values
            .get(marker.index)
            .and_then(Option::as_ref)
            .ok_or_else(|| invalid(format!("No value bound for marker {}", marker.index)))
    }

    /// Raw bytes of a marker (for system tables), `None` for null/unset.
    pub(crate) fn raw(&self) -> Vec<Option<Bytes>> {
        self.values
            .iter()
            .map(|v| v.as_ref().and_then(|v| v.as_bytes().cloned()))
            .collect()
    }
}

/// A term's value: a value, null, or (bound values only) unset.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Eval {
    /// A value.
    Value(CqlValue),
    /// `null`.
    Null,
    /// Unset (v4): leave the column alone.
    Unset,
}

impl Eval {
    /// The value, or an error naming `what` for null/unset.
    pub(crate) fn required(self, what: &str) -> Result<CqlValue, ErrorResponse> {
        match self {
            Eval::Value(v) => Ok(v),
            Eval::Null => Err(invalid(format!("Invalid null value for {what}"))),
            Eval::Unset => Err(invalid(format!("Invalid unset value for {what}"))),
        }
    }
}

/// What evaluating terms needs besides the term.
pub(crate) struct EvalContext<'a> {
    /// The bound values.
    pub bindings: &'a Bindings,
    /// The statement's time (for `now()` and friends), microseconds since the epoch.
    pub now_micros: i64,
}

/// Evaluates `term` as a value of type `ty` for column (or role) `name`.
pub(crate) fn eval(
    term: &Term,
    ty: &DataType,
    name: &str,
    ctx: &EvalContext<'_>,
) -> Result<Eval, ErrorResponse> {
    match (term, ty) {
        (Term::Call { name: func, args }, _) if func.as_str() == "fromjson" => {
            super::json::from_json_call(args, ty, ctx)
        }
        (_, DataType::Native(t)) => eval_native(term, *t, name, ctx),
        _ => super::collections::eval_complex(term, ty, name, ctx),
    }
}

/// Evaluates `term` as a value of native type `ty`.
pub(crate) fn eval_native(
    term: &Term,
    ty: CqlType,
    name: &str,
    ctx: &EvalContext<'_>,
) -> Result<Eval, ErrorResponse> {
    match term {
        Term::Literal(lit) => literal(lit, ty, name),
        Term::Bind(marker) => match ctx.bindings.get(marker)? {
            Value::Null => Ok(Eval::Null),
            Value::Unset => Ok(Eval::Unset),
            Value::Bytes(b) => decode_bound(b, ty, name).map(Eval::Value),
        },
        Term::Call { name: func, args } if func.as_str() == "fromjson" => {
            super::json::from_json_call(args, &DataType::Native(ty), ctx)
        }
        Term::Call { name: func, args } => {
            call(func.as_str(), args, ty, name, ctx).map(Eval::Value)
        }
        Term::Tuple(_) => Err(invalid(format!(
            "Invalid tuple value for {name} of type {ty}"
        ))),
        Term::List(_) => Err(invalid(format!(
            "Invalid list literal for {name} of type {ty}"
        ))),
        Term::Set(_) => Err(invalid(format!(
            "Invalid set literal for {name} of type {ty}"
        ))),
        Term::Map(_) => Err(invalid(format!(
            "Invalid map literal for {name} of type {ty}"
        ))),
        Term::Udt(_) => Err(invalid(format!(
            "Invalid user type literal for {name} of type {ty}"
        ))),
    }
}

/// Decodes a bound value of type `ty`.
pub(crate) fn decode_bound(
    bytes: &[u8],
    ty: CqlType,
    name: &str,
) -> Result<CqlValue, ErrorResponse> {
    if bytes.is_empty() && matches!(ty, CqlType::Text | CqlType::Ascii | CqlType::Blob) {
        return Ok(match ty {
            CqlType::Text => CqlValue::Text(String::new()),
            CqlType::Ascii => CqlValue::Ascii(String::new()),
            _ => CqlValue::Blob(Vec::new()),
        });
    }
    CqlValue::from_cql_bytes(ty, bytes)
        .map_err(|e| invalid(format!("Invalid value for {name} of type {ty}: {e}")))
}

/// Evaluates `IN ?` (a serialized `list<ty>`) or an `IN (…)` list into values; nulls are
/// refused, as in Cassandra.
pub(crate) fn eval_in_list(
    values: &crate::ast::InValues,
    ty: &DataType,
    name: &str,
    ctx: &EvalContext<'_>,
) -> Result<Vec<CqlValue>, ErrorResponse> {
    match values {
        crate::ast::InValues::List(terms) => terms
            .iter()
            .map(|t| eval(t, ty, name, ctx)?.required(&format!("IN value of {name}")))
            .collect(),
        crate::ast::InValues::Bind(marker) => match ctx.bindings.get(marker)? {
            Value::Null | Value::Unset => {
                Err(invalid(format!("Invalid null value for IN list of {name}")))
            }
            Value::Bytes(b) => decode_list(b, ty, name),
        },
    }
}

/// Decodes a bound value of type `ty` (native, or a collection, tuple or user-defined
/// type: sets and maps come back canonical).
pub(crate) fn decode_bound_of(
    bytes: &[u8],
    ty: &DataType,
    name: &str,
) -> Result<CqlValue, ErrorResponse> {
    match ty {
        DataType::Native(t) => decode_bound(bytes, *t, name),
        _ => ty
            .decode(bytes)
            .map_err(|e| invalid(format!("Invalid value for {name} of type {ty}: {e}"))),
    }
}

/// Decodes a serialized `list<ty>` (`[int n]` then `n` × `[bytes]`).
pub(crate) fn decode_list(
    bytes: &[u8],
    ty: &DataType,
    name: &str,
) -> Result<Vec<CqlValue>, ErrorResponse> {
    let bad = || invalid(format!("Invalid list value for IN restriction on {name}"));
    let mut rest = bytes;
    let take_i32 = |rest: &mut &[u8]| -> Result<i32, ErrorResponse> {
        let (head, tail) = rest.split_at_checked(4).ok_or_else(bad)?;
        *rest = tail;
        let arr: [u8; 4] = head.try_into().map_err(|_| bad())?;
        Ok(i32::from_be_bytes(arr))
    };
    let n = take_i32(&mut rest)?;
    let n = usize::try_from(n).map_err(|_| bad())?;
    if n > bytes.len() {
        return Err(bad());
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let len = take_i32(&mut rest)?;
        let len = usize::try_from(len)
            .map_err(|_| invalid(format!("Invalid null value in IN list of {name}")))?;
        let (item, tail) = rest.split_at_checked(len).ok_or_else(bad)?;
        rest = tail;
        out.push(decode_bound_of(item, ty, name)?);
    }
    if !rest.is_empty() {
        return Err(bad());
    }
    Ok(out)
}

/// Evaluates an integer that may be bound (`USING TTL`, `USING TIMESTAMP`, `LIMIT`);
/// `None` when bound to null or unset.
pub(crate) fn eval_int(
    v: &IntValue,
    ty: CqlType,
    name: &str,
    ctx: &EvalContext<'_>,
) -> Result<Option<i64>, ErrorResponse> {
    match v {
        IntValue::Literal(n) => Ok(Some(*n)),
        IntValue::Bind(marker) => match eval_native(&Term::Bind(marker.clone()), ty, name, ctx)? {
            Eval::Value(CqlValue::Int(n)) => Ok(Some(i64::from(n))),
            Eval::Value(CqlValue::BigInt(n)) => Ok(Some(n)),
            Eval::Value(_) => Err(invalid(format!("Invalid value for {name}"))),
            Eval::Null | Eval::Unset => Ok(None),
        },
    }
}

/// Cassandra's refusal of a constant for a receiver of another type
/// (`Constants.Literal.testAssignment`): the constant's kind, its text, the receiver's
/// name (`k`, or `key(m)`, `idx(l)` for an element) and type.
fn type_mismatch(lit: &Literal, ty: CqlType, name: &str) -> ErrorResponse {
    let (kind, text) = match lit {
        Literal::String(s) => ("STRING", s.clone()),
        Literal::Integer(s) => ("INTEGER", s.clone()),
        Literal::Float(s) => ("FLOAT", s.clone()),
        Literal::Duration(s) => ("DURATION", s.clone()),
        Literal::NaN => ("FLOAT", "NaN".to_owned()),
        Literal::Infinity => ("FLOAT", "Infinity".to_owned()),
        Literal::NegInfinity => ("FLOAT", "-Infinity".to_owned()),
        Literal::Uuid(u) => {
            let hex = format!("{u:032x}");
            let part = |r: std::ops::Range<usize>| hex.get(r).unwrap_or_default().to_owned();
            let text = [
                part(0..8),
                part(8..12),
                part(12..16),
                part(16..20),
                part(20..32),
            ];
            ("UUID", text.join("-"))
        }
        Literal::Blob(b) => (
            "HEX",
            format!(
                "0x{}",
                b.iter().map(|x| format!("{x:02x}")).collect::<String>()
            ),
        ),
        Literal::Boolean(b) => ("BOOLEAN", b.to_string()),
        Literal::Null => ("NULL", "null".to_owned()),
    };
    invalid(format!(
        "Invalid {kind} constant ({text}) for \"{name}\" of type {ty}"
    ))
}

/// Converts a literal to a value of type `ty`.
pub(crate) fn literal(lit: &Literal, ty: CqlType, name: &str) -> Result<Eval, ErrorResponse> {
    let mismatch = || type_mismatch(lit, ty, name);
    let value = match (lit, ty) {
        (Literal::Null, _) => return Ok(Eval::Null),
        (Literal::String(s), CqlType::Text) => CqlValue::Text(s.clone()),
        (Literal::String(s), CqlType::Ascii) => {
            if !s.is_ascii() {
                return Err(invalid(format!(
                    "Invalid ASCII character in string literal for {name}"
                )));
            }
            CqlValue::Ascii(s.clone())
        }
        (Literal::String(s), CqlType::Timestamp) => {
            CqlValue::Timestamp(parse_timestamp(s).ok_or_else(|| {
                invalid(format!("Unable to coerce '{s}' to a formatted date (long)"))
            })?)
        }
        (Literal::String(s), CqlType::Date) => CqlValue::Date(
            parse_date(s)
                .ok_or_else(|| invalid(format!("Unable to coerce '{s}' to a formatted date")))?,
        ),
        (Literal::String(s), CqlType::Varint) => {
            CqlValue::Varint(s.parse::<Varint>().map_err(|_| mismatch())?)
        }
        (Literal::String(s), CqlType::Decimal) => {
            CqlValue::Decimal(s.parse::<Decimal>().map_err(|_| mismatch())?)
        }
        (Literal::String(s), CqlType::Inet) => {
            CqlValue::Inet(parse_inet(s).map_err(|e| invalid(e.to_string()))?)
        }
        // A string or an integer (Cassandra reads both as TimeType text; digits are
        // nanoseconds).
        (Literal::String(s) | Literal::Integer(s), CqlType::Time) => {
            CqlValue::Time(parse_time(s).map_err(|e| invalid(e.to_string()))?)
        }
        // Cassandra accepts an integer for a duration too, and then fails to read it as one.
        (Literal::Duration(s) | Literal::Integer(s), CqlType::Duration) => CqlValue::Duration(
            s.parse::<CqlDuration>()
                .map_err(|e| invalid(e.to_string()))?,
        ),
        (Literal::Integer(s), CqlType::Int) => CqlValue::Int(parse_int(s, name, ty)?),
        (Literal::Integer(s), CqlType::BigInt) => CqlValue::BigInt(parse_int(s, name, ty)?),
        (Literal::Integer(s), CqlType::SmallInt) => CqlValue::SmallInt(parse_int(s, name, ty)?),
        (Literal::Integer(s), CqlType::TinyInt) => CqlValue::TinyInt(parse_int(s, name, ty)?),
        (Literal::Integer(s), CqlType::Timestamp) => CqlValue::Timestamp(parse_int(s, name, ty)?),
        (Literal::Integer(s), CqlType::Date) => {
            // An integer date is the raw unsigned day number, as in Cassandra.
            CqlValue::Date(parse_int::<u32>(s, name, ty)?)
        }
        (Literal::Integer(s), CqlType::Varint) => {
            CqlValue::Varint(s.parse::<Varint>().map_err(|_| mismatch())?)
        }
        (Literal::Integer(s) | Literal::Float(s), CqlType::Decimal) => {
            CqlValue::Decimal(s.parse::<Decimal>().map_err(|_| mismatch())?)
        }
        (Literal::Integer(s) | Literal::Float(s), CqlType::Float) => {
            CqlValue::Float(s.parse::<f32>().map_err(|_| mismatch())?)
        }
        (Literal::Integer(s) | Literal::Float(s), CqlType::Double) => {
            CqlValue::Double(s.parse::<f64>().map_err(|_| mismatch())?)
        }
        (Literal::NaN, CqlType::Float) => CqlValue::Float(f32::NAN),
        (Literal::NaN, CqlType::Double) => CqlValue::Double(f64::NAN),
        (Literal::Infinity, CqlType::Float) => CqlValue::Float(f32::INFINITY),
        (Literal::Infinity, CqlType::Double) => CqlValue::Double(f64::INFINITY),
        (Literal::NegInfinity, CqlType::Float) => CqlValue::Float(f32::NEG_INFINITY),
        (Literal::NegInfinity, CqlType::Double) => CqlValue::Double(f64::NEG_INFINITY),
        (Literal::Uuid(u), CqlType::Uuid) => CqlValue::Uuid(u.to_be_bytes()),
        (Literal::Uuid(u), CqlType::TimeUuid) => {
            let bytes = u.to_be_bytes();
            if uuid_version(&bytes) != 1 {
                return Err(invalid(format!(
                    "Invalid version for TimeUUID type for {name}"
                )));
            }
            CqlValue::TimeUuid(bytes)
        }
        (Literal::Blob(b), CqlType::Blob) => CqlValue::Blob(b.clone()),
        (Literal::Boolean(b), CqlType::Boolean) => CqlValue::Boolean(*b),
        _ => return Err(mismatch()),
    };
    Ok(Eval::Value(value))
}

fn parse_int<T: TryFrom<i128>>(s: &str, name: &str, ty: CqlType) -> Result<T, ErrorResponse> {
    let wide: i128 = s
        .parse()
        .map_err(|_| invalid(format!("Invalid integer {s} for {name} of type {ty}")))?;
    T::try_from(wide)
        .map_err(|_| invalid(format!("Value {s} is out of range for {name} of type {ty}")))
}

/// A function call in a term position.
fn call(
    func: &str,
    args: &[Term],
    ty: CqlType,
    name: &str,
    ctx: &EvalContext<'_>,
) -> Result<CqlValue, ErrorResponse> {
    let no_args = |v: CqlValue| {
        if args.is_empty() {
            Ok(v)
        } else {
            Err(invalid(format!("Invalid number of arguments in call to function {func}: 0 required but {} provided", args.len())))
        }
    };
    let value = match func {
        "now" | "currenttimeuuid" => no_args(CqlValue::TimeUuid(timeuuid_at(ctx.now_micros)))?,
        "uuid" => no_args(CqlValue::Uuid(crate::schema::Uuid::random().0))?,
        "currenttimestamp" => no_args(CqlValue::Timestamp(ctx.now_micros.div_euclid(1000)))?,
        "currentdate" => no_args(CqlValue::Date(date_of_millis(
            ctx.now_micros.div_euclid(1000),
        )))?,
        // Millisecond precision, as Cassandra's `currentTime()`.
        "currenttime" => no_args(CqlValue::Time(
            ctx.now_micros.div_euclid(1000).rem_euclid(86_400_000) * 1_000_000,
        ))?,
        "totimestamp" | "todate" | "tounixtimestamp" => {
            let [arg] = args else {
                return Err(invalid(format!(
                    "Invalid number of arguments in call to function {func}: 1 required"
                )));
            };
            let millis = match eval_native(arg, CqlType::TimeUuid, name, ctx) {
                Ok(Eval::Value(CqlValue::TimeUuid(u))) => timeuuid_millis(&u),
                _ => match eval_native(arg, CqlType::Timestamp, name, ctx)? {
                    Eval::Value(CqlValue::Timestamp(ms)) => ms,
                    _ => return Err(invalid(format!("Invalid argument to function {func}"))),
                },
            };
            match func {
                "totimestamp" => CqlValue::Timestamp(millis),
                "todate" => CqlValue::Date(date_of_millis(millis)),
                _ => CqlValue::BigInt(millis),
            }
        }
        "mintimeuuid" | "maxtimeuuid" => {
            let [arg] = args else {
                return Err(invalid(format!(
                    "Invalid number of arguments in call to function {func}: 1 required"
                )));
            };
            let ms =
                eval_native(arg, CqlType::Timestamp, name, ctx)?.required("timestamp argument")?;
            let CqlValue::Timestamp(ms) = ms else {
                return Err(invalid(format!("Invalid argument to function {func}")));
            };
            CqlValue::TimeUuid(bounding_timeuuid(ms, func == "maxtimeuuid"))
        }
        _ => return Err(invalid(format!("Unknown function '{func}'"))),
    };
    if let Some(returned) = value.native_type().filter(|t| *t != ty) {
        return Err(invalid(format!(
            "Type error: {func}() returns {returned} but {name} is of type {ty}"
        )));
    }
    Ok(value)
}

/// 100-ns intervals between the UUID epoch (1582-10-15) and the Unix epoch.
const UUID_EPOCH_OFFSET: i64 = 0x01B2_1DD2_1381_4000;

fn timeuuid_from_ticks(ticks: i64, clock_and_node: u64) -> [u8; 16] {
    let t = ticks as u64;
    let time_low = (t & 0xFFFF_FFFF) as u32;
    let time_mid = ((t >> 32) & 0xFFFF) as u16;
    let time_hi = (((t >> 48) & 0x0FFF) as u16) | 0x1000;
    let mut out = [0u8; 16];
    out[0..4].copy_from_slice(&time_low.to_be_bytes());
    out[4..6].copy_from_slice(&time_mid.to_be_bytes());
    out[6..8].copy_from_slice(&time_hi.to_be_bytes());
    let mut lsb = clock_and_node.to_be_bytes();
    lsb[0] = (lsb[0] & 0x3F) | 0x80;
    out[8..16].copy_from_slice(&lsb);
    out
}

/// A version-1 UUID for `micros` with a random clock sequence and node.
pub(crate) fn timeuuid_at(micros: i64) -> [u8; 16] {
    let ticks = micros.saturating_mul(10).saturating_add(UUID_EPOCH_OFFSET);
    // Random low bits of the timestamp too, so two calls in one microsecond differ.
    let jitter: u64 = mosaic_env::rng::random_u64() % 10;
    timeuuid_from_ticks(
        ticks.saturating_add(jitter as i64),
        mosaic_env::rng::random_u64(),
    )
}

fn bounding_timeuuid(millis: i64, max: bool) -> [u8; 16] {
    let ticks = millis
        .saturating_mul(10_000)
        .saturating_add(UUID_EPOCH_OFFSET);
    if max {
        let mut u = timeuuid_from_ticks(ticks.saturating_add(9_999), u64::MAX);
        u[8] = 0x7F;
        u
    } else {
        let mut u = timeuuid_from_ticks(ticks, 0x8080_8080_8080_8080);
        u[8] = 0x80;
        u
    }
}

/// Milliseconds since the epoch of a version-1 UUID's timestamp.
pub(crate) fn timeuuid_millis(u: &[u8; 16]) -> i64 {
    let time_low = u64::from(u32::from_be_bytes([u[0], u[1], u[2], u[3]]));
    let time_mid = u64::from(u16::from_be_bytes([u[4], u[5]]));
    let time_hi = u64::from(u16::from_be_bytes([u[6], u[7]]) & 0x0FFF);
    let ticks = (time_hi << 48) | (time_mid << 32) | time_low;
    (ticks as i64 - UUID_EPOCH_OFFSET).div_euclid(10_000)
}

/// The largest year (in absolute value) a date or timestamp literal may name.
const YEAR_ABS_MAX: i64 = 10_000_000;

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let d = i64::from(d);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Civil date of days since 1970-01-01.
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn date_of_millis(ms: i64) -> u32 {
    let days = ms.div_euclid(86_400_000);
    (i64::from(DATE_EPOCH) + days).clamp(0, i64::from(u32::MAX)) as u32
}

fn parse_ymd(s: &str) -> Option<(i64, u32, u32)> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let mut parts = body.splitn(3, '-');
    let y: i64 = parts.next()?.parse().ok()?;
    // Far beyond both `date` (±5.8 million years) and `timestamp` (±292 million years in
    // milliseconds would overflow below); keeps the day arithmetic in range.
    if y > YEAR_ABS_MAX {
        return None;
    }
    let m: u32 = parts.next()?.parse().ok()?;
    let d: u32 = parts.next()?.parse().ok()?;
    let dim = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 => {
            let y = if neg { -y } else { y };
            if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 {
                29
            } else {
                28
            }
        }
        _ => return None,
    };
    if d == 0 || d > dim {
        return None;
    }
    Some((if neg { -y } else { y }, m, d))
}

/// Parses a `date` literal: `yyyy-mm-dd`, or the raw day number.
pub(crate) fn parse_date(s: &str) -> Option<u32> {
    let (y, m, d) = parse_ymd(s.trim())?;
    let days = days_from_civil(y, m, d);
    u32::try_from(i64::from(DATE_EPOCH) + days).ok()
}

/// Parses a `timestamp` literal as Cassandra accepts them: `yyyy-mm-dd[( |T)hh:mm[:ss[.fff]]][zone]`
/// (zone `Z`, `+hh`, `+hhmm`, `+hh:mm`; UTC when absent) or milliseconds as digits.
pub(crate) fn parse_timestamp(s: &str) -> Option<i64> {
    let s = s.trim();
    if let Ok(ms) = s.parse::<i64>() {
        return Some(ms);
    }
    let (date, rest) = match s.find(['T', ' ']) {
        Some(i) if i >= 8 => (s.get(..i)?, s.get(i + 1..)?.trim_start()),
        _ => {
            // Date only, perhaps with a zone: find a zone after the day part.
            let cut = s
                .get(1..)?
                .find(['+', 'Z'])
                .map(|i| i + 1)
                .unwrap_or(s.len());
            (s.get(..cut)?, s.get(cut..)?)
        }
    };
    let (y, m, d) = parse_ymd(date)?;
    let mut ms = days_from_civil(y, m, d).checked_mul(86_400_000)?;
    // Split the time from the zone.
    let zone_at = rest.find(['Z', '+', '-']).unwrap_or(rest.len());
    let (time, zone) = (rest.get(..zone_at)?.trim(), rest.get(zone_at..)?.trim());
    if !time.is_empty() {
        let mut it = time.splitn(3, ':');
        let h: i64 = it.next()?.parse().ok()?;
        let mi: i64 = it.next()?.parse().ok()?;
        let (sec, frac) = match it.next() {
            Some(sec) => match sec.split_once('.') {
                Some((s, f)) => (s.parse::<i64>().ok()?, f),
                None => (sec.parse::<i64>().ok()?, ""),
            },
            None => (0, ""),
        };
        if !(0..=23).contains(&h)
            || !(0..=59).contains(&mi)
            || !(0..=59).contains(&sec)
            || frac.len() > 9
            || !frac.bytes().all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let frac_ms = if frac.is_empty() {
            0
        } else {
            let padded = format!("{frac:0<3}");
            padded.get(..3)?.parse::<i64>().ok()?
        };
        ms = ms.checked_add(((h * 60 + mi) * 60 + sec) * 1000 + frac_ms)?;
    }
    if !zone.is_empty() && zone != "Z" {
        let sign = if zone.starts_with('-') { -1 } else { 1 };
        let digits: String = zone.get(1..)?.chars().filter(|c| *c != ':').collect();
        if digits.len() != 2 && digits.len() != 4 {
            return None;
        }
        let hh: i64 = digits.get(..2)?.parse().ok()?;
        let mm: i64 = if digits.len() == 4 {
            digits.get(2..)?.parse().ok()?
        } else {
            0
        };
        if !(0..=23).contains(&hh) || !(0..=59).contains(&mm) {
            return None;
        }
        ms = ms.checked_sub(sign * (hh * 60 + mm) * 60_000)?;
    }
    Some(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_timestamps_parse_like_cassandra() {
        assert_eq!(parse_date("1970-01-01"), Some(DATE_EPOCH));
        assert_eq!(parse_date("1969-12-31"), Some(DATE_EPOCH - 1));
        assert_eq!(parse_date("2024-02-30"), None);
        assert_eq!(parse_timestamp("1970-01-01"), Some(0));
        assert_eq!(
            parse_timestamp("2011-02-03 04:05:00"),
            Some(1_296_705_900_000)
        );
        assert_eq!(
            parse_timestamp("2011-02-03T04:05:00.123Z"),
            Some(1_296_705_900_123)
        );
        assert_eq!(
            parse_timestamp("2011-02-03 04:05+0100"),
            Some(1_296_705_900_000 - 3_600_000)
        );
        assert_eq!(
            parse_timestamp("2011-02-03 04:05:00-01:00"),
            Some(1_296_705_900_000 + 3_600_000)
        );
        assert_eq!(parse_timestamp("1299038700000"), Some(1_299_038_700_000));
        assert_eq!(parse_timestamp("yesterday"), None);
        assert_eq!(
            parse_timestamp("0000000066666666666666000000-000000000000000004-003T0011"),
            None
        );
        assert_eq!(parse_timestamp("2011-02-03 -1:05"), None);
        assert_eq!(parse_date("99999999999-01-01"), None);
        for days in [-800_000i64, -1, 0, 1, 19_000, 2_000_000] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    #[test]
    fn timeuuids_carry_their_time() {
        let micros = 1_700_000_000_123_456;
        let u = timeuuid_at(micros);
        assert_eq!(uuid_version(&u), 1);
        assert_eq!(timeuuid_millis(&u), micros / 1000);
        let lo = bounding_timeuuid(1000, false);
        let hi = bounding_timeuuid(1000, true);
        assert_eq!(timeuuid_millis(&lo), 1000);
        assert_eq!(timeuuid_millis(&hi), 1000);
    }

    #[test]
    fn bound_lists_decode_and_garbage_is_refused() {
        let int = &DataType::Native(CqlType::Int);
        let mut b = Vec::new();
        b.extend_from_slice(&2i32.to_be_bytes());
        for v in [5i32, 7] {
            b.extend_from_slice(&4i32.to_be_bytes());
            b.extend_from_slice(&v.to_be_bytes());
        }
        assert_eq!(
            decode_list(&b, int, "k").unwrap(),
            vec![CqlValue::Int(5), CqlValue::Int(7)]
        );
        assert!(decode_list(&b[..b.len() - 1], int, "k").is_err());
        assert!(decode_list(&[0xff, 0xff, 0xff, 0xff], int, "k").is_err());
        assert!(decode_list(&[0x7f, 0xff, 0xff, 0xff], int, "k").is_err());
    }

    #[test]
    fn inet_time_and_duration_literals_convert_with_cassandras_errors() {
        let lit = |l: Literal, ty| literal(&l, ty, "c");
        let s = |t: &str| Literal::String(t.into());
        assert_eq!(
            lit(s("192.168.0.1"), CqlType::Inet).unwrap(),
            Eval::Value(CqlValue::Inet("192.168.0.1".parse().unwrap()))
        );
        assert_eq!(
            lit(s("x"), CqlType::Inet).unwrap_err().message,
            "Unable to make inet address from 'x'"
        );
        assert_eq!(
            lit(s("00:00:01.5"), CqlType::Time).unwrap(),
            Eval::Value(CqlValue::Time(1_500_000_000))
        );
        assert_eq!(
            lit(Literal::Integer("42".into()), CqlType::Time).unwrap(),
            Eval::Value(CqlValue::Time(42))
        );
        assert_eq!(
            lit(Literal::Integer("-1".into()), CqlType::Time)
                .unwrap_err()
                .message,
            "Unable to make long (for time) from: '-1'"
        );
        assert_eq!(
            lit(Literal::Duration("-3d".into()), CqlType::Duration).unwrap(),
            Eval::Value(CqlValue::Duration(CqlDuration::new(0, -3, 0).unwrap()))
        );
        assert_eq!(
            lit(Literal::Integer("5".into()), CqlType::Duration)
                .unwrap_err()
                .message,
            "Unable to convert '5' to a duration"
        );
        // Cassandra takes no string for a duration, and no duration for anything else.
        assert!(lit(s("1h"), CqlType::Duration).is_err());
        assert!(lit(Literal::Duration("1h".into()), CqlType::BigInt).is_err());
    }

    #[test]
    fn literals_take_the_type_of_their_place() {
        let v = literal(&Literal::Integer("300".into()), CqlType::BigInt, "c").unwrap();
        assert_eq!(v, Eval::Value(CqlValue::BigInt(300)));
        assert!(literal(&Literal::Integer("300".into()), CqlType::TinyInt, "c").is_err());
        assert!(literal(&Literal::String("x".into()), CqlType::Int, "c").is_err());
        assert_eq!(
            literal(&Literal::Null, CqlType::Int, "c").unwrap(),
            Eval::Null
        );
    }
}
