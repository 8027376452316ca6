//! SSTables: being written by a helper session; see the brief.
