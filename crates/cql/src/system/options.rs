//! Tables' options as `system_schema.tables` shows them and `DESCRIBE` prints them:
//! Cassandra 4.0's defaults, a user table's options from its parameters, a system
//! table's, their canonical text, and the map syntax they are written in.

use std::collections::BTreeMap;

use super::rows::LAYOUT_EXTENSION;
use super::tables::{Compaction, TableDef};
use crate::schema::{TableMeta, TableParams, Uuid};

/// A table's options as `system_schema.tables` shows them.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TableOptions {
    pub(crate) additional_write_policy: String,
    pub(crate) bloom_filter_fp_chance: f64,
    pub(crate) caching: BTreeMap<String, String>,
    pub(crate) cdc: bool,
    pub(crate) comment: String,
    pub(crate) compaction: BTreeMap<String, String>,
    pub(crate) compression: BTreeMap<String, String>,
    pub(crate) crc_check_chance: f64,
    pub(crate) dclocal_read_repair_chance: f64,
    pub(crate) default_time_to_live: i32,
    pub(crate) extensions: BTreeMap<String, Vec<u8>>,
    pub(crate) gc_grace_seconds: i32,
    pub(crate) id: Uuid,
    pub(crate) max_index_interval: i32,
    pub(crate) memtable_flush_period_in_ms: i32,
    pub(crate) min_index_interval: i32,
    pub(crate) read_repair: String,
    pub(crate) read_repair_chance: f64,
    pub(crate) speculative_retry: String,
}

const STCS: &str = "org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy";
const LCS: &str = "org.apache.cassandra.db.compaction.LeveledCompactionStrategy";
const COMPACTION_PACKAGE: &str = "org.apache.cassandra.db.compaction.";
const COMPRESSION_PACKAGE: &str = "org.apache.cassandra.io.compress.";

