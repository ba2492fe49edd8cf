//! `dataplane events`: the data plane's drop snapshots, printed with their
//! RoCEv2 fields decoded, and written as pcapng for Wireshark / tshark.

use dataplane_common::names;
use std::io::Write;
use std::time::{Duration, Instant};

use std::borrow::Cow;

use anyhow::{Context, Result};
use aya::maps::{MapData, RingBuf};
use dataplane_common::events::{reason_name, DropEvent};
use dataplane_common::wire::{bth, ethernet as eth, ipv4, ipv6, udp, Packet};
use pcap_file::pcapng::blocks::enhanced_packet::{EnhancedPacketBlock, EnhancedPacketOption};
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::DataLink;

/// What a snapshot says about RoCEv2 (decoded leniently: the capture may
/// end before the lengths the headers announce).
pub fn describe(data: &[u8]) -> String {
    let Some(mut et) = data.be16_at(eth::ETHERTYPE_OFF) else {
        return "runt".into();
    };
    let mut off = eth::HEADER_LEN;
    let mut vlan = String::new();
    if eth::is_tpid(et) {
        let (Some(tci), Some(inner)) = (data.be16_at(off), data.be16_at(off + 2)) else {
            return "cut VLAN tag".into();
        };
        vlan = format!("vlan {} pcp {} ", eth::tci_vid(tci), eth::tci_pcp(tci));
        et = inner;
        off += eth::TAG_LEN;
    }
    let (l4, proto, ip) = match et {
        eth::ETHERTYPE_IPV4 => {
            let Some(h) = data.read::<20>(off) else {
                return format!("{vlan}IPv4 (cut)");
            };
            let hl = ipv4::header_len(h[0]);
            (
                off + hl,
                h[ipv4::PROTO_OFF],
                format!(
                    "{}.{}.{}.{} > {}.{}.{}.{} dscp {}",
                    h[12],
                    h[13],
                    h[14],
                    h[15],
                    h[16],
                    h[17],
                    h[18],
                    h[19],
                    h[1] >> 2
                ),
            )
        }
        eth::ETHERTYPE_IPV6 => {
            let (Some(h), Some(dst)) = (data.read::<8>(off), data.read::<16>(off + ipv6::DST_OFF))
            else {
                return format!("{vlan}IPv6 (cut)");
            };
            let a = std::net::Ipv6Addr::from(dst);
            (
                off + ipv6::HEADER_LEN,
                h[ipv6::NEXT_HEADER_OFF],
                format!("> {a} dscp {}", ipv6::traffic_class(h[0], h[1]) >> 2),
            )
        }
        other => return format!("{vlan}ethertype 0x{other:04x}"),
    };
    if proto != ipv4::PROTO_UDP {
        return format!("{vlan}{ip} proto {proto}");
    }
    let (Some(sport), Some(dport)) = (data.be16_at(l4), data.be16_at(l4 + 2)) else {
        return format!("{vlan}{ip} UDP (cut)");
    };
    if dport != udp::ROCEV2_PORT {
        return format!("{vlan}{ip} UDP {sport} > {dport}");
    }
    match data.read::<{ bth::HEADER_LEN }>(l4 + udp::HEADER_LEN) {
        Some(b) => {
            let b = bth::Bth::decode(&b);
            format!(
                "{vlan}{ip} RoCEv2 sport {sport} opcode 0x{:02x}{} dest QP 0x{:06x} PSN {}{}",
                b.opcode,
                if b.is_cnp() { " (CNP)" } else { "" },
                b.dest_qp,
                b.psn,
                if b.becn { " BECN" } else { "" }
            )
        }
        None => format!("{vlan}{ip} RoCEv2 (BTH cut)"),
    }
}

/// A pcapng file (Ethernet, nanosecond time stamps), one enhanced packet
/// block per snapshot with the reason and port as its comment (written by
/// the `pcap-file` crate).
pub struct Pcapng {
    out: PcapNgWriter<std::io::BufWriter<std::fs::File>>,
}

impl Pcapng {
    pub fn create(path: &std::path::Path) -> Result<Pcapng> {
        let f =
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
        let mut out = PcapNgWriter::new(std::io::BufWriter::new(f))
            .with_context(|| format!("writing {}", path.display()))?;
        out.write_pcapng_block(InterfaceDescriptionBlock {
            linktype: DataLink::ETHERNET,
            snaplen: dataplane_common::events::SNAP_LEN as u32,
            // the writer stores time stamps in nanoseconds
            options: vec![InterfaceDescriptionOption::IfTsResol(9)],
        })?;
        Ok(Pcapng { out })
    }

    /// One snapshot taken at `unix_us`.
    pub fn write(&mut self, unix_us: u64, data: &[u8], orig_len: u32, comment: &str) -> Result<()> {
        self.out.write_pcapng_block(EnhancedPacketBlock {
            interface_id: 0,
            timestamp: std::time::Duration::from_micros(unix_us),
            original_len: orig_len,
            data: Cow::Borrowed(data),
            options: vec![EnhancedPacketOption::Comment(Cow::Borrowed(comment))],
        })?;
        Ok(())
    }

