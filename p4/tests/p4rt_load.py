#!/usr/bin/env python3
"""Loads generated P4Runtime entries into a P4Runtime server and reads them back.

    p4rt_load.py --addr 127.0.0.1:9559 --p4info p4info.json --device-config dataplane.json \
                 --updates switch.p4runtime.json

Becomes primary (election id 1), sets the forwarding pipeline (p4info from
p4c, the bmv2 JSON as device config), writes every update of the
WriteRequest that `dataplane p4 entries` wrote (JSON mapping of p4runtime.proto),
then reads every table entry and clone session back and compares them with
what was written: the same entries, match fields and actions (so the values
were canonical and the keys the switch's), and the default actions that were
set (the program's constant entries are counted apart). Prints one JSON line with the counts; exits 1 on a mismatch, 2 when the
switch refused something (the gRPC error, with its per-update details).

Needs the `p4runtime`, `grpcio` and `protobuf` Python packages.
"""
import argparse
import json
import queue
import sys
import threading

import grpc
from google.protobuf import json_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc


def fail(code, msg):
    print(json.dumps({"ok": False, "error": msg}))
    sys.exit(code)


def rpc_error(e):
    text = f"{e.code().name}: {e.details()}"
    # per-update errors travel as binary trailing metadata (google.rpc.Status)
    for k, v in (e.trailing_metadata() or ()):
        if k == "grpc-status-details-bin":
            from google.rpc import status_pb2

            st = status_pb2.Status()
            st.ParseFromString(v)
            for i, d in enumerate(st.details):
                err = p4runtime_pb2.Error()
                if d.Unpack(err) and err.canonical_code != 0:
                    text += f"\n  update {i}: code {err.canonical_code}: {err.message}"
    return text


