/* Shared headers of the P4 targets (v1model/bmv2 and TNA/Tofino).
 *
 * The same wire formats as dataplane-common/src/wire: Ethernet, one 802.1Q
 * tag (a second tag is QinQ: noted, not parsed), IPv4 with up to 40 bytes
 * of options, IPv6, UDP, the RoCEv2 Base Transport Header and, after an
 * RDMA WRITE first / only BTH, the RDMA Extended Transport Header (RETH),
 * MAC control (802.3x PAUSE and 802.1Qbb PFC).
 *
 * Compiled by p4c 1.2.5 (bmv2) and type-checked by p4test (TNA); see
 * p4/README.md for what is verified.
 */
#ifndef DATAPLANE_HEADERS_P4
#define DATAPLANE_HEADERS_P4

typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;
typedef bit<128> ipv6_addr_t;

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_IPV6 = 0x86dd;
const bit<16> ETHERTYPE_VLAN = 0x8100;
const bit<16> ETHERTYPE_QINQ = 0x88a8;
const bit<16> ETHERTYPE_MAC_CONTROL = 0x8808;
const bit<8> IP_PROTO_UDP = 17;
const bit<16> UDP_PORT_ROCEV2 = 4791;
/* Ultra Ethernet Transport over UDP (IANA; dataplane-common wire/uet.rs). */
const bit<16> UDP_PORT_UET = 4793;
const bit<8> BTH_OPCODE_CNP = 0x81;
/* RC RDMA WRITE first / only (a RETH follows the BTH) and RC ACK
 * (dataplane-common wire/bth.rs). */
const bit<8> BTH_OPCODE_WRITE_FIRST = 0x06;
const bit<8> BTH_OPCODE_WRITE_ONLY = 0x0a;
const bit<8> BTH_OPCODE_ACK = 0x11;
const bit<16> MACCTL_OPCODE_PAUSE = 0x0001;
const bit<16> MACCTL_OPCODE_PFC = 0x0101;
const mac_addr_t MACCTL_DST_MAC = 0x0180c2000001;
/* PAUSE quanta of a generated XOFF (dataplane_common::lossless::PFC_QUANTA). */
const bit<16> PFC_XOFF_QUANTA = 0xffff;

/* Load-balancing modes, as dataplane_common::lb::MODE_* (tests/p4.rs
 * holds them to it). */
const bit<3> LB_MODE_HASH = 0;
const bit<3> LB_MODE_FLOWLET = 1;
const bit<3> LB_MODE_BANDWIDTH = 2;
const bit<3> LB_MODE_SPRAY = 3;
const bit<3> LB_MODE_PLACE = 4;

/* Why a frame is malformed: dataplane_common::parse::ParseError + 1
 * (0 = well formed). */
const bit<8> MAL_NONE = 0;
const bit<8> MAL_ETH_TRUNCATED = 1;
const bit<8> MAL_VLAN_TRUNCATED = 2;
const bit<8> MAL_IPV4_TRUNCATED = 3;
const bit<8> MAL_IPV4_BAD_VERSION = 4;
const bit<8> MAL_IPV4_BAD_IHL = 5;
const bit<8> MAL_IPV4_OPTIONS_TRUNCATED = 6;
const bit<8> MAL_IPV4_BAD_TOTAL_LEN = 7;
const bit<8> MAL_IPV4_LEN_EXCEEDS_FRAME = 8;
const bit<8> MAL_IPV6_TRUNCATED = 9;
const bit<8> MAL_IPV6_BAD_VERSION = 10;
const bit<8> MAL_IPV6_LEN_EXCEEDS_FRAME = 11;
const bit<8> MAL_UDP_TRUNCATED = 12;
const bit<8> MAL_UDP_BAD_LEN = 13;
const bit<8> MAL_BTH_TRUNCATED = 14;
const bit<8> MAL_MACCTL_TRUNCATED = 15;
/* The PDS header of UET (ParseError::UetTruncated); parsed by the v1model
 * program only (DP_PARSE_UET). Its malformed_count slot is 16 & 15 = 0,
 * which MAL_NONE never uses. */
const bit<8> MAL_UET_TRUNCATED = 16;

/* Why a frame goes to the CPU port (the eBPF data plane's XDP_PASS to the
 * kernel). Carried in cpu_h.reason. */
const bit<8> CPU_CLASSIFIED = 1;   /* the port does not route (no [[route]] configured) */
const bit<8> CPU_UNKNOWN_PORT = 2; /* no [[port]] entry for the ingress port */
const bit<8> CPU_MALFORMED = 3;    /* malformed, port's `malformed = "pass"` */
const bit<8> CPU_NOT_IP = 4;       /* ARP, LLDP, QinQ, ... */
const bit<8> CPU_NOT_FOR_US = 5;   /* destination MAC is not the port's */
const bit<8> CPU_TTL_EXPIRED = 6;  /* TTL / hop limit <= 1 */
const bit<8> CPU_LOCAL = 7;        /* a `local = true` route: the switch's own address */

