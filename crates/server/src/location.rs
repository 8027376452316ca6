//! The datacenter and rack a node last ran in, and its refusal to start in others.
//!
//! A node's datacenter and rack decide which ranges it replicates (NetworkTopologyStrategy
//! places replicas per datacenter, across racks), so a node whose `data_center` or `rack`
//! changed in its config would come back replicating ranges it holds no data for — as
//! Cassandra checks its snitch against `system.local` at start, the node refuses, naming
//! both values and the ways out. They are remembered in its identity (`node.toml`,
//! [`NodeIdentity`]); `ignore_data_center_change` / `ignore_rack_change` accept a change,
//! which is then remembered. An identity written before locations were remembered takes
//! the configured ones.

use std::path::Path;

use anyhow::{bail, Result};

use crate::config::Config;
use crate::durable::{NodeIdentity, NODE_FILE};

/// One remembered coordinate: the datacenter or the rack.
struct Coordinate<'a> {
    /// Its config key.
    key: &'static str,
    /// The key accepting a change of it.
    ignore_key: &'static str,
    /// What it is, in a sentence.
    what: &'static str,
    configured: &'a str,
    remembered: Option<&'a str>,
    ignored: bool,
}

/// `identity` with `config`'s datacenter and rack remembered, if that changes it (`None`:
/// it remembers them already). A changed datacenter or rack is refused, unless its ignore
/// key is set; the error names `data_dir`'s identity file.
pub fn check(
    identity: &NodeIdentity,
    config: &Config,
    data_dir: &Path,
) -> Result<Option<NodeIdentity>> {
    let coordinates = [
        Coordinate {
            key: "data_center",
            ignore_key: "ignore_data_center_change",
            what: "datacenter",
            configured: &config.data_center,
            remembered: identity.data_center.as_deref(),
            ignored: config.ignore_data_center_change,
        },
        Coordinate {
            key: "rack",
            ignore_key: "ignore_rack_change",
            what: "rack",
            configured: &config.rack,
            remembered: identity.rack.as_deref(),
            ignored: config.ignore_rack_change,
        },
    ];
    for c in &coordinates {
        match c.remembered {
            Some(before) if before != c.configured && !c.ignored => bail!(
                "cannot start: {key} {now:?} in the config differs from {before:?}, the {what} \
                 this node last ran in (remembered in {file}); the ranges it replicates would \
                 change without their data. Fix {key} in the config, or decommission this node \
                 and bootstrap it afresh in the new {what}, or set {ignore} = true to start \
                 with the new {what} (remembered from then on; run `mosaic repair` on this \
                 node after)",
                key = c.key,
                now = c.configured,
                what = c.what,
                file = data_dir.join(NODE_FILE).display(),
                ignore = c.ignore_key,
            ),
            Some(before) if before != c.configured => tracing::warn!(
                target: "mosaic",
                before,
                now = c.configured,
                "{} changed ({} = true): the new one is remembered; run `mosaic repair` on \
                 this node",
                c.key,
                c.ignore_key
            ),
            _ => {}
        }
    }
    if coordinates
        .iter()
        .all(|c| c.remembered == Some(c.configured))
    {
        return Ok(None);
    }
    Ok(Some(NodeIdentity {
        data_center: Some(config.data_center.clone()),
        rack: Some(config.rack.clone()),
        ..identity.clone()
    }))
}

