//! The RoCEv2 host emulator, one module per role, all on the lab's one raw
//! socket and one frame reader ([`frames`]):
//!
//! | role | what it emulates |
//! |---|---|
//! | [`rc`] | an RDMA NIC: RC queue pairs with go-back-N, ACK/NAK, DCQCN, PFC honouring (the fabric scenarios' hosts) |
//! | [`qp`] | RC queue-pair state: go-back-N requester, in-order responder |
//! | [`paced`] | a line-rate WRITE sender that honours PFC and reports how late it stopped |
//! | [`receiver`] | a counting receiver |
//! | [`pfc`] | a PFC storm source (stuck NIC) and a MAC-control tap |
//! | [`dcqcn`] | DCQCN reaction point and notification point |
//!
//! Everything runs in the calling thread's network namespace; addresses
//! live in the frames only.

pub mod dcqcn;
pub mod frames;
pub mod paced;
pub mod pfc;
pub mod qp;
pub mod rc;
pub mod receiver;

pub use dcqcn::*;
pub use frames::*;
pub use paced::*;
pub use pfc::*;
pub use qp::*;
pub use rc::*;
pub use receiver::*;
