//! Background threads: the one place core crates start an operating-system thread.
//!
//! Routing every spawn through here keeps the list of real concurrency in one place (a
//! simulator replaces the callers' threads, not this function) and gives every thread a
//! name, which is what `top -H`, `perf` and panic messages show.

use std::io;
use std::thread::JoinHandle;

/// Starts a named thread running `f`.
pub fn spawn_named<F, T>(name: impl Into<String>, f: F) -> io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    #[allow(clippy::disallowed_methods)] // This is the sanctioned wrapper.
    std::thread::Builder::new().name(name.into()).spawn(f)
}

#[cfg(test)]
mod tests {
    #[test]
    fn runs_the_closure_on_a_named_thread() {
        let h = super::spawn_named("mosaic-test", || {
            std::thread::current().name().map(str::to_owned)
        })
        .unwrap();
        assert_eq!(h.join().unwrap().as_deref(), Some("mosaic-test"));
    }
}
