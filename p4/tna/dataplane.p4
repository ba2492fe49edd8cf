/* The data plane for Tofino (P4_16, TNA: tna.p4 / bf-p4c).
 *
 * The stages of p4/v1model/dataplane.p4 with TNA externs:
 *   classification  same tables (port_cfg, dscp_to_tc, pcp_to_tc, tc_cfg);
 *                   the class picks the queue (ig_tm_md.qid) and the ingress
 *                   CoS (ig_tm_md.ingress_cos), which the traffic manager
 *                   maps to a priority group (PPG)
 *   routing         same LPM, next-hop and group tables
 *   load balancing  Hash (CRC-32, seeded, 5-tuple + BTH destination QP),
 *                   resilient buckets, flowlets in a Register with
 *                   RegisterActions (a new flowlet takes a Random bucket,
 *                   LetFlow-style), utilisation-aware choice between the
 *                   bucket's two candidates from load_a / load_b, which the
 *                   control plane fills from the egress byte counter
 *                   port_tx (Tofino's ingress cannot read egress registers);
 *                   place mode pins each flow in the flowlet registers and
 *                   places it by the bands alone: NO bookings (see
 *                   "place mode" at the load-balancing code)
 *   ECN             egress, from the traffic manager's queue depth
 *                   (eg_intr_md.enq_qdepth, in cells) with a RED range table
 *                   (wred) and Random
 *   PFC, buffers    NOT in this program: traffic-manager configuration
 *                   (PPGs with pfc_enable, skid = headroom, dynamic BAF,
 *                   pools, MAC PFC enable maps), written by the bfrt_python
 *                   script of `dataplane p4 entries --target tofino`. The MAC
 *                   consumes received PFC when RX_PFC_EN_MAP enables it;
 *                   MAC control frames that do reach the pipeline are
 *                   counted and dropped.
 *
 * Frames the eBPF data plane hands to the kernel go to CPU_PORT (default
 * 192, the PCIe CPU port of a 2-pipe Tofino; -DCPU_PORT=320 on 4 pipes) with
 * a cpu_h header in front.
 *
 * Not checked here (the ingress pipeline does not know the frame length):
 * IPv4 total length / IPv6 payload length beyond the frame.
 *
 * Laid out for Tofino's stages: the frame checks, classification, routing
 * and hashing all look at the frame as received, side by side; one table
 * (verdict) then decides what happens to it, and only a forwarded frame
 * touches the flowlet registers. Comparisons Tofino's gateways cannot make
 * (field against field, wide fields) are tables of constant entries or
 * saturating subtractions; p4/README.md, "Tofino: how the program fits
 * bf-p4c", lists each rule.
 *
 * Compiled by bf-p4c (p4c-barefoot 9.13.4, open-source Tofino back end):
 * 12 of 12 ingress stages, 8 egress stages on Tofino 1, without the RETH
 * and place mode, which are type-checked by p4test only (no bf-p4c here:
 * their PHV and stage cost on Tofino is unchecked). NOT run on the
 * Tofino model or a Tofino.
 */
#include <core.p4>
#include <tna.p4>

#include "../include/headers.p4"

#ifndef CPU_PORT
#define CPU_PORT 192
#endif
#define FLOWLET_SLOTS 8192

const bit<2> ROUTE_MISS = 0;
const bit<2> ROUTE_NEXTHOP = 1;
const bit<2> ROUTE_GROUP = 2;
const bit<2> ROUTE_LOCAL = 3;

/* What ingress does with a frame (the verdict table). */
const bit<2> V_FORWARD = 0;
const bit<2> V_PUNT = 1;
const bit<2> V_DROP = 2;

/* drop_count / punt_count slots (index port ++ reason[3:0]) */
const bit<4> DROP_MALFORMED = 0;
const bit<4> DROP_MAC_CONTROL = 1;
const bit<4> DROP_NO_ROUTE = 2;
const bit<4> DROP_NO_MEMBER = 3;
const bit<4> DROP_NO_NEIGHBOUR = 4;

/* A flowlet's next hop and whether the slot holds one. */
struct flowlet_nh_t {
    bit<16> nh;
    bit<16> valid;
}

struct ig_meta_t {
    parse_meta_t pm;
    bit<32> hash_seed;
    bit<1> known_port;
    bit<8> dscp_map;
    bit<8> pcp_map;
    bit<1> trust_dot1p;
    bit<3> default_tc;
    bit<3> cnp_tc;
    bit<1> malformed_drop;
    bit<1> forward;
    mac_addr_t mac_diff;
    bit<1> for_us;
    bit<8> malformed;
    bit<16> ip_payload;
    bit<16> ip_short;
    bit<16> udp_excess;
    bit<1> is_ip;
    bit<6> dscp;
    bit<3> tc;
    bit<1> lossless;
    bit<1> roce;
    bit<1> cnp;
    bit<8> ttl;
    bit<1> to_cpu;
    bit<2> verdict;
    bit<8> cpu_reason;
    bit<1> dropped;
    bit<4> drop_why;
    bit<1> use_nh;
    bit<2> route_kind;
    bit<16> nh;
    bit<16> grp;
    bit<1> group_hit;
    bit<3> lb_mode;
    bit<1> per_flow;   /* flowlet, bandwidth or place: flowlet registers */
    bit<1> by_load;    /* bandwidth, spray or place: load_a / load_b */
    bit<32> flowlet_timeout;
    bit<32> now;
    bit<32> flowlet_gap;
    bit<32> gap_over;
    bit<16> flowlet_new;   /* 16 bits: read by flowlet_pick's 16-bit SALU */
    bit<13> flowlet_slot;
    bit<7> bucket;
    bit<7> rand_bucket;
    bit<1> bucket_hit;
    bit<16> nh_a;
    PortId_t port_a;
    bit<16> nh_b;
    PortId_t port_b;
    bit<8> band_a;
    bit<8> band_b;
    bit<16> flow_sport;
    bit<16> flow_dport;
    bit<24> flow_qp;
    bit<32> flow_hash;
    bit<1> nexthop_hit;
    bit<1> rewrite_ipv4;
}

