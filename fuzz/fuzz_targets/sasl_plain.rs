//! cargo-fuzz entry for `mosaic_fuzzing::sasl_plain` (the target's body and its doc live there, so
//! the regular test suite replays the same code on stable).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mosaic_fuzzing::sasl_plain::run(data));
