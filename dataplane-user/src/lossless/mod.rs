//! Lossless control: the buffer model's tables and timer, PFC emission,
//! the PFC watchdog.

pub mod buffer;
pub mod dp_pfc;
pub mod emitter;
pub mod pfc;
pub mod pfc_path;
pub mod selftest;
pub mod timer_tx;
pub mod watchdog;
