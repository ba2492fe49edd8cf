//! The conformance corpus shared by the targets (`p4/corpus`): named
//! configurations (`configs/<name>.toml`) and cases (`cases.toml`), each an
//! input frame on a port with the expected output frame(s) and port(s), or
//! drop, or punt (the eBPF data plane's XDP_PASS, the P4 programs' CPU
//! port).
//!
//! ```toml
//! [[case]]
//! name = "route_v4_nexthop"
//! config = "route"                 # configs/route.toml
//! port = "p0"                      # ingress
//! [case.packet]                    # built by dataplane_common::build
//! kind = "rocev2"                  # rocev2 cnp uet udp tcp arp pfc pause raw
//! dst = "02:00:00:00:0f:00"
//! src = "02:00:00:00:00:01"
//! ip_src = "198.18.0.1"
//! ip_dst = "198.18.1.5"
//! dscp = 3
//! ecn = 2
//! dest_qp = 0x42
//! [case.expect]
//! tc = 3                           # traffic class (counters / cpu_h)
//! [case.expect.forward.p1]         # out of p1: the input with these fields changed
//! dst = "02:00:00:00:01:01"
//! src = "02:00:00:00:0f:01"
//! ttl = 63
//! ```
//!
//! Several `forward` ports mean "exactly one of them" (a next-hop group).
//! `drop = "<reason>"` (mac_control, malformed, no_route, no_live_member,
//! no_neighbour, shared_buffer_full)
//! or `cpu = "<reason>"` (classified, unknown_port, malformed, not_ip,
//! not_for_us, ttl_expired, local) instead of `forward`, named as the one
//! reason table (`dataplane_common::reason`) names them;
//! `malformed = "<ParseError name>"` with the malformed reasons; `queue = N`
//! when a forwarded frame leaves in another queue than its class `tc` (a
//! trimmed packet: the trim queue).
//!
//! `before = [{ opcode = 6, ... }, ...]` (forwarded cases): packets sent
//! first, each the case's packet with those fields changed (the same flow,
//! e.g. an earlier packet of the same QP), each expected out of the port
//! the case's packet leaves by, with the same fields changed. The STF
//! tests send them; a runner that sends the case's packet alone still
//! checks what it checks without them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dataplane_common::build::{self, Ip, Reth, L2};
use dataplane_common::lb::{FlowKey, MODE_SPRAY};
use dataplane_common::parse::{parse, ParseError, L3};
use dataplane_common::reason::{Reason, Why};
use dataplane_common::wire::bth::{self, Bth};
use dataplane_common::wire::uet;
use serde::Deserialize;

use crate::{bmv2_flow_hash, stf_entry, table_ops, Op, Options, Target};
use dataplane_config::{parse_mac, Config, Plan, Target as RouteTarget};

/// Port number of an ingress port the configuration does not have.
pub const UNCONFIGURED_PORT: u32 = 200;
/// The v1model program's CPU port (its CPU_PORT default).
pub const BMV2_CPU_PORT: u32 = 64;

/// The reasons a frame may be dropped for, in the corpus.
pub const DROP_REASONS: [Reason; 5] = [
    Reason::MacControl,
    Reason::NoRoute,
    Reason::NoLiveMember,
    Reason::NoNeighbour,
    Reason::SharedBufferFull,
];

/// The reasons a frame may go to the CPU port for (eBPF: XDP_PASS): those
/// the P4 programs have a CPU code for.
pub fn cpu_reasons() -> Vec<Reason> {
    Reason::ALL
        .into_iter()
        .filter(|r| cpu_code(Why::Other(*r)).is_some())
        .collect()
}

/// The CPU_* code of headers.p4 for a reason (cpu_h.reason). The P4
/// programs keep these compact codes (TNA counts punts by their low bits);
/// this is their one mapping to the reason table, and `tests/p4.rs` holds
/// headers.p4's constants to it.
pub fn cpu_code(w: Why) -> Option<u8> {
    Some(match w {
        Why::Malformed(_) => 3,
        Why::Other(Reason::Classified) => 1,
        Why::Other(Reason::UnknownPort) => 2,
        Why::Other(Reason::NotIp) => 4,
        Why::Other(Reason::NotForUs) => 5,
        Why::Other(Reason::TtlExpired) => 6,
        Why::Other(Reason::Local) => 7,
        Why::Other(_) => return None,
    })
}

