//! `mosaic cleanup [--host H] [KEYSPACE [TABLE]]`: asks one node to drop the data it no
//! longer owns (`POST /cleanup`) and prints what each table and structure lost.

use anyhow::{bail, Result};

use super::{bytes, scope_path, HostArgs};
use crate::admin::api::CleanupReport;
use crate::admin::client;

/// `mosaic cleanup`: the node's tables (a keyspace's, or one table), one line each, with a
/// line per structure for layouts of several.
pub fn cleanup(host: &HostArgs, keyspace: Option<&str>, table: Option<&str>) -> Result<()> {
    let addr = host.addr()?;
    let login = host.credentials.login()?;
    let path = scope_path("cleanup", keyspace, table);
    let report: CleanupReport = match client::post_as(addr, &path, login.as_ref()) {
        Ok(r) => r,
        Err(e) => bail!("cleanup on {addr} did not complete: {e:#}"),
    };
    let (before, after, dropped) = report.tables.iter().fold((0, 0, 0), |(b, a, d), t| {
        (
            b + t.bytes_before,
            a + t.bytes_after,
            d + t.dropped_versions,
        )
    });
    println!(
        "cleanup on {addr}: {} tables, {} -> {} ({} versions not owned dropped)",
        report.tables.len(),
        bytes(before),
        bytes(after),
        dropped
    );
    for t in &report.tables {
        println!(
            "  {} ({}): {} -> {}, {} versions dropped",
            t.table,
            t.layout,
            bytes(t.bytes_before),
            bytes(t.bytes_after),
            t.dropped_versions
        );
        if t.structures.len() > 1 {
            for s in &t.structures {
                println!(
                    "    {}: {} -> {} ({} -> {} entries)",
                    s.structure,
                    bytes(s.bytes_before),
                    bytes(s.bytes_after),
                    s.entries_before,
                    s.entries_after
                );
            }
        }
        if let Some(note) = &t.note {
            println!("    note: {note}");
        }
        if let Some(e) = &t.error {
            println!("    error: {e}");
        }
    }
    Ok(())
}
