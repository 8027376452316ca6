//! The parts of a write that touch non-frozen collections: assignments to a collection
//! column and the list operations that need the list as read before the write.

use mosaic_rows::{Fragment, PartitionPrefix};
use mosaic_types::{CqlType, DataType};

use crate::ast::{AssignOp, Term};
use crate::frame::ErrorResponse;
use crate::schema::ColumnMeta;

use super::super::collections::{apply_list_op, assign, map_key_set, remove_keys, ListOp};
use super::super::invalid;
use super::super::values::{eval, Eval, EvalContext};
use super::Writer;

impl Writer<'_> {
    /// `f` with the list operations of its row (static or not) applied to the lists as
    /// read before the write (nothing on the first pass, which only records the rows).
    pub(super) fn with_list_ops(
        &self,
        mut f: Fragment,
        ops: &[(&ColumnMeta, bool, ListOp)],
        prefix: &PartitionPrefix,
        key: &[u8],
        is_static: bool,
    ) -> Result<Fragment, ErrorResponse> {
        for (col, _, op) in ops.iter().filter(|o| o.1 == is_static) {
            let mut prior = self.prior.borrow_mut();
            let Some(current) =
                prior.list(self.table.id, &self.schema, prefix, key, is_static, col.id)
            else {
                continue;
            };
            let column = f.complex.entry(col.id).or_default();
            apply_list_op(column, current, op, self.cell_time())?;
            if column.is_empty() {
                f.complex.remove(&col.id);
            }
        }
        Ok(f)
    }

    /// One assignment to a non-frozen collection column, into `target`'s multi-cell
    /// column.
    pub(super) fn assign_collection(
        &self,
        target: &mut Fragment,
        col: &ColumnMeta,
        a: &crate::ast::Assignment,
        ctx: &EvalContext<'_>,
    ) -> Result<(), ErrorResponse> {
        let name = col.name.as_str();
        let time = self.cell_time();
        let column = target.complex.entry(col.id).or_default();
        match (&a.element, a.op, &col.ty) {
            (Some(key), _, ty) => {
                let (key_ty, value_ty) = match ty {
                    DataType::Map(k, v) => ((**k).clone(), (**v).clone()),
                    DataType::List(e) => (CqlType::Int.into(), (**e).clone()),
                    _ => {
                        return Err(invalid(format!(
                            "Invalid operation ({a}) for set column {name}"
                        )))
                    }
                };
                let key_name = match ty {
                    DataType::Map(..) => format!("key({name})"),
                    _ => format!("idx({name})"),
                };
                let key = eval(key, &key_ty, &key_name, ctx)?;
                let value = eval(&a.value, &value_ty, &format!("value({name})"), ctx)?;
                assign(column, ty, name, a.op, Some(key), value, time)?;
            }
            (None, AssignOp::Remove, DataType::Map(..))
                if matches!(&a.value, Term::List(_))
                    || matches!(&a.value, Term::Map(m) if !m.is_empty()) =>
            {
                return Err(invalid(format!(
                    "Value for a map substraction has to be a set, but was: '{}'",
                    a.value
                )));
            }
            (None, AssignOp::Add, DataType::Map(..))
                if matches!(a.value, Term::List(_) | Term::Set(_) | Term::Tuple(_)) =>
            {
                return Err(invalid(format!(
                    "Value for a map addition has to be a map, but was: '{}'",
                    a.value
                )));
            }
            (None, AssignOp::Remove, DataType::Map(..)) => {
                let keys_ty = map_key_set(&col.ty).unwrap_or_else(|| col.ty.clone());
                if let Eval::Value(keys) = eval(&a.value, &keys_ty, name, ctx)? {
                    remove_keys(column, &keys, time);
                }
            }
            (None, op, ty) => {
                let value = eval(&a.value, ty, name, ctx)?;
                assign(column, ty, name, op, None, value, time)?;
            }
        }
        if column.is_empty() {
            target.complex.remove(&col.id);
        }
        Ok(())
    }
}
