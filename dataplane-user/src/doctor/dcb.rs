//! A NIC's own IEEE 802.1Qaz settings through the kernel's DCB netlink
//! (NETLINK_ROUTE, RTM_GETDCB with DCB_CMD_IEEE_GET: what `dcb pfc show`
//! and `lldptool` read). `netlink-packet-route` does not model DCB
//! messages, so the request is built here and the reply walked with
//! `netlink-packet-core`'s attribute iterator; [`parse`] is pure.

use netlink_packet_core::{NlaBuffer, NlasIterator};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};

use super::checks::{DcbBuffer, DcbRead, IeeePfc};

const RTM_GETDCB: u16 = 78;
const NLMSG_ERROR: u16 = 2;
const DCB_CMD_IEEE_GET: u8 = 21;
const DCB_ATTR_IFNAME: u16 = 1;
const DCB_ATTR_IEEE: u16 = 13;
const DCB_ATTR_DCBX: u16 = 14;
const DCB_ATTR_IEEE_PFC: u16 = 2;
const DCB_ATTR_DCB_BUFFER: u16 = 10;
/// struct ieee_pfc: pfc_cap, pfc_en, mbc, pad, delay (u16), requests[8],
/// indications[8] (u64).
const IEEE_PFC_LEN: usize = 136;
/// struct dcbnl_buffer: prio2buffer[8], buffer_size[8] (u32), total_size.
const DCB_BUFFER_LEN: usize = 44;

/// The request: nlmsghdr, struct dcbmsg (family AF_UNSPEC, cmd), then
/// DCB_ATTR_IFNAME.
pub fn request(ifname: &str, seq: u32) -> Vec<u8> {
    let mut name = ifname.as_bytes().to_vec();
    name.push(0);
    let attr_len = 4 + name.len();
    let len = 16 + 4 + attr_len.next_multiple_of(4);
    let mut m = vec![0u8; len];
    m[0..4].copy_from_slice(&(len as u32).to_ne_bytes());
    m[4..6].copy_from_slice(&RTM_GETDCB.to_ne_bytes());
    m[6..8].copy_from_slice(&1u16.to_ne_bytes()); // NLM_F_REQUEST
    m[8..12].copy_from_slice(&seq.to_ne_bytes());
    m[17] = DCB_CMD_IEEE_GET;
    m[20..22].copy_from_slice(&(attr_len as u16).to_ne_bytes());
    m[22..24].copy_from_slice(&DCB_ATTR_IFNAME.to_ne_bytes());
    m[24..24 + name.len()].copy_from_slice(&name);
    m
}

