//! A write's `USING` attributes: its timestamp and its TTL.

use crate::ast::Using;
use crate::frame::ErrorResponse;
use crate::processor::invalid;
use crate::processor::values::{eval_int, EvalContext};
use crate::schema::TableMeta;

use super::{WriteTime, TTL_MAX};

/// The write timestamp: `USING TIMESTAMP` (not with a batch's own), else the statement's
/// time; `i64::MIN` is reserved.
pub(super) fn write_timestamp(
    using: &Using,
    time: WriteTime,
    ctx: &EvalContext<'_>,
) -> Result<i64, ErrorResponse> {
    let ts = match &using.timestamp {
        Some(v) => {
            if time.ts_from_batch {
                return Err(invalid(
                    "Timestamp must be set either on BATCH or individual statements",
                ));
            }
            eval_int(v, mosaic_types::CqlType::BigInt, "[timestamp]", ctx)?.unwrap_or(time.ts)
        }
        None => time.ts,
    };
    if ts == i64::MIN {
        return Err(invalid(
            "Invalid timestamp: the minimum long value is reserved",
        ));
    }
    Ok(ts)
}

/// The TTL in seconds: `USING TTL` (0 to [`TTL_MAX`]), else the table's default.
pub(super) fn write_ttl(
    using: &Using,
    table: &TableMeta,
    ctx: &EvalContext<'_>,
) -> Result<i32, ErrorResponse> {
    let ttl = match &using.ttl {
        Some(v) => eval_int(v, mosaic_types::CqlType::Int, "[ttl]", ctx)?,
        None => None,
    };
    match ttl {
        Some(t) if t < 0 => Err(invalid(format!(
            "A TTL must be greater or equal to 0, but was {t}"
        ))),
        Some(t) if t > i64::from(TTL_MAX) => Err(invalid(format!(
            "ttl is too large. requested ({t}) maximum ({TTL_MAX})"
        ))),
        Some(t) => Ok(t as i32),
        None => Ok(table.params.default_time_to_live),
    }
}
