/* The data plane for bmv2 simple_switch (P4_16, v1model).
 *
 * The same pipeline as the eBPF programs (dataplane-ebpf), with its meaning
 * taken from dataplane-common: classification (SONiC DSCP_TO_TC_MAP /
 * DOT1P_TO_TC_MAP, CNP class, pfc_enable), RoCEv2 and CNP detection,
 * priority queues, LPM routing (IPv4, IPv6) with next hops and next-hop
 * groups (hash over the 5-tuple and the BTH destination QP, resilient
 * bucket tables, flowlets in registers, utilisation-aware choice from
 * per-port byte-rate registers updated in egress; place mode's flows
 * pinned in the flowlet registers and placed by per-port bookings,
 * port_booked_until, see its comments at the load balancing), ECN
 * marking in egress from the queue depth (bmv2 counts packets: thresholds are converted by
 * the entry generator), PFC/PAUSE frames consumed and counted, and PFC
 * generation EMULATED (an ingress occupancy estimate per ingress port and
 * priority in registers; a clone of the packet rewritten into an 802.1Qbb
 * frame in egress).
 *
 * Frames the eBPF data plane hands to the kernel (XDP_PASS) go to CPU_PORT
 * with a cpu_h header in front (reason, class or malformed code, ingress
 * port).
 *
 * Tables are filled by `dataplane p4 entries --target bmv2` (simple_switch_CLI
 * commands or P4Runtime). Table, key and action names and @id values are
 * the generator's (dataplane-user/src/p4.rs); a test checks they match.
 *
 * Run simple_switch with `--priority-queues 8` for the per-class queues
 * (standard_metadata.priority), see p4/README.md.
 *
 * UET (UDP 4793) is parsed to its PDS prologue and classified by the DSCP
 * maps like RoCEv2; a truncated PDS header is MAL_UET_TRUNCATED. Packet
 * trimming (dataplane_common::trim, SONiC SWITCH_TRIMMING): a packet the
 * emulated shared buffer cannot admit, of a queue whose profile trims, is
 * cut to the trim size with truncate(), gets the trim DSCP and lengths, and
 * goes to the trim queue (IPv4 only: bmv2 cannot sum the UDP checksum of
 * the cut IPv6 datagram, see p4/README.md).
 *
 * Compiled by p4c 1.2.5 (bmv2 back end); the conformance corpus passes on
 * simple_switch 1.15.5 (run with --priority-queues 8), see p4/README.md,
 * the UET, trimming and place cases included (52 of 52 STF cases).
 */
#include <core.p4>
#include <v1model.p4>

/* UET's PDS prologue in the shared headers and parser (v1model only) */
#define DP_PARSE_UET
#include "../include/headers.p4"

#ifndef CPU_PORT
#define CPU_PORT 64
#endif

/* Register and counter sizes: ports are bit<9>. */
#define NUM_PORTS 512
#define FLOWLET_SLOTS 8192
/* Rate estimator period: 2^5 = 32 us (bmv2 timestamps are microseconds). */
#define DRE_PERIOD_SHIFT 5
/* Place mode (dataplane_common::lb::place), in microseconds: the longest
 * one booking lasts (PLACE_MAX_BOOK_NS), how far ahead bookings reach
 * (PLACE_HORIZON_NS), the most a level's booking part says
 * (PLACE_MAX_AHEAD, units of 1 us here, 2^10 ns on eBPF); bytes: what a
 * placement without a length books (PLACE_DEFAULT_BYTES) and the most one
 * message books (PLACE_MAX_BYTES). */
#define PLACE_MAX_BOOK_US 100
#define PLACE_HORIZON_US 100000
#define PLACE_MAX_AHEAD 31
#define PLACE_DEFAULT_BYTES 65536
#define PLACE_MAX_BYTES 16777216

const bit<32> PKT_INSTANCE_TYPE_NORMAL = 0;
const bit<32> PKT_INSTANCE_TYPE_INGRESS_CLONE = 1;
const bit<32> PKT_INSTANCE_TYPE_EGRESS_CLONE = 2;

const bit<2> ROUTE_MISS = 0;
const bit<2> ROUTE_NEXTHOP = 1;
const bit<2> ROUTE_GROUP = 2;
const bit<2> ROUTE_LOCAL = 3;

/* Per-port event counter slots (port_events, index port * 16 + EV_*). */
const bit<32> EV_ROCE = 0;
const bit<32> EV_CNP = 1;
const bit<32> EV_LOSSLESS = 2;
const bit<32> EV_NON_IP = 3;
const bit<32> EV_QINQ = 4;
const bit<32> EV_PAUSE = 5;
const bit<32> EV_MAC_CTL_OTHER = 6;
const bit<32> EV_ROUTED = 7;
const bit<32> EV_PUNTED = 8;
const bit<32> EV_DROP_NO_ROUTE = 9;
const bit<32> EV_DROP_NO_MEMBER = 10;
const bit<32> EV_DROP_NO_NEIGHBOUR = 11;
const bit<32> EV_DROP_HEADROOM = 12;
const bit<32> EV_DROP_SHARED_FULL = 13;
const bit<32> EV_PFC_XOFF = 14;
const bit<32> EV_PFC_XON = 15;

struct metadata_t {
    parse_meta_t pm;
    /* switch_cfg */
    bit<32> hash_seed;
    bit<32> pool_size;
    /* port_cfg */
    bit<1> known_port;
    bit<8> dscp_map;
    bit<8> pcp_map;
    bit<1> trust_dot1p;
    bit<3> default_tc;
    bit<3> cnp_tc;
    bit<1> malformed_drop;
    bit<1> forward;
    mac_addr_t port_mac;
    /* frame checks and classification */
    bit<8> malformed;
    bit<16> ip_payload;
    bit<1> is_ip;
    bit<6> dscp;
    bit<3> tc;
    bit<1> lossless;
    bit<5> queue;
    bit<1> roce;
    bit<1> cnp;
    /* routing and load balancing */
    bit<2> route_kind;
    bit<16> nh;
    bit<16> grp;
    bit<1> group_hit;
    bit<3> lb_mode;
    bit<32> flowlet_timeout;
    bit<7> bucket;
    bit<1> bucket_hit;
    bit<16> nh_a;
    bit<9> port_a;
    bit<16> nh_b;
    bit<9> port_b;
    bit<128> flow_src;
    bit<128> flow_dst;
    bit<8> flow_proto;
    bit<16> flow_sport;
    bit<16> flow_dport;
    bit<24> flow_qp;
    bit<32> flow_hash;
    bit<1> nexthop_hit;
    mac_addr_t nh_dmac;
    mac_addr_t nh_smac;
    bit<9> out_port;
    bit<1> routed;
    bit<1> rewrite_ipv4;
    /* place mode: the flow was (re)placed by this packet; the egress
     * port's wire shift (place_cfg) */
    bit<1> placed;
    bit<1> place_hit;
    bit<8> wire_shift;
    /* buffer emulation (pg_cfg), carried to egress */
    bit<1> pg_hit;
    bit<1> pg_lossless;
    bit<32> pg_reserve;
    bit<32> pg_headroom;
    bit<32> pg_xon_offset;
    bit<8> th_shl;
    bit<8> th_shr;
    bit<32> pfc_refresh_us;
    bit<1> pg_counted;
    /* egress */
    mac_addr_t egress_mac;
    bit<8> band_shift;
    bit<1> wred_hit;
    bit<8> wred_prob;
    bit<1> wred_always;
    bit<1> wred_mark;
    bit<1> wred_drop;
    /* a PFC frame to generate: kept by the clone */
    @field_list(1)
    bit<1> pfc_gen;
    @field_list(1)
    bit<3> pfc_prio;
    @field_list(1)
    bit<1> pfc_xoff;
    /* UET: feedback class ([uet] feedback_tc), entropy groups */
    bit<1> uet_feedback;
    bit<3> uet_feedback_tc;
    bit<1> group_uet_entropy;
    /* trimming (trim_cfg of the egress port) */
    bit<1> trim_hit;
    bit<16> trim_size;
    bit<6> trim_dscp;
    bit<3> trim_queue;
    bit<1> trim_dynamic;
    bit<8> trim_queues;
    bit<1> trimmed;
    bit<3> trim_tc;      /* the queue the packet was trimmed in */
}

