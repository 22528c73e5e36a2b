//! Bump: OCI image references, registry resolution (index and per-platform digests, labels),
//! recipe flag migrations as data, the in-place catalog edit and the change-log entry.
//!
//! Must not know about: measuring, metrics, rendering.