def key_of(te):
    """An entry's identity: table, match fields by id, priority."""
    m = sorted(f.SerializeToString(deterministic=True) for f in te.match)
    return (te.table_id, tuple(m), te.priority)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--addr", required=True)
    ap.add_argument("--device-id", type=int, default=0)
    ap.add_argument("--p4info", required=True, help="p4c --p4runtime-files (JSON)")
    ap.add_argument("--device-config", required=True, help="the bmv2 JSON")
    ap.add_argument("--updates", required=True, help="the generated WriteRequest (JSON)")
    a = ap.parse_args()

    info = p4info_pb2.P4Info()
    json_format.Parse(open(a.p4info).read(), info)
    req = p4runtime_pb2.WriteRequest()
    json_format.Parse(open(a.updates).read(), req)

    # per-update errors come back as trailing metadata, which outgrows
    # gRPC's default 16 KB limit when many updates fail
    chan = grpc.insecure_channel(a.addr, options=[("grpc.max_metadata_size", 16 << 20)])
    try:
        grpc.channel_ready_future(chan).result(timeout=10)
    except grpc.FutureTimeoutError:
        fail(2, f"no P4Runtime server at {a.addr}")
    stub = p4runtime_pb2_grpc.P4RuntimeStub(chan)
    election = p4runtime_pb2.Uint128(high=0, low=1)

    # primary arbitration on the stream channel
    out_q = queue.Queue()
    first = p4runtime_pb2.StreamMessageRequest()
    first.arbitration.device_id = a.device_id
    first.arbitration.election_id.CopyFrom(election)
    out_q.put(first)

    def requests():
        while True:
            m = out_q.get()
            if m is None:
                return
            yield m

    stream = stub.StreamChannel(requests())
    replies = queue.Queue()
    threading.Thread(target=lambda: [replies.put(r) for r in stream], daemon=True).start()
    try:
        r = replies.get(timeout=10)
    except queue.Empty:
        fail(2, "no arbitration reply")
    if r.arbitration.status.code != 0:
        fail(2, f"not primary: {r.arbitration.status}")

    sp = p4runtime_pb2.SetForwardingPipelineConfigRequest(
        device_id=a.device_id,
        election_id=election,
        action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
    )
    sp.config.p4info.CopyFrom(info)
    sp.config.p4_device_config = open(a.device_config, "rb").read()
    try:
        stub.SetForwardingPipelineConfig(sp)
    except grpc.RpcError as e:
        fail(2, "SetForwardingPipelineConfig: " + rpc_error(e))

    req.device_id = a.device_id
    req.election_id.CopyFrom(election)
    try:
        stub.Write(req)
    except grpc.RpcError as e:
        fail(2, "Write: " + rpc_error(e))

    written = {}
    defaults = {}
    sessions = {}
    for u in req.updates:
        ent = u.entity
        if ent.HasField("table_entry"):
            te = ent.table_entry
            if te.is_default_action:
                defaults[te.table_id] = te.action.SerializeToString(deterministic=True)
            else:
                written[key_of(te)] = te.action.SerializeToString(deterministic=True)
        elif ent.HasField("packet_replication_engine_entry"):
            cs = ent.packet_replication_engine_entry.clone_session_entry
            sessions[cs.session_id] = len(cs.replicas)

    def read(entity):
        rr = p4runtime_pb2.ReadRequest(device_id=a.device_id)
        rr.entities.add().CopyFrom(entity)
        out = []
        for resp in stub.Read(rr):
            out.extend(resp.entities)
        return out

    problems = []
    got = {}
    # the program's own constant entries are read too; they are not ours
    const_tables = {t.preamble.id for t in info.tables if t.is_const_table}
    const_entries = 0
    try:
        for e in read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())):
            te = e.table_entry
            if te.table_id in const_tables:
                const_entries += 1
                continue
            got[key_of(te)] = te.action.SerializeToString(deterministic=True)
    except grpc.RpcError as e:
        fail(2, "Read table entries: " + rpc_error(e))
    names = {t.preamble.id: t.preamble.name for t in info.tables}
    for k, act in written.items():
        if k not in got:
            problems.append(f"{names.get(k[0], k[0])}: a written entry was not read back")
        elif got[k] != act:
            problems.append(f"{names.get(k[0], k[0])}: an entry reads back with another action")
    for k in got:
        if k not in written:
            problems.append(f"{names.get(k[0], k[0])}: an entry was read that was not written")

    defaults_checked = 0
    for tid, act in defaults.items():
        try:
            ents = read(p4runtime_pb2.Entity(
                table_entry=p4runtime_pb2.TableEntry(table_id=tid, is_default_action=True)))
        except grpc.RpcError as e:
            problems.append(f"{names.get(tid, tid)}: reading the default entry: {rpc_error(e)}")
            continue
        acts = [x.table_entry.action.SerializeToString(deterministic=True) for x in ents]
        if act not in acts:
            problems.append(f"{names.get(tid, tid)}: the default action written is not read back")
        defaults_checked += 1

    sessions_read = 0
    if sessions:
        pre = p4runtime_pb2.Entity()
        pre.packet_replication_engine_entry.clone_session_entry.session_id = 0
        try:
            for e in read(pre):
                cs = e.packet_replication_engine_entry.clone_session_entry
                if cs.session_id in sessions:
                    sessions_read += 1
                    if len(cs.replicas) != sessions[cs.session_id]:
                        problems.append(f"clone session {cs.session_id}: replicas differ")
        except grpc.RpcError as e:
            problems.append("reading clone sessions: " + rpc_error(e))
        if sessions_read != len(sessions):
            problems.append(f"{len(sessions)} clone sessions written, {sessions_read} read back")

    out_q.put(None)
    print(json.dumps({
        "ok": not problems,
        "updates": len(req.updates),
        "entries_written": len(written),
        "entries_read": len(got),
        "const_entries_read": const_entries,
        "defaults_checked": defaults_checked,
        "clone_sessions": sessions_read,
        "problems": problems[:20],
    }))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
