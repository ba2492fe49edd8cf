/* The parser both P4 targets share: the header chain of
 * dataplane-common/src/parse.rs, Ethernet -> (802.1Q) -> IPv4 | IPv6 | MAC
 * control -> UDP -> BTH (-> RETH), with the same malformed reasons (MAL_*).
 *
 * The architectures give a parser different parameter lists (v1model:
 * standard_metadata; TNA: intrinsic metadata and port metadata to skip), so
 * this file is a template: the including program defines
 *
 *   DP_PARSER_NAME    the parser's name
 *   DP_PARSER_PARAMS  its parameter list; it must name the packet `pkt`,
 *                     the headers `hdr` (headers_t) and a metadata struct
 *                     `meta` with a `parse_meta_t pm` member
 *   DP_PARSER_INIT    statements of the start state before the Ethernet
 *                     header (e.g. TNA's intrinsic metadata), may be empty
 *   DP_PARSER_NEXT    the state after `start` (parse_ethernet, or a state of
 *                     DP_PARSER_EXTRA_STATES)
 *   DP_PARSER_EXTRA_STATES  more states, may be empty
 *
 * and includes it (once per parser it needs). A frame that ends inside a
 * header makes the extract fail (a parser error); the controls then name the
 * header boundary, exactly as the eBPF parser's ParseError does, with
 * DpTruncationPoint (headers.p4) from the headers that were extracted: a
 * store to metadata just before a failing extract is a dead store to p4c
 * (removed: seen on p4c 1.2.5), so the parser cannot record the point
 * itself. Semantic errors (bad version, bad IHL) end parsing with
 * meta.pm.malformed set; the length checks that need the frame length are
 * done by the controls (v1model ingress: standard_metadata.packet_length).
 *
 * DP_PARSE_UET (defined by the v1model program only) adds UET's PDS
 * prologue after UDP port 4793. DP_PARSER_NO_RETH leaves the RETH as
 * payload (TNA's egress parser: only ingress reads it, and a frame cut
 * inside it would be a parser error there).
 *
 * Compiled by p4c 1.2.5 (bmv2 back end, p4test for TNA); see p4/README.md.
 */
#ifndef DP_PARSER_NAME
#error "define DP_PARSER_NAME, DP_PARSER_PARAMS, DP_PARSER_INIT, DP_PARSER_NEXT and DP_PARSER_EXTRA_STATES before including parser.p4"
#endif

