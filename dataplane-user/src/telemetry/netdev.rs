//! A port's link as the kernel reports it (RTM_GETLINK, in the network
//! namespace of the calling thread): admin and operational state and the
//! netdev statistics (`IFLA_STATS64`, what `ip -s link` prints). Read by
//! `show interfaces counters`; `doctor` sends the same request.

use netlink_packet_core::{NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_REQUEST};
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage, State};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};

/// RTM_GETLINK for `ifindex`: the kernel's reply, unparsed (`None`: no
/// netlink socket, or no answer).
pub fn getlink(ifindex: u32) -> Option<Vec<u8>> {
    let mut msg = LinkMessage::default();
    msg.header.index = ifindex;
    let mut req = NetlinkMessage::new(
        NetlinkHeader::default(),
        NetlinkPayload::from(RouteNetlinkMessage::GetLink(msg)),
    );
    req.header.flags = NLM_F_REQUEST;
    req.header.sequence_number = 1;
    req.finalize();
    let mut buf = vec![0u8; req.buffer_len()];
    req.serialize(&mut buf);
    let mut sock = Socket::new(NETLINK_ROUTE).ok()?;
    sock.bind_auto().ok()?;
    sock.connect(&SocketAddr::new(0, 0)).ok()?;
    sock.send(&buf, 0).ok()?;
    let mut reply = Vec::with_capacity(1 << 16);
    sock.recv(&mut reply, 0).ok()?;
    Some(reply)
}

/// The first RTM_NEWLINK of a reply (`None`: an error, e.g. no such
/// device).
pub fn newlink(reply: &[u8]) -> Option<LinkMessage> {
    let msg = NetlinkMessage::<RouteNetlinkMessage>::deserialize(reply).ok()?;
    match msg.payload {
        NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(m)) => Some(m),
        _ => None,
    }
}

/// A link's state and the netdev counters `show interfaces counters`
/// reads (struct rtnl_link_stats64's fields of the same names).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Netdev {
    /// IFF_UP.
    pub admin_up: bool,
    /// IFLA_OPERSTATE is UP (or UNKNOWN with IFF_LOWER_UP, as devices
    /// without operstate handling report a working link).
    pub oper_up: bool,
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_errors: u64,
    pub tx_errors: u64,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
    pub rx_missed_errors: u64,
    pub rx_over_errors: u64,
    pub rx_fifo_errors: u64,
    pub tx_fifo_errors: u64,
}

/// The state and counters of an RTM_NEWLINK (`None` without
/// IFLA_STATS64).
pub fn parse(m: &LinkMessage) -> Option<Netdev> {
    let lower_up = m.header.flags.contains(LinkFlags::LowerUp);
    let mut n = Netdev {
        admin_up: m.header.flags.contains(LinkFlags::Up),
        ..Netdev::default()
    };
    let mut stats = false;
    for a in &m.attributes {
        match a {
            LinkAttribute::OperState(s) => {
                n.oper_up = *s == State::Up || (*s == State::Unknown && lower_up)
            }
            LinkAttribute::Stats64(s) => {
                stats = true;
                n.rx_packets = s.rx_packets;
                n.tx_packets = s.tx_packets;
                n.rx_bytes = s.rx_bytes;
                n.tx_bytes = s.tx_bytes;
                n.rx_errors = s.rx_errors;
                n.tx_errors = s.tx_errors;
                n.rx_dropped = s.rx_dropped;
                n.tx_dropped = s.tx_dropped;
                n.rx_missed_errors = s.rx_missed_errors;
                n.rx_over_errors = s.rx_over_errors;
                n.rx_fifo_errors = s.rx_fifo_errors;
                n.tx_fifo_errors = s.tx_fifo_errors;
            }
            _ => {}
        }
    }
    stats.then_some(n)
}

/// The link `ifindex` of this namespace now (`None`: no such link).
pub fn read(ifindex: u32) -> Option<Netdev> {
    parse(&newlink(&getlink(ifindex)?)?)
}
