//! The RoCEv2 host emulator, on the lab's one raw socket and the data
//! plane's own frame parser ([`frames`]).
//!
//! The host is [`rc::run_host`]: an RDMA NIC whose options
//! ([`rc::HostCfg`]) are RC go-back-N (window, retransmission timeout,
//! ACK coalescing), DCQCN reaction point on or off (the notification point
//! always answers CE), PFC honouring on or off ([`pause`]), and receive at
//! its own line rate. The fabric scenarios and the DCQCN scene run it.
//!
//! Beside it, instruments for the PFC timing tests, which need a
//! check-before-every-frame loop and kernel time stamps rather than a NIC:
//!
//! | module | what it is |
//! |---|---|
//! | [`paced`] | a line-rate WRITE stream that honours PFC through the same [`pause`] gate and reports how late it stopped |
//! | [`receiver`] | a counting receiver |
//! | [`pfc`] | a PFC storm source (stuck NIC) and a MAC-control tap |
//! | [`dcbx`] | the NIC's LLDP/DCBX agent: willing (adopts the switch's configuration) or told to mismatch |
//! | [`qp`] | RC queue-pair state of the host: go-back-N requester, in-order responder |
//! | [`uet`], [`uet_host`] | a UET-like host instead of RoCEv2: per-packet entropy, PDS PSNs, selective ACK, an immediate NACK for a trimmed packet, selective retransmission |
//!
//! Everything runs in the calling thread's network namespace.

pub mod dcbx;
pub mod frames;
pub mod paced;
pub mod pause;
pub mod pfc;
pub mod qp;
pub mod rc;
pub mod receiver;
pub mod uet;
pub mod uet_host;

pub use dcbx::*;
pub use frames::*;
pub use paced::*;
pub use pause::*;
pub use pfc::*;
pub use qp::*;
pub use rc::*;
pub use receiver::*;
pub use uet_host::*;
