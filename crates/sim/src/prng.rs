//! The simulator's only source of randomness: `mosaic_env`'s SplitMix64, seeded.
//!
//! Small, fast and fully determined by its seed, so a run replays bit for bit. Independent
//! streams (configuration, network, faults, workload, each node's `Runtime::random`) are
//! forked from the run's seed, so a change in how often one of them is drawn from does
//! not shift every other decision of the run.

pub use mosaic_env::rng::SplitMix64 as Prng;
