//! `mosaic-sim`: runs many seeds of the deterministic cluster simulator outside CI.
//!
//! ```text
//! cargo run --release -p mosaic-sim -- --seeds 100000 --from 0
//! cargo run -p mosaic-sim -- --seeds 1 --from 1234 --verbose
//! cargo run --release -p mosaic-sim -- --lwt --seeds 20000   # with lightweight transactions
//! cargo run --release -p mosaic-sim -- --moves --seeds 20000 # with joins, leaves, removals, replacements
//! ```
//!
//! Prints `MOSAIC_SIM_SEED=<n>` with the violations of every failing seed, a summary at
//! the end, and exits non-zero if any seed failed.

use std::process::ExitCode;
use std::time::Instant;

use mosaic_sim::{run_with, Options, Report, Storage, Summary};

struct Args {
    seeds: u64,
    from: u64,
    verbose: bool,
    lwt: bool,
    moves: bool,
    storage: Storage,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        seeds: 1000,
        from: 0,
        verbose: false,
        lwt: false,
        moves: false,
        storage: Storage::Memory,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut number = |name: &str| -> Result<u64, String> {
            let v = it.next().ok_or(format!("{name} needs a value"))?;
            v.parse().map_err(|e| format!("{name} {v}: {e}"))
        };
        match a.as_str() {
            "--seeds" => args.seeds = number("--seeds")?,
            "--from" => args.from = number("--from")?,
            "--verbose" | "-v" => args.verbose = true,
            "--lwt" => args.lwt = true,
            "--moves" => args.moves = true,
            "--disk" => {
                let v = it.next().ok_or("--disk needs a layout or `any`")?;
                let layout = match v.as_str() {
                    "any" => None,
                    name => Some(
                        mosaic_types::Layout::parse(name)
                            .ok_or(format!("--disk {name}: not a layout"))?,
                    ),
                };
                args.storage = Storage::Disk(layout);
            }
            "--help" | "-h" => return Err(
                "usage: mosaic-sim [--seeds N] [--from S] [--verbose] [--lwt] [--moves] [--disk LAYOUT|any]"
                    .into(),
            ),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

fn describe(r: &Report) {
    println!("seed {}: {:?}", r.seed, r.config);
    if !r.layouts.is_empty() {
        println!("  layouts {:?}", r.layouts);
    }
    println!(
        "  {} virtual ms, {} polls, trace {:016x}",
        r.virtual_ms, r.polls, r.trace_hash
    );
    println!("  workload {:?}", r.stats);
    println!("  network {:?}", r.net);
    println!("  faults {:?}", r.faults);
    if r.moves.any() {
        println!("  topology changes {:?}", r.moves);
    }
    if r.config.lwt.is_some() {
        println!("  lightweight transactions {:?}", r.lwt);
    }
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    #[allow(clippy::disallowed_methods)] // Reports the run's wall time; no decision depends on it.
    let started = Instant::now();
    let options = Options {
        lwt: args.lwt,
        moves: args.moves,
        storage: args.storage,
        ..Options::default()
    };
    let mut summary = Summary::default();
    for seed in args.from..args.from.saturating_add(args.seeds) {
        let r = run_with(seed, &options);
        if args.verbose {
            describe(&r);
        }
        if !r.passed() {
            println!("MOSAIC_SIM_SEED={seed} failed:");
            for v in &r.violations {
                println!("  {v}");
            }
        }
        summary.add(&r);
    }
    println!(
        "seeds {}..{} in {:.1?}: {summary}",
        args.from,
        args.from.saturating_add(args.seeds),
        started.elapsed()
    );
    if summary.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
