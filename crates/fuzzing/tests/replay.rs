//! Every fuzz target on its seeds, on `fuzz/corpus/<target>/` when `cargo fuzz` left one,
//! and on seeded mutations of them (bit flips, byte overwrites, truncations, splices): none
//! may panic. `MOSAIC_FUZZ_MUTATIONS=N` sets the mutations per target (default 20,000); a
//! failure names the target and the mutation's seed.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use mosaic_env::SplitMix64;
use mosaic_fuzzing::seeds::seeds;
use mosaic_fuzzing::TARGETS;

fn corpus(name: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(name);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| std::fs::read(e.ok()?.path()).ok())
        .collect()
}

fn mutate(rng: &mut SplitMix64, inputs: &[Vec<u8>]) -> Vec<u8> {
    let mut data = rng
        .pick(&(0..inputs.len()).collect::<Vec<_>>())
        .map_or_else(Vec::new, |i| inputs[i].clone());
    for _ in 0..rng.between(1, 4) {
        let len = data.len() as u64;
        match rng.below(5) {
            0 if len > 0 => {
                let i = rng.below(len) as usize;
                data[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len) as usize;
                data[i] = rng.next_u64() as u8;
            }
            2 => data.truncate(rng.below(len + 1) as usize),
            3 => {
                let at = rng.below(len + 1) as usize;
                let extra: Vec<u8> = (0..rng.below(16)).map(|_| rng.next_u64() as u8).collect();
                data.splice(at..at, extra);
            }
            _ => {
                if let Some(other) = rng.pick(&(0..inputs.len()).collect::<Vec<_>>()) {
                    let tail = &inputs[other];
                    let from = rng.below(tail.len() as u64 + 1) as usize;
                    data.truncate(rng.below(len + 1) as usize);
                    data.extend_from_slice(&tail[from..]);
                }
            }
        }
    }
    data
}

#[test]
fn every_fuzz_target_survives_its_seeds_corpus_and_mutations() {
    let mutations: u64 = std::env::var("MOSAIC_FUZZ_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    for (name, run) in TARGETS {
        let mut inputs = seeds(name);
        assert!(!inputs.is_empty(), "{name} has no seeds");
        inputs.extend(corpus(name));
        for (i, input) in inputs.iter().enumerate() {
            let r = catch_unwind(AssertUnwindSafe(|| run(input)));
            assert!(
                r.is_ok(),
                "{name}: input {i} of its seeds and corpus panicked"
            );
        }
        // The statement processor is slow per input; it gets a tenth of the mutations.
        let count = if name == "cql_statements" {
            mutations / 10
        } else {
            mutations
        };
        for seed in 0..count {
            let mut rng = SplitMix64::new(seed ^ 0xF022);
            let data = mutate(&mut rng, &inputs);
            let r = catch_unwind(AssertUnwindSafe(|| run(&data)));
            assert!(
                r.is_ok(),
                "{name}: mutation seed {seed} panicked on {data:?}"
            );
        }
    }
}