struct eg_meta_t {
    parse_meta_t pm;
    bit<1> wred_hit;
    bit<8> rnd;
    bit<8> wred_fire;
    bit<1> wred_always;
    bit<1> wred_mark;
    bit<1> wred_drop;
    bit<2> ecn;
    bit<1> rewrite_ipv4;
}

/* ---- parsers: the shared template, twice ---------------------------------- */

#define DP_PARSER_NAME DpIngressParser
#define DP_PARSER_PARAMS packet_in pkt, out headers_t hdr, out ig_meta_t meta, out ingress_intrinsic_metadata_t ig_intr_md
/* TNA does not zero user metadata: every field ingress reads before an
 * action may have written it starts here. */
#define DP_PARSER_INIT                                                  \
    pkt.extract(ig_intr_md);                                            \
    pkt.advance(PORT_METADATA_SIZE);                                    \
    meta.known_port = 0;                                                \
    meta.ip_payload = 0;                                                \
    meta.ip_short = 0;                                                  \
    meta.is_ip = 0;                                                     \
    meta.dscp = 0;                                                      \
    meta.lossless = 0;                                                  \
    meta.roce = 0;                                                      \
    meta.cnp = 0;                                                       \
    meta.ttl = 0;                                                       \
    meta.to_cpu = 0;                                                    \
    meta.route_kind = 0;                                                \
    meta.group_hit = 0;                                                 \
    meta.per_flow = 0;                                                  \
    meta.by_load = 0;                                                   \
    meta.gap_over = 0;                                                  \
    meta.flowlet_new = 0;                                               \
    meta.bucket_hit = 0;                                                \
    meta.band_a = 0;                                                    \
    meta.band_b = 0;                                                    \
    meta.flow_sport = 0;                                                \
    meta.flow_dport = 0;                                                \
    meta.flow_qp = 0;                                                   \
    meta.nexthop_hit = 0;                                               \
    meta.use_nh = 0;                                                    \
    meta.tc = 0;                                                        \
    meta.rewrite_ipv4 = 0;                                              \
    meta.for_us = 0;                                                    \
    meta.dropped = 0;
#define DP_PARSER_NEXT parse_ethernet
#define DP_PARSER_EXTRA_STATES
#include "../include/parser.p4"
#undef DP_PARSER_NAME
#undef DP_PARSER_PARAMS
#undef DP_PARSER_INIT
#undef DP_PARSER_NEXT
#undef DP_PARSER_EXTRA_STATES

/* Egress: the bridged metadata first; a frame for the CPU is not parsed
 * further (its cpu_h would otherwise be read as Ethernet). The RETH stays
 * payload here (only ingress reads it; a forwarded frame may end inside
 * it, which would be a parser error). */
#define DP_PARSER_NAME DpEgressParser
#define DP_PARSER_PARAMS packet_in pkt, out headers_t hdr, out eg_meta_t meta, out egress_intrinsic_metadata_t eg_intr_md
#define DP_PARSER_INIT                                                  \
    pkt.extract(eg_intr_md);                                            \
    pkt.extract(hdr.bridge);                                            \
    meta.wred_hit = 0;                                                  \
    meta.ecn = 0;                                                       \
    meta.rewrite_ipv4 = 0;
#define DP_PARSER_NEXT bridged
#define DP_PARSER_NO_RETH
#define DP_PARSER_EXTRA_STATES                                          \
    state bridged {                                                     \
        transition select(hdr.bridge.to_cpu) {                          \
            1: to_cpu;                                                  \
            default: parse_ethernet;                                    \
        }                                                               \
    }                                                                   \
    state to_cpu {                                                      \
        pkt.extract(hdr.cpu);                                           \
        transition accept;                                              \
    }
#include "../include/parser.p4"

/* ---- ingress ------------------------------------------------------------ */

