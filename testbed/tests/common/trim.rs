//! The trimming switch both trimming tests configure (the fixture table's
//! rows and the wire test): SONiC's trimming on a tiny pool.

/// A switch named `name` with a 64 KiB pool and lossy threshold 2^-8 x
/// free (256 bytes), so a 300-byte packet fails admission to the shared
/// buffer and a 128-byte one does not; SONiC's trimming (size 128, DSCP
/// 48, queue 6) on the second port's queues 0-2. No lossless class (no
/// headroom to reserve). `ports`: (name, MAC line or none) of the two
/// ports; 198.18.1.0/24 and 2001:db8:0:1::/64 go to next hop
/// `nexthop` = (name, MAC) on the second port.
pub fn trim_config(name: &str, ports: [(&str, Option<&str>); 2], nexthop: (&str, &str)) -> String {
    let port = |(p, mac): (&str, Option<&str>)| {
        let mac = mac.map(|m| format!("mac = \"{m}\"\n")).unwrap_or_default();
        format!(
            "[[port]]\nname = \"{p}\"\n{mac}pfc_enable = \"\"\nheadroom_xoff = 2048\nheadroom_xon = 1024\n"
        )
    };
    let (p0, p1) = (port(ports[0]), port(ports[1]));
    let (nh, nh_mac) = nexthop;
    let p1_name = ports[1].0;
    format!(
        r#"
[switch]
name = "{name}"

[buffer]
pool_size = 65536
lossy_dynamic_th = -8

[switch_trimming]
size = 128
dscp_value = 48
queue_index = 6

[buffer_profile.q_lossy_trim_profile]
packet_discard_action = "trim"

{p0}{p1}buffer_queue = {{ "0-2" = "q_lossy_trim_profile" }}

[[nexthop]]
name = "{nh}"
port = "{p1_name}"
mac = "{nh_mac}"

[[route]]
prefix = "198.18.1.0/24"
nexthop = "{nh}"
[[route]]
prefix = "2001:db8:0:1::/64"
nexthop = "{nh}"
"#
    )
}