/// Decodes the kernel's answer to [`request`]. Never panics: a short or
/// malformed reply is a `DcbRead::Error` naming what was wrong.
pub fn parse(reply: &[u8]) -> DcbRead {
    if reply.len() < 16 {
        return DcbRead::Error(format!(
            "reply of {} bytes, expected a netlink header (16)",
            reply.len()
        ));
    }
    let len =
        (u32::from_ne_bytes([reply[0], reply[1], reply[2], reply[3]]) as usize).min(reply.len());
    let ty = u16::from_ne_bytes([reply[4], reply[5]]);
    if ty == NLMSG_ERROR {
        let Some(e) = reply.get(16..20) else {
            return DcbRead::Error("truncated netlink error".into());
        };
        let errno = -i32::from_ne_bytes([e[0], e[1], e[2], e[3]]);
        return match errno {
            libc::EOPNOTSUPP => DcbRead::NoOps,
            // a kernel built without DCB has no handler for RTM_GETDCB
            _ => DcbRead::Error(std::io::Error::from_raw_os_error(errno).to_string()),
        };
    }
    if ty != RTM_GETDCB || len < 20 {
        return DcbRead::Error(format!("unexpected reply type {ty} of {len} bytes"));
    }
    let (mut pfc, mut buffer, mut dcbx) = (None, None, None);
    for nla in NlasIterator::new(&reply[20..len]) {
        let Ok(nla) = nla else {
            return DcbRead::Error("malformed attribute in the DCB reply".into());
        };
        match nla.kind() {
            DCB_ATTR_DCBX => dcbx = nla.value().first().copied(),
            DCB_ATTR_IEEE => {
                for inner in NlasIterator::new(nla.value()) {
                    let Ok(inner) = inner else {
                        return DcbRead::Error("malformed DCB_ATTR_IEEE attribute".into());
                    };
                    match inner.kind() {
                        DCB_ATTR_IEEE_PFC => pfc = ieee_pfc(&inner),
                        DCB_ATTR_DCB_BUFFER => buffer = dcb_buffer(&inner),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    DcbRead::Ieee { pfc, buffer, dcbx }
}

fn ieee_pfc(nla: &NlaBuffer<&[u8]>) -> Option<IeeePfc> {
    let v = nla.value();
    if v.len() < IEEE_PFC_LEN {
        return None;
    }
    Some(IeeePfc {
        cap: v[0],
        enable: v[1],
        mbc: v[2],
        delay: u16::from_ne_bytes([v[4], v[5]]),
    })
}

fn dcb_buffer(nla: &NlaBuffer<&[u8]>) -> Option<DcbBuffer> {
    let v = nla.value();
    if v.len() < DCB_BUFFER_LEN {
        return None;
    }
    let u = |o: usize| u32::from_ne_bytes([v[o], v[o + 1], v[o + 2], v[o + 3]]);
    let mut b = DcbBuffer {
        total: u(40),
        ..DcbBuffer::default()
    };
    b.prio2buffer.copy_from_slice(&v[..8]);
    for (i, s) in b.size.iter_mut().enumerate() {
        *s = u(8 + 4 * i);
    }
    Some(b)
}

/// Asks the kernel for `ifname`'s IEEE DCB settings.
pub fn read(ifname: &str) -> DcbRead {
    let ask = || -> std::io::Result<Vec<u8>> {
        let mut sock = Socket::new(NETLINK_ROUTE)?;
        sock.bind_auto()?;
        sock.connect(&SocketAddr::new(0, 0))?;
        sock.send(&request(ifname, 1), 0)?;
        let mut buf = Vec::with_capacity(8192);
        sock.recv(&mut buf, 0)?;
        Ok(buf)
    };
    match ask() {
        Ok(reply) => parse(&reply),
        Err(e) => DcbRead::Error(format!("DCB netlink: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nla(kind: u16, value: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&((4 + value.len()) as u16).to_ne_bytes());
        v.extend_from_slice(&kind.to_ne_bytes());
        v.extend_from_slice(value);
        v.resize(v.len().next_multiple_of(4), 0);
        v
    }

    /// A reply laid out as the kernel's dcbnl_ieee_fill writes it: the
    /// name, DCB_ATTR_IEEE (ETS, PFC, buffer, an empty app table), then
    /// DCB_ATTR_DCBX.
    fn reply(pfc_en: u8, with_buffer: bool) -> Vec<u8> {
        reply_pfc_len(pfc_en, with_buffer, IEEE_PFC_LEN)
    }

    fn reply_pfc_len(pfc_en: u8, with_buffer: bool, pfc_len: usize) -> Vec<u8> {
        let mut pfc = vec![0u8; pfc_len.max(16)];
        pfc[0] = 8;
        pfc[1] = pfc_en;
        pfc[4..6].copy_from_slice(&5000u16.to_ne_bytes());
        pfc[8..16].copy_from_slice(&77u64.to_ne_bytes());
        let mut ieee = nla(1, &[0u8; 59]);
        ieee.extend(nla(DCB_ATTR_IEEE_PFC, &pfc));
        if with_buffer {
            let mut b = vec![0u8; DCB_BUFFER_LEN];
            b[3] = 1;
            b[8..12].copy_from_slice(&262_144u32.to_ne_bytes());
            b[12..16].copy_from_slice(&131_072u32.to_ne_bytes());
            b[40..44].copy_from_slice(&393_216u32.to_ne_bytes());
            ieee.extend(nla(DCB_ATTR_DCB_BUFFER, &b));
        }
        ieee.extend(nla(3 | 0x8000, &[]));
        let mut attrs = nla(DCB_ATTR_IFNAME, b"eth1\0");
        attrs.extend(nla(DCB_ATTR_IEEE | 0x8000, &ieee));
        attrs.extend(nla(DCB_ATTR_DCBX, &[0x0a]));
        let mut m = vec![0u8; 20];
        m.extend(attrs);
        let len = m.len() as u32;
        m[0..4].copy_from_slice(&len.to_ne_bytes());
        m[4..6].copy_from_slice(&RTM_GETDCB.to_ne_bytes());
        m[17] = DCB_CMD_IEEE_GET;
        m
    }

    fn error(errno: i32) -> Vec<u8> {
        let mut m = vec![0u8; 36];
        m[0..4].copy_from_slice(&36u32.to_ne_bytes());
        m[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        m[16..20].copy_from_slice(&(-errno).to_ne_bytes());
        m
    }

    #[test]
    fn the_request_names_the_device() {
        let r = request("eth12", 7);
        assert_eq!(r.len(), 32);
        assert_eq!(u32::from_ne_bytes(r[0..4].try_into().unwrap()), 32);
        assert_eq!(u16::from_ne_bytes([r[4], r[5]]), 78);
        assert_eq!(r[17], 21);
        assert_eq!(u16::from_ne_bytes([r[20], r[21]]), 10);
        assert_eq!(&r[24..30], b"eth12\0");
    }

    #[test]
    fn pfc_buffer_and_dcbx_are_read() {
        let DcbRead::Ieee { pfc, buffer, dcbx } = parse(&reply(0x08, true)) else {
            panic!("not parsed");
        };
        assert_eq!(
            pfc,
            Some(IeeePfc {
                cap: 8,
                enable: 0x08,
                mbc: 0,
                delay: 5000
            })
        );
        let b = buffer.unwrap();
        assert_eq!(b.prio2buffer, [0, 0, 0, 1, 0, 0, 0, 0]);
        assert_eq!(b.size[..2], [262_144, 131_072]);
        assert_eq!(b.total, 393_216);
        assert_eq!(dcbx, Some(0x0a));
        let DcbRead::Ieee { buffer, .. } = parse(&reply(0x18, false)) else {
            panic!("not parsed");
        };
        assert_eq!(buffer, None);
    }

    #[test]
    fn no_dcb_ops_and_errors_are_told_apart() {
        assert_eq!(parse(&error(libc::EOPNOTSUPP)), DcbRead::NoOps);
        let DcbRead::Error(e) = parse(&error(libc::ENODEV)) else {
            panic!()
        };
        assert!(e.contains("No such device"), "{e}");
    }

    #[test]
    fn malformed_replies_are_errors_not_panics() {
        let full = reply(0x08, true);
        for cut in 0..full.len() {
            let mut r = full[..cut].to_vec();
            if r.len() >= 4 {
                let l = r.len() as u32;
                r[0..4].copy_from_slice(&l.to_ne_bytes());
            }
            let _ = parse(&r);
        }
        // a PFC attribute shorter than struct ieee_pfc is not read
        let short = reply_pfc_len(0x08, false, 100);
        let DcbRead::Ieee { pfc, .. } = parse(&short) else {
            panic!()
        };
        assert_eq!(pfc, None);
        assert!(matches!(parse(&[1, 2, 3]), DcbRead::Error(_)));
    }
}

#[cfg(test)]
mod recorded {
    #[test]
    fn a_veth_answers_that_it_has_no_dcb() {
        let reply = include_bytes!("../../tests/fixtures/doctor/getdcb-veth.bin");
        assert_eq!(super::parse(reply), super::DcbRead::NoOps);
    }
}