/// The reason a case names (`drop = ` / `cpu = `), if it is one of
/// `allowed` (or malformed, with `malformed = "<parse error>"`).
fn named_reason(
    name: &str,
    malformed: Option<&str>,
    allowed: &[Reason],
    what: &str,
) -> Result<Why, String> {
    match Why::from_name(name, malformed) {
        Some(Why::Other(r)) if allowed.contains(&r) => Ok(Why::Other(r)),
        Some(w @ Why::Malformed(_)) => Ok(w),
        None if name == "malformed" => Err("expect.malformed names the reason".into()),
        _ => Err(format!("unknown {what} reason {name:?}")),
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Out of exactly one of these ports, as this frame.
    Forward(Vec<(String, Vec<u8>)>),
    /// Dropped, for this reason.
    Drop(Why),
    /// To the CPU port (eBPF: the kernel), for this reason.
    Cpu(Why),
}

#[derive(Clone, Debug)]
pub struct Case {
    pub name: String,
    pub about: String,
    pub config: String,
    pub port: String,
    pub frame: Vec<u8>,
    pub expect: Expect,
    /// Expected traffic class (required for forward and most cpu cases).
    pub tc: Option<u8>,
    /// The queue a forwarded frame leaves in when it is not its class (a
    /// trimmed packet: the trim queue).
    pub queue: Option<u8>,
    /// Why the case has no STF test, if it has none.
    pub skip_stf: Option<String>,
    /// Packets of the same flow sent before `frame` (forwarded cases):
    /// each input frame, and what it leaves each of the `forward` ports
    /// as (it must leave by the port `frame` leaves by).
    pub before: Vec<(Vec<u8>, PortFrames)>,
}

/// Frames by port name: what a packet leaves each port it may leave by as.
pub type PortFrames = Vec<(String, Vec<u8>)>;

/// A loaded corpus.
#[derive(Clone, Debug)]
pub struct Corpus {
    /// name -> (TOML text, validated plan)
    pub configs: BTreeMap<String, (String, Plan)>,
    pub cases: Vec<Case>,
}

/// A frame as the corpus describes it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PacketSpec {
    pub kind: String,
    pub dst: Option<String>,
    pub src: Option<String>,
    /// One 802.1Q tag: [pcp, vid].
    pub vlan: Option<[u16; 2]>,
    /// Tags with explicit TPIDs, outer first: [[tpid, pcp, vid], ...].
    pub tags: Option<Vec<[u16; 3]>>,
    pub ip_src: Option<String>,
    pub ip_dst: Option<String>,
    pub dscp: Option<u8>,
    pub ecn: Option<u8>,
    pub ttl: Option<u8>,
    /// IPv4 options bytes (a multiple of 4).
    pub ip_options: Option<Vec<u8>>,
    pub sport: Option<u16>,
    pub dport: Option<u16>,
    pub opcode: Option<u8>,
    pub dest_qp: Option<u32>,
    pub psn: Option<u32>,
    pub reth: Option<bool>,
    /// The RETH's DMA length (default 4096).
    pub reth_len: Option<u32>,
    /// UET (`kind = "uet"`): PDS type (default RUD request), flags, and
    /// the PDS header's length when it is not the type's fixed length
    /// (a truncated header).
    pub pds_type: Option<u8>,
    pub pds_flags: Option<u8>,
    pub pds_len: Option<usize>,
    pub payload_len: Option<usize>,
    pub payload_byte: Option<u8>,
    pub class_enable: Option<u16>,
    pub times: Option<Vec<u16>>,
    pub pause_time: Option<u16>,
    pub hex: Option<String>,
    /// Byte edits after building: [[offset, value], ...].
    pub edits: Option<Vec<[usize; 2]>>,
    pub truncate: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CasesFile {
    #[serde(rename = "case")]
    cases: Vec<CaseToml>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseToml {
    name: String,
    #[serde(default)]
    about: String,
    config: String,
    port: String,
    packet: toml::Table,
    expect: ExpectToml,
    skip_stf: Option<String>,
    #[serde(default)]
    before: Vec<toml::Table>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectToml {
    forward: Option<BTreeMap<String, toml::Table>>,
    drop: Option<String>,
    cpu: Option<String>,
    malformed: Option<String>,
    tc: Option<u8>,
    queue: Option<u8>,
}

const RETH: Reth = Reth {
    va: 0x7f00_0000_1000,
    rkey: 0x1234,
    len: 4096,
};

fn ip_of(spec: &PacketSpec) -> Result<Ip, String> {
    let src: IpAddr = spec
        .ip_src
        .as_deref()
        .ok_or("ip_src missing")?
        .parse()
        .map_err(|e| format!("ip_src: {e}"))?;
    let dst: IpAddr = spec
        .ip_dst
        .as_deref()
        .ok_or("ip_dst missing")?
        .parse()
        .map_err(|e| format!("ip_dst: {e}"))?;
    let mut ip = match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => Ip::v4(s.octets(), d.octets()),
        (IpAddr::V6(s), IpAddr::V6(d)) => Ip::v6(s.octets(), d.octets()),
        _ => return Err("ip_src and ip_dst of different families".into()),
    };
    ip = ip
        .dscp(spec.dscp.unwrap_or(0))
        .ecn(spec.ecn.unwrap_or(0))
        .ttl(spec.ttl.unwrap_or(64));
    if let Some(o) = &spec.ip_options {
        ip = ip.options(o);
    }
    Ok(ip)
}

use std::net::IpAddr;

fn mac(s: &Option<String>, what: &str) -> Result<[u8; 6], String> {
    let s = s.as_deref().ok_or_else(|| format!("{what} missing"))?;
    parse_mac(s).ok_or_else(|| format!("{what}: not a MAC: {s:?}"))
}

/// Builds the frame a spec describes.
pub fn build_frame(spec: &PacketSpec) -> Result<Vec<u8>, String> {
    let l2 = || -> Result<L2, String> {
        let mut l2 = L2::new(mac(&spec.dst, "dst")?, mac(&spec.src, "src")?);
        if let Some([pcp, vid]) = spec.vlan {
            l2 = l2.vlan(pcp as u8, vid);
        }
        for &[tpid, pcp, vid] in spec.tags.iter().flatten() {
            l2 = l2.tag(tpid, pcp as u8, vid);
        }
        Ok(l2)
    };
    let payload = vec![spec.payload_byte.unwrap_or(0xab); spec.payload_len.unwrap_or(64)];
    let ethertype = |ip: &Ip| match ip.addrs {
        build::Addrs::V4(..) => 0x0800,
        build::Addrs::V6(..) => 0x86dd,
    };
    let mut f = match spec.kind.as_str() {
        "rocev2" => {
            let b = Bth::request(
                spec.opcode.unwrap_or(bth::OP_WRITE_FIRST),
                spec.dest_qp.unwrap_or(0),
                spec.psn.unwrap_or(0),
            );
            let reth = spec
                .reth
                .unwrap_or(b.opcode == bth::OP_WRITE_FIRST || b.opcode == bth::OP_WRITE_ONLY)
                .then_some(Reth {
                    len: spec.reth_len.unwrap_or(RETH.len),
                    ..RETH
                });
            build::rocev2_frame(
                &l2()?,
                &ip_of(spec)?,
                spec.sport.unwrap_or(49152),
                &b,
                reth,
                &payload,
            )
        }
        "cnp" => build::cnp_frame(
            &l2()?,
            &ip_of(spec)?,
            spec.sport.unwrap_or(49152),
            spec.dest_qp.unwrap_or(0),
        ),
        "uet" => {
            let mut body = pds_header(spec);
            body.extend_from_slice(&payload);
            build::udp_frame(
                &l2()?,
                &ip_of(spec)?,
                spec.sport.unwrap_or(49152),
                uet::UET_PORT,
                &body,
            )
        }
        "udp" => build::udp_frame(
            &l2()?,
            &ip_of(spec)?,
            spec.sport.unwrap_or(40000),
            spec.dport.unwrap_or(53),
            &payload,
        ),
        "tcp" => {
            let ip = ip_of(spec)?;
            // a 20-byte header of zeros, and `payload_len` bytes when given
            let mut seg = vec![0u8; 20];
            if spec.payload_len.is_some() {
                seg.extend_from_slice(&payload);
            }
            build::frame(&l2()?, ethertype(&ip), &build::ip_packet(&ip, 6, &seg))
        }
        "arp" => build::frame(&l2()?, 0x0806, &[0; 28]),
        "pfc" => {
            let t = spec.times.clone().unwrap_or_default();
            let mut times = [0u16; 8];
            for (d, s) in times.iter_mut().zip(t) {
                *d = s;
            }
            build::pfc_frame(
                mac(&spec.src, "src")?,
                spec.class_enable.unwrap_or(0),
                times,
            )
        }
        "pause" => build::pause_frame(mac(&spec.src, "src")?, spec.pause_time.unwrap_or(0xffff)),
        "raw" => {
            let h: String = spec
                .hex
                .as_deref()
                .ok_or("hex missing")?
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect();
            if !h.len().is_multiple_of(2) {
                return Err("hex: odd number of digits".into());
            }
            (0..h.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&h[i..i + 2], 16).map_err(|e| format!("hex: {e}")))
                .collect::<Result<_, _>>()?
        }
        other => return Err(format!("unknown packet kind {other:?}")),
    };
    for &[off, v] in spec.edits.iter().flatten() {
        let n = f.len();
        let b = f
            .get_mut(off)
            .ok_or_else(|| format!("edit at {off} beyond the {n} byte frame"))?;
        *b = v as u8;
    }
    if let Some(n) = spec.truncate {
        f.truncate(n);
    }
    Ok(f)
}

/// The PDS header of a `uet` spec: the type's fixed length (prologue, PSN
/// at bytes 4-7 where the type has one), cut or zero-extended to `pds_len`.
fn pds_header(spec: &PacketSpec) -> Vec<u8> {
    let ptype = spec.pds_type.unwrap_or(uet::TYPE_RUD_REQ);
    let psn = spec.psn.unwrap_or(0);
    let pds = uet::Pds {
        ptype,
        next: 0,
        flags: spec.pds_flags.unwrap_or(0),
        psn,
    };
    let mut h = vec![0u8; uet::fixed_len(ptype)];
    h[..2].copy_from_slice(&pds.prologue().to_be_bytes());
    if uet::has_psn(ptype) {
        h[4..8].copy_from_slice(&psn.to_be_bytes());
    }
    h.resize(spec.pds_len.unwrap_or(h.len()), 0);
    h
}

fn spec_of(t: &toml::Table) -> Result<PacketSpec, String> {
    toml::Value::Table(t.clone())
        .try_into()
        .map_err(|e: toml::de::Error| e.to_string().trim().to_string())
}

/// Loads `dir/configs/*.toml` and `dir/cases.toml`, validates every
/// configuration and builds every frame.
pub fn load(dir: &Path) -> Result<Corpus, String> {
    let mut configs = BTreeMap::new();
    let cdir = dir.join("configs");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&cdir)
        .map_err(|e| format!("{}: {e}", cdir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    names.sort();
    for p in names {
        let name = p
            .file_stem()
            .and_then(|s| s.to_str())
            .ok_or("bad config file name")?
            .to_string();
        let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        let src = p.display().to_string();
        let plan = Config::parse(&text, &src)
            .and_then(|c| c.validate(&src))
            .map_err(|e| e.to_string())?;
        configs.insert(name, (text, plan));
    }
    let cpath = dir.join("cases.toml");
    let text = std::fs::read_to_string(&cpath).map_err(|e| format!("{}: {e}", cpath.display()))?;
    let file: CasesFile = toml::from_str(&text).map_err(|e| format!("{}: {e}", cpath.display()))?;
    let mut cases = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for c in file.cases {
        let ctx = |e: String| format!("case {}: {e}", c.name);
        if !seen.insert(c.name.clone()) {
            return Err(ctx("duplicate case name".into()));
        }
        let (_, plan) = configs.get(&c.config).ok_or_else(|| {
            ctx(format!(
                "no configuration {:?} in {}",
                c.config,
                cdir.display()
            ))
        })?;
        let spec = spec_of(&c.packet).map_err(|e| ctx(format!("packet: {e}")))?;
        let frame = build_frame(&spec).map_err(|e| ctx(format!("packet: {e}")))?;
        if let Some(m) = &c.expect.malformed {
            if !ParseError::ALL.iter().any(|e| e.name() == m) {
                return Err(ctx(format!("unknown malformed reason {m:?}")));
            }
        }
        let mal = c.expect.malformed.as_deref();
        // the case's packet, or one sent before it (`before`: fields changed
        // from it), and what it leaves each forward port as
        let outputs = |packet: &toml::Table,
                       fw: &BTreeMap<String, toml::Table>,
                       what: &str|
         -> Result<PortFrames, String> {
            let mut outs = Vec::new();
            for (port, over) in fw {
                if !plan.ports.iter().any(|p| &p.name == port) {
                    return Err(format!("forward to {port:?}, not a port of {}", c.config));
                }
                let mut t = packet.clone();
                for (k, v) in over {
                    t.insert(k.clone(), v.clone());
                }
                let s = spec_of(&t).map_err(|e| format!("{what}expect.forward.{port}: {e}"))?;
                outs.push((
                    port.clone(),
                    build_frame(&s).map_err(|e| format!("{what}expect.forward.{port}: {e}"))?,
                ));
            }
            if outs.is_empty() {
                return Err("expect.forward names no port".into());
            }
            Ok(outs)
        };
        let mut before = Vec::new();
        for (i, over) in c.before.iter().enumerate() {
            let Some(fw) = &c.expect.forward else {
                return Err(ctx(
                    "before: only a forwarded case sends packets before".into()
                ));
            };
            let mut t = c.packet.clone();
            for (k, v) in over {
                t.insert(k.clone(), v.clone());
            }
            let s = spec_of(&t).map_err(|e| ctx(format!("before[{i}]: {e}")))?;
            let f = build_frame(&s).map_err(|e| ctx(format!("before[{i}]: {e}")))?;
            before.push((f, outputs(&t, fw, &format!("before[{i}]: ")).map_err(ctx)?));
        }
        let expect = match (&c.expect.forward, &c.expect.drop, &c.expect.cpu) {
            (Some(fw), None, None) => Expect::Forward(outputs(&c.packet, fw, "").map_err(ctx)?),
            (None, Some(d), None) => {
                Expect::Drop(named_reason(d, mal, &DROP_REASONS, "drop").map_err(ctx)?)
            }
            (None, None, Some(r)) => {
                Expect::Cpu(named_reason(r, mal, &cpu_reasons(), "cpu").map_err(ctx)?)
            }
            _ => return Err(ctx("expect needs exactly one of forward, drop, cpu".into())),
        };
        let needs_tc = match expect {
            Expect::Forward(_) => true,
            Expect::Cpu(r) => !matches!(r, Why::Other(Reason::UnknownPort) | Why::Malformed(_)),
            Expect::Drop(_) => false,
        };
        if needs_tc && c.expect.tc.is_none() {
            return Err(ctx(
                "expect.tc is required (forwarded and classified frames)".into(),
            ));
        }
        cases.push(Case {
            name: c.name,
            about: c.about,
            config: c.config,
            port: c.port,
            frame,
            expect,
            tc: c.expect.tc,
            queue: c.expect.queue,
            skip_stf: c.skip_stf,
            before,
        });
    }
    Ok(Corpus { configs, cases })
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

/// Longest-prefix match over the plan's routes.
fn lookup(plan: &Plan, dst: IpAddr) -> Option<RouteTarget> {
    let bits = |a: IpAddr| -> (u128, u32) {
        match a {
            IpAddr::V4(v) => (u128::from(u32::from(v)), 32),
            IpAddr::V6(v) => (u128::from(v), 128),
        }
    };
    let (d, w) = bits(dst);
    plan.routes
        .iter()
        .filter(|r| {
            let (a, aw) = bits(r.addr);
            let len = u32::from(r.len);
            aw == w && (len == 0 || (a >> (w - len)) == (d >> (w - len)))
        })
        .max_by_key(|r| r.len)
        .map(|r| r.target)
}

/// The port bmv2 sends `frame` out of, for a case routed through a group
/// (first packet of its flow, idle ports): the member of the bucket of
/// the v1model program's CRC-32 flow hash (bandwidth and place: the
/// bucket's member wins the ties of idle, unbooked ports; place: a later
/// packet of the flow keeps it). `Err` when the program's choice is
/// random (spray).
pub fn bmv2_group_port(plan: &Plan, frame: &[u8]) -> Result<Option<usize>, String> {
    let p = parse(frame).map_err(|e| format!("does not parse: {e:?}"))?;
    let l3 = usize::from(p.l3_off);
    let (src, dst, daddr) = match p.l3 {
        L3::Ipv4 => {
            let s: [u8; 4] = frame[l3 + 12..l3 + 16].try_into().unwrap();
            let d: [u8; 4] = frame[l3 + 16..l3 + 20].try_into().unwrap();
            (
                dataplane_common::lb::ipv4_mapped(s),
                dataplane_common::lb::ipv4_mapped(d),
                IpAddr::from(d),
            )
        }
        L3::Ipv6 => {
            let s: [u8; 16] = frame[l3 + 8..l3 + 24].try_into().unwrap();
            let d: [u8; 16] = frame[l3 + 24..l3 + 40].try_into().unwrap();
            (s, d, IpAddr::from(d))
        }
        _ => return Ok(None),
    };
    let Some(RouteTarget::Group(gi)) = lookup(plan, daddr) else {
        return Ok(None);
    };
    let g = &plan.groups[usize::from(gi)];
    if g.mode == MODE_SPRAY {
        return Err(format!(
            "group {} sprays: bmv2 picks a random bucket per packet",
            g.name
        ));
    }
    let qp = if p.roce { p.bth.dest_qp } else { 0 };
    let (sport, dport) = if p.udp { (p.sport, p.dport) } else { (0, 0) };
    let key = FlowKey::ipv6(src, dst, p.ip_proto, sport, dport, qp);
    let h = bmv2_flow_hash(plan.hash_seed, &key);
    let built =
        dataplane_config::group_value(plan, g, &|_| true, None).map_err(|e| e.to_string())?;
    let slot = built.buckets[(h & 127) as usize];
    let nh = built.members[usize::from(slot) & 15].id;
    Ok(Some(plan.nexthops[usize::from(nh)].port))
}

/// The STF test of a case for the v1model program (p4c's
/// run-bmv2-test.py): its configuration's entries, the input packet and
/// the expected output. `Err` when the case has no STF form.
pub fn stf(corpus: &Corpus, case: &Case, opts: &Options) -> Result<String, String> {
    if let Some(why) = &case.skip_stf {
        return Err(format!("skipped: {why}"));
    }
    let (_, plan) = &corpus.configs[&case.config];
    let ops = table_ops(plan, Target::Bmv2, opts).map_err(|e| e.to_string())?;
    let port_no = |name: &str| -> u32 {
        plan.ports
            .iter()
            .position(|p| p.name == name)
            .map(|i| i as u32)
            .unwrap_or(UNCONFIGURED_PORT)
    };
    let mut s = String::new();
    s.push_str(&format!("# {}: {}\n", case.name, case.about));
    s.push_str(&format!(
        "# conformance corpus case, configuration {:?}; program p4/v1model/dataplane.p4\n",
        case.config
    ));
    s.push_str(
        "# generated by dataplane_p4::corpus::stf; WRED entries (range keys) have no STF form\n",
    );
    for op in &ops {
        match op {
            Op::Entry(e) => {
                if let Some(line) = stf_entry(e) {
                    s.push_str(&line);
                    s.push('\n');
                }
            }
            Op::CloneSession { session, port } => {
                s.push_str(&format!("mirroring_add {session} {port}\n"))
            }
            Op::QueueRate { .. } | Op::QueueDepth { .. } => {}
        }
    }
    let inport = port_no(&case.port);
    // the port of a forwarded case: the one listed, or the member bmv2
    // picks for the flow (the packets sent before are the same flow)
    let out_port = |outs: &[(String, Vec<u8>)]| -> Result<String, String> {
        if outs.len() == 1 {
            return Ok(outs[0].0.clone());
        }
        let p = bmv2_group_port(plan, &case.frame)?
            .ok_or("several forward ports but the frame is not routed by a group")?;
        let name = &plan.ports[p].name;
        if !outs.iter().any(|(n, _)| n == name) {
            return Err(format!(
                "bmv2 would pick {name}, which the case does not list"
            ));
        }
        Ok(name.clone())
    };
    let frame_on = |outs: &[(String, Vec<u8>)], port: &str| -> Vec<u8> {
        outs.iter()
            .find(|(n, _)| n == port)
            .map(|o| o.1.clone())
            .unwrap_or_default()
    };
    for (f, outs) in &case.before {
        let port = out_port(outs)?;
        s.push_str(&format!("packet {inport} {}\n", hex(f)));
        s.push_str(&format!(
            "expect {} {}$\n",
            port_no(&port),
            hex(&frame_on(outs, &port))
        ));
    }
    s.push_str(&format!("packet {inport} {}\n", hex(&case.frame)));
    match &case.expect {
        Expect::Forward(outs) => {
            let port = out_port(outs)?;
            s.push_str(&format!(
                "expect {} {}$\n",
                port_no(&port),
                hex(&frame_on(outs, &port))
            ));
        }
        Expect::Drop(r) => {
            let why = match r {
                Why::Malformed(e) => format!("malformed.{}", e.name()),
                Why::Other(r) => r.name().to_string(),
            };
            s.push_str(&format!(
                "# dropped ({why}): no packet expected on the ports this test opens\n"
            ))
        }
        Expect::Cpu(r) => {
            let detail = match r {
                Why::Other(Reason::UnknownPort) => 0,
                Why::Malformed(e) => *e as u8 + 1,
                _ => case.tc.unwrap_or(0),
            };
            let code = cpu_code(*r).ok_or("no CPU code for this reason")?;
            let mut out = vec![code, detail];
            out.extend_from_slice(&(inport as u16).to_be_bytes());
            out.extend_from_slice(&case.frame);
            s.push_str(&format!("expect {BMV2_CPU_PORT} {}$\n", hex(&out)));
        }
    }
    Ok(s)
}

/// The STF files written and the cases skipped, with the reason.
pub type StfFiles = (Vec<PathBuf>, Vec<(String, String)>);

/// Writes `<case>.stf` for every case that has an STF form into `dir`;
/// returns the files written and the cases skipped with the reason.
pub fn write_stf(corpus: &Corpus, dir: &Path, opts: &Options) -> Result<StfFiles, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut written = Vec::new();
    let mut skipped = Vec::new();
    for c in &corpus.cases {
        match stf(corpus, c, opts) {
            Ok(text) => {
                let p = dir.join(format!("{}.stf", c.name));
                std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
                written.push(p);
            }
            Err(why) if c.skip_stf.is_some() => skipped.push((c.name.clone(), why)),
            Err(e) => return Err(format!("case {}: {e}", c.name)),
        }
    }
    Ok((written, skipped))
}
