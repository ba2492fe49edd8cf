#!/usr/bin/env python3
"""Independent decoder for the RoCEv2 host emulator's frames: reads a pcap
and prints one JSON object per frame as scapy's RoCE layer decodes it
(BTH fields, AETH of ACK/NAK, CNP, ICRC recomputed by scapy and compared
with the wire, RETH read at its offset)."""
import json
import struct
import sys

from scapy.all import rdpcap, Ether, IP, UDP  # noqa: E402
from scapy.contrib.roce import BTH, AETH, CNPPadding  # noqa: E402


def icrc_ok(pkt):
    clone = pkt[IP].copy()
    wire = clone[BTH].icrc
    clone[BTH].icrc = None
    return IP(bytes(clone))[BTH].icrc == wire


out = []
for frame in rdpcap(sys.argv[1]):
    p = Ether(bytes(frame))
    b = p[BTH]
    d = {
        "dscp": p[IP].tos >> 2,
        "ecn": p[IP].tos & 3,
        "dport": p[UDP].dport,
        "opcode": b.opcode,
        "dqpn": b.dqpn,
        "psn": b.psn,
        "becn": int(b.becn),
        "ackreq": int(b.ackreq),
        "icrc_ok": icrc_ok(p),
        "cnp": CNPPadding in p,
    }
    if AETH in p:
        d["syndrome"] = p[AETH].syndrome
        d["msn"] = p[AETH].msn
    if b.opcode in (0x06, 0x0A):  # WRITE FIRST / ONLY carry a RETH
        raw = bytes(b.payload)
        va, rkey, length = struct.unpack("!QII", raw[:16])
        d["reth_len"] = length
        d["reth_rkey"] = rkey
    # payload bytes between the headers and the ICRC
    d["frame_len"] = len(bytes(frame))
    out.append(d)
print(json.dumps(out))
