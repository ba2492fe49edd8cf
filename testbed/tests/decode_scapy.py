#!/usr/bin/env python3
"""Independent decoder for the fixture table: reads a pcap and prints, per
frame, the fields our parser extracts, as scapy (PyPI) decodes them.

RoCEv2: the ICRC is recomputed by scapy's own RoCE layer and compared with
the one on the wire. PFC / PAUSE: scapy's MAC control layers.
"""
import json
import sys

from scapy.all import rdpcap, Ether, Dot1Q, Dot1AD, IP, IPv6, UDP, bind_layers  # noqa: E402
from scapy.contrib.roce import BTH  # noqa: E402
from scapy.contrib.mac_control import (  # noqa: E402
    MACControlClassBasedFlowControl,
    MACControlPause,
)

bind_layers(UDP, BTH, dport=4791)


def icrc_ok(pkt):
    """Rebuild the packet with scapy computing the ICRC; compare to wire."""
    b = pkt[BTH]
    wire = b.icrc
    ip_layer = pkt[IP] if IP in pkt else pkt[IPv6]
    clone = ip_layer.copy()
    clone[BTH].icrc = None
    rebuilt = clone.__class__(bytes(clone))
    return rebuilt[BTH].icrc == wire


def decode(frame):
    p = Ether(bytes(frame))
    out = {}
    # the outer tag: an 802.1ad S-tag when there is one
    outer = p[Dot1AD] if Dot1AD in p else (p[Dot1Q] if Dot1Q in p else None)
    if outer is not None:
        out["pcp"] = outer.prio
        out["vid"] = outer.vlan
    if IP in p:
        out["dscp"] = p[IP].tos >> 2
        out["ecn"] = p[IP].tos & 3
    elif IPv6 in p:
        out["dscp"] = p[IPv6].tc >> 2
        out["ecn"] = p[IPv6].tc & 3
    if UDP in p:
        out["sport"] = p[UDP].sport
        out["dport"] = p[UDP].dport
    if BTH in p:
        b = p[BTH]
        out["bth_opcode"] = b.opcode
        out["bth_dest_qp"] = b.dqpn
        out["bth_psn"] = b.psn
        out["bth_becn"] = int(b.becn)
        out["icrc_ok"] = icrc_ok(p)
    if MACControlClassBasedFlowControl in p:
        c = p[MACControlClassBasedFlowControl]
        enable = 0
        for i in range(8):
            if getattr(c, "c%d_enabled" % i):
                enable |= 1 << i
        out["pfc_class_enable"] = enable
        out["pfc_times"] = [getattr(c, "c%d_pause_time" % i) for i in range(8)]
        out["dst"] = p[Ether].dst
    elif MACControlPause in p:
        out["pause_time"] = p[MACControlPause].pause_time
        out["dst"] = p[Ether].dst
    return out


def main():
    frames = rdpcap(sys.argv[1])
    print(json.dumps([decode(f) for f in frames]))


if __name__ == "__main__":
    main()