fn string_map(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
    entries
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Cassandra 4.0's defaults for a table created without options.
fn default_options(id: Uuid) -> TableOptions {
    TableOptions {
        additional_write_policy: "99p".to_owned(),
        bloom_filter_fp_chance: 0.01,
        caching: string_map(&[("keys", "ALL"), ("rows_per_partition", "NONE")]),
        cdc: false,
        comment: String::new(),
        compaction: string_map(&[
            ("class", STCS),
            ("max_threshold", "32"),
            ("min_threshold", "4"),
        ]),
        compression: string_map(&[
            ("chunk_length_in_kb", "16"),
            ("class", "org.apache.cassandra.io.compress.LZ4Compressor"),
        ]),
        crc_check_chance: 1.0,
        // No longer used by Cassandra 4.0, which shows 0 for both read repair chances.
        dclocal_read_repair_chance: 0.0,
        default_time_to_live: 0,
        extensions: BTreeMap::new(),
        gc_grace_seconds: 864_000,
        id,
        max_index_interval: 2048,
        memtable_flush_period_in_ms: 0,
        min_index_interval: 128,
        read_repair: "BLOCKING".to_owned(),
        read_repair_chance: 0.0,
        speculative_retry: "99p".to_owned(),
    }
}

/// A system table's id: stable across nodes and restarts, derived from its names (as
/// Cassandra derives them, though with another digest).
pub(crate) fn system_table_id(table: &TableDef) -> Uuid {
    let name = format!("{}{}", table.keyspace, table.name);
    Uuid::from_digest(xxhash_rust::xxh3::xxh3_128(name.as_bytes()))
}

/// The options of a system table: Cassandra compiles them with read repair off and an
/// hourly memtable flush.
pub(crate) fn system_table_options(table: &TableDef) -> TableOptions {
    let mut o = default_options(system_table_id(table));
    o.comment = table.comment.to_owned();
    o.gc_grace_seconds = table.gc_grace_seconds;
    o.default_time_to_live = table.default_time_to_live;
    o.memtable_flush_period_in_ms = 3_600_000;
    match table.compaction {
        Compaction::SizeTiered => {}
        Compaction::SizeTieredMin2 => {
            o.compaction.insert("min_threshold".into(), "2".into());
        }
        Compaction::Leveled => {
            o.compaction.insert("class".into(), LCS.into());
            o.bloom_filter_fp_chance = 0.1;
        }
    }
    o
}

/// The options of a user table: Mosaic's own, the Cassandra options it keeps verbatim
/// (normalized as Cassandra shows them), Cassandra's defaults for the rest, and the replica
/// layout as an extension.
pub(crate) fn user_table_options(table: &TableMeta) -> TableOptions {
    params_options(&table.params, crate::schema::Uuid(table.id.0))
}

/// The options `params` give a table with id `id`.
fn params_options(params: &TableParams, id: Uuid) -> TableOptions {
    let mut o = default_options(id);
    o.comment = params.comment.clone();
    o.default_time_to_live = params.default_time_to_live;
    o.gc_grace_seconds = params.gc_grace_seconds;
    let extra = |name: &str| params.extra.get(name).map(String::as_str);
    if let Some(map) = extra("compaction").and_then(parse_map) {
        o.compaction = compaction(map);
    }
    o.bloom_filter_fp_chance = default_bloom_filter_fp_chance(&o.compaction);
    if let Some(map) = extra("compression").and_then(parse_map) {
        o.compression = compression(map);
    }
    if let Some(map) = extra("caching").and_then(parse_map) {
        for (k, v) in map {
            let v = if v.parse::<i64>().is_ok() {
                v
            } else {
                v.to_ascii_uppercase()
            };
            o.caching.insert(k, v);
        }
    }
    let double = |name: &str, slot: &mut f64| {
        if let Some(v) = extra(name).and_then(|v| v.trim().parse::<f64>().ok()) {
            *slot = v;
        }
    };
    double("bloom_filter_fp_chance", &mut o.bloom_filter_fp_chance);
    double("crc_check_chance", &mut o.crc_check_chance);
    let int = |name: &str, slot: &mut i32| {
        if let Some(v) = extra(name).and_then(|v| v.trim().parse::<i32>().ok()) {
            *slot = v;
        }
    };
    int("max_index_interval", &mut o.max_index_interval);
    int("min_index_interval", &mut o.min_index_interval);
    int(
        "memtable_flush_period_in_ms",
        &mut o.memtable_flush_period_in_ms,
    );
    if let Some(v) = extra("speculative_retry") {
        o.speculative_retry = speculative_retry(v);
    }
    if let Some(v) = extra("additional_write_policy") {
        o.additional_write_policy = speculative_retry(v);
    }
    if let Some(v) = extra("read_repair") {
        o.read_repair = v.trim().to_ascii_uppercase();
    }
    if let Some(v) = extra("cdc").and_then(|v| v.trim().parse::<bool>().ok()) {
        o.cdc = v;
    }
    if let Some(map) = extra("extensions").and_then(parse_map) {
        for (k, v) in map {
            let bytes = crate::schema::decode_blob_literal(&v).unwrap_or_else(|| v.into_bytes());
            o.extensions.insert(k, bytes);
        }
    }
    o.extensions.insert(
        LAYOUT_EXTENSION.to_owned(),
        params.layout_text().into_bytes(),
    );
    o
}

/// Cassandra's default false-positive chance, which depends on the compaction strategy.
fn default_bloom_filter_fp_chance(compaction: &BTreeMap<String, String>) -> f64 {
    if compaction.get("class").map(String::as_str) == Some(LCS) {
        0.1
    } else {
        0.01
    }
}

/// The Cassandra options of `params` as the DDL layer should keep them: each option that
/// differs from Cassandra's default, in the normalized form `system_schema.tables` shows
/// (maps as `{'k': 'v', …}`, extensions other than the layout as blob constants), plus
/// any `id` given. Tables whose options are the same then have equal parameters (and
/// equal schema digests), however the options were written — in particular a table
/// recreated from its `DESCRIBE` output, which spells out every default.
pub(crate) fn canonical_table_options(params: &TableParams) -> BTreeMap<String, String> {
    let o = params_options(params, Uuid::default());
    let mut d = default_options(Uuid::default());
    d.bloom_filter_fp_chance = default_bloom_filter_fp_chance(&o.compaction);
    let mut out = BTreeMap::new();
    for ((name, value), (_, default)) in o.described().into_iter().zip(d.described()) {
        // Mosaic keeps these in its own parameters, and the layout extension is the
        // layout.
        if matches!(
            name,
            "comment" | "default_time_to_live" | "gc_grace_seconds" | "extensions"
        ) || value == default
        {
            continue;
        }
        out.insert(name.to_owned(), value.stored_text());
    }
    let extensions: BTreeMap<String, String> = o
        .extensions
        .iter()
        .filter(|(k, _)| k.as_str() != LAYOUT_EXTENSION)
        .map(|(k, v)| (k.clone(), crate::schema::encode_blob_literal(v)))
        .collect();
    if !extensions.is_empty() {
        out.insert("extensions".to_owned(), map_text(&extensions));
    }
    if let Some(id) = params.extra.get("id") {
        out.insert("id".to_owned(), id.clone());
    }
    out
}

/// One table option's value, typed: what `DESCRIBE` prints and the DDL layer keeps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum OptionValue<'o> {
    /// A string.
    Text(&'o str),
    /// A double.
    Double(f64),
    /// An int.
    Int(i32),
    /// A boolean.
    Bool(bool),
    /// A map of strings.
    Map(&'o BTreeMap<String, String>),
    /// A map of blobs (`extensions`).
    Blobs(&'o BTreeMap<String, Vec<u8>>),
}

impl OptionValue<'_> {
    /// The text the DDL layer keeps for it (what [`user_table_options`] reads back).
    fn stored_text(self) -> String {
        match self {
            OptionValue::Text(s) => s.to_owned(),
            OptionValue::Double(v) => v.to_string(),
            OptionValue::Int(v) => v.to_string(),
            OptionValue::Bool(v) => v.to_string(),
            OptionValue::Map(map) => map_text(map),
            OptionValue::Blobs(map) => map_text(
                &map.iter()
                    .map(|(k, v)| (k.clone(), crate::schema::encode_blob_literal(v)))
                    .collect(),
            ),
        }
    }
}

impl TableOptions {
    /// The options `DESCRIBE` shows, in its (alphabetical) order: Cassandra 4.0's.
    pub(crate) fn described(&self) -> [(&'static str, OptionValue<'_>); 16] {
        use OptionValue::*;
        [
            (
                "additional_write_policy",
                Text(&self.additional_write_policy),
            ),
            (
                "bloom_filter_fp_chance",
                Double(self.bloom_filter_fp_chance),
            ),
            ("caching", Map(&self.caching)),
            ("cdc", Bool(self.cdc)),
            ("comment", Text(&self.comment)),
            ("compaction", Map(&self.compaction)),
            ("compression", Map(&self.compression)),
            ("crc_check_chance", Double(self.crc_check_chance)),
            ("default_time_to_live", Int(self.default_time_to_live)),
            ("extensions", Blobs(&self.extensions)),
            ("gc_grace_seconds", Int(self.gc_grace_seconds)),
            ("max_index_interval", Int(self.max_index_interval)),
            (
                "memtable_flush_period_in_ms",
                Int(self.memtable_flush_period_in_ms),
            ),
            ("min_index_interval", Int(self.min_index_interval)),
            ("read_repair", Text(&self.read_repair)),
            ("speculative_retry", Text(&self.speculative_retry)),
        ]
    }
}

/// A CQL string constant: single quotes, inner quotes doubled.
pub(crate) fn cql_string(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// A CQL map of strings in key order, `{'k': 'v', …}`: how `DESCRIBE` prints map options
/// and what [`parse_map`] reads back.
pub(crate) fn map_text(map: &BTreeMap<String, String>) -> String {
    let entries: Vec<String> = map
        .iter()
        .map(|(k, v)| format!("{}: {}", cql_string(k), cql_string(v)))
        .collect();
    format!("{{{}}}", entries.join(", "))
}

/// `compaction` as Cassandra 3.11 shows it: the class fully qualified, both thresholds.
fn compaction(mut map: BTreeMap<String, String>) -> BTreeMap<String, String> {
    let class = map.remove("class").unwrap_or_else(|| STCS.to_owned());
    let class = if class.contains('.') {
        class
    } else {
        format!("{COMPACTION_PACKAGE}{class}")
    };
    map.insert("class".into(), class);
    map.entry("max_threshold".into())
        .or_insert_with(|| "32".into());
    map.entry("min_threshold".into())
        .or_insert_with(|| "4".into());
    map
}

/// `compression` as Cassandra 3.11 shows it: `{'enabled': 'false'}` when off, otherwise
/// the class fully qualified and the chunk length in KiB.
fn compression(mut map: BTreeMap<String, String>) -> BTreeMap<String, String> {
    let disabled = map
        .get("enabled")
        .is_some_and(|v| v.eq_ignore_ascii_case("false"))
        || map.get("sstable_compression").is_some_and(String::is_empty)
        || map.get("class").is_some_and(String::is_empty);
    if disabled {
        return string_map(&[("enabled", "false")]);
    }
    map.remove("enabled");
    let class = map
        .remove("class")
        .or_else(|| map.remove("sstable_compression"))
        .unwrap_or_else(|| "LZ4Compressor".to_owned());
    let class = if class.contains('.') {
        class
    } else {
        format!("{COMPRESSION_PACKAGE}{class}")
    };
    map.insert("class".into(), class);
    let chunk = map
        .remove("chunk_length_kb")
        .or_else(|| map.remove("chunk_length_in_kb"))
        .unwrap_or_else(|| "64".to_owned());
    map.insert("chunk_length_in_kb".into(), chunk);
    map
}

/// `speculative_retry` and `additional_write_policy` as Cassandra 4.0 prints them: `99p`
/// (also given as `99PERCENTILE`), `10ms`, `ALWAYS`, `NEVER` (also given as `NONE`).
fn speculative_retry(text: &str) -> String {
    if let Ok(policy) = mosaic_types::SpeculativeRetry::parse(text) {
        return policy.to_string();
    }
    // A value from before options were checked: shown as close to Cassandra as it gets.
    let lower = text.trim().to_ascii_lowercase();
    let percentile = lower
        .strip_suffix("percentile")
        .or_else(|| lower.strip_suffix('p'))
        .and_then(|n| n.parse::<f64>().ok());
    if let Some(n) = percentile {
        // Cassandra prints the percentile with at most four decimals, no trailing zeros.
        let text = format!("{n:.4}");
        let text = text.trim_end_matches('0').trim_end_matches('.');
        format!("{text}p")
    } else if lower == "none" || lower == "never" {
        "NEVER".to_owned()
    } else if lower == "always" {
        "ALWAYS".to_owned()
    } else {
        lower
    }
}

/// Parses the map text the DDL layer keeps for map options: `{'k': 'v', …}` (quotes
/// doubled inside strings, unquoted words and numbers accepted). `None` if malformed, in
/// which case the default is shown.
pub(crate) fn parse_map(text: &str) -> Option<BTreeMap<String, String>> {
    let inner = text.trim().strip_prefix('{')?.strip_suffix('}')?;
    let mut p = MapText {
        chars: inner.chars().peekable(),
    };
    let mut map = BTreeMap::new();
    p.skip_whitespace();
    if p.at_end() {
        return Some(map);
    }
    loop {
        let key = p.item()?;
        p.skip_whitespace();
        p.expect(':')?;
        let value = p.item()?;
        map.insert(key, value);
        p.skip_whitespace();
        if p.at_end() {
            return Some(map);
        }
        p.expect(',')?;
    }
}

struct MapText<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
}

impl MapText<'_> {
    fn skip_whitespace(&mut self) {
        while self.chars.next_if(|c| c.is_whitespace()).is_some() {}
    }

    fn at_end(&mut self) -> bool {
        self.chars.peek().is_none()
    }

    fn expect(&mut self, c: char) -> Option<()> {
        self.chars.next_if_eq(&c).map(|_| ())
    }

    /// A quoted string or an unquoted word.
    fn item(&mut self) -> Option<String> {
        self.skip_whitespace();
        if self.expect('\'').is_some() {
            let mut s = String::new();
            loop {
                match self.chars.next()? {
                    '\'' if self.expect('\'').is_some() => s.push('\''),
                    '\'' => return Some(s),
                    c => s.push(c),
                }
            }
        }
        let mut s = String::new();
        while let Some(c) = self.chars.next_if(|c| !matches!(c, ':' | ',' | '\'')) {
            s.push(c);
        }
        let s = s.trim();
        (!s.is_empty()).then(|| s.to_owned())
    }
}
