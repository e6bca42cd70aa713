#!/usr/bin/env python3
"""Writes the bad-input corpus (tests/bad_inputs/<format>/) that bad_inputs_test checks.

Every case is written here, one function call each, with the reason in a comment; the files are
checked in, so the test does not run this script. Output is deterministic: rerunning it must leave
`git status` clean. Run it after adding or changing a case, then update expected.tsv.

  python3 tests/bad_inputs/generate.py

The fuzz findings (device_trace/fuzz_*.json, link_pair/fuzz_*.bin) are not written here: they are
copied from the fuzzer's output as they are (see README.md).
"""
import gzip
import json
import os
import random
import struct
import zlib

ROOT = os.path.dirname(os.path.abspath(__file__))

PROCESS = "[pytorch|profiler|execution_trace|process]"
THREAD = "[pytorch|profiler|execution_trace|thread]"


def write(relative, content):
    if isinstance(content, str):
        content = content.encode("utf-8")
    assert len(content) < 50 * 1024, relative
    path = os.path.join(ROOT, relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(content)


def garbage(seed, size=512):
    rng = random.Random(seed)
    return bytes(rng.randrange(256) for _ in range(size))


def gzip_bytes(data):
    # mtime=0 and no file name: the same bytes on every run.
    return gzip.compress(data, compresslevel=9, mtime=0)


def indexed_gzip_bytes(data, block=256 * 1024):
    # The layout of chakraflow's own .gz outputs (docs/compatibility.md, "Compressed outputs"),
    # compressed by zlib: one member whose blocks of `block` bytes are deflated each on its own and
    # ended by a full flush, then an empty member whose extra field ("Cf") indexes them.
    out = bytearray(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03")
    sizes = []
    for at in range(0, len(data), block):
        c = zlib.compressobj(1, zlib.DEFLATED, -15)
        part = c.compress(data[at:at + block]) + c.flush(zlib.Z_FULL_FLUSH)
        sizes.append(len(part))
        out += part
    end = zlib.compressobj(1, zlib.DEFLATED, -15).flush(zlib.Z_FINISH)
    out += end + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    xlen = 29 + 4 * len(sizes)
    fields = struct.pack("<BIQI", 1, block, len(data), len(sizes))
    fields += b"".join(struct.pack("<I", size) for size in sizes)
    fields += struct.pack("<II", len(end), 22 + xlen)
    out += b"\x1f\x8b\x08\x04\x00\x00\x00\x00\x00\x03" + struct.pack("<H", xlen)
    out += b"Cf" + struct.pack("<H", xlen - 4) + fields + b"\x03\x00" + bytes(8)
    return bytes(out)


# --------------------------------------------------------------------------------------------
# Host execution trace (schema 1.1.1, attrs layout), and ET+ built on it.
#
# The valid baseline: process root 1, thread root 2 (tid 1), aten::add 3 (rf_id 10) and
# aten::mul 4 (rf_id 11) on it, in process 1. bad_inputs_test links host_et/ cases with
# device_trace/baseline.json, and device_trace/ cases with host_et/baseline.json.


def attrs(rf_id=0, tid=1, seq_id=-1):
    return [
        {"name": "rf_id", "type": "uint64", "value": rf_id},
        {"name": "fw_parent", "type": "uint64", "value": 0},
        {"name": "seq_id", "type": "int64", "value": seq_id},
        {"name": "scope", "type": "uint64", "value": 0},
        {"name": "tid", "type": "uint64", "value": tid},
        {"name": "fw_tid", "type": "uint64", "value": 0},
        {"name": "op_schema", "type": "string", "value": ""},
    ]


def io():
    return {"values": [], "shapes": [], "types": []}


def host_node(node_id, name, parent, rf_id=0, tid=1, **extra):
    node = {"id": node_id, "name": name, "ctrl_deps": parent, "inputs": io(), "outputs": io(),
            "attrs": attrs(rf_id, tid)}
    node.update(extra)
    return node


def baseline_nodes():
    return [
        host_node(1, PROCESS, 1, tid=0),
        host_node(2, THREAD, 1, tid=1),
        host_node(3, "aten::add", 2, rf_id=10),
        host_node(4, "aten::mul", 2, rf_id=11),
    ]


def host_doc(nodes, schema="1.1.1-chakra.0.0.4", **top):
    doc = {"schema": schema, "pid": 1, "time": "2024-01-01 00:00:00", "start_ts": 1}
    doc.update(top)
    doc["nodes"] = nodes
    doc["finish_ts"] = 2
    return doc


def dumps(doc):
    # One node per line, as the observer and our ET+ writer lay them out.
    head = {k: v for k, v in doc.items() if k != "nodes"}
    parts = [json.dumps(k) + ": " + json.dumps(v) for k, v in head.items()]
    nodes = ",\n  ".join(json.dumps(n) for n in doc["nodes"])
    parts.insert(list(head).index("finish_ts") if "finish_ts" in head else len(parts),
                 '"nodes": [\n  ' + nodes + "\n]")
    return "{" + ", ".join(parts) + "}\n"


def host(mutate=None):
    nodes = baseline_nodes()
    if mutate:
        mutate({n["id"]: n for n in nodes})
    return dumps(host_doc(nodes))


def replace_once(text, old, new):
    assert text.count(old) == 1, (old, text)
    return text.replace(old, new)


NEST = '"@NEST@"'


def nest(text):
    """`text` with its "@NEST@" string replaced by 10,000 nested arrays."""
    return replace_once(text, NEST, "[" * 10000 + "]" * 10000)


def common_cases(d, ext, base, seed, truncated, two_documents, deep_nesting):
    """The cases of every format: the valid baseline (the control case), 0 bytes, binary garbage,
    the baseline cut short (a job killed mid-write), two documents back to back, and 10,000
    nested arrays (or groups) where the format allows a value."""
    write(d + "baseline" + ext, base)
    write(d + "empty" + ext, b"")
    write(d + "garbage.bin", garbage(seed))
    write(d + "truncated" + ext, truncated)
    write(d + "two_documents" + ext, two_documents)
    write(d + "deep_nesting" + ext, deep_nesting)


def host_cases():
    d = "host_et/"
    base = host()
    # Truncated inside node 3; deep nesting inside its inputs (passed through by the linker).
    common_cases(d, ".json", base, 1, base[: base.index('"aten::add"') + 5], base + base,
                 nest(host(lambda n: n[3]["inputs"].update(values="@NEST@"))))
    # Truncated gzip'd: the gzip stream itself is cut short.
    write(d + "truncated.json.gz", gzip_bytes(base.encode())[:-20])
    # Numbers where ids are expected: NaN (not JSON), 2^64, -2^63-1, and an infinite value.
    write(d + "id_nan.json", replace_once(base, '"id": 3,', '"id": NaN,'))
    write(d + "id_2pow64.json", replace_once(base, '"id": 3,', '"id": 18446744073709551616,'))
    write(d + "seq_id_below_int64.json", seq_id_case(base))
    write(d + "rf_id_inf.json", replace_once(base, '"value": 11}', '"value": 1e999}'))
    # Invalid UTF-8 in a name: repaired ('?') and counted, the trace still links and converts.
    write(d + "invalid_utf8_name.json",
          replace_once(base, '"aten::add"', '"aten::add\xff\xfe"').encode("latin-1"))
    write(d + "invalid_escape_name.json", replace_once(base, '"aten::add"', '"aten::a\\qdd"'))
    write(d + "duplicate_ids.json", replace_once(base, '"id": 4,', '"id": 3,'))
    # Dependencies: the parent of node 3 is node 3 itself; is missing; nodes 3 and 4 are each
    # other's parent.
    write(d + "self_parent.json", host(lambda n: n[3].update(ctrl_deps=3)))
    write(d + "parent_missing.json", host(lambda n: n[3].update(ctrl_deps=99)))
    write(d + "parent_cycle.json", host(lambda n: (n[3].update(ctrl_deps=4),
                                                   n[4].update(ctrl_deps=3))))
    # Wrong types and missing keys.
    write(d + "id_string.json", replace_once(base, '"id": 3,', '"id": "3",'))
    write(d + "name_number.json", replace_once(base, '"name": "aten::add"', '"name": 5'))
    write(d + "ctrl_deps_list.json",
          replace_once(base, '"id": 3, "name": "aten::add", "ctrl_deps": 2',
                       '"id": 3, "name": "aten::add", "ctrl_deps": [2]'))
    write(d + "rf_id_string.json", replace_once(base, '"value": 11}', '"value": "eleven"}'))
    write(d + "missing_id.json", replace_once(base, '"id": 3, ', ''))
    write(d + "missing_name.json", replace_once(base, '"name": "aten::add", ', ''))
    write(d + "missing_nodes.json", '{"schema": "1.1.1-chakra.0.0.4", "pid": 7}\n')
    write(d + "nodes_not_array.json", '{"schema": "1.1.1-chakra.0.0.4", "nodes": {"id": 1}}\n')
    write(d + "node_not_object.json", '{"schema": "1.1.1-chakra.0.0.4", "nodes": [1, 2]}\n')
    write(d + "top_level_array.json", "[" + base + "]\n")
    # Two host ops with the same rf_id: only one can be paired with the device op.
    write(d + "duplicate_rf_id.json", replace_once(base, '"value": 11}', '"value": 10}'))
    # The "nodes" key twice at the top level: an error, not two arrays written into the ET+.
    write(d + "duplicate_nodes_key.json",
          replace_once(base, '"finish_ts": 2', '"finish_ts": 2, "nodes": []'))
    # A duplicate top-level key that no stage reads is still an error (the ET+ would carry both).
    write(d + "duplicate_pid_key.json", replace_once(base, '"pid": 1,', '"pid": 1, "pid": 2,'))
    # No "schema": linked by its layout, and counted.
    write(d + "no_schema.json", replace_once(base, '"schema": "1.1.1-chakra.0.0.4", ', ''))
    write(d + "schema_number.json",
          replace_once(base, '"schema": "1.1.1-chakra.0.0.4"', '"schema": 11'))
    # Cut between two nodes (a structural point): the message names the end of the input.
    write(d + "truncated_between_nodes.json", base[: base.index(',\n  {"id": 4')])


def seq_id_case(base):
    # seq_id of node 4 (the last "value": -1 of the file) below int64.
    i = base.rindex('"value": -1}')
    return base[:i] + '"value": -9223372036854775809}' + base[i + len('"value": -1}'):]


# ET+ (the converter's input): the baseline as our linker writes it, with GPU nodes.
def et_plus_nodes():
    gpu = {"cat": "kernel", "ph": "X", "stream": 7}
    return [
        host_node(0, PROCESS, 0, tid=0),
        host_node(1, THREAD, 0, tid=1),
        host_node(2, "aten::add", 1, rf_id=10, inclusive_dur=10, exclusive_dur=8, ts=100),
        host_node(3, "add_kernel", 2, rf_id=10, inclusive_dur=3, exclusive_dur=3, ts=105, **gpu),
        host_node(4, "aten::mul", 1, rf_id=11, inclusive_dur=10, exclusive_dur=8, ts=120),
        host_node(5, "mul_kernel", 4, rf_id=11, inclusive_dur=3, exclusive_dur=3, ts=125, **gpu),
        host_node(6, THREAD, 0, tid=2),
        host_node(7, "aten::copy_", 6, rf_id=12, tid=2, inclusive_dur=5, exclusive_dur=5, ts=140),
    ]


def et_plus(mutate=None, **top):
    nodes = et_plus_nodes()
    if mutate:
        mutate({n["id"]: n for n in nodes})
    return dumps(host_doc(nodes, **top))


def et_plus_cases():
    d = "et_plus/"
    base = et_plus()
    common_cases(d, ".json", base, 2, base[: base.index('"mul_kernel"') + 3], base + base,
                 nest(et_plus(lambda n: n[2]["inputs"].update(values="@NEST@"))))
    # Numbers: an infinite ts (1e999), a NaN duration, 2^64 and -2^63-1 ids.
    write(d + "ts_inf.json", replace_once(base, '"ts": 120', '"ts": 1e999'))
    write(d + "exclusive_dur_nan.json", replace_once(base, '"exclusive_dur": 8, "ts": 120',
                                                     '"exclusive_dur": NaN, "ts": 120'))
    write(d + "huge_durations.json",
          et_plus(lambda n: (n[2].update(exclusive_dur=1e300, inclusive_dur=1e300, ts=1e300),
                             n[4].update(exclusive_dur=-1e300))))
    write(d + "inter_thread_dep_2pow64.json",
          et_plus(lambda n: n[7].update(inter_thread_dep="@BIG@")).replace(
              '"@BIG@"', "18446744073709551616"))
    write(d + "sync_dep_below_int64.json",
          et_plus(lambda n: n[7].update(sync_dep=["@SMALL@"])).replace(
              '"@SMALL@"', "-9223372036854775809"))
    write(d + "invalid_utf8_name.json",
          replace_once(base, '"aten::mul"', '"aten::mul\xff"').encode("latin-1"))
    # An escaped lone surrogate: valid JSON, but no valid UTF-8 encoding exists for it.
    write(d + "lone_surrogate_name.json", replace_once(base, '"aten::mul"', '"aten::mul\\udc80"'))
    write(d + "duplicate_ids.json", replace_once(base, '"id": 5,', '"id": 4,'))
    # Dependencies.
    write(d + "ctrl_deps_self.json", et_plus(lambda n: n[4].update(ctrl_deps=4)))
    write(d + "parent_missing.json", et_plus(lambda n: n[4].update(ctrl_deps=99)))
    write(d + "gpu_launcher_missing.json", et_plus(lambda n: n[5].update(ctrl_deps=99)))
    write(d + "parent_cycle.json",
          et_plus(lambda n: (n[2].update(ctrl_deps=4), n[4].update(ctrl_deps=2))))
    write(d + "inter_thread_dep_self.json", et_plus(lambda n: n[7].update(inter_thread_dep=7)))
    write(d + "inter_thread_dep_missing.json",
          et_plus(lambda n: n[7].update(inter_thread_dep=99)))
    write(d + "sync_dep_missing.json", et_plus(lambda n: n[7].update(sync_dep=[99])))
    # aten::mul waits on the kernel it launched itself.
    write(d + "sync_dep_on_own_kernel.json", et_plus(lambda n: n[4].update(sync_dep=[5])))
    # aten::add (thread 1) and aten::copy_ (thread 2) each wait on the other: a cycle.
    write(d + "inter_thread_cycle.json",
          et_plus(lambda n: (n[2].update(inter_thread_dep=7), n[7].update(inter_thread_dep=2))))
    # Wrong types and missing keys.
    write(d + "exclusive_dur_string.json",
          replace_once(base, '"exclusive_dur": 8, "ts": 120', '"exclusive_dur": "8", "ts": 120'))
    write(d + "stream_string.json", et_plus(lambda n: n[5].update(stream="7")))
    write(d + "rf_id_attr_string.json", et_plus(lambda n: n[4]["attrs"][0].update(value="x")))
    write(d + "pg_name_attr_number.json",
          et_plus(lambda n: n[4]["attrs"].append({"name": "pg_name", "type": "string",
                                                  "value": 0})))
    write(d + "sync_dep_not_list.json", et_plus(lambda n: n[7].update(sync_dep=5)))
    write(d + "missing_io.json", et_plus(lambda n: (n[7].pop("inputs"), n[7].pop("outputs"))))
    write(d + "missing_metadata.json",
          "{\"nodes\": [\n  " + ",\n  ".join(json.dumps(n) for n in et_plus_nodes()) + "\n]}\n")
    write(d + "unknown_schema.json", et_plus(schema="9.9.9"))
    write(d + "pid_2pow64.json", replace_once(base, '"pid": 1', '"pid": 18446744073709551616'))


# --------------------------------------------------------------------------------------------
# Kineto device trace. The baseline matches the host baseline: aten::add (rf_id 10) and
# aten::mul (rf_id 11) on thread 1, each launching one kernel.


def cpu_op(name, ts, dur, rf_id, ext):
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
            "args": {"External id": ext, "Record function id": rf_id}}


def launch(ts, corr, ext):
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
            "ts": ts, "dur": 2, "args": {"correlation": corr, "External id": ext}}