header ethernet_h {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16> ether_type;
}

header vlan_tag_h {
    bit<3> pcp;
    bit<1> dei;
    bit<12> vid;
    bit<16> ether_type;
}

header ipv4_h {
    bit<4> version;
    bit<4> ihl;
    bit<6> dscp;
    bit<2> ecn;
    bit<16> total_len;
    bit<16> identification;
    bit<1> flag_rsvd;
    bit<1> flag_df;
    bit<1> flag_mf;
    bit<13> frag_offset;
    bit<8> ttl;
    bit<8> protocol;
    bit<16> hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

/* One 32-bit word of IPv4 options (IHL 6..15: 1..10 words). */
header ipv4_option_word_h {
    bit<32> data;
}

header ipv6_h {
    bit<4> version;
    bit<6> dscp;
    bit<2> ecn;
    bit<20> flow_label;
    bit<16> payload_len;
    bit<8> next_hdr;
    bit<8> hop_limit;
    ipv6_addr_t src_addr;
    ipv6_addr_t dst_addr;
}

header udp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

/* InfiniBand Base Transport Header (RoCEv2), 12 bytes. */
header bth_h {
    bit<8> opcode;
    bit<1> solicited;
    bit<1> migreq;
    bit<2> pad_count;
    bit<4> tver;
    bit<16> pkey;
    bit<1> fecn;
    bit<1> becn;
    bit<6> resv6;
    bit<24> dest_qp;
    bit<1> ack_req;
    bit<7> resv7;
    bit<24> psn;
}

/* RDMA Extended Transport Header, 16 bytes, after the BTH of an RDMA
 * WRITE first / only: the DMA length is what place mode books
 * (dataplane_common::lb::place_announced). A frame that ends inside it is
 * not malformed (the eBPF parser does not read it; DpTruncationPoint). */
header reth_h {
    bit<64> va;
    bit<32> rkey;
    bit<32> dma_len;
}

#ifdef DP_PARSE_UET
/* UET PDS prologue (UEC 1.0: type(5) next_hdr/ctl_type(4) flags(7)); the
 * rest of the PDS header (PSN ...) stays payload: the pipeline reads no
 * more of it (dataplane-common wire/uet.rs). */
header uet_pds_h {
    bit<5> pds_type;
    bit<4> next_hdr;
    bit<7> flags;
}
#endif

/* MAC control (EtherType 0x8808): the opcode, then the PFC or PAUSE body. */
header mac_control_h {
    bit<16> opcode;
}

header pfc_h {
    bit<16> class_enable;
    bit<16> time0;
    bit<16> time1;
    bit<16> time2;
    bit<16> time3;
    bit<16> time4;
    bit<16> time5;
    bit<16> time6;
    bit<16> time7;
}

header pause_h {
    bit<16> time;
}

/* Padding of a generated PFC frame to the 60-byte minimum:
 * 14 (Ethernet) + 2 (opcode) + 18 (PFC body) + 26 = 60. */
header pfc_pad_h {
    bit<208> zero;
}

/* Prepended to every frame sent to the CPU port (P4Runtime packet-in). */
@controller_header("packet_in")
header cpu_h {
    bit<8> reason;       /* CPU_* */
    bit<8> detail;       /* the traffic class, or the MAL_* code for CPU_MALFORMED */
    bit<7> ingress_port_pad;   /* 0: the port is 16 bits on the wire */
    bit<9> ingress_port;
}

/* TNA only: metadata bridged from ingress to egress (never valid on
 * v1model, whose user metadata crosses the queues by itself). */
@flexible
header bridge_h {
    bit<3> tc;
    bit<1> lossless;
    bit<1> cnp;
    bit<1> to_cpu;   /* a cpu_h follows: the egress parser stops there */
    bit<2> pad;
}

struct headers_t {
    bridge_h bridge;
    cpu_h cpu;
    ethernet_h ethernet;
    vlan_tag_h vlan;
    mac_control_h mac_ctl;
    pfc_h pfc;
    pause_h pause;
    pfc_pad_h pfc_pad;
    ipv4_h ipv4;
    ipv4_option_word_h[10] ipv4_opts;
    ipv6_h ipv6;
    udp_h udp;
    bth_h bth;
    reth_h reth;
#ifdef DP_PARSE_UET
    uet_pds_h uet;
#endif
}

/* What the shared parser records beside the headers. */
struct parse_meta_t {
    /* MAL_* of a semantic error found by the parser (bad version, bad IHL). */
    bit<8> malformed;
    /* A second VLAN tag follows the first (QinQ: counted and punted). */
    bit<1> qinq;
    /* An IPv4 fragment other than the first: no L4 header. */
    bit<1> later_fragment;
    /* The first fragment of a fragmented datagram (MF set, offset 0). */
    bit<1> first_fragment;
}

/* The header boundary a frame ended at when an extract failed (a parser
 * error), as the eBPF parser's ParseError names it: the first header of the
 * chain that should have been extracted and was not (MAL_NONE when that is
 * the RETH, which eBPF does not parse). Two tables of
 * constant entries, no arithmetic and no if-chain: Tofino evaluates them
 * in two stages (an if-chain over the option words took ten). */
control DpTruncationPoint(in headers_t hdr, out bit<8> stage) {
    bit<1> opts_complete;

    action options_complete() {
        opts_complete = 1;
    }

    action options_short() {
        opts_complete = 0;
    }

    /* Whether the parser extracted every option word the IHL announces:
     * they are extracted in order, so the last one is enough. */
    table ipv4_options_extracted {
        key = {
            hdr.ipv4.ihl : ternary;
            hdr.ipv4_opts[0].isValid() : ternary;
            hdr.ipv4_opts[1].isValid() : ternary;
            hdr.ipv4_opts[2].isValid() : ternary;
            hdr.ipv4_opts[3].isValid() : ternary;
            hdr.ipv4_opts[4].isValid() : ternary;
            hdr.ipv4_opts[5].isValid() : ternary;
            hdr.ipv4_opts[6].isValid() : ternary;
            hdr.ipv4_opts[7].isValid() : ternary;
            hdr.ipv4_opts[8].isValid() : ternary;
            hdr.ipv4_opts[9].isValid() : ternary;
        }
        actions = { options_complete; options_short; }
        const default_action = options_short();
        const entries = {
            ( 5, _, _, _, _, _, _, _, _, _, _) : options_complete();
            ( 6, true, _, _, _, _, _, _, _, _, _) : options_complete();
            ( 7, _, true, _, _, _, _, _, _, _, _) : options_complete();
            ( 8, _, _, true, _, _, _, _, _, _, _) : options_complete();
            ( 9, _, _, _, true, _, _, _, _, _, _) : options_complete();
            (10, _, _, _, _, true, _, _, _, _, _) : options_complete();
            (11, _, _, _, _, _, true, _, _, _, _) : options_complete();
            (12, _, _, _, _, _, _, true, _, _, _) : options_complete();
            (13, _, _, _, _, _, _, _, true, _, _) : options_complete();
            (14, _, _, _, _, _, _, _, _, true, _) : options_complete();
            (15, _, _, _, _, _, _, _, _, _, true) : options_complete();
        }
        size = 16;
    }

    action at(bit<8> boundary) {
        stage = boundary;
    }

    /* The first header missing, in the parser's order (first entry wins). */
    table boundary {
        key = {
            hdr.ethernet.isValid() : ternary;
            hdr.ethernet.ether_type : ternary;
            hdr.vlan.isValid() : ternary;
            hdr.vlan.ether_type : ternary;
            hdr.ipv4.isValid() : ternary;
            opts_complete : ternary;
            hdr.ipv6.isValid() : ternary;
            hdr.udp.isValid() : ternary;
            hdr.bth.isValid() : ternary;
        }
        actions = { at; }
        const default_action = at(MAL_BTH_TRUNCATED);
        const entries = {
            (false, _, _, _, _, _, _, _, _) : at(MAL_ETH_TRUNCATED);
            (true, ETHERTYPE_VLAN, false, _, _, _, _, _, _) : at(MAL_VLAN_TRUNCATED);
            (true, ETHERTYPE_QINQ, false, _, _, _, _, _, _) : at(MAL_VLAN_TRUNCATED);
            (true, ETHERTYPE_MAC_CONTROL, false, _, _, _, _, _, _) : at(MAL_MACCTL_TRUNCATED);
            (true, _, true, ETHERTYPE_MAC_CONTROL, _, _, _, _, _) : at(MAL_MACCTL_TRUNCATED);
            (true, ETHERTYPE_IPV4, false, _, false, _, _, _, _) : at(MAL_IPV4_TRUNCATED);
            (true, _, true, ETHERTYPE_IPV4, false, _, _, _, _) : at(MAL_IPV4_TRUNCATED);
            (_, _, _, _, true, 0, _, _, _) : at(MAL_IPV4_OPTIONS_TRUNCATED);
            (true, ETHERTYPE_IPV6, false, _, _, _, false, _, _) : at(MAL_IPV6_TRUNCATED);
            (true, _, true, ETHERTYPE_IPV6, _, _, false, _, _) : at(MAL_IPV6_TRUNCATED);
            (_, _, _, _, _, _, _, false, _) : at(MAL_UDP_TRUNCATED);
            /* the BTH was extracted: the frame ended in the RETH of a WRITE
             * first / only, which the eBPF parser does not parse: well
             * formed (place mode books as if it carried no length) */
            (_, _, _, _, _, _, _, true, true) : at(MAL_NONE);
        }
        size = 16;
    }

    apply {
        ipv4_options_extracted.apply();
        boundary.apply();
    }
}

#endif /* DATAPLANE_HEADERS_P4 */
