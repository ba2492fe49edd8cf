//! Load balancing: which member of a next-hop group a packet leaves by.
//!
//! Four pieces, each a pure function over plain state:
//!
//! * **Flow hash** ([`flow_hash`]): murmur3-style mixing of the 5-tuple and,
//!   for RoCEv2, the BTH destination QP (SAI `RDMA_BTH_DEST_QP`), seeded per
//!   switch so that tiers do not polarise. RoCE NICs often use one UDP source
//!   port for every QP, so without the QP all of a host pair's flows would
//!   share one path.
//! * **Next-hop groups** ([`Group`]): up to [`MAX_MEMBERS`] weighted members
//!   and a resilient table of [`NBUCKETS`] buckets built by the controller
//!   with [`build_buckets`], which moves only the buckets it must.
//! * **Flowlets** ([`Flowlet`], [`flowlet_next`]): a flow keeps its member
//!   until it pauses for longer than the group's flowlet timeout, or until
//!   its member goes down.
//! * **Port load** ([`PortRate`]): CONGA's discounting rate estimator,
//!   turned into a utilisation of the port's speed and into 8 quality bands
//!   ([`quality_band`]), which the `bandwidth` and `spray` modes compare.
//!
//! [`select`] puts them together for one packet, per the group's mode:
//!
//! | mode               | state        | choice                                                        |
//! |--------------------|--------------|---------------------------------------------------------------|
//! | [`MODE_HASH`]      | none         | bucket of the flow hash                                       |
//! | [`MODE_FLOWLET`]   | [`Flowlet`]  | new flowlet: bucket of the hash re-mixed with the flowlet's index |
//! | [`MODE_BANDWIDTH`] | [`Flowlet`]  | new flowlet: lowest band, ties by the hash among the tied     |
//! | [`MODE_SPRAY`]     | none         | every packet: lowest band, ties by the random number          |
//! | [`MODE_PLACE`]     | [`Flowlet`] in [`FlowWays`] | new flow: the port that frees first, ties by the hash; booked at once ([`place_booking`]) |
//!
//! A group with [`GROUP_F_UET_ENTROPY`] (config `uet_entropy = true`) places
//! UET packets ([`select_packet`] with `uet`) by the bucket of their flow
//! hash whatever its mode: the hash covers the UDP source port, which
//! carries UET's entropy value, so a value keeps its path while it is used
//! and a new value is hashed anew, with no flowlet entry and no load
//! reading (UET senders spray by changing the value and steer by the paths
//! their values map to). RoCEv2 and other traffic in the group keep the
//! mode.
//!
//! A sketch of the eBPF caller (maps: groups in a hash map, flowlets in an
//! array of [`FlowletSlot`]s, port rates by port):
//!
//! ```text
//! let hash = flow_hash(&key, SEED);
//! let e = flowlet_entry(FLOWLETS[flowlet_index(gid, hash)], flowlet_tag(gid, hash));  // only if uses_flowlets(g.mode)
//! let pick = select(g, hash, e, now, bpf_get_prandom_u32(), || bands_of(g, now))?;  // None: drop + count
//! PORT_RATE[port_of(pick.id)].update(now, frame_len);
//! ```
//!
//! The `bands` closure is only called when a choice by load is needed (each
//! new flowlet in `bandwidth` mode, each packet in `spray` mode), so the
//! per-member rate lookups stay off the common path.
//!
//! Arithmetic is integer only (no 128-bit products either), the data-plane
//! functions have no loops (the member scans are unrolled, the rate decay is
//! constant-time), every array index is masked or checked, and nothing
//! divides by a value that can be zero: they compile for eBPF and pass the
//! verifier (the controller-side builder and validators loop over at most
//! 128 buckets).

use core::fmt;

/// Runs `$body` with `$i: usize` bound to each member slot in turn.
macro_rules! each_member {
    ($i:ident => $body:block) => {
        each_member!(@ $i $body; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    };
    (@ $i:ident $body:block; $($n:literal)*) => {
        $({
            let $i: usize = $n;
            $body
        })*
    };
}

mod far;
mod flowlet;
mod group;
mod hash;
mod layout;
mod load;
mod place;
mod select;

pub use far::*;
pub use flowlet::*;
pub use group::*;
pub use hash::*;
pub use load::*;
pub use place::*;
pub use select::*;