def kernel(name, ts, corr, ext):
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": 3,
            "args": {"correlation": corr, "External id": ext, "stream": 7, "device": 0}}


def device_events():
    return [
        cpu_op("aten::add", 100, 10, 10, 5), launch(102, 70, 5), kernel("add_kernel", 105, 70, 5),
        cpu_op("aten::mul", 120, 10, 11, 6), launch(122, 71, 6), kernel("mul_kernel", 125, 71, 6),
    ]


def device_doc(events):
    body = ",\n  ".join(json.dumps(e) for e in events)
    return '{"schemaVersion": 1, "traceEvents": [\n  ' + body + "\n]}\n"


def device(mutate=None):
    events = device_events()
    if mutate:
        mutate(events)
    return device_doc(events)


def device_cases():
    d = "device_trace/"
    base = device()
    common_cases(d, ".json", base, 3, base[: base.index('"mul_kernel"') + 4], base + base,
                 nest(device(lambda e: e[0]["args"].update(extra="@NEST@"))))
    write(d + "ts_nan.json", replace_once(base, '"ts": 120', '"ts": NaN'))
    write(d + "ts_inf.json", replace_once(base, '"ts": 120', '"ts": 1e999'))
    write(d + "dur_2pow64.json", replace_once(base, '"ts": 120, "dur": 10',
                                              '"ts": 120, "dur": 18446744073709551616'))
    write(d + "ts_below_int64.json", replace_once(base, '"ts": 120', '"ts": -9223372036854775809'))
    # ts + dur beyond int64 nanoseconds although each fits.
    write(d + "end_overflow.json", replace_once(base, '"ts": 120, "dur": 10',
                                                '"ts": 9000000000000000, "dur": 9000000000000000'))
    # A correlation id of 2^64 cannot be an id: the kernel is left without its launch.
    write(d + "correlation_2pow64.json", replace_once(base, '"correlation": 71, "External id": 6, '
                                                      '"stream"',
                                                      '"correlation": 18446744073709551616, '
                                                      '"External id": 6, "stream"'))
    write(d + "invalid_utf8_name.json",
          replace_once(base, '"mul_kernel"', '"mul_kernel\xc3\x28"').encode("latin-1"))
    write(d + "invalid_escape_name.json", replace_once(base, '"mul_kernel"', '"mul_\\kernel"'))
    # Two launches with the same correlation id, two cpu ops with the same rf_id.
    write(d + "duplicate_correlation.json",
          device(lambda e: (e[4]["args"].update(correlation=70), e[5]["args"].update(
              correlation=70))))
    write(d + "duplicate_rf_id.json", device(lambda e: e[3]["args"].update(
        {"Record function id": 10})))
    # A kernel whose launch is missing.
    write(d + "kernel_without_launch.json", device(lambda e: e.pop(4)))
    # Wrong types and missing keys.
    write(d + "ts_string.json", replace_once(base, '"ts": 120', '"ts": "noon"'))
    write(d + "cat_number.json", device(lambda e: e[1].update(cat=5)))
    write(d + "args_not_object.json", device(lambda e: e[5].update(args=[1, 2])))
    write(d + "event_not_object.json", '{"traceEvents": [1, 2]}\n')
    write(d + "missing_trace_events.json", '{"schemaVersion": 1, "deviceProperties": []}\n')
    write(d + "trace_events_not_array.json", '{"traceEvents": {"ph": "X"}}\n')
    write(d + "missing_ts.json", device(lambda e: e[3].pop("ts")))
    # A kernel before the trace's epoch, a kernel of negative duration: errors (the .et's times
    # are unsigned).
    write(d + "kernel_negative_ts.json", device(lambda e: e[5].update(ts=-5)))
    write(d + "kernel_negative_dur.json", device(lambda e: e[5].update(dur=-5)))
    # A correlation id given as a string: read as its number, and counted.
    write(d + "correlation_string.json", device(lambda e: (e[4]["args"].update(correlation="71"),
                                                           e[5]["args"].update(correlation="71"))))
    # A kernel with no "ph": read as a complete event, and counted.
    write(d + "kernel_without_ph.json", device(lambda e: e[5].pop("ph")))
    # "traceEvents" twice: an error.
    write(d + "duplicate_trace_events_key.json",
          replace_once(base, '"schemaVersion": 1,', '"schemaVersion": 1, "traceEvents": [],'))
    # Cut between two events (a structural point): the message names the end of the input.
    write(d + "truncated_between_events.json", base[: base.index(',\n  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 122')])