parser DP_PARSER_NAME(DP_PARSER_PARAMS) {

    state start {
        DP_PARSER_INIT
        meta.pm.malformed = MAL_NONE;
        meta.pm.qinq = 0;
        meta.pm.later_fragment = 0;
        meta.pm.first_fragment = 0;
        transition DP_PARSER_NEXT;
    }

    DP_PARSER_EXTRA_STATES

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_VLAN: parse_vlan;
            ETHERTYPE_QINQ: parse_vlan;
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            ETHERTYPE_MAC_CONTROL: parse_mac_ctl;
            default: parsed;
        }
    }

    /* One tag: TCI and the inner EtherType. */
    state parse_vlan {
        pkt.extract(hdr.vlan);
        transition select(hdr.vlan.ether_type) {
            ETHERTYPE_VLAN: qinq;
            ETHERTYPE_QINQ: qinq;
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            ETHERTYPE_MAC_CONTROL: parse_mac_ctl;
            default: parsed;
        }
    }

    /* Two tags: counted and punted, the inner one is not parsed (eBPF:
     * Parsed::qinq). */
    state qinq {
        meta.pm.qinq = 1;
        transition parsed;
    }

    state parse_mac_ctl {
        pkt.extract(hdr.mac_ctl);
        transition select(hdr.mac_ctl.opcode) {
            MACCTL_OPCODE_PFC: parse_pfc;
            MACCTL_OPCODE_PAUSE: parse_pause;
            default: parsed;
        }
    }

    state parse_pfc {
        pkt.extract(hdr.pfc);
        transition parsed;
    }

    state parse_pause {
        pkt.extract(hdr.pause);
        transition parsed;
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.version, hdr.ipv4.ihl) {
            (4, 5): parse_ipv4_l4;
            (4, 0 &&& 0xc): bad_ipv4_ihl;   /* 0..3 */
            (4, 4): bad_ipv4_ihl;
            (4, _): ipv4_opt_0;
            default: bad_ipv4_version;
        }
    }

    /* Options, one 32-bit word per state at a fixed index (Tofino assigns
     * each stack element in one state only), leaving the chain when the
     * IHL is reached. */
    state ipv4_opt_0 {
        pkt.extract(hdr.ipv4_opts[0]);
        transition select(hdr.ipv4.ihl) { 6: parse_ipv4_l4; default: ipv4_opt_1; }
    }
    state ipv4_opt_1 {
        pkt.extract(hdr.ipv4_opts[1]);
        transition select(hdr.ipv4.ihl) { 7: parse_ipv4_l4; default: ipv4_opt_2; }
    }
    state ipv4_opt_2 {
        pkt.extract(hdr.ipv4_opts[2]);
        transition select(hdr.ipv4.ihl) { 8: parse_ipv4_l4; default: ipv4_opt_3; }
    }
    state ipv4_opt_3 {
        pkt.extract(hdr.ipv4_opts[3]);
        transition select(hdr.ipv4.ihl) { 9: parse_ipv4_l4; default: ipv4_opt_4; }
    }
    state ipv4_opt_4 {
        pkt.extract(hdr.ipv4_opts[4]);
        transition select(hdr.ipv4.ihl) { 10: parse_ipv4_l4; default: ipv4_opt_5; }
    }
    state ipv4_opt_5 {
        pkt.extract(hdr.ipv4_opts[5]);
        transition select(hdr.ipv4.ihl) { 11: parse_ipv4_l4; default: ipv4_opt_6; }
    }
    state ipv4_opt_6 {
        pkt.extract(hdr.ipv4_opts[6]);
        transition select(hdr.ipv4.ihl) { 12: parse_ipv4_l4; default: ipv4_opt_7; }
    }
    state ipv4_opt_7 {
        pkt.extract(hdr.ipv4_opts[7]);
        transition select(hdr.ipv4.ihl) { 13: parse_ipv4_l4; default: ipv4_opt_8; }
    }
    state ipv4_opt_8 {
        pkt.extract(hdr.ipv4_opts[8]);
        transition select(hdr.ipv4.ihl) { 14: parse_ipv4_l4; default: ipv4_opt_9; }
    }
    state ipv4_opt_9 {
        pkt.extract(hdr.ipv4_opts[9]);
        transition parse_ipv4_l4;
    }

    /* A non-first fragment has no L4 header; a first fragment's UDP length
     * covers the whole datagram. */
    state parse_ipv4_l4 {
        transition select(hdr.ipv4.frag_offset, hdr.ipv4.flag_mf, hdr.ipv4.protocol) {
            (0, 0, IP_PROTO_UDP): parse_udp;
            (0, 1, IP_PROTO_UDP): first_fragment_udp;
            (0, _, _): parsed;
            default: later_fragment;
        }
    }

    state first_fragment_udp {
        meta.pm.first_fragment = 1;
        transition parse_udp;
    }

    state later_fragment {
        meta.pm.later_fragment = 1;
        transition parsed;
    }

    state bad_ipv4_version {
        meta.pm.malformed = MAL_IPV4_BAD_VERSION;
        transition parsed;
    }

    state bad_ipv4_ihl {
        meta.pm.malformed = MAL_IPV4_BAD_IHL;
        transition parsed;
    }

    /* Extension headers are not walked (as in the eBPF parser). */
    state parse_ipv6 {
        pkt.extract(hdr.ipv6);
        transition select(hdr.ipv6.version, hdr.ipv6.next_hdr) {
            (6, IP_PROTO_UDP): parse_udp;
            (6, _): parsed;
            default: bad_ipv6_version;
        }
    }

    state bad_ipv6_version {
        meta.pm.malformed = MAL_IPV6_BAD_VERSION;
        transition parsed;
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            UDP_PORT_ROCEV2: parse_bth;
#ifdef DP_PARSE_UET
            UDP_PORT_UET: parse_uet;
#endif
            default: parsed;
        }
    }

#ifdef DP_PARSE_UET
    /* UET: the PDS prologue. The room checks (the fixed header the type
     * announces, by the UDP length) are the controls'. */
    state parse_uet {
        pkt.extract(hdr.uet);
        transition parsed;
    }
#endif

    /* RoCEv2. The UDP length checks (room for BTH + ICRC) are the
     * controls'. */
    state parse_bth {
        pkt.extract(hdr.bth);
#ifdef DP_PARSER_NO_RETH
        transition parsed;
#else
        transition select(hdr.bth.opcode) {
            BTH_OPCODE_WRITE_FIRST: parse_reth;
            BTH_OPCODE_WRITE_ONLY: parse_reth;
            default: parsed;
        }
#endif
    }

    /* RDMA WRITE first / only: the RETH, for its DMA length (place mode's
     * booking). The eBPF parser does not parse it: a frame that ends
     * inside it is well formed (DpTruncationPoint says MAL_NONE), and is
     * forwarded with the bytes it has (still payload, emitted as they
     * came). */
#ifndef DP_PARSER_NO_RETH
    state parse_reth {
        pkt.extract(hdr.reth);
        transition parsed;
    }
#endif

    state parsed {
        transition accept;
    }
}