/// [`check`], saving the identity in `data_dir` when it changes; the identity to run with.
pub fn remember(identity: NodeIdentity, config: &Config, data_dir: &Path) -> Result<NodeIdentity> {
    match check(&identity, config, data_dir)? {
        Some(changed) => {
            changed.save(data_dir)?;
            Ok(changed)
        }
        None => Ok(identity),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dc: &str, rack: &str) -> Config {
        Config {
            data_center: dc.to_owned(),
            rack: rack.to_owned(),
            ..Config::default()
        }
    }

    fn located(dc: &str, rack: &str) -> NodeIdentity {
        NodeIdentity {
            data_center: Some(dc.to_owned()),
            rack: Some(rack.to_owned()),
            ..NodeIdentity::generate(4)
        }
    }

    #[test]
    fn the_same_location_starts_and_changes_nothing() {
        let dir = Path::new("/data");
        let id = located("dc1", "r1");
        assert_eq!(check(&id, &config("dc1", "r1"), dir).unwrap(), None);
    }

    /// The error `check` gives for `id` started with `c`, which must name every one of `parts`.
    fn refusal(id: &NodeIdentity, c: &Config, parts: &[&str]) {
        let err = check(id, c, Path::new("/data")).unwrap_err().to_string();
        for part in parts {
            assert!(err.contains(part), "{part}: {err}");
        }
    }

    #[test]
    fn a_changed_datacenter_or_rack_is_refused_naming_both_and_the_way_out() {
        let dir = Path::new("/data");
        let id = located("dc1", "r1");
        refusal(
            &id,
            &config("dc2", "r1"),
            &[
                "data_center \"dc2\" in the config differs from \"dc1\"",
                "/data/node.toml",
                "decommission",
                "ignore_data_center_change = true",
            ],
        );
        refusal(
            &id,
            &config("dc1", "r2"),
            &[
                "rack \"r2\" in the config differs from \"r1\"",
                "ignore_rack_change = true",
            ],
        );
        // Each flag accepts its own change only.
        let mut c = config("dc2", "r2");
        c.ignore_rack_change = true;
        refusal(&id, &c, &["ignore_data_center_change"]);
        c.ignore_rack_change = false;
        c.ignore_data_center_change = true;
        refusal(&id, &c, &["ignore_rack_change"]);
        c.ignore_rack_change = true;
        assert!(check(&id, &c, dir).unwrap().is_some());
    }

    #[test]
    fn an_accepted_change_is_remembered_and_later_starts_need_no_flag() {
        let dir = tempfile::tempdir().unwrap();
        let id = located("dc1", "r1");
        id.save(dir.path()).unwrap();
        let mut c = config("dc1", "r2");
        c.ignore_rack_change = true;
        let now = remember(id.clone(), &c, dir.path()).unwrap();
        assert_eq!(now.rack.as_deref(), Some("r2"));
        assert_eq!((now.host_id, &now.tokens), (id.host_id, &id.tokens));
        let saved = NodeIdentity::load_or_create(dir.path(), 4).unwrap();
        assert_eq!(saved, now);
        // Without the flag now, the new rack starts, and the old one is refused.
        assert_eq!(
            check(&saved, &config("dc1", "r2"), dir.path()).unwrap(),
            None
        );
        assert!(check(&saved, &config("dc1", "r1"), dir.path()).is_err());
    }

    #[test]
    fn an_identity_from_before_locations_were_remembered_takes_the_configured_one() {
        let dir = tempfile::tempdir().unwrap();
        // node.toml as earlier releases wrote it: host id and tokens only.
        let old = "# This node's identity\n\
                   host_id = \"00000000-0000-4000-8000-000000000001\"\ntokens = [-5, 7]\n";
        std::fs::write(dir.path().join(NODE_FILE), old).unwrap();
        let id = NodeIdentity::load_or_create(dir.path(), 4).unwrap();
        assert_eq!(
            (id.data_center.as_deref(), id.rack.as_deref()),
            (None, None)
        );
        let now = remember(id.clone(), &config("dc3", "r9"), dir.path()).unwrap();
        assert_eq!(now.data_center.as_deref(), Some("dc3"));
        assert_eq!(now.rack.as_deref(), Some("r9"));
        assert_eq!(now.tokens, [-5, 7]);
        let saved = NodeIdentity::load_or_create(dir.path(), 4).unwrap();
        assert_eq!(saved, now);
        assert!(check(&saved, &config("dc1", "r9"), dir.path()).is_err());
    }
}
