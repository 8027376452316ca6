//! System tables, computed on read from the catalog and the coordinator's view of the
//! nodes: `system.local`, `system.peers`, `system.peers_v2` and `system_schema.*`.
