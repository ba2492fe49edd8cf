//! DCBX (IEEE 802.1Qaz over LLDP) with the hosts: every port advertises
//! its PFC, ETS and application-priority configuration and checks its
//! peer's. The codec and the decisions are dataplane-common's
//! (`wire::lldp`, `wire::dcbx`, `dcbx`); here are the sockets, the timers
//! and the state operators read.
//!
//! | module | concern |
//! |---|---|
//! | [`advert`] | plan -> the LLDPDU a port sends (pure) |
//! | [`socket`] | the AF_PACKET LLDP socket of a port, and why not XDP |
//! | [`agent`] | the thread: send, receive, age, check, record |
//! | [`state`] | the per-port state file `show dcbx` and metrics read |

pub mod advert;
pub mod agent;
pub mod socket;
pub mod state;