control DpIngress(
        inout headers_t hdr,
        inout ig_meta_t meta,
        in ingress_intrinsic_metadata_t ig_intr_md,
        in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
        inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
        inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    DpTruncationPoint() truncation_point;


    Counter<bit<32>, PortId_t>(512, CounterType_t.PACKETS) unknown_port_count;
    Counter<bit<32>, bit<13>>(8192, CounterType_t.PACKETS) malformed_count;     /* port ++ MAL_*[3:0] */
    Counter<bit<64>, bit<12>>(4096, CounterType_t.PACKETS_AND_BYTES) rx_tc_count; /* port ++ tc */
    Counter<bit<32>, bit<13>>(8192, CounterType_t.PACKETS) drop_count;          /* port ++ DROP_* */
    Counter<bit<32>, bit<13>>(8192, CounterType_t.PACKETS) punt_count;          /* port ++ CPU_*[3:0] */
    /* one counter per priority: a counter is reached once per packet */
    Counter<bit<32>, PortId_t>(512, CounterType_t.PACKETS) rx_pfc0;
    Counter<bit<32>, PortId_t>(512, CounterType_t.PACKETS) rx_pfc1;
    Counter<bit<32>, PortId_t>(512, CounterType_t.PACKETS) rx_pfc2;
    Counter<bit<32>, PortId_t>(512, CounterType_t.PACKETS) rx_pfc3;
    Counter<bit<32>, PortId_t>(512, CounterType_t.PACKETS) rx_pfc4;
    Counter<bit<32>, PortId_t>(512, CounterType_t.PACKETS) rx_pfc5;
    Counter<bit<32>, PortId_t>(512, CounterType_t.PACKETS) rx_pfc6;
    Counter<bit<32>, PortId_t>(512, CounterType_t.PACKETS) rx_pfc7;

    Hash<bit<32>>(HashAlgorithm_t.CRC32) hash_v4;
    Hash<bit<32>>(HashAlgorithm_t.CRC32) hash_v6;
    Random<bit<7>>() rnd_bucket;
    /* A register index must be a field or a hash result: the flowlet slot
     * is a hash of (flow hash, group), not v1model's XOR of the two. */
    Hash<bit<13>>(HashAlgorithm_t.CRC16) hash_slot;

    /* Flowlets: time of the flow's last packet (ns, low 32 bits) and its
     * next hop. flowlet_touch returns the gap since that packet (wrap-safe
     * modulo 2^32 ns, as v1model's now - last); flowlet_pick keeps the
     * stored next hop while the flowlet runs and stores the frame's
     * candidate when a new one starts or the slot was never written
     * (valid = 0: next hop 0 is a real next hop). */
    Register<bit<32>, bit<13>>(FLOWLET_SLOTS, 0) flowlet_seen;
    RegisterAction<bit<32>, bit<13>, bit<32>>(flowlet_seen) flowlet_touch = {
        void apply(inout bit<32> last, out bit<32> gap) {
            gap = meta.now - last;
            last = meta.now;
        }
    };
    Register<flowlet_nh_t, bit<13>>(FLOWLET_SLOTS, { 0, 0 }) flowlet_nh;
    RegisterAction<flowlet_nh_t, bit<13>, bit<16>>(flowlet_nh) flowlet_pick = {
        void apply(inout flowlet_nh_t v, out bit<16> nh) {
            if (meta.flowlet_new != 0 || v.valid == 0) {
                v.nh = meta.nh;
                v.valid = 1;
            }
            nh = v.nh;
        }
    };

    /* Whether the flowlet is new: the gap exceeded the timeout (a table: a
     * 32-bit test does not fit the gateway here). */
    action flowlet_runs() {
        meta.flowlet_new = 0;
    }
    action flowlet_starts() {
        meta.flowlet_new = 1;
    }
    table flowlet_age {
        key = { meta.gap_over : exact; }
        actions = { flowlet_runs; flowlet_starts; }
        const default_action = flowlet_starts();
        const entries = {
            0 : flowlet_runs();
        }
        size = 1;
    }

    /* What to do with the frame, decided once from everything the earlier
     * stages found, in dataplane_common's order (the first matching entry
     * wins); routing and load balancing run beside the checks, and only a
     * V_FORWARD frame touches the flowlet registers. cpu_h is filled at
     * the end of ingress, one field per action (cpu_* below): Tofino cannot
     * write a header from constants and several PHV sources in one action. */
    action v_forward() {
        meta.verdict = V_FORWARD;
    }

    action v_punt(bit<8> reason) {
        meta.verdict = V_PUNT;
        meta.cpu_reason = reason;
    }

    /* a malformed frame on a `malformed = "drop"` port: malformed_count */
    action v_drop_malformed() {
        meta.verdict = V_DROP;
    }

    /* a drop counted in drop_count */
    action v_drop(bit<4> why) {
        meta.verdict = V_DROP;
        meta.dropped = 1;
        meta.drop_why = why;
    }

    table verdict {
        key = {
            meta.known_port : ternary;
            meta.malformed : range;
            meta.malformed_drop : ternary;
            hdr.mac_ctl.isValid() : ternary;
            meta.forward : ternary;
            meta.is_ip : ternary;
            meta.pm.qinq : ternary;
            meta.for_us : ternary;
            meta.ttl : range;
            meta.route_kind : ternary;
            meta.group_hit : ternary;
        }
        actions = { v_forward; v_punt; v_drop_malformed; v_drop; }
        const default_action = v_forward();
        const entries = {
            (0, _, _, _, _, _, _, _, _, _, _) : v_punt(CPU_UNKNOWN_PORT);
            (_, 1 .. 255, 1, _, _, _, _, _, _, _, _) : v_drop_malformed();
            (_, 1 .. 255, 0, _, _, _, _, _, _, _, _) : v_punt(CPU_MALFORMED);
            (_, _, _, true, _, _, _, _, _, _, _) : v_drop(DROP_MAC_CONTROL);
            (_, _, _, _, 0, _, _, _, _, _, _) : v_punt(CPU_CLASSIFIED);
            (_, _, _, _, _, 0, _, _, _, _, _) : v_punt(CPU_NOT_IP);
            (_, _, _, _, _, _, 1, _, _, _, _) : v_punt(CPU_NOT_IP);
            (_, _, _, _, _, _, _, 0, _, _, _) : v_punt(CPU_NOT_FOR_US);
            (_, _, _, _, _, _, _, _, 0 .. 1, _, _) : v_punt(CPU_TTL_EXPIRED);
            (_, _, _, _, _, _, _, _, _, ROUTE_LOCAL, _) : v_punt(CPU_LOCAL);
            (_, _, _, _, _, _, _, _, _, ROUTE_MISS, _) : v_drop(DROP_NO_ROUTE);
            (_, _, _, _, _, _, _, _, _, ROUTE_GROUP, 0) : v_drop(DROP_NO_MEMBER);
        }
        size = 16;
    }

    action to_cpu_port() {
        ig_tm_md.ucast_egress_port = CPU_PORT;
        meta.to_cpu = 1;
    }

    action cpu_valid() {
        hdr.cpu.setValid();
        hdr.cpu.ingress_port_pad = 0;
    }
    table cpu_valid_tbl {
        actions = { cpu_valid; }
        const default_action = cpu_valid();
        size = 1;
    }

    action cpu_reason() {
        hdr.cpu.reason = meta.cpu_reason;
    }
    table cpu_reason_tbl {
        actions = { cpu_reason; }
        const default_action = cpu_reason();
        size = 1;
    }

    /* cpu_h.detail: the MAL_* code of a malformed frame, 0 for an unknown
     * port, otherwise the traffic class; written from action data (a
     * copy of a 3-bit class into the 8-bit detail does not fit PHV). */
    action cpu_detail(bit<8> detail) {
        hdr.cpu.detail = detail;
    }
    table cpu_detail_tbl {
        key = {
            meta.cpu_reason : ternary;
            meta.tc : ternary;
            meta.malformed : ternary;
        }
        actions = { cpu_detail; }
        const default_action = cpu_detail(0);
        const entries = {
            (CPU_MALFORMED, _, 1) : cpu_detail(1);
            (CPU_MALFORMED, _, 2) : cpu_detail(2);
            (CPU_MALFORMED, _, 3) : cpu_detail(3);
            (CPU_MALFORMED, _, 4) : cpu_detail(4);
            (CPU_MALFORMED, _, 5) : cpu_detail(5);
            (CPU_MALFORMED, _, 6) : cpu_detail(6);
            (CPU_MALFORMED, _, 7) : cpu_detail(7);
            (CPU_MALFORMED, _, 8) : cpu_detail(8);
            (CPU_MALFORMED, _, 9) : cpu_detail(9);
            (CPU_MALFORMED, _, 10) : cpu_detail(10);
            (CPU_MALFORMED, _, 11) : cpu_detail(11);
            (CPU_MALFORMED, _, 12) : cpu_detail(12);
            (CPU_MALFORMED, _, 13) : cpu_detail(13);
            (CPU_MALFORMED, _, 14) : cpu_detail(14);
            (CPU_MALFORMED, _, 15) : cpu_detail(15);
            (CPU_UNKNOWN_PORT, _, _) : cpu_detail(0);
            (_, 0, _) : cpu_detail(0);
            (_, 1, _) : cpu_detail(1);
            (_, 2, _) : cpu_detail(2);
            (_, 3, _) : cpu_detail(3);
            (_, 4, _) : cpu_detail(4);
            (_, 5, _) : cpu_detail(5);
            (_, 6, _) : cpu_detail(6);
            (_, 7, _) : cpu_detail(7);
        }
        size = 32;
    }

    action cpu_port() {
        hdr.cpu.ingress_port = ig_intr_md.ingress_port;
    }
    table cpu_port_tbl {
        actions = { cpu_port; }
        const default_action = cpu_port();
        size = 1;
    }

    action drop() {
        ig_dprsr_md.drop_ctl = 1;
    }

    /* A drop found after the verdict (no member, no neighbour); drop_count
     * is reached once, at the end of ingress (a counter is used by one
     * table per packet on Tofino). */
    action drop_for(bit<4> why) {
        ig_dprsr_md.drop_ctl = 1;
        meta.dropped = 1;
        meta.drop_why = why;
    }

    /* The IPv4 header length by IHL (Tofino keeps ihl in one byte with
     * version: no arithmetic on it), the payload length after it, and
     * whether the total length is shorter than the header (saturating
     * subtraction: non-zero when it is). */
    action set_hlen(bit<16> hlen, bit<16> minus_hlen) {
        /* action data cannot be a subtrahend on Tofino: add 2^16 - hlen */
        meta.ip_payload = hdr.ipv4.total_len + minus_hlen;
        meta.ip_short = hlen |-| hdr.ipv4.total_len;
    }

    table ipv4_hlen {
        key = { hdr.ipv4.ihl : exact; }
        actions = { set_hlen; NoAction; }
        const default_action = NoAction();
        const entries = {
            5 : set_hlen(20, 65516);
            6 : set_hlen(24, 65512);
            7 : set_hlen(28, 65508);
            8 : set_hlen(32, 65504);
            9 : set_hlen(36, 65500);
            10 : set_hlen(40, 65496);
            11 : set_hlen(44, 65492);
            12 : set_hlen(48, 65488);
            13 : set_hlen(52, 65484);
            14 : set_hlen(56, 65480);
            15 : set_hlen(60, 65476);
        }
        size = 16;
    }

    action set_malformed(bit<8> reason) {
        meta.malformed = reason;
    }

    /* The UDP and BTH length checks of dataplane_common::parse, in its
     * order (the first matching entry wins), as one table: Tofino's
     * gateways cannot evaluate the v1model program's if-chain. */
    table length_checks {
        key = {
            meta.malformed : ternary;
            hdr.ipv4.isValid() : ternary;
            meta.ip_short : range;
            hdr.udp.isValid() : ternary;
            hdr.bth.isValid() : ternary;
            meta.pm.first_fragment : ternary;
            meta.ip_payload : range;
            hdr.udp.length : range;
            meta.udp_excess : range;
        }
        actions = { set_malformed; NoAction; }
        const default_action = NoAction();
        const entries = {
            /* an IPv4 total length shorter than its header (IHL) */
            (MAL_NONE, true, 1 .. 0xffff, _, _, _, _, _, _) : set_malformed(MAL_IPV4_BAD_TOTAL_LEN);
            (MAL_UDP_TRUNCATED, true, 1 .. 0xffff, _, _, _, _, _, _) : set_malformed(MAL_IPV4_BAD_TOTAL_LEN);
            (MAL_BTH_TRUNCATED, true, 1 .. 0xffff, _, _, _, _, _, _) : set_malformed(MAL_IPV4_BAD_TOTAL_LEN);
            /* only frames that were fine so far, or ended in the BTH */
            (MAL_NONE, _, _, true, _, _, 0 .. 7, _, _) : set_malformed(MAL_UDP_TRUNCATED);
            (MAL_BTH_TRUNCATED, _, _, true, _, _, 0 .. 7, _, _) : set_malformed(MAL_UDP_TRUNCATED);
            (MAL_NONE, _, _, true, _, _, _, 0 .. 7, _) : set_malformed(MAL_UDP_BAD_LEN);
            (MAL_BTH_TRUNCATED, _, _, true, _, _, _, 0 .. 7, _) : set_malformed(MAL_UDP_BAD_LEN);
            /* longer than the IP payload (not a first fragment: its UDP length
             * covers the whole datagram) */
            (MAL_NONE, _, _, true, _, 0, _, _, 1 .. 0xffff) : set_malformed(MAL_UDP_BAD_LEN);
            (MAL_BTH_TRUNCATED, _, _, true, _, 0, _, _, 1 .. 0xffff) : set_malformed(MAL_UDP_BAD_LEN);
            /* RoCEv2: room for the BTH (12) and the ICRC (4) */
            (MAL_NONE, _, _, true, true, 0, _, 0 .. 23, _) : set_malformed(MAL_BTH_TRUNCATED);
            (MAL_NONE, _, _, true, true, 1, 0 .. 19, _, _) : set_malformed(MAL_BTH_TRUNCATED);
        }
        size = 16;
    }

    @id(0x01000001)
    action set_switch(bit<32> hash_seed) {
        meta.hash_seed = hash_seed;
    }

    @id(0x02000001)
    table switch_cfg {
        actions = { set_switch; }
        default_action = set_switch(0);
        size = 1;
    }

    @id(0x01000002)
    action set_port(bit<8> dscp_map, bit<8> pcp_map, bit<1> trust_dot1p, bit<3> default_tc,
                    bit<3> cnp_tc, bit<1> malformed_drop, bit<1> forward, bit<48> port_mac) {
        meta.known_port = 1;
        meta.dscp_map = dscp_map;
        meta.pcp_map = pcp_map;
        meta.trust_dot1p = trust_dot1p;
        meta.default_tc = default_tc;
        meta.cnp_tc = cnp_tc;
        meta.malformed_drop = malformed_drop;
        meta.forward = forward;
        /* zero when the frame is addressed to the port (checked by
         * mac_is_port's single entry: a 48-bit compare is too wide for a
         * Tofino gateway) */
        meta.mac_diff = hdr.ethernet.dst_addr ^ port_mac;
    }

    @id(0x01000003)
    action unknown_port() {
        meta.known_port = 0;
    }

    @id(0x02000002)
    table port_cfg {
        key = { ig_intr_md.ingress_port : exact @name("ingress_port"); }
        actions = { set_port; unknown_port; }
        default_action = unknown_port();
        size = 512;
    }

    action frame_for_us() {
        meta.for_us = 1;
    }
    table mac_is_port {
        key = { meta.mac_diff : exact; }
        actions = { frame_for_us; NoAction; }
        const default_action = NoAction();
        const entries = {
            0 : frame_for_us();
        }
        size = 1;
    }

    @id(0x01000004)
    action set_tc(bit<3> tc) {
        meta.tc = tc;
    }

    action use_default_tc() {
        meta.tc = meta.default_tc;
    }

    @id(0x02000003)
    table dscp_to_tc {
        key = {
            meta.dscp_map : exact @name("dscp_map");
            meta.dscp : exact @name("dscp");
        }
        actions = { set_tc; @defaultonly use_default_tc; }
        const default_action = use_default_tc();
        size = 4096;
    }

    @id(0x02000004)
    table pcp_to_tc {
        key = {
            meta.pcp_map : exact @name("pcp_map");
            hdr.vlan.pcp : exact @name("pcp");
        }
        actions = { set_tc; @defaultonly use_default_tc; }
        const default_action = use_default_tc();
        size = 512;
    }

    @id(0x01000005)
    action set_tc_cfg(bit<1> lossless, bit<5> queue) {
        meta.lossless = lossless;
        ig_tm_md.qid = queue;
        ig_tm_md.ingress_cos = meta.tc;
    }

    @id(0x02000005)
    table tc_cfg {
        key = {
            ig_intr_md.ingress_port : exact @name("ingress_port");
            meta.tc : exact @name("tc");
        }
        actions = { set_tc_cfg; }
        default_action = set_tc_cfg(0, 0);
        size = 4096;
    }

    @id(0x01000006)
    action route_nexthop(bit<16> nh) {
        meta.route_kind = ROUTE_NEXTHOP;
        meta.nh = nh;
    }

    @id(0x01000007)
    action route_group(bit<16> grp) {
        meta.route_kind = ROUTE_GROUP;
        meta.grp = grp;
    }

    @id(0x01000008)
    action route_local() {
        meta.route_kind = ROUTE_LOCAL;
    }

    @id(0x01000009)
    action route_miss() {
        meta.route_kind = ROUTE_MISS;
    }

    @id(0x02000006)
    table ipv4_lpm {
        key = { hdr.ipv4.dst_addr : lpm @name("dst_addr"); }
        actions = { route_nexthop; route_group; route_local; route_miss; }
        default_action = route_miss();
        size = 4096;
    }

    @id(0x02000007)
    table ipv6_lpm {
        key = { hdr.ipv6.dst_addr : lpm @name("dst_addr"); }
        actions = { route_nexthop; route_group; route_local; route_miss; }
        default_action = route_miss();
        size = 1024;
    }

    @id(0x0100000a)
    action set_group(bit<3> mode, bit<32> flowlet_timeout) {
        meta.group_hit = 1;
        meta.lb_mode = mode;
        meta.flowlet_timeout = flowlet_timeout;   /* nanoseconds */
    }

    /* What a mode uses, as flags (one gateway bit each instead of an OR
     * over the mode's values). */
    action mode_uses(bit<1> per_flow, bit<1> by_load) {
        meta.per_flow = per_flow;
        meta.by_load = by_load;
    }
    table mode_flags {
        key = { meta.lb_mode : exact; }
        actions = { mode_uses; }
        const default_action = mode_uses(0, 0);
        const entries = {
            LB_MODE_FLOWLET : mode_uses(1, 0);
            LB_MODE_BANDWIDTH : mode_uses(1, 1);
            LB_MODE_SPRAY : mode_uses(0, 1);
            LB_MODE_PLACE : mode_uses(1, 1);
        }
        size = 8;
    }

    @id(0x02000008)
    table group_cfg {
        key = { meta.grp : exact @name("grp"); }
        actions = { set_group; @defaultonly NoAction; }
        default_action = NoAction();
        size = 64;
    }

    @id(0x0100000b)
    action set_bucket(bit<16> nh, bit<9> port, bit<16> alt_nh, bit<9> alt_port) {
        meta.bucket_hit = 1;
        meta.nh_a = nh;
        meta.port_a = port;
        meta.nh_b = alt_nh;
        meta.port_b = alt_port;
    }

    @id(0x02000009)
    table group_bucket {
        key = {
            meta.grp : exact @name("grp");
            meta.bucket : exact @name("bucket");
        }
        actions = { set_bucket; @defaultonly NoAction; }
        default_action = NoAction();
        size = 8192;
    }

    /* Utilisation band (0..7) of each port, written by the control plane
     * from port_tx; two copies because a table is applied once per packet. */
    @id(0x0100000e)
    action set_load_a(bit<8> band) {
        meta.band_a = band;
    }

    @id(0x0200000c)
    table load_a {
        key = { meta.port_a : exact @name("port_a"); }
        actions = { set_load_a; @defaultonly NoAction; }
        default_action = NoAction();
        size = 512;
    }

    @id(0x0100000f)
    action set_load_b(bit<8> band) {
        meta.band_b = band;
    }

    @id(0x0200000d)
    table load_b {
        key = { meta.port_b : exact @name("port_b"); }
        actions = { set_load_b; @defaultonly NoAction; }
        default_action = NoAction();
        size = 512;
    }

    /* The second candidate when its band is lower (bands are 0..7): a
     * table, as a Tofino gateway cannot compare two fields. */
    action take_b() {
        meta.nh = meta.nh_b;
    }
    table prefer_b {
        key = {
            meta.band_a : exact;
            meta.band_b : exact;
        }
        actions = { take_b; NoAction; }
        const default_action = NoAction();
        const entries = {
            (1, 0) : take_b();
            (2, 0) : take_b();
            (2, 1) : take_b();
            (3, 0) : take_b();
            (3, 1) : take_b();
            (3, 2) : take_b();
            (4, 0) : take_b();
            (4, 1) : take_b();
            (4, 2) : take_b();
            (4, 3) : take_b();
            (5, 0) : take_b();
            (5, 1) : take_b();
            (5, 2) : take_b();
            (5, 3) : take_b();
            (5, 4) : take_b();
            (6, 0) : take_b();
            (6, 1) : take_b();
            (6, 2) : take_b();
            (6, 3) : take_b();
            (6, 4) : take_b();
            (6, 5) : take_b();
            (7, 0) : take_b();
            (7, 1) : take_b();
            (7, 2) : take_b();
            (7, 3) : take_b();
            (7, 4) : take_b();
            (7, 5) : take_b();
            (7, 6) : take_b();
        }
        size = 32;
    }

    @id(0x0100000c)
    action set_nexthop(bit<48> dmac, bit<48> smac, bit<9> port) {
        meta.nexthop_hit = 1;
        hdr.ethernet.dst_addr = dmac;
        hdr.ethernet.src_addr = smac;
        ig_tm_md.ucast_egress_port = port;
    }

    /* no neighbour for the next hop: dropped and counted */
    action no_neighbour() {
        drop_for(DROP_NO_NEIGHBOUR);
    }

    @id(0x0200000a)
    table nexthop {
        key = { meta.nh : exact @name("nh"); }
        actions = { set_nexthop; @defaultonly no_neighbour; }
        const default_action = no_neighbour();
        size = 256;
    }

    apply {
        /* ---- lookups on the frame as received (no dependencies) -------- */
        switch_cfg.apply();
        port_cfg.apply();
        /* drawn for every frame: an action has 32 bits of hash/random input */
        meta.rand_bucket = rnd_bucket.get();
        meta.now = ig_intr_md.ingress_mac_tstamp[31:0];
        if (hdr.ipv4.isValid()) {
            meta.is_ip = 1;
            meta.dscp = hdr.ipv4.dscp;
            meta.ttl = hdr.ipv4.ttl;
            ipv4_lpm.apply();
        } else if (hdr.ipv6.isValid()) {
            meta.is_ip = 1;
            meta.dscp = hdr.ipv6.dscp;
            meta.ttl = hdr.ipv6.hop_limit;
            ipv6_lpm.apply();
        }
        if (hdr.udp.isValid()) {
            meta.flow_sport = hdr.udp.src_port;
            meta.flow_dport = hdr.udp.dst_port;
        }
        if (hdr.bth.isValid()) {
            meta.roce = 1;
            meta.flow_qp = hdr.bth.dest_qp;
            if (hdr.bth.opcode == BTH_OPCODE_CNP) {
                meta.cnp = 1;
            }
        }

        /* ---- frame checks, in dataplane_common::parse's order; those
         * that need the frame length are not made here ------------------- */
        meta.malformed = meta.pm.malformed;
        /* a header cut short (other parser error bits, e.g. a bad FCS,
         * are not a truncation) */
        if (meta.pm.malformed == MAL_NONE
                && (ig_prsr_md.parser_err & PARSER_ERROR_PARTIAL_HDR) != 0) {
            truncation_point.apply(hdr, meta.malformed);
        }
        if (hdr.ipv4.isValid()) {
            ipv4_hlen.apply();
        } else if (hdr.ipv6.isValid()) {
            meta.ip_payload = hdr.ipv6.payload_len;
        }
        if (hdr.udp.isValid()) {
            /* saturating: non-zero when the UDP length exceeds the IP payload */
            meta.udp_excess = hdr.udp.length |-| meta.ip_payload;
        }
        length_checks.apply();

        /* ---- classification ---------------------------------------------- */
        mac_is_port.apply();
        if (meta.cnp == 1) {
            meta.tc = meta.cnp_tc;
        } else if (meta.trust_dot1p == 0 && meta.is_ip == 1) {
            dscp_to_tc.apply();
        } else if (hdr.vlan.isValid()) {
            pcp_to_tc.apply();
        } else {
            meta.tc = meta.default_tc;
        }

        /* ---- load balancing inputs (side-effect free) --------------------- */
        if (hdr.ipv4.isValid()) {
            /* the v1model program's 44-byte key: IPv4 addresses as
             * ::ffff:a.b.c.d, so both targets hash the same bytes */
            meta.flow_hash = hash_v4.get({ meta.hash_seed, 80w0, 16w0xffff, hdr.ipv4.src_addr,
                                           80w0, 16w0xffff, hdr.ipv4.dst_addr,
                                           hdr.ipv4.protocol, meta.flow_sport, meta.flow_dport,
                                           meta.flow_qp });
        } else {
            meta.flow_hash = hash_v6.get({ meta.hash_seed, hdr.ipv6.src_addr, hdr.ipv6.dst_addr,
                                           hdr.ipv6.next_hdr, meta.flow_sport, meta.flow_dport,
                                           meta.flow_qp });
        }
        if (meta.route_kind == ROUTE_GROUP) {
            group_cfg.apply();
            mode_flags.apply();
            meta.flowlet_slot = hash_slot.get({ meta.flow_hash, meta.grp });
            /* hash and place: the flow's bucket (place: ties keep its
             * member, as on bmv2); flowlet and bandwidth: a new flowlet
             * takes a random bucket (LetFlow), a running one keeps the
             * next hop in flowlet_nh; spray: a random bucket per frame */
            if (meta.lb_mode == LB_MODE_HASH || meta.lb_mode == LB_MODE_PLACE) {
                meta.bucket = meta.flow_hash[6:0];
            } else {
                meta.bucket = meta.rand_bucket;
            }
        }

        verdict.apply();

        if (meta.known_port == 0) {
            unknown_port_count.count(ig_intr_md.ingress_port);
        } else if (meta.malformed != MAL_NONE) {
            malformed_count.count(ig_intr_md.ingress_port ++ meta.malformed[3:0]);
        } else if (hdr.mac_ctl.isValid()) {
            if (hdr.pfc.isValid()) {
                if (hdr.pfc.class_enable[0:0] == 1) { rx_pfc0.count(ig_intr_md.ingress_port); }
                if (hdr.pfc.class_enable[1:1] == 1) { rx_pfc1.count(ig_intr_md.ingress_port); }
                if (hdr.pfc.class_enable[2:2] == 1) { rx_pfc2.count(ig_intr_md.ingress_port); }
                if (hdr.pfc.class_enable[3:3] == 1) { rx_pfc3.count(ig_intr_md.ingress_port); }
                if (hdr.pfc.class_enable[4:4] == 1) { rx_pfc4.count(ig_intr_md.ingress_port); }
                if (hdr.pfc.class_enable[5:5] == 1) { rx_pfc5.count(ig_intr_md.ingress_port); }
                if (hdr.pfc.class_enable[6:6] == 1) { rx_pfc6.count(ig_intr_md.ingress_port); }
                if (hdr.pfc.class_enable[7:7] == 1) { rx_pfc7.count(ig_intr_md.ingress_port); }
            }
        } else {
            /* classified: queue and ingress CoS (the PPG) from the class */
            tc_cfg.apply();
            rx_tc_count.count(ig_intr_md.ingress_port ++ meta.tc);
        }

        /* ---- the verdict ------------------------------------------------- */
        if (meta.verdict == V_FORWARD) {
            /* a frame that finds no member or neighbour below is dropped */
            if (hdr.ipv4.isValid()) {
                hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
                meta.rewrite_ipv4 = 1;
            } else {
                hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 1;
            }
            if (meta.route_kind == ROUTE_GROUP) {
                /* place mode (dataplane_common::lb::place) on Tofino: the
                 * flow is pinned in flowlet_nh as a flowlet is, kept
                 * whatever its gaps while its slot is in use; a slot idle
                 * longer than the group's timeout is free and the flow is
                 * placed anew (no tag tells flows apart: eBPF keeps 4 tagged
                 * ways per set). It is placed on the better of its bucket's
                 * two candidates by load_a / load_b alone. NOT here:
                 * - the bookings (eBPF PortRate::booked_until_ns, bmv2
                 *   port_booked_until): choosing by them reads two ports'
                 *   registers and then writes the chosen one, and a Tofino
                 *   register is reached once per packet, at one index;
                 * - moving a flow whose member went down while it runs: the
                 *   one stateful ALU that keeps the next hop would have to
                 *   compare it with both candidates; the control plane
                 *   clears the flows' flowlet_nh slots when it rewrites
                 *   group_bucket for a member down. */
                if (meta.per_flow == 1) {
                    meta.flowlet_gap = flowlet_touch.execute(meta.flowlet_slot);
                }
                group_bucket.apply();
                if (meta.bucket_hit == 0) {
                    drop_for(DROP_NO_MEMBER);
                } else {
                    meta.use_nh = 1;
                    /* saturating: non-zero when the gap exceeds the timeout */
                    meta.gap_over = meta.flowlet_gap |-| meta.flowlet_timeout;
                    /* the candidate: the bucket's member, or the less
                     * utilised of its two (ties keep the bucket's) */
                    meta.nh = meta.nh_a;
                    if (meta.by_load == 1) {
                        load_a.apply();
                        load_b.apply();
                        prefer_b.apply();
                    }
                    flowlet_age.apply();
                    if (meta.per_flow == 1) {
                        meta.nh = flowlet_pick.execute(meta.flowlet_slot);
                    }
                }
            } else {
                meta.use_nh = 1;
            }
            if (meta.use_nh == 1) {
                nexthop.apply();
            }
        } else if (meta.verdict == V_PUNT) {
            to_cpu_port();
            punt_count.count(ig_intr_md.ingress_port ++ meta.cpu_reason[3:0]);
            cpu_valid_tbl.apply();
            cpu_reason_tbl.apply();
            cpu_detail_tbl.apply();
            cpu_port_tbl.apply();
        } else {
            drop();
        }
        if (meta.dropped == 1) {
            drop();
            drop_count.count(ig_intr_md.ingress_port ++ meta.drop_why);
        }

        hdr.bridge.setValid();
        hdr.bridge.tc = meta.tc;
        hdr.bridge.lossless = meta.lossless;
        hdr.bridge.cnp = meta.cnp;
        hdr.bridge.to_cpu = meta.to_cpu;
        hdr.bridge.pad = 0;
    }
}

