//! `[limits]`: the checks of the section, and the part of it handed to the statement layer
//! (`mosaic_cql::processor::StatementLimits`). The keys and their defaults are in the parent
//! module.

use anyhow::{bail, Result};

use super::LimitsConfig;

/// The smallest frame limit we accept: a STARTUP with every usual option fits easily.
const FRAME_SIZE_BYTES_MIN: u32 = 4096;

impl LimitsConfig {
    pub(super) const STATEMENT: mosaic_cql::processor::StatementLimits =
        mosaic_cql::processor::StatementLimits::DEFAULT;

    /// The bounds the statement layer enforces.
    pub fn statement_limits(&self) -> mosaic_cql::processor::StatementLimits {
        mosaic_cql::processor::StatementLimits {
            partition_key_restrictions_max: self.partition_key_restrictions_max,
            clustering_key_restrictions_max: self.clustering_key_restrictions_max,
            batch_size_warn_threshold_bytes: self.batch_size_warn_threshold_bytes,
            batch_size_fail_threshold_bytes: self.batch_size_fail_threshold_bytes,
            unpaged_result_size_bytes_max: self.unpaged_result_size_bytes_max,
            prepared_statements_cache_size_bytes: self.prepared_statements_cache_size_bytes,
        }
    }

    /// Checks the section.
    pub(super) fn validate(&self) -> Result<()> {
        if self.handshake_timeout_ms == 0 {
            bail!("[limits] handshake_timeout_ms must be at least 1");
        }
        if self.connection_count_max == 0
            || self.connection_requests_in_flight_max == 0
            || self.node_requests_concurrent_max == 0
        {
            bail!("[limits] connection_count_max, connection_requests_in_flight_max and node_requests_concurrent_max must be at least 1");
        }
        // Tokio's semaphores hold at most usize::MAX >> 3 permits.
        let permits_max = 1 << 24;
        if self.connection_requests_in_flight_max > permits_max
            || self.node_requests_concurrent_max > permits_max
            || self.connection_count_max > permits_max
        {
            bail!("[limits] values must be at most {permits_max}");
        }
        if self.frame_size_bytes_max < FRAME_SIZE_BYTES_MIN {
            bail!("[limits] frame_size_bytes_max must be at least {FRAME_SIZE_BYTES_MIN}");
        }
        let mutation_max = mosaic_cluster::message::FRAME_PAYLOAD_MAX / 2;
        if !(FRAME_SIZE_BYTES_MIN as usize..=mutation_max).contains(&self.mutation_size_bytes_max) {
            bail!(
                "[limits] mutation_size_bytes_max must be between {FRAME_SIZE_BYTES_MIN} and \
                 {mutation_max} (half the internode frame limit)"
            );
        }
        if self.partition_key_restrictions_max == 0 || self.clustering_key_restrictions_max == 0 {
            bail!("[limits] partition_key_restrictions_max and clustering_key_restrictions_max must be at least 1");
        }
        if self.batch_size_warn_threshold_bytes > self.batch_size_fail_threshold_bytes {
            bail!("[limits] batch_size_warn_threshold_bytes must not exceed batch_size_fail_threshold_bytes");
        }
        if self.unpaged_result_size_bytes_max < 64 << 10 {
            bail!("[limits] unpaged_result_size_bytes_max must be at least 65536");
        }
        if self.prepared_statements_cache_size_bytes < 64 << 10 {
            bail!("[limits] prepared_statements_cache_size_bytes must be at least 65536");
        }
        // A tokio semaphore holds at most usize::MAX >> 3 permits; 1 TiB is far below.
        let in_flight = 4096..=1 << 40;
        if !in_flight.contains(&self.request_bytes_in_flight_max)
            || !in_flight.contains(&self.request_bytes_in_flight_per_address_max)
        {
            bail!("[limits] request_bytes_in_flight_max and request_bytes_in_flight_per_address_max must be between 4096 and 2^40");
        }
        Ok(())
    }
}
