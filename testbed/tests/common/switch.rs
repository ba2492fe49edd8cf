//! The namespaces of a one-switch test: a switch with two ports, a host
//! on the first and a sink on the second.

use testbed::netns::{veth, Netns};

/// Namespaces `<tag>sw`, `<tag>h` and `<tag>sink` (returned in that
/// order), with veths `p0` (switch) -- `eth0` (host) and `p1` (switch) --
/// `eth0` (sink). MACs `02:00:00:00:<m>:xx`: xx = 00 on p0, 10 on the
/// host, 01 on p1, 11 on the sink.
pub fn switch_with_ports(tag: &str, p0: &str, p1: &str, m: u8) -> (Netns, Netns, Netns) {
    let sw = Netns::create(&format!("{tag}sw")).unwrap();
    let h = Netns::create(&format!("{tag}h")).unwrap();
    let sink = Netns::create(&format!("{tag}sink")).unwrap();
    let mac = |x: u8| format!("02:00:00:00:{m:02x}:{x:02x}");
    veth(&sw, p0, &mac(0x00), &h, "eth0", &mac(0x10)).unwrap();
    veth(&sw, p1, &mac(0x01), &sink, "eth0", &mac(0x11)).unwrap();
    (sw, h, sink)
}