    pub fn finish(self) -> Result<()> {
        self.out.into_inner().flush()?;
        Ok(())
    }
}

/// The controller's event log of an instance: one JSON object per line for
/// every PFC XOFF/XON transition it sends and every watchdog storm /
/// restore (drop snapshots come from the data plane's ring instead).
pub fn log_path(instance: &str) -> std::path::PathBuf {
    std::path::Path::new(crate::sys::RUN_DIR).join(format!("{instance}.events"))
}

/// Appends to an instance's event log.
pub struct EventLog {
    f: Option<std::fs::File>,
}

impl EventLog {
    pub fn open(instance: &str) -> EventLog {
        let _ = std::fs::create_dir_all(crate::sys::RUN_DIR);
        EventLog {
            f: std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log_path(instance))
                .ok(),
        }
    }

    /// Records `kind` (e.g. "pfc_xoff", "pfcwd_storm_detected") on `port`,
    /// priority `prio`, with a free-text detail.
    pub fn record(&mut self, kind: &str, port: &str, prio: u8, detail: &str) {
        if let Some(f) = self.f.as_mut() {
            let unix = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs_f64();
            let line = serde_json::json!({ "time": unix, "event": kind, "port": port, "priority": prio, "detail": detail });
            let _ = writeln!(f, "{line}");
        }
    }
}

/// Reads snapshots from the pinned ring of `instance` until `count` were
/// read or `timeout` passed; prints each; optionally writes pcapng.
pub fn run(
    instance: &str,
    count: Option<usize>,
    timeout: Option<Duration>,
    pcapng: Option<&std::path::Path>,
    history: bool,
) -> Result<usize> {
    let path = crate::sys::pin_dir(instance).join(names::map::DROP_EVENTS);
    let data = MapData::from_pin(&path).with_context(|| {
        format!(
            "no running data plane {instance:?}: cannot open {}",
            path.display()
        )
    })?;
    let mut ring: RingBuf<MapData> = RingBuf::try_from(aya::maps::Map::RingBuf(data))?;
    let mut pcap = pcapng.map(Pcapng::create).transpose()?;
    // monotonic -> wall clock
    let wall_us = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros() as u64;
    let mono_us = crate::sys::monotonic_ns() / 1000;
    let start = Instant::now();
    let mut n = 0;
    // controller events: from the log's current end on (or all of them)
    let mut log = std::fs::File::open(log_path(instance)).ok();
    if let (false, Some(f)) = (history, log.as_mut()) {
        use std::io::Seek;
        let _ = f.seek(std::io::SeekFrom::End(0));
    }
    let mut pending = String::new();
    loop {
        if let Some(f) = log.as_mut() {
            use std::io::Read;
            let mut buf = String::new();
            let _ = f.read_to_string(&mut buf);
            pending.push_str(&buf);
            while let Some(i) = pending.find('\n') {
                let line: String = pending.drain(..=i).collect();
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(line.trim()) {
                    println!(
                        "{:>14.6} {:<12} {:<37} prio {}  {}",
                        v["time"].as_f64().unwrap_or(0.0),
                        v["port"].as_str().unwrap_or("?"),
                        v["event"].as_str().unwrap_or("?"),
                        v["priority"].as_u64().unwrap_or(0),
                        v["detail"].as_str().unwrap_or("")
                    );
                    n += 1;
                    if count.is_some_and(|c| n >= c) {
                        if let Some(p) = pcap {
                            p.finish()?;
                        }
                        return Ok(n);
                    }
                }
            }
        }
        while let Some(item) = ring.next() {
            if item.len() < std::mem::size_of::<DropEvent>() {
                continue;
            }
            // SAFETY: the data plane writes DropEvent records.
            let ev: DropEvent =
                unsafe { std::ptr::read_unaligned(item.as_ptr() as *const DropEvent) };
            drop(item);
            let cap = (ev.cap_len as usize).min(ev.data.len());
            let bytes = &ev.data[..cap];
            let port =
                crate::sys::ifname(ev.ifindex).unwrap_or_else(|| format!("ifindex{}", ev.ifindex));
            let unix_us = wall_us
                .saturating_sub(mono_us)
                .saturating_add(ev.time_ns / 1000);
            println!(
                "{:>14.6} {:<12} drop {:<32} len {:>5}  {}",
                unix_us as f64 / 1e6,
                port,
                reason_name(ev.reason),
                ev.frame_len,
                describe(bytes)
            );
            if let Some(p) = pcap.as_mut() {
                p.write(
                    unix_us,
                    bytes,
                    ev.frame_len,
                    &format!(
                        "dataplane drop: reason={} port={port}",
                        reason_name(ev.reason)
                    ),
                )?;
            }
            n += 1;
            if count.is_some_and(|c| n >= c) {
                if let Some(p) = pcap {
                    p.finish()?;
                }
                return Ok(n);
            }
        }
        if timeout.is_some_and(|t| start.elapsed() >= t) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if let Some(p) = pcap {
        p.finish()?;
    }
    Ok(n)
}