# --------------------------------------------------------------------------------------------
# Chakra protobuf .et: varint-length-delimited records, a GlobalMetadata then Nodes. The valid
# baseline: nodes 1 <- 2 <- 3 (data_deps), then 4.


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tag(field, wire_type):
    return varint(field << 3 | wire_type)


def f_varint(field, v):
    return tag(field, 0) + varint(v)


def f_bytes(field, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    return tag(field, 2) + varint(len(data)) + data


def packed(field, values):
    return f_bytes(field, b"".join(varint(v) for v in values))


def et_node(node_id, name, data_deps=(), ctrl_deps=(), duration=5, extra=b""):
    msg = f_varint(1, node_id) + f_bytes(2, name) + f_varint(3, 4)  # COMP_NODE
    if ctrl_deps:
        msg += packed(4, ctrl_deps)
    if data_deps:
        msg += packed(5, data_deps)
    msg += f_varint(7, duration) + extra
    return msg


def metadata():
    attr = f_bytes(1, "schema") + f_bytes(29, "1.1.1-chakra.0.0.4")
    return f_bytes(1, "1.0.0") + f_bytes(2, attr)


def record(msg):
    return varint(len(msg)) + msg


def et_file(*nodes, with_metadata=True):
    out = record(metadata()) if with_metadata else b""
    return out + b"".join(record(n) for n in nodes)


def et_baseline_nodes():
    return [et_node(1, "a"), et_node(2, "b", [1]), et_node(3, "c", [2]), et_node(4, "d", [1])]


def et_cases():
    d = "et/"
    base = et_file(*et_baseline_nodes())
    # Truncated: the last record is cut short (its length prefix promises more). Deep nesting:
    # 10,000 nested groups in node 2.
    common_cases(d, ".et", base, 4, base[:-3], base + base,
                 et_file(et_node(1, "a"), f_varint(1, 2) + tag(11, 3) * 10000))
    write(d + "truncated.et.gz", gzip_bytes(base * 50)[:-30])
    # A gzip'd trace in chakraflow's own layout (two 256 KB blocks and a part: read by EtReader
    # as any gzip file, by the feeders' index block by block); the same with two blocks' sizes in
    # the index moved by a byte each (the index is not what the file holds: only the feeders'
    # index reads it), and cut in its second block.
    chain = et_file(*[et_node(i, "n" * 150, [i - 1] if i > 1 else []) for i in range(1, 4001)])
    indexed = indexed_gzip_bytes(chain)
    write(d + "indexed.et.gz", indexed)
    member = struct.unpack("<I", indexed[-14:-10])[0]
    sizes_at = len(indexed) - member + 12 + 4 + 1 + 4 + 8 + 4
    moved = bytearray(indexed)
    moved[sizes_at] += 1
    moved[sizes_at + 4] -= 1
    write(d + "indexed_sizes_moved.et.gz", bytes(moved))
    write(d + "indexed_truncated.et.gz", indexed[:len(indexed) // 2])
    # The file ends inside a length varint (continuation bit set on its last byte).
    write(d + "truncated_varint.et", base + b"\x80\x80")
    # A length prefix that points past the end of the file.
    write(d + "length_past_eof.et", base + varint(1000) + et_node(5, "e"))
    # Declared lengths of 2 GiB - 1 (the largest allowed) and 2^62, with nothing after them.
    write(d + "huge_length_2gib.et", base + varint(2**31 - 1))
    write(d + "huge_length_2pow62.et", base + varint(2**62))
    # 11 continuation bytes: no varint is that long.
    write(d + "overlong_varint.et", base + b"\xff" * 11 + b"\x01")
    # Records that are not Node messages: wire type 7 does not exist; a field that runs past the
    # record.
    write(d + "bad_wire_type.et", et_file(et_node(1, "a"), f_varint(1, 2) + tag(15, 7) + b"\x00"))
    write(d + "field_past_record.et", et_file(et_node(1, "a"), f_varint(1, 2) + tag(2, 2) +
                                              varint(100) + b"xyz"))
    # A nested message (inputs) that does not parse, and a name that is not UTF-8 (proto3 strings
    # must be).
    write(d + "bad_nested_message.et",
          et_file(et_node(1, "a"), et_node(2, "b", [1], extra=f_bytes(8, b"\x0a\x05ab"))))
    write(d + "invalid_utf8_name.et", et_file(et_node(1, "a"), et_node(2, b"b\xff\xfe", [1])))
    # A number where a string is expected and a string where a number is expected: the node id
    # sent as a length-delimited field.
    write(d + "id_as_string.et", et_file(et_node(1, "a"), f_bytes(1, "2") + f_bytes(2, "b")))
    write(d + "name_as_number.et", et_file(et_node(1, "a"), f_varint(1, 2) + f_varint(2, 7)))
    write(d + "duplicate_ids.et", et_file(et_node(1, "a"), et_node(2, "b", [1]),
                                          et_node(2, "c", [1])))
    # Dependencies: on itself (data and ctrl), a cycle, an id that no node has.
    write(d + "data_dep_self.et", et_file(et_node(1, "a"), et_node(2, "b", [1, 2])))
    write(d + "ctrl_dep_self.et", et_file(et_node(1, "a"), et_node(2, "b", [1], ctrl_deps=[2])))
    write(d + "cycle.et", et_file(et_node(1, "a"), et_node(2, "b", [1, 3]), et_node(3, "c", [2]),
                                  et_node(4, "d", [1])))
    write(d + "missing_dep.et", et_file(et_node(1, "a"), et_node(2, "b", [99])))
    write(d + "dep_2pow64_minus1.et", et_file(et_node(1, "a"), et_node(2, "b", [2**64 - 1])))
    # No GlobalMetadata: the first record is a Node.
    write(d + "missing_metadata.et", et_file(*et_baseline_nodes(), with_metadata=False))
    # A node type the schema does not have.
    write(d + "node_type_999.et", et_file(et_node(1, "a"), et_node(2, "b", [1]) + f_varint(3, 999)))
    # Empty records without end (what /dev/zero gives): one is node 0, a second is an error.
    write(d + "empty_records.et", record(metadata()) + b"\x00" * 64)


# --------------------------------------------------------------------------------------------
# `chakraflow run` configuration.

YAML_BASE = """\
inputs:
  host: traces/rank{rank}/host_et.json
  device: traces/rank{rank}/kineto.json
  ranks: 0-3
stages: [link, convert]
link:
  mode: auto
  gap_threshold_us: 1000
outputs:
  dir: out
run:
  threads: 2
"""


def yaml_cases():
    d = "yaml/"
    base = YAML_BASE
    common_cases(d, ".yaml", base, 5, base[: base.index("stages: [link,") + len("stages: [link,")],
                 "---\n" + base + "---\n" + base, nest("inputs: " + NEST + "\n"))
    write(d + "gap_threshold_nan.yaml", replace_once(base, "gap_threshold_us: 1000",
                                                     "gap_threshold_us: nan"))
    write(d + "gap_threshold_inf.yaml", replace_once(base, "gap_threshold_us: 1000",
                                                     "gap_threshold_us: 1e400"))
    write(d + "gap_threshold_huge.yaml", replace_once(base, "gap_threshold_us: 1000",
                                                      "gap_threshold_us: 1e300"))
    write(d + "threads_2pow64.yaml", replace_once(base, "threads: 2",
                                                  "threads: 18446744073709551616"))
    write(d + "memory_below_int64.yaml",
          replace_once(base, "threads: 2", "memory_budget_mb: -9223372036854775809"))
    write(d + "invalid_utf8_prefix.yaml",
          replace_once(base, "dir: out", "dir: out\n  prefix: tr\xffce").encode("latin-1"))
    write(d + "unknown_key.yaml", replace_once(base, "run:\n", "runn:\n"))
    write(d + "unknown_nested_key.yaml", replace_once(base, "  ranks: 0-3", "  rank: 0-3"))
    write(d + "duplicate_key.yaml", base + "outputs:\n  dir: elsewhere\n")
    write(d + "non_scalar_key.yaml", base + "? [a, b]\n: 1\n")
    write(d + "wrong_type_threads.yaml", replace_once(base, "threads: 2", "threads: many"))
    write(d + "wrong_type_stages.yaml", replace_once(base, "stages: [link, convert]",
                                                     "stages: {link: yes}"))
    write(d + "bad_rank_range.yaml", replace_once(base, "ranks: 0-3", "ranks: 7-3"))
    # A rank named twice: an error, not silently de-duplicated.
    write(d + "ranks_duplicate.yaml", replace_once(base, "ranks: 0-3", 'ranks: "0-1,1,0"'))
    write(d + "ranks_duplicate_list.yaml", replace_once(base, "ranks: 0-3", "ranks: [0, 1, 0]"))
    write(d + "rank_range_too_large.yaml", replace_once(base, "ranks: 0-3", "ranks: 0-99999999"))
    # The largest rank an int holds.
    write(d + "rank_int_max.yaml", replace_once(base, "ranks: 0-3", "ranks: 2147483647"))
    write(d + "rank_negative.yaml", replace_once(base, "ranks: 0-3", "ranks: [0, -1]"))
    write(d + "missing_rank_placeholder.yaml",
          replace_once(base, "device: traces/rank{rank}/kineto.json", "device: traces/kineto.json"))
    write(d + "tabs.yaml", replace_once(base, "  host:", "\thost:"))
    write(d + "missing_inputs.yaml", "stages: [link]\n")
    write(d + "not_a_mapping.yaml", "- inputs\n- stages\n")
    write(d + "recursive_alias.yaml", replace_once(base, "ranks: 0-3", "ranks: &r [0, *r]"))


def main():
    host_cases()
    et_plus_cases()
    device_cases()
    et_cases()
    yaml_cases()


if __name__ == "__main__":
    main()
