//! `mosaic cluster add-node`: a node joins a running local cluster, as a new node on the
//! next address or, with `--replace` naming a node of the directory whose data was wiped,
//! as that node's replacement at its own address.

use std::fs;
use std::path::Path;

use anyhow::{bail, Context, Result};

use super::{
    absolute, apply_settings, running_pid, start_node, AddNodeArgs, NodeFiles, UpArgs, NODES_MAX,
};
use crate::config::Config;
use crate::durable::write_atomic;

/// `mosaic cluster add-node`: the next node of the cluster directory, configured as the
/// first node (ports, cluster name and secret, settings) but on the next address, with
/// the first node as its seed and no tokens of its own: it bootstraps.
pub(super) fn add_node(args: &AddNodeArgs) -> Result<()> {
    let cluster_dir = absolute(&args.dir)?;
    let first = NodeFiles::new(&cluster_dir, 1);
    if !first.config().exists() {
        bail!(
            "no cluster in {}: start one with `mosaic cluster up --dir {}`",
            cluster_dir.display(),
            args.dir.display()
        );
    }
    let mut index = 2;
    while NodeFiles::new(&cluster_dir, index).config().exists() {
        index += 1;
    }
    if let Some(address) = &args.replace {
        // A node of the directory whose data directory was emptied is replaced at its own
        // address: its slot restarts (with its data, a new node replaces it).
        let replaced = Config {
            replace_address: Some(address.clone()),
            ..Config::load(&first.config())?
        }
        .replace_endpoint()?;
        let own = (1..index).find(|i| {
            Config::load(&NodeFiles::new(&cluster_dir, *i).config()).is_ok_and(|c| {
                Some(c.storage_endpoint()) == replaced
                    && !crate::durable::NodeIdentity::exists(&c.data_dir)
            })
        });
        if let Some(own) = own {
            return replace_in_place(args, &cluster_dir, own, address);
        }
    }
    if index > NODES_MAX {
        bail!("at most {NODES_MAX} local nodes");
    }
    let seed = Config::load(&first.config())?;
    let node = NodeFiles::new(&cluster_dir, index);
    fs::create_dir_all(&node.dir).with_context(|| format!("creating {}", node.dir.display()))?;
    let octet = u8::try_from(index).context("node index out of range")?;
    let mut config = seed.clone();
    config.listen_address = std::net::IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, octet));
    config.broadcast_address = None;
    config.data_dir = node.dir.join("data");
    config.initial_token = Vec::new();
    config.replace_address = args.replace.clone();
    let replaced = config.replace_endpoint()?;
    // Every node of the directory is a seed (the first may be the dead node replaced).
    config.seeds = (1..index)
        .filter_map(|i| Config::load(&NodeFiles::new(&cluster_dir, i).config()).ok())
        .map(|c| c.storage_endpoint())
        .filter(|e| Some(*e) != replaced)
        .map(|e| e.to_string())
        .collect();
    config.cluster.auto_bootstrap = true;
    if let Some(dc) = &args.datacenter {
        config.data_center = dc.clone();
    }
    if let Some(rack) = &args.rack {
        config.rack = rack.clone();
    }
    let config = apply_settings(config, &args.settings)?;
    write_and_start(
        args,
        &cluster_dir,
        index,
        &config,
        "written by `mosaic cluster add-node`",
    )?;
    println!("{}: joined the cluster", node.name);
    Ok(())
}

/// Writes node `index`'s `config` (its first line saying `how`) and starts the node (in the
/// cgroups `args` names).
fn write_and_start(
    args: &AddNodeArgs,
    cluster_dir: &Path,
    index: u32,
    config: &Config,
    how: &str,
) -> Result<()> {
    let node = NodeFiles::new(cluster_dir, index);
    let text = format!(
        "# {} of a local cluster, {how}. Keys: docs/mosaic.example.toml\n{}",
        node.name,
        config.to_toml()?
    );
    write_atomic(&node.config(), text.as_bytes())
        .with_context(|| format!("writing {}", node.config().display()))?;
    let up = UpArgs {
        nodes: index,
        dir: cluster_dir.to_path_buf(),
        port: config.native_port,
        storage_port: config.storage_port,
        admin_port: config.admin_port,
        num_tokens: config.num_tokens,
        datacenters: 1,
        racks: 1,
        settings: Vec::new(),
        cgroups: args.cgroups.clone(),
    };
    start_node(&node, &up, index).map(|_| ())
}

/// Restarts node `index`'s slot, its process dead and its data directory wiped, as the
/// replacement of the dead node at its own address (`replace_address` = `address`).
fn replace_in_place(
    args: &AddNodeArgs,
    cluster_dir: &Path,
    index: u32,
    address: &str,
) -> Result<()> {
    let node = NodeFiles::new(cluster_dir, index);
    if let Some(pid) = running_pid(&node)? {
        bail!(
            "{}: running (pid {pid}); only a dead node can be replaced",
            node.name
        );
    }
    let mut config = Config::load(&node.config())?;
    config.replace_address = Some(address.to_owned());
    // The tokens are the dead node's, learnt from the cluster (`cluster up` wrote them).
    config.initial_token = Vec::new();
    write_and_start(
        args,
        cluster_dir,
        index,
        &config,
        "replacing itself at its address (`mosaic cluster add-node --replace`)",
    )?;
    println!("{}: replaced the dead node at its address", node.name);
    Ok(())
}