control DpIngressDeparser(
        packet_out pkt,
        inout headers_t hdr,
        in ig_meta_t meta,
        in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ipv4_csum;
    apply {
        if (meta.rewrite_ipv4 == 1) {
            hdr.ipv4.hdr_checksum = ipv4_csum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.total_len,
                hdr.ipv4.identification, hdr.ipv4.flag_rsvd, hdr.ipv4.flag_df, hdr.ipv4.flag_mf,
                hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src_addr,
                hdr.ipv4.dst_addr,
                hdr.ipv4_opts[0].data, hdr.ipv4_opts[1].data, hdr.ipv4_opts[2].data,
                hdr.ipv4_opts[3].data, hdr.ipv4_opts[4].data, hdr.ipv4_opts[5].data,
                hdr.ipv4_opts[6].data, hdr.ipv4_opts[7].data, hdr.ipv4_opts[8].data,
                hdr.ipv4_opts[9].data });
        }
        pkt.emit(hdr);
    }
}

/* ---- egress ------------------------------------------------------------- */

control DpEgress(
        inout headers_t hdr,
        inout eg_meta_t meta,
        in egress_intrinsic_metadata_t eg_intr_md,
        in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
        inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
        inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {

    /* Bytes sent per port: the control plane turns them into load_a/load_b
     * bands (the script's poll_loads()). */
    Counter<bit<64>, PortId_t>(512, CounterType_t.BYTES) port_tx;
    Counter<bit<64>, bit<12>>(4096, CounterType_t.PACKETS_AND_BYTES) tx_tc_count; /* port ++ tc */
    Counter<bit<32>, bit<12>>(4096, CounterType_t.PACKETS) ecn_marked_count;  /* port ++ tc */
    Counter<bit<32>, bit<12>>(4096, CounterType_t.PACKETS) wred_drop_count;
    Random<bit<8>>() rnd;

    /* The RED curve of a WRED_PROFILE over the queue depth in cells. */
    @id(0x01000011)
    action wred_hit(bit<8> prob, bit<1> always, bit<1> mark, bit<1> drop_non_ect) {
        meta.wred_hit = 1;
        /* non-zero when the random byte is below the probability */
        meta.wred_fire = prob |-| meta.rnd;
        meta.wred_always = always;
        meta.wred_mark = mark;
        meta.wred_drop = drop_non_ect;
    }

    @id(0x02000011)
    table wred {
        key = {
            eg_intr_md.egress_port : exact @name("egress_port");
            hdr.bridge.tc : exact @name("tc");
            eg_intr_md.enq_qdepth : range @name("enq_qdepth");
        }
        actions = { wred_hit; @defaultonly NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    apply {
        if (hdr.bridge.to_cpu == 0) {
            port_tx.count(eg_intr_md.egress_port);
            tx_tc_count.count(eg_intr_md.egress_port ++ hdr.bridge.tc);
            meta.rnd = rnd.get();
            wred.apply();
            if (hdr.ipv4.isValid()) {
                meta.ecn = hdr.ipv4.ecn;
            } else if (hdr.ipv6.isValid()) {
                meta.ecn = hdr.ipv6.ecn;
            }
            if (meta.wred_hit == 1 && hdr.bridge.cnp == 0) {
                if (meta.wred_always == 1 || meta.wred_fire != 0) {
                    if (meta.wred_mark == 1 && (meta.ecn == 1 || meta.ecn == 2)) {
                        if (hdr.ipv4.isValid()) {
                            hdr.ipv4.ecn = 3;
                            meta.rewrite_ipv4 = 1;
                        } else {
                            hdr.ipv6.ecn = 3;
                        }
                        ecn_marked_count.count(eg_intr_md.egress_port ++ hdr.bridge.tc);
                    } else if (meta.wred_mark == 1 && meta.ecn == 3) {
                        /* CE stays CE */
                    } else if (hdr.bridge.lossless == 0 && meta.wred_drop == 1) {
                        wred_drop_count.count(eg_intr_md.egress_port ++ hdr.bridge.tc);
                        eg_dprsr_md.drop_ctl = 1;
                    }
                }
            }
        }
        hdr.bridge.setInvalid();
    }
}

control DpEgressDeparser(
        packet_out pkt,
        inout headers_t hdr,
        in eg_meta_t meta,
        in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() ipv4_csum;
    apply {
        if (meta.rewrite_ipv4 == 1) {
            hdr.ipv4.hdr_checksum = ipv4_csum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.total_len,
                hdr.ipv4.identification, hdr.ipv4.flag_rsvd, hdr.ipv4.flag_df, hdr.ipv4.flag_mf,
                hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src_addr,
                hdr.ipv4.dst_addr,
                hdr.ipv4_opts[0].data, hdr.ipv4_opts[1].data, hdr.ipv4_opts[2].data,
                hdr.ipv4_opts[3].data, hdr.ipv4_opts[4].data, hdr.ipv4_opts[5].data,
                hdr.ipv4_opts[6].data, hdr.ipv4_opts[7].data, hdr.ipv4_opts[8].data,
                hdr.ipv4_opts[9].data });
        }
        pkt.emit(hdr);
    }
}

Pipeline(DpIngressParser(), DpIngress(), DpIngressDeparser(),
         DpEgressParser(), DpEgress(), DpEgressDeparser()) pipe;

Switch(pipe) main;