/* Registers shared by ingress (readers) and egress (writers). */

/* Utilisation band 0..7 of each egress port, from its rate estimator. */
register<bit<8>>(NUM_PORTS) port_band;
/* PFC emulation: bytes held per (ingress port, priority) = port * 8 + tc,
 * the shared pool's use, and whether XOFF is in force. */
register<bit<32>>(NUM_PORTS * 8) pg_bytes;
register<bit<32>>(1) pool_used;
register<bit<1>>(NUM_PORTS * 8) pfc_xoff_state;
register<bit<48>>(NUM_PORTS * 8) pfc_sent_at;

#define DP_PARSER_NAME DpParser
#define DP_PARSER_PARAMS packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata
#define DP_PARSER_INIT
#define DP_PARSER_NEXT parse_ethernet
#define DP_PARSER_EXTRA_STATES
#include "../include/parser.p4"

control DpVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    /* The eBPF data plane does not verify IPv4 header checksums either. */
    apply { }
}

control DpIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    DpTruncationPoint() truncation_point;


    counter(NUM_PORTS, CounterType.packets) unknown_port_count;
    counter(NUM_PORTS * 16, CounterType.packets) malformed_count;   /* port * 16 + MAL_* */
    counter(NUM_PORTS * 8, CounterType.packets_and_bytes) rx_tc_count; /* port * 8 + tc */
    counter(NUM_PORTS * 8, CounterType.packets) rx_pfc_count;       /* port * 8 + priority */
    counter(NUM_PORTS * 16, CounterType.packets) port_events;       /* port * 16 + EV_* */
    counter(NUM_PORTS, CounterType.packets) rx_uet_count;           /* port */
    counter(NUM_PORTS * 8, CounterType.packets) trim_count;         /* egress port * 8 + queue: Trim/pkts */

    /* Flowlets: last packet time (us), next hop + 1 (0: none), flowlets so
     * far. Place mode keeps its pinned flows here too. */
    register<bit<32>>(FLOWLET_SLOTS) flowlet_seen;
    register<bit<16>>(FLOWLET_SLOTS) flowlet_nh;
    register<bit<32>>(FLOWLET_SLOTS) flowlet_count;
    /* Place mode: when each port is free of the work booked on it (us,
     * the low 32 bits of the ingress timestamp; PortRate::booked_until_ns
     * of dataplane_common). */
    register<bit<32>>(NUM_PORTS) port_booked_until;

    action punt(bit<8> reason, bit<8> detail) {
        hdr.cpu.setValid();
        hdr.cpu.reason = reason;
        hdr.cpu.detail = detail;
        hdr.cpu.ingress_port_pad = 0;
        hdr.cpu.ingress_port = standard_metadata.ingress_port;
        standard_metadata.egress_spec = CPU_PORT;
    }

    action drop() {
        mark_to_drop(standard_metadata);
    }

    action event(bit<32> ev) {
        port_events.count((bit<32>)standard_metadata.ingress_port * 16 + ev);
    }

    /* ---- switch and port configuration ---------------------------------- */

    @id(0x01000001)
    action set_switch(bit<32> hash_seed, bit<32> pool_size) {
        meta.hash_seed = hash_seed;
        meta.pool_size = pool_size;
    }

    @id(0x02000001)
    table switch_cfg {
        actions = { set_switch; }
        default_action = set_switch(0, 0);
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
        meta.port_mac = port_mac;
    }

    @id(0x01000003)
    action unknown_port() {
        meta.known_port = 0;
    }

    @id(0x02000002)
    table port_cfg {
        key = { standard_metadata.ingress_port : exact @name("ingress_port"); }
        actions = { set_port; unknown_port; }
        default_action = unknown_port();
        size = NUM_PORTS;
    }

    /* ---- classification ------------------------------------------------- */

    @id(0x01000004)
    action set_tc(bit<3> tc) {
        meta.tc = tc;
    }

    @id(0x02000003)
    table dscp_to_tc {
        key = {
            meta.dscp_map : exact @name("dscp_map");
            meta.dscp : exact @name("dscp");
        }
        actions = { set_tc; @defaultonly NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    @id(0x02000004)
    table pcp_to_tc {
        key = {
            meta.pcp_map : exact @name("pcp_map");
            hdr.vlan.pcp : exact @name("pcp");
        }
        actions = { set_tc; @defaultonly NoAction; }
        default_action = NoAction();
        size = 512;
    }

    @id(0x01000005)
    action set_tc_cfg(bit<1> lossless, bit<5> queue) {
        meta.lossless = lossless;
        meta.queue = queue;
    }

    @id(0x02000005)
    table tc_cfg {
        key = {
            standard_metadata.ingress_port : exact @name("ingress_port");
            meta.tc : exact @name("tc");
        }
        actions = { set_tc_cfg; }
        default_action = set_tc_cfg(0, 0);
        size = 4096;
    }

    /* [uet] feedback_tc: the class of UET feedback (PDS ACK, ACK_CC/CCX,
     * NACK/NACK_CCX, control), as cnp_tc is for CNPs. */
    @id(0x01000014)
    action set_uet(bit<1> feedback, bit<3> feedback_tc) {
        meta.uet_feedback = feedback;
        meta.uet_feedback_tc = feedback_tc;
    }

    @id(0x02000014)
    table uet_cfg {
        actions = { set_uet; }
        default_action = set_uet(0, 0);
        size = 1;
    }

    /* ---- routing ----------------------------------------------------------- */

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
        size = 16384;
    }

    @id(0x02000007)
    table ipv6_lpm {
        key = { hdr.ipv6.dst_addr : lpm @name("dst_addr"); }
        actions = { route_nexthop; route_group; route_local; route_miss; }
        default_action = route_miss();
        size = 16384;
    }

    /* ---- next-hop groups ------------------------------------------------- */

    @id(0x0100000a)
    action set_group(bit<3> mode, bit<32> flowlet_timeout) {
        meta.group_hit = 1;
        meta.lb_mode = mode;
        meta.flowlet_timeout = flowlet_timeout;   /* microseconds */
    }

    @id(0x02000008)
    table group_cfg {
        key = { meta.grp : exact @name("grp"); }
        actions = { set_group; @defaultonly NoAction; }
        default_action = NoAction();
        size = 64;
    }

    /* A bucket of the resilient table (dataplane_common::lb::build_buckets)
     * with a second candidate, the member of the next bucket that differs,
     * for the utilisation-aware choice. */
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

    /* Place mode: the wire time of a booking on the port, without a
     * division: bytes >> wire_shift microseconds, wire_shift being
     * log2(speed in bytes per us) rounded (speed_mbps / 8: 100G 14, 25G
     * 12, 400G 16), so within a factor sqrt(2) of dataplane_common's
     * wire_ns(bytes, speed). A port without an entry (unknown speed)
     * books PLACE_MAX_BOOK_US, as wire_ns's horizon capped. */
    @id(0x01000016)
    action set_place(bit<8> wire_shift) {
        meta.place_hit = 1;
        meta.wire_shift = wire_shift;
    }

    @id(0x02000016)
    table place_cfg {
        key = { meta.out_port : exact @name("out_port"); }
        actions = { set_place; @defaultonly NoAction; }
        default_action = NoAction();
        size = NUM_PORTS;
    }

    @id(0x0100000c)
    action set_nexthop(bit<48> dmac, bit<48> smac, bit<9> port) {
        meta.nexthop_hit = 1;
        meta.nh_dmac = dmac;
        meta.nh_smac = smac;
        meta.out_port = port;
    }

    /* A group with uet_entropy = true: its UET packets keep the bucket of
     * their flow hash (the entropy value is the UDP source port), whatever
     * the group's mode (dataplane_common::lb). */
    @id(0x01000015)
    action set_group_uet() {
        meta.group_uet_entropy = 1;
    }

    @id(0x02000015)
    table group_uet {
        key = { meta.grp : exact @name("grp"); }
        actions = { set_group_uet; @defaultonly NoAction; }
        default_action = NoAction();
        size = 64;
    }

    @id(0x0200000a)
    table nexthop {
        key = { meta.nh : exact @name("nh"); }
        actions = { set_nexthop; @defaultonly NoAction; }
        default_action = NoAction();
        size = 256;
    }

    /* ---- PFC generation (emulated) --------------------------------------- */

    /* SONiC BUFFER_PROFILE of an ingress priority group: reserve, headroom
     * (lossless only), XON hysteresis, dynamic threshold 2^th as shifts,
     * and the XOFF refresh period (half the pause time at the port speed). */
    @id(0x0100000d)
    action set_pg(bit<1> lossless, bit<32> reserve, bit<32> headroom, bit<32> xon_offset,
                  bit<8> th_shl, bit<8> th_shr, bit<32> refresh_us) {
        meta.pg_hit = 1;
        meta.pg_lossless = lossless;
        meta.pg_reserve = reserve;
        meta.pg_headroom = headroom;
        meta.pg_xon_offset = xon_offset;
        meta.th_shl = th_shl;
        meta.th_shr = th_shr;
        meta.pfc_refresh_us = refresh_us;
    }

    @id(0x0200000b)
    table pg_cfg {
        key = {
            standard_metadata.ingress_port : exact @name("ingress_port");
            meta.tc : exact @name("tc");
        }
        actions = { set_pg; @defaultonly NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    /* ---- packet trimming (dataplane_common::trim) ------------------------ */

    /* SONiC SWITCH_TRIMMING of an egress port whose queues trim: size,
     * DSCP (from-tc resolved per port), queue (or dynamic), and the queues
     * whose BUFFER_PROFILE says packet_discard_action = trim (bit q). */
    @id(0x01000012)
    action set_trim(bit<16> size, bit<6> dscp, bit<3> queue, bit<1> dynamic, bit<8> queues) {
        meta.trim_hit = 1;
        meta.trim_size = size;
        meta.trim_dscp = dscp;
        meta.trim_queue = queue;
        meta.trim_dynamic = dynamic;
        meta.trim_queues = queues;
    }

    @id(0x02000012)
    table trim_cfg {
        key = { meta.out_port : exact @name("out_port"); }
        actions = { set_trim; @defaultonly NoAction; }
        default_action = NoAction();
        size = NUM_PORTS;
    }

    /* queue_index = dynamic: the class the ingress port's DSCP map gives
     * the trim DSCP (trim::trim_queue; dscp_to_tc cannot be applied twice). */
    @id(0x01000013)
    action set_trim_queue(bit<3> queue) {
        meta.trim_queue = queue;
        meta.trim_dynamic = 0;
    }

    @id(0x02000013)
    table trim_dyn_queue {
        key = {
            meta.dscp_map : exact @name("dscp_map");
            meta.trim_dscp : exact @name("trim_dscp");
        }
        actions = { set_trim_queue; @defaultonly NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    apply {
        switch_cfg.apply();
        port_cfg.apply();
        uet_cfg.apply();

        /* ---- frame checks, in dataplane_common::parse's order -------------
         * A semantic error found by the parser (version, IHL) ends parsing;
         * an extract that ran past the frame (parser_error) names its
         * header. The length checks below come before the UDP header and
         * the BTH in the eBPF parser, so they override a UDP or BTH
         * truncation the parser met further on. */
        meta.malformed = meta.pm.malformed;
        if (meta.malformed == MAL_NONE && standard_metadata.parser_error != error.NoError) {
            truncation_point.apply(hdr, meta.malformed);
            /* the shared boundary table ends at the BTH; after UDP 4793 it
             * is the PDS prologue */
            if (meta.malformed == MAL_BTH_TRUNCATED && hdr.udp.dst_port == UDP_PORT_UET) {
                meta.malformed = MAL_UET_TRUNCATED;
            }
        }
        bit<32> l3_off = 14;
        if (hdr.vlan.isValid()) {
            l3_off = 18;
        }
        bool l4_pending = meta.malformed == MAL_NONE || meta.malformed == MAL_UDP_TRUNCATED
                          || meta.malformed == MAL_BTH_TRUNCATED || meta.malformed == MAL_UET_TRUNCATED;
        if (l4_pending && hdr.ipv4.isValid()) {
            bit<16> hlen = ((bit<16>)hdr.ipv4.ihl) << 2;
            if (hdr.ipv4.total_len < hlen) {
                meta.malformed = MAL_IPV4_BAD_TOTAL_LEN;
            } else if (l3_off + (bit<32>)hdr.ipv4.total_len > standard_metadata.packet_length) {
                meta.malformed = MAL_IPV4_LEN_EXCEEDS_FRAME;
            } else {
                meta.ip_payload = hdr.ipv4.total_len - hlen;
            }
        }
        if (l4_pending && hdr.ipv6.isValid()) {
            if (l3_off + 40 + (bit<32>)hdr.ipv6.payload_len > standard_metadata.packet_length) {
                meta.malformed = MAL_IPV6_LEN_EXCEEDS_FRAME;
            } else {
                meta.ip_payload = hdr.ipv6.payload_len;
            }
        }
        /* the UDP checks come before the BTH and the PDS: they override
         * their truncation */
        if ((meta.malformed == MAL_NONE || meta.malformed == MAL_BTH_TRUNCATED
                || meta.malformed == MAL_UET_TRUNCATED) && hdr.udp.isValid()) {
            if (meta.ip_payload < 8) {
                meta.malformed = MAL_UDP_TRUNCATED;
            } else if (hdr.udp.length < 8 || (hdr.udp.length > meta.ip_payload && meta.pm.first_fragment == 0)) {
                meta.malformed = MAL_UDP_BAD_LEN;
            } else if (meta.malformed == MAL_NONE && hdr.bth.isValid()) {
                /* room for BTH (12) and ICRC (4); a first fragment's ICRC is
                 * in its last fragment */
                if (meta.pm.first_fragment == 1) {
                    if (meta.ip_payload < 20) {
                        meta.malformed = MAL_BTH_TRUNCATED;
                    }
                } else if (hdr.udp.length < 24) {
                    meta.malformed = MAL_BTH_TRUNCATED;
                }
            } else if ((meta.malformed == MAL_NONE || meta.malformed == MAL_UET_TRUNCATED)
                       && hdr.udp.dst_port == UDP_PORT_UET) {
                /* room for the prologue and the fixed PDS header its type
                 * announces (uet::fixed_len), by the UDP length (a first
                 * fragment: by the IP payload) */
                bit<16> room = hdr.udp.length;
                if (meta.pm.first_fragment == 1) {
                    room = meta.ip_payload;
                }
                bit<16> need = 2;
                if (hdr.uet.isValid()) {
                    bit<5> t = hdr.uet.pds_type;
                    if (t == 6) {
                        need = 4;
                    } else if (t == 4 || t == 5) {
                        need = 8;
                    } else if (t == 2 || t == 3 || t == 7 || t == 9 || t == 11) {
                        need = 12;
                    } else if (t == 10 || t == 12 || t == 13 || t == 14) {
                        need = 16;
                    } else if (t == 8) {
                        need = 32;
                    }
                }
                if (!hdr.uet.isValid() || room < 8 + need) {
                    meta.malformed = MAL_UET_TRUNCATED;
                } else {
                    meta.malformed = MAL_NONE;
                }
            }
        }

        if (meta.known_port == 0) {
            /* eBPF: no port entry -> XDP_PASS, global unknown_port */
            unknown_port_count.count((bit<32>)standard_metadata.ingress_port);
            punt(CPU_UNKNOWN_PORT, 0);
        } else if (meta.malformed != MAL_NONE) {
            /* MAL_UET_TRUNCATED (16) takes slot 0, which MAL_NONE never uses */
            malformed_count.count((bit<32>)standard_metadata.ingress_port * 16 + (bit<32>)(meta.malformed & 15));
            if (meta.malformed_drop == 1) {
                drop();
            } else {
                punt(CPU_MALFORMED, meta.malformed);
            }
        } else if (hdr.mac_ctl.isValid()) {
            /* MAC control frames are consumed, never forwarded. bmv2 cannot
             * pause its queues: received PFC is counted only. */
            if (hdr.pfc.isValid()) {
                if (hdr.pfc.class_enable[0:0] == 1) { rx_pfc_count.count((bit<32>)standard_metadata.ingress_port * 8 + 0); }
                if (hdr.pfc.class_enable[1:1] == 1) { rx_pfc_count.count((bit<32>)standard_metadata.ingress_port * 8 + 1); }
                if (hdr.pfc.class_enable[2:2] == 1) { rx_pfc_count.count((bit<32>)standard_metadata.ingress_port * 8 + 2); }
                if (hdr.pfc.class_enable[3:3] == 1) { rx_pfc_count.count((bit<32>)standard_metadata.ingress_port * 8 + 3); }
                if (hdr.pfc.class_enable[4:4] == 1) { rx_pfc_count.count((bit<32>)standard_metadata.ingress_port * 8 + 4); }
                if (hdr.pfc.class_enable[5:5] == 1) { rx_pfc_count.count((bit<32>)standard_metadata.ingress_port * 8 + 5); }
                if (hdr.pfc.class_enable[6:6] == 1) { rx_pfc_count.count((bit<32>)standard_metadata.ingress_port * 8 + 6); }
                if (hdr.pfc.class_enable[7:7] == 1) { rx_pfc_count.count((bit<32>)standard_metadata.ingress_port * 8 + 7); }
            } else if (hdr.pause.isValid()) {
                event(EV_PAUSE);
            } else {
                event(EV_MAC_CTL_OTHER);
            }
            drop();
        } else {
            /* ---- classification (dataplane_common::classify) -------------- */
            if (hdr.ipv4.isValid()) {
                meta.is_ip = 1;
                meta.dscp = hdr.ipv4.dscp;
            } else if (hdr.ipv6.isValid()) {
                meta.is_ip = 1;
                meta.dscp = hdr.ipv6.dscp;
            }
            if (hdr.bth.isValid()) {
                meta.roce = 1;
                if (hdr.bth.opcode == BTH_OPCODE_CNP) {
                    meta.cnp = 1;
                }
            }
            meta.tc = meta.default_tc;
            bit<1> uet_fb = 0;
            if (hdr.uet.isValid()) {
                bit<5> t = hdr.uet.pds_type;
                if (t == 7 || t == 8 || t == 9 || t == 10 || t == 11 || t == 12) {
                    uet_fb = 1;
                }
            }
            if (meta.cnp == 1) {
                meta.tc = meta.cnp_tc;
            } else if (uet_fb == 1 && meta.uet_feedback == 1) {
                meta.tc = meta.uet_feedback_tc;
            } else if (meta.trust_dot1p == 0 && meta.is_ip == 1) {
                dscp_to_tc.apply();
            } else if (hdr.vlan.isValid()) {
                pcp_to_tc.apply();
            }
            tc_cfg.apply();
            standard_metadata.priority = (bit<3>)meta.queue;
            rx_tc_count.count((bit<32>)standard_metadata.ingress_port * 8 + (bit<32>)meta.tc);
            if (meta.roce == 1) { event(EV_ROCE); }
            if (hdr.uet.isValid()) { rx_uet_count.count((bit<32>)standard_metadata.ingress_port); }
            if (meta.cnp == 1) { event(EV_CNP); }
            if (meta.lossless == 1) { event(EV_LOSSLESS); }
            if (meta.is_ip == 0) { event(EV_NON_IP); }
            if (meta.pm.qinq == 1) { event(EV_QINQ); }

            /* ---- pre-route checks (dataplane_common::route::pre_route) ---- */
            bit<8> ttl = 0;
            if (hdr.ipv4.isValid()) {
                ttl = hdr.ipv4.ttl;
            } else if (hdr.ipv6.isValid()) {
                ttl = hdr.ipv6.hop_limit;
            }
            if (meta.forward == 0) {
                punt(CPU_CLASSIFIED, (bit<8>)meta.tc);
            } else if (meta.is_ip == 0 || meta.pm.qinq == 1) {
                punt(CPU_NOT_IP, (bit<8>)meta.tc);
            } else if (hdr.ethernet.dst_addr != meta.port_mac) {
                punt(CPU_NOT_FOR_US, (bit<8>)meta.tc);
            } else if (ttl <= 1) {
                punt(CPU_TTL_EXPIRED, (bit<8>)meta.tc);
            } else {
                /* ---- longest prefix match ------------------------------- */
                if (hdr.ipv4.isValid()) {
                    ipv4_lpm.apply();
                } else {
                    ipv6_lpm.apply();
                }

                bit<1> no_member = 0;
                if (meta.route_kind == ROUTE_GROUP) {
                    /* ---- load balancing (dataplane_common::lb) ---------- */
                    group_cfg.apply();
                    group_uet.apply();
                    if (meta.group_uet_entropy == 1 && hdr.uet.isValid()) {
                        meta.lb_mode = LB_MODE_HASH;
                    }
                    if (hdr.ipv4.isValid()) {
                        meta.flow_src = 80w0 ++ 16w0xffff ++ hdr.ipv4.src_addr;
                        meta.flow_dst = 80w0 ++ 16w0xffff ++ hdr.ipv4.dst_addr;
                        meta.flow_proto = hdr.ipv4.protocol;
                    } else {
                        meta.flow_src = hdr.ipv6.src_addr;
                        meta.flow_dst = hdr.ipv6.dst_addr;
                        meta.flow_proto = hdr.ipv6.next_hdr;
                    }
                    if (hdr.udp.isValid()) {
                        meta.flow_sport = hdr.udp.src_port;
                        meta.flow_dport = hdr.udp.dst_port;
                    }
                    if (meta.roce == 1) {
                        meta.flow_qp = hdr.bth.dest_qp;
                    }
                    /* seeded CRC-32 over the 44-byte key; the bucket is its
                     * low 7 bits (128 buckets) */
                    hash(meta.flow_hash, HashAlgorithm.crc32, (bit<32>)0,
                         { meta.hash_seed, meta.flow_src, meta.flow_dst, meta.flow_proto,
                           meta.flow_sport, meta.flow_dport, meta.flow_qp },
                         (bit<64>)4294967296);
                    meta.bucket = meta.flow_hash[6:0];

                    bit<32> now = (bit<32>)standard_metadata.ingress_global_timestamp;
                    /* (flow, group): the group's low bits are XORed into the
                     * slot index, so a flow in two groups keeps two slots */
                    bit<32> slot = (meta.flow_hash ^ (bit<32>)meta.grp) & (FLOWLET_SLOTS - 1);
                    bit<32> last = 0;
                    bit<16> kept_nh_plus1 = 0;
                    bit<32> flowlets = 0;
                    bit<1> new_flowlet = 1;
                    bool place = meta.lb_mode == LB_MODE_PLACE;
                    bool per_flow = meta.lb_mode == LB_MODE_FLOWLET
                                    || meta.lb_mode == LB_MODE_BANDWIDTH || place;
                    if (per_flow) {
                        flowlet_seen.read(last, slot);
                        flowlet_nh.read(kept_nh_plus1, slot);
                        flowlet_count.read(flowlets, slot);
                        /* place: a flow keeps its member whatever its gaps
                         * while its slot is in use; a slot idle longer than
                         * the timeout is free (no tag tells its flow from
                         * another: eBPF keeps 4 tagged ways per set and
                         * reclaims an idle way only when another flow needs
                         * it), and the flow is placed anew */
                        if (kept_nh_plus1 != 0 && now - last <= meta.flowlet_timeout) {
                            new_flowlet = 0;
                        } else if (flowlets != 0 && !place) {
                            /* flowlet number n > 0 lands on an independent
                             * bucket (lb::flowlet_hash) */
                            bit<32> h2;
                            hash(h2, HashAlgorithm.crc32, (bit<32>)0, { meta.flow_hash, flowlets },
                                 (bit<64>)4294967296);
                            meta.bucket = h2[6:0];
                        }
                    } else if (meta.lb_mode == LB_MODE_SPRAY) {
                        random(meta.bucket, (bit<7>)0, (bit<7>)127);
                    }
                    group_bucket.apply();
                    if (meta.group_hit == 0 || meta.bucket_hit == 0) {
                        meta.route_kind = ROUTE_MISS;
                        no_member = 1;
                    } else {
                        meta.nh = meta.nh_a;
                        if (place && new_flowlet == 0 && kept_nh_plus1 - 1 != meta.nh_a
                                && kept_nh_plus1 - 1 != meta.nh_b) {
                            /* place: the flow's bucket no longer offers its
                             * member (the control plane rewrote the bucket:
                             * the member went down; or another flow's
                             * member in a shared slot): placed anew
                             * (lb::place_next's MemberDown) */
                            new_flowlet = 1;
                        }
                        if (new_flowlet == 0) {
                            meta.nh = kept_nh_plus1 - 1;
                        } else if (meta.lb_mode == LB_MODE_BANDWIDTH || meta.lb_mode == LB_MODE_SPRAY) {
                            /* the less utilised of the two candidates; ties
                             * keep the bucket's member */
                            bit<8> band_a;
                            bit<8> band_b;
                            port_band.read(band_a, (bit<32>)meta.port_a);
                            port_band.read(band_b, (bit<32>)meta.port_b);
                            if (band_b < band_a) {
                                meta.nh = meta.nh_b;
                            }
                        } else if (place) {
                            /* the lower place level of the two candidates
                             * (lb::place_levels): how much later the port
                             * is free of its bookings than the other's (us,
                             * at most PLACE_MAX_AHEAD) << 3 | its band; ties
                             * keep the bucket's member */
                            bit<8> band_a;
                            bit<8> band_b;
                            bit<32> booked_a;
                            bit<32> booked_b;
                            port_band.read(band_a, (bit<32>)meta.port_a);
                            port_band.read(band_b, (bit<32>)meta.port_b);
                            port_booked_until.read(booked_a, (bit<32>)meta.port_a);
                            port_booked_until.read(booked_b, (bit<32>)meta.port_b);
                            /* how far ahead of now each port is booked
                             * (modulo 2^32 us: a booking in the past, or
                             * never written, reads beyond the horizon: 0) */
                            bit<32> ahead_a = booked_a - now;
                            bit<32> ahead_b = booked_b - now;
                            if (ahead_a > PLACE_HORIZON_US) {
                                ahead_a = 0;
                            }
                            if (ahead_b > PLACE_HORIZON_US) {
                                ahead_b = 0;
                            }
                            bit<32> d_a = 0;
                            bit<32> d_b = 0;
                            if (ahead_a > ahead_b) {
                                d_a = ahead_a - ahead_b;
                            } else {
                                d_b = ahead_b - ahead_a;
                            }
                            if (d_a > PLACE_MAX_AHEAD) {
                                d_a = PLACE_MAX_AHEAD;
                            }
                            if (d_b > PLACE_MAX_AHEAD) {
                                d_b = PLACE_MAX_AHEAD;
                            }
                            bit<8> level_a = (((bit<8>)d_a) << 3) | (band_a & 7);
                            bit<8> level_b = (((bit<8>)d_b) << 3) | (band_b & 7);
                            if (level_b < level_a) {
                                meta.nh = meta.nh_b;
                            }
                        }
                        if (per_flow) {
                            if (now > last) {
                                flowlet_seen.write(slot, now);
                            }
                            if (new_flowlet == 1) {
                                flowlet_nh.write(slot, meta.nh + 1);
                                flowlet_count.write(slot, flowlets + 1);
                            }
                        }
                        if (place) {
                            meta.placed = new_flowlet;
                        }
                        meta.route_kind = ROUTE_NEXTHOP;
                    }
                }

                if (meta.route_kind == ROUTE_MISS) {
                    if (no_member == 1) {
                        event(EV_DROP_NO_MEMBER);
                    } else {
                        event(EV_DROP_NO_ROUTE);
                    }
                    drop();
                } else if (meta.route_kind == ROUTE_LOCAL) {
                    punt(CPU_LOCAL, (bit<8>)meta.tc);
                } else {
                    nexthop.apply();
                    if (meta.nexthop_hit == 0) {
                        event(EV_DROP_NO_NEIGHBOUR);
                        drop();
                    } else {
                        /* ---- rewrite: MACs, TTL / hop limit ------------- */
                        hdr.ethernet.dst_addr = meta.nh_dmac;
                        hdr.ethernet.src_addr = meta.nh_smac;
                        standard_metadata.egress_spec = meta.out_port;
                        if (hdr.ipv4.isValid()) {
                            hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
                            meta.rewrite_ipv4 = 1;
                        } else {
                            hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 1;
                        }
                        meta.routed = 1;
                        event(EV_ROUTED);

                        /* ---- place mode: book the chosen port ------------
                         * (lb::place_announced, place_booking, PortRate::book)
                         * the bytes the packet announces: a WRITE first /
                         * only its RETH's DMA length, a RoCEv2 ACK or CNP
                         * its own length; otherwise 64 KiB for a flow just
                         * placed, nothing for one that kept its member */
                        if (meta.lb_mode == LB_MODE_PLACE) {
                            bit<32> bytes = 0;
                            if (meta.placed == 1) {
                                bytes = PLACE_DEFAULT_BYTES;
                            }
                            if (hdr.bth.isValid()) {
                                if (hdr.reth.isValid()) {
                                    bytes = hdr.reth.dma_len;
                                } else if (hdr.bth.opcode == BTH_OPCODE_ACK
                                           || hdr.bth.opcode == BTH_OPCODE_CNP) {
                                    bytes = standard_metadata.packet_length;
                                }
                            }
                            if (bytes > PLACE_MAX_BYTES) {
                                bytes = PLACE_MAX_BYTES;
                            }
                            if (bytes != 0) {
                                place_cfg.apply();
                                bit<32> t = PLACE_MAX_BOOK_US;
                                if (meta.place_hit == 1) {
                                    t = bytes >> meta.wire_shift;
                                    if (t > PLACE_MAX_BOOK_US) {
                                        t = PLACE_MAX_BOOK_US;
                                    }
                                }
                                bit<32> now_us = (bit<32>)standard_metadata.ingress_global_timestamp;
                                bit<32> booked;
                                @atomic {
                                    port_booked_until.read(booked, (bit<32>)meta.out_port);
                                    /* from when the port is free (now if it
                                     * is), at most PLACE_HORIZON_US ahead */
                                    bit<32> ahead = booked - now_us;
                                    if (ahead > PLACE_HORIZON_US) {
                                        ahead = 0;
                                    }
                                    ahead = ahead + t;
                                    if (ahead > PLACE_HORIZON_US) {
                                        ahead = PLACE_HORIZON_US;
                                    }
                                    port_booked_until.write((bit<32>)meta.out_port, now_us + ahead);
                                }
                            }
                        }

                        /* ---- ingress accounting, PFC XOFF (emulated) ---- */
                        pg_cfg.apply();
                        if (meta.pg_hit == 1) {
                            bit<32> pg = (bit<32>)standard_metadata.ingress_port * 8 + (bit<32>)meta.tc;
                            bit<32> len = standard_metadata.packet_length;
                            bit<32> occ;
                            bit<32> used;
                            bit<1> xoff;
                            bit<48> sent_at;
                            bit<1> send_xoff = 0;
                            bit<1> shared_full = 0;
                            @atomic {
                                pg_bytes.read(occ, pg);
                                pool_used.read(used, 0);
                                pfc_xoff_state.read(xoff, pg);
                                pfc_sent_at.read(sent_at, pg);
                                bit<32> free = 0;
                                if (meta.pool_size > used) {
                                    free = meta.pool_size - used;
                                }
                                /* dynamic threshold: 2^dynamic_th x free shared buffer */
                                bit<64> thr = (((bit<64>)free) << meta.th_shl) >> meta.th_shr;
                                bit<32> shared_before = 0;
                                if (occ > meta.pg_reserve) {
                                    shared_before = occ - meta.pg_reserve;
                                }
                                bit<32> shared_after = 0;
                                if (occ + len > meta.pg_reserve) {
                                    shared_after = occ + len - meta.pg_reserve;
                                }
                                bit<64> limit = thr;
                                if (meta.pg_lossless == 1) {
                                    limit = thr + (bit<64>)meta.pg_headroom;
                                }
                                if ((bit<64>)shared_after > limit) {
                                    /* headroom (lossless) or shared buffer (lossy) full */
                                    if (meta.pg_lossless == 1) {
                                        event(EV_DROP_HEADROOM);
                                        drop();
                                    } else {
                                        shared_full = 1;
                                    }
                                } else {
                                    pg_bytes.write(pg, occ + len);
                                    pool_used.write(0, used + (shared_after - shared_before));
                                    meta.pg_counted = 1;
                                    if (meta.pg_lossless == 1 && (bit<64>)shared_after >= thr) {
                                        /* XOFF on the crossing, refreshed at half the pause time */
                                        if (xoff == 0 || standard_metadata.ingress_global_timestamp - sent_at >= (bit<48>)meta.pfc_refresh_us) {
                                            pfc_xoff_state.write(pg, 1);
                                            pfc_sent_at.write(pg, standard_metadata.ingress_global_timestamp);
                                            send_xoff = 1;
                                        }
                                    }
                                }
                            }
                            if (shared_full == 1) {
                                /* ---- trim or drop (trim::decide) ---------
                                 * only a lossy queue whose profile trims, no
                                 * CNP, unfragmented UDP over IPv4 (bmv2
                                 * cannot sum a cut IPv6 datagram's UDP
                                 * checksum), a size holding the headers */
                                trim_cfg.apply();
                                bit<32> l4_off = l3_off + (((bit<32>)hdr.ipv4.ihl) << 2);
                                bit<8> qbit = meta.trim_queues >> meta.tc;
                                if (meta.trim_hit == 1 && meta.trim_dynamic == 1) {
                                    trim_dyn_queue.apply();
                                }
                                if (meta.trim_hit == 1 && qbit[0:0] == 1 && meta.lossless == 0
                                        && meta.cnp == 0 && hdr.ipv4.isValid() && hdr.udp.isValid()
                                        && meta.pm.first_fragment == 0
                                        && (bit<32>)meta.trim_size >= l4_off + 8
                                        && meta.trim_dynamic == 0) {
                                    trim_count.count((bit<32>)meta.out_port * 8 + (bit<32>)meta.tc);
                                    bit<32> len_after = standard_metadata.packet_length;
                                    if (len_after > (bit<32>)meta.trim_size) {
                                        len_after = (bit<32>)meta.trim_size;
                                    }
                                    hdr.ipv4.dscp = meta.trim_dscp;
                                    hdr.ipv4.total_len = (bit<16>)(len_after - l3_off);
                                    hdr.udp.length = (bit<16>)(len_after - l4_off);
                                    hdr.udp.checksum = 0;
                                    meta.trimmed = 1;
                                    meta.trim_tc = meta.tc;
                                    meta.tc = meta.trim_queue;
                                    standard_metadata.priority = meta.trim_queue;
                                } else {
                                    event(EV_DROP_SHARED_FULL);
                                    drop();
                                }
                            }
                            if (send_xoff == 1) {
                                /* a copy goes to the ingress port (session
                                 * port + 1), where egress turns it into XOFF */
                                meta.pfc_gen = 1;
                                meta.pfc_prio = meta.tc;
                                meta.pfc_xoff = 1;
                                event(EV_PFC_XOFF);
                                clone_preserving_field_list(CloneType.I2E,
                                    (bit<32>)standard_metadata.ingress_port + 1, 1);
                            }
                        }
                    }
                }
            }
        }
    }
}

control DpEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {

    counter(NUM_PORTS * 8, CounterType.packets_and_bytes) tx_tc_count;   /* port * 8 + tc */
    counter(NUM_PORTS * 8, CounterType.packets) ecn_marked_count;
    counter(NUM_PORTS * 8, CounterType.packets) wred_drop_count;
    counter(NUM_PORTS * 8, CounterType.packets) tx_pfc_count;            /* port * 8 + priority */
    counter(NUM_PORTS * 8, CounterType.packets) trim_sent_count;         /* port * 8 + queue trimmed in: TrimSent/pkts */

    /* Rate estimator per egress port: bytes, halved every 2^DRE_PERIOD_SHIFT us
     * (a CONGA-style discounting estimator with alpha = 1/2). */
    register<bit<32>>(NUM_PORTS) dre_bytes;
    register<bit<48>>(NUM_PORTS) dre_epoch;

    @id(0x01000010)
    action set_egress_port(bit<48> port_mac, bit<8> band_shift) {
        meta.egress_mac = port_mac;
        meta.band_shift = band_shift;
    }

    @id(0x02000010)
    table egress_port_cfg {
        key = { standard_metadata.egress_port : exact @name("egress_port"); }
        actions = { set_egress_port; @defaultonly NoAction; }
        default_action = NoAction();
        size = NUM_PORTS;
    }

    /* The RED curve of a WRED_PROFILE as depth ranges (in packets: bmv2's
     * enq_qdepth), each with a marking probability prob/256; at or above
     * green_max_threshold `always`. */
    @id(0x01000011)
    action wred_hit(bit<8> prob, bit<1> always, bit<1> mark, bit<1> drop_non_ect) {
        meta.wred_hit = 1;
        meta.wred_prob = prob;
        meta.wred_always = always;
        meta.wred_mark = mark;
        meta.wred_drop = drop_non_ect;
    }

    @id(0x02000011)
    table wred {
        key = {
            standard_metadata.egress_port : exact @name("egress_port");
            meta.tc : exact @name("tc");
            standard_metadata.enq_qdepth : range @name("enq_qdepth");
        }
        actions = { wred_hit; @defaultonly NoAction; }
        default_action = NoAction();
        size = 8192;
    }

    apply {
        egress_port_cfg.apply();
        if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_INGRESS_CLONE
                || standard_metadata.instance_type == PKT_INSTANCE_TYPE_EGRESS_CLONE) {
            if (meta.pfc_gen == 1) {
                /* ---- the emulated PFC frame: 802.1Qbb, 60 bytes, from this
                 * port's MAC, 0xffff quanta (XOFF) or 0 (XON) ---- */
                hdr.cpu.setInvalid();
                hdr.vlan.setInvalid();
                hdr.pause.setInvalid();
                hdr.ipv4.setInvalid();
                hdr.ipv4_opts[0].setInvalid();
                hdr.ipv4_opts[1].setInvalid();
                hdr.ipv4_opts[2].setInvalid();
                hdr.ipv4_opts[3].setInvalid();
                hdr.ipv4_opts[4].setInvalid();
                hdr.ipv4_opts[5].setInvalid();
                hdr.ipv4_opts[6].setInvalid();
                hdr.ipv4_opts[7].setInvalid();
                hdr.ipv4_opts[8].setInvalid();
                hdr.ipv4_opts[9].setInvalid();
                hdr.ipv6.setInvalid();
                hdr.udp.setInvalid();
                hdr.bth.setInvalid();
                hdr.reth.setInvalid();
                hdr.ethernet.setValid();
                hdr.ethernet.dst_addr = MACCTL_DST_MAC;
                hdr.ethernet.src_addr = meta.egress_mac;
                hdr.ethernet.ether_type = ETHERTYPE_MAC_CONTROL;
                hdr.mac_ctl.setValid();
                hdr.mac_ctl.opcode = MACCTL_OPCODE_PFC;
                hdr.pfc.setValid();
                hdr.pfc.class_enable = ((bit<16>)1) << meta.pfc_prio;
                bit<16> quanta = 0;
                if (meta.pfc_xoff == 1) {
                    quanta = PFC_XOFF_QUANTA;
                }
                hdr.pfc.time0 = (meta.pfc_prio == 0) ? quanta : 16w0;
                hdr.pfc.time1 = (meta.pfc_prio == 1) ? quanta : 16w0;
                hdr.pfc.time2 = (meta.pfc_prio == 2) ? quanta : 16w0;
                hdr.pfc.time3 = (meta.pfc_prio == 3) ? quanta : 16w0;
                hdr.pfc.time4 = (meta.pfc_prio == 4) ? quanta : 16w0;
                hdr.pfc.time5 = (meta.pfc_prio == 5) ? quanta : 16w0;
                hdr.pfc.time6 = (meta.pfc_prio == 6) ? quanta : 16w0;
                hdr.pfc.time7 = (meta.pfc_prio == 7) ? quanta : 16w0;
                hdr.pfc_pad.setValid();
                hdr.pfc_pad.zero = 0;
                truncate(60);
                tx_pfc_count.count((bit<32>)standard_metadata.egress_port * 8 + (bit<32>)meta.pfc_prio);
            } else {
                mark_to_drop(standard_metadata);
            }
        } else {
            if (meta.routed == 1) {
                tx_tc_count.count((bit<32>)standard_metadata.egress_port * 8 + (bit<32>)meta.tc);
                if (meta.trimmed == 1) {
                    /* the cut (a packet no longer than the size goes whole);
                     * one the trim queue lost never gets here: TrimDrop/pkts
                     * = Trim/pkts - TrimSent/pkts */
                    truncate((bit<32>)meta.trim_size);
                    trim_sent_count.count((bit<32>)standard_metadata.egress_port * 8 + (bit<32>)meta.trim_tc);
                }

                /* ---- rate estimator and utilisation band of this port ---- */
                bit<32> p = (bit<32>)standard_metadata.egress_port;
                bit<32> x;
                bit<48> epoch;
                dre_bytes.read(x, p);
                dre_epoch.read(epoch, p);
                bit<48> now = standard_metadata.egress_global_timestamp;
                bit<48> elapsed = now - epoch;
                bit<48> steps = elapsed >> DRE_PERIOD_SHIFT;
                if (steps >= 32) {
                    x = 0;
                } else {
                    x = x >> (bit<8>)steps;
                }
                x = x + standard_metadata.packet_length;
                dre_bytes.write(p, x);
                dre_epoch.write(p, now - (elapsed & ((48w1 << DRE_PERIOD_SHIFT) - 1)));
                /* full speed reads about 2 x speed x period: band = x >> log2(speed Mb/s) */
                bit<32> band = x >> meta.band_shift;
                if (band > 7) {
                    band = 7;
                }
                port_band.write(p, (bit<8>)band);

                /* ---- buffer release, PFC XON (emulated) ---------------- */
                if (meta.pg_counted == 1) {
                    bit<32> pg = (bit<32>)standard_metadata.ingress_port * 8 + (bit<32>)meta.tc;
                    bit<32> len = standard_metadata.packet_length;
                    bit<32> occ;
                    bit<32> used;
                    bit<1> xoff;
                    bit<1> send_xon = 0;
                    @atomic {
                        pg_bytes.read(occ, pg);
                        pool_used.read(used, 0);
                        pfc_xoff_state.read(xoff, pg);
                        bit<32> occ_after = 0;
                        if (occ > len) {
                            occ_after = occ - len;
                        }
                        bit<32> shared_before = 0;
                        if (occ > meta.pg_reserve) {
                            shared_before = occ - meta.pg_reserve;
                        }
                        bit<32> shared_after = 0;
                        if (occ_after > meta.pg_reserve) {
                            shared_after = occ_after - meta.pg_reserve;
                        }
                        bit<32> released = shared_before - shared_after;
                        if (used > released) {
                            used = used - released;
                        } else {
                            used = 0;
                        }
                        pg_bytes.write(pg, occ_after);
                        pool_used.write(0, used);
                        bit<32> free = 0;
                        if (meta.pool_size > used) {
                            free = meta.pool_size - used;
                        }
                        bit<64> thr = (((bit<64>)free) << meta.th_shl) >> meta.th_shr;
                        if (xoff == 1 && (bit<64>)shared_after + (bit<64>)meta.pg_xon_offset <= thr) {
                            pfc_xoff_state.write(pg, 0);
                            send_xon = 1;
                        }
                    }
                    if (send_xon == 1) {
                        meta.pfc_gen = 1;
                        meta.pfc_prio = meta.tc;
                        meta.pfc_xoff = 0;
                        clone_preserving_field_list(CloneType.E2E,
                            (bit<32>)standard_metadata.ingress_port + 1, 1);
                    }
                }

                /* ---- ECN / WRED (dataplane_common::lossless::wred) -------- */
                wred.apply();
                /* a trimmed packet is a loss notification: never marked or
                 * dropped (as a CNP) */
                if (meta.wred_hit == 1 && meta.cnp == 0 && meta.trimmed == 0) {
                    bit<8> r;
                    random(r, (bit<8>)0, (bit<8>)255);
                    if (meta.wred_always == 1 || r < meta.wred_prob) {
                        bit<2> ecn = 0;
                        if (hdr.ipv4.isValid()) {
                            ecn = hdr.ipv4.ecn;
                        } else if (hdr.ipv6.isValid()) {
                            ecn = hdr.ipv6.ecn;
                        }
                        if (meta.wred_mark == 1 && (ecn == 1 || ecn == 2)) {
                            if (hdr.ipv4.isValid()) {
                                hdr.ipv4.ecn = 3;
                                meta.rewrite_ipv4 = 1;
                            } else {
                                hdr.ipv6.ecn = 3;
                            }
                            ecn_marked_count.count(p * 8 + (bit<32>)meta.tc);
                        } else if (meta.wred_mark == 1 && ecn == 3) {
                            /* CE stays CE */
                        } else if (meta.lossless == 0 && meta.wred_drop == 1) {
                            wred_drop_count.count(p * 8 + (bit<32>)meta.tc);
                            mark_to_drop(standard_metadata);
                        }
                    }
                }
            }
        }
    }
}

control DpComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        /* only headers the pipeline rewrote: a punted frame leaves as it came */
        update_checksum(hdr.ipv4.isValid() && meta.rewrite_ipv4 == 1,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flag_rsvd, hdr.ipv4.flag_df, hdr.ipv4.flag_mf,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src_addr,
              hdr.ipv4.dst_addr,
              hdr.ipv4_opts[0].data, hdr.ipv4_opts[1].data, hdr.ipv4_opts[2].data,
              hdr.ipv4_opts[3].data, hdr.ipv4_opts[4].data, hdr.ipv4_opts[5].data,
              hdr.ipv4_opts[6].data, hdr.ipv4_opts[7].data, hdr.ipv4_opts[8].data,
              hdr.ipv4_opts[9].data },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control DpDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        /* bridge is TNA's; never valid here */
        pkt.emit(hdr.cpu);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.vlan);
        pkt.emit(hdr.mac_ctl);
        pkt.emit(hdr.pfc);
        pkt.emit(hdr.pause);
        pkt.emit(hdr.pfc_pad);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ipv4_opts);
        pkt.emit(hdr.ipv6);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.bth);
        pkt.emit(hdr.reth);
        pkt.emit(hdr.uet);
    }
}

V1Switch(DpParser(), DpVerifyChecksum(), DpIngress(), DpEgress(), DpComputeChecksum(), DpDeparser()) main;
