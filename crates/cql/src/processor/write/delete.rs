//! DELETE: partition deletions, row deletions, range tombstones, and cell, column and
//! element tombstones of the columns it names.

use mosaic_rows::{Fragment, FragmentKind, PartitionPrefix};
use mosaic_types::{CqlType, DataType};

use crate::ast::DeleteStatement;
use crate::coordinator::Mutation;
use crate::frame::ErrorResponse;
use crate::schema::ColumnKind;

use super::super::collections::{delete_column, delete_element, set_field, ListOp};
use super::super::invalid;
use super::super::restrict::{self, Restrictions};
use super::super::values::{eval, EvalContext};
use super::Writer;

impl Writer<'_> {
    pub(super) fn delete(
        &self,
        s: &DeleteStatement,
        ctx: &EvalContext<'_>,
        out: &mut Vec<Mutation>,
    ) -> Result<(), ErrorResponse> {
        let r = restrict::analyse(self.table, &s.where_clause, ctx, &self.limits)?;
        let partitions = self.partitions(&r)?;
        if !s.columns.is_empty() {
            return self.delete_cells(s, &r, &partitions, ctx, out);
        }
        if !r.has_clustering() {
            for prefix in &partitions {
                let f = Fragment::partition_deletion(self.deletion());
                self.push(out, prefix, self.schema.partition_header_key(prefix), f);
            }
            return Ok(());
        }
        if let Some(rows) = self.full_rows(&r) {
            for prefix in &partitions {
                for ck in &rows {
                    let mut f = Fragment::new(FragmentKind::Row);
                    f.deletion = Some(self.deletion());
                    let key = self.row_key(prefix, ck)?;
                    self.push(out, prefix, key, f);
                }
            }
            return Ok(());
        }
        if let Some(problem) = r.clustering_problem(self.table) {
            return Err(invalid(problem));
        }
        let bounds = r.clustering_bounds(&self.schema)?;
        for prefix in &partitions {
            for (start, end) in &bounds {
                let key = self
                    .schema
                    .range_tombstone_key(prefix, start, end)
                    .map_err(|e| invalid(format!("Invalid range deletion: {e}")))?;
                let f = Fragment::range_deletion(self.deletion());
                self.push(out, prefix, key, f);
            }
        }
        Ok(())
    }

    /// `DELETE c1, c2 FROM …`: cell tombstones in the rows (and static rows) named.
    fn delete_cells(
        &self,
        s: &DeleteStatement,
        r: &Restrictions,
        partitions: &[PartitionPrefix],
        ctx: &EvalContext<'_>,
        out: &mut Vec<Mutation>,
    ) -> Result<(), ErrorResponse> {
        let mut regular = Fragment::new(FragmentKind::Row);
        let mut statics = Fragment::new(FragmentKind::Static);
        let mut list_ops = Vec::new();
        let time = self.cell_time();
        for deleted in &s.columns {
            let name = deleted.column.as_str();
            let col = restrict::column(self.table, name)?;
            if col.kind.is_primary_key() {
                return Err(invalid(format!(
                    "Invalid identifier {name} for deletion (should not be a PRIMARY KEY part)"
                )));
            }
            let target = if col.kind == ColumnKind::Static {
                &mut statics
            } else {
                &mut regular
            };
            if let Some(field) = &deleted.field {
                if !matches!(col.ty, DataType::Udt(_)) {
                    return Err(invalid(format!(
                        "Invalid deletion operation for frozen UDT column {name}"
                    )));
                }
                let column = target.complex.entry(col.id).or_default();
                set_field(
                    column,
                    &col.ty,
                    name,
                    field.as_str(),
                    super::super::values::Eval::Null,
                    time,
                )?;
                continue;
            }
            if self.table.counter && deleted.element.is_none() {
                // A counter's shards are cells of one multi-cell column.
                delete_column(target.complex.entry(col.id).or_default(), time);
                continue;
            }
            match (&deleted.element, col.ty.is_multi_cell()) {
                (None, false) => {
                    target.cells.insert(col.id, self.tombstone());
                }
                (None, true) => delete_column(target.complex.entry(col.id).or_default(), time),
                (Some(element), true) if matches!(col.ty, DataType::List(_)) => {
                    let index = super::list_index(element, name, ctx)?;
                    list_ops.push((
                        col,
                        col.kind == ColumnKind::Static,
                        ListOp::Delete { index },
                    ));
                }
                (Some(element), true) => {
                    let key_ty = match &col.ty {
                        DataType::Map(k, _) => (**k).clone(),
                        DataType::Set(e) => (**e).clone(),
                        _ => CqlType::Int.into(),
                    };
                    let key = eval(element, &key_ty, name, ctx)?
                        .required(&format!("element of {name}"))?;
                    delete_element(
                        target.complex.entry(col.id).or_default(),
                        &col.ty,
                        name,
                        key,
                        time,
                    )?;
                }
                (Some(_), false) => {
                    return Err(invalid(if col.ty.is_collection() {
                        format!("Invalid deletion operation for frozen collection column {name}")
                    } else {
                        format!("Invalid deletion operation for non collection column {name}")
                    }))
                }
            }
        }
        let rows = if super::writes_nothing(&regular, &list_ops, false) {
            Vec::new()
        } else {
            self.full_rows(r)
                .ok_or_else(|| invalid("Range deletions are not supported for specific columns"))?
        };
        self.push_rows(partitions, &rows, &statics, &regular, &list_ops, out)
    }
}
