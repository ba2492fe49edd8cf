//! Lossless stage: buffer model, ECN, PFC, watchdog (being written).
