#!/usr/bin/env python3
"""Summarizes a bench/bootstrap.sh run: DIR/results.md and DIR/results.json.

Per system (DIR/mosaic, DIR/cassandra): bootstrap wall time (node start to CQL served),
streaming time and bytes from the system's own report, the new node's data on disk, MiB/s
against the disk's sequential write MiB/s (DIR/disk-dd.txt), and YCSB B latencies before
and during the join. The YCSB B load ran as consecutive chunks (one mosaic-bench phase
each); "before" pools the chunks that ended before the join started (but the first, a
warm-up), "during" the chunks
that overlap the join. Pooling merges the chunks' latency CDFs (every percentile and the
tail points mosaic-bench writes), weighted by their operation counts: a percentile of the
pooled distribution at the CDFs' resolution, not a re-measurement.
"""

import datetime
import json
import re
import sys
from pathlib import Path

MIB = 1 << 20
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def disk_mib_per_s(out):
    line = (out / "disk-dd.txt").read_text().strip()
    m = re.match(r"(\d+) bytes .* copied, ([\d.]+) s", line)
    if not m:
        return None, line
    return int(m.group(1)) / float(m.group(2)) / MIB, line


def chunks(d):
    rows = []
    tsv = d / "chunks.tsv"
    if not tsv.exists():
        return rows
    for line in tsv.read_text().splitlines():
        i, s, e = line.split("\t")
        f = d / f"chunk-{i}.json"
        if not f.exists():
            continue
        rows.append({"i": int(i), "start": float(s), "end": float(e), "report": json.loads(f.read_text())})
    return rows


def pooled(reports, op, q):
    """The q-quantile (µs) of operation `op` over reports, from their CDFs."""
    parts = []
    for r in reports:
        o = r["operations"].get(op)
        if o and o["count"]:
            parts.append((o["count"], o["latency_cdf_us"]))
    if not parts:
        return None
    total = sum(n for n, _ in parts)
    candidates = sorted({v for _, cdf in parts for _, v in cdf})

    def level(x):
        s = 0.0
        for n, cdf in parts:
            f = 0.0
            for qq, v in cdf:
                if v <= x:
                    f = max(f, qq)
            # The CDF's last point (q 1.0) is the maximum: at or past it, all of the chunk.
            s += n * f
        return s / total

    for x in candidates:
        if level(x) >= q:
            return x
    return candidates[-1]


def latency_block(reports):
    block = {"chunks": len(reports)}
    if not reports:
        return block
    ops = sum(r["attempted"] for r in reports)
    secs = sum(r["elapsed_s"] for r in reports)
    block["operations"] = ops
    block["achieved_ops_per_s"] = round(sum(r["throughput_ops"] * r["elapsed_s"] for r in reports) / secs, 1)
    block["errors"] = sum(r["errors"] for r in reports)
    for op in ("read", "update"):
        block[op] = {
            "count": sum(r["operations"].get(op, {}).get("count", 0) for r in reports),
            "p50_ms": ms(pooled(reports, op, 0.50)),
            "p99_ms": ms(pooled(reports, op, 0.99)),
            "worst_chunk_p99_ms": ms(max((r["operations"].get(op, {}).get("p99_us", 0) for r in reports), default=None)),
        }
    return block


def ms(us):
    return None if us is None else round(us / 1000.0, 2)


def log_time(line):
    m = re.search(r"(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[,.]\d+)", line)
    if not m:
        return None
    t = m.group(1).replace(",", ".").replace("T", " ")[:26]
    return datetime.datetime.strptime(t, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc).timestamp()


def size(text):
    m = re.match(r"([\d.]+)\s*([KMGT]?i?B)", text)
    return float(m.group(1)) * UNITS[m.group(2)] if m else 0


def cassandra_stream(d):
    """Bytes the joining node was told it would receive, and the streaming time, from its log."""
    f = d / "stream-log.txt"
    if not f.exists():
        return {}
    received, start, end = 0, None, None
    for line in f.read_text().splitlines():
        m = re.search(r"Receiving \d+ files\(([^)]+)\)", line)
        if m:
            received += size(m.group(1))
        if "Executing streaming plan for Bootstrap" in line and start is None:
            start = log_time(line)
        if "All sessions completed" in line:
            end = log_time(line)
    out = {"stream_bytes": int(received)}
    if start and end:
        out.update(stream_s=round(end - start, 2), stream_start=start, stream_end=end)
    return out


def mosaic_stream(d):
    f = d / "netstats.json"
    if not f.exists():
        return {}
    n = json.loads(f.read_text())
    rec = [s for s in n["sessions"] if s["direction"] == "receiving"]
    out = {
        "stream_bytes": sum(s["bytes"] for s in rec),
        "stream_entries": sum(s["entries"] for s in rec),
        "netstats_elapsed_s": round(n["elapsed_ms"] / 1000.0, 2),
        "stream_sources": len(rec),
        "finished": n["finished"],
        "error": n["error"],
    }
    # The streaming phase from the joining node's log: "bootstrap streaming" (every node saw
    # the pending ranges; the pulls start) to its Normal announcement (every range stored).
    log = d / "stream-log.txt"
    start = end = None
    if log.exists():
        for line in log.read_text().splitlines():
            if "bootstrap streaming" in line and start is None:
                start = log_time(line)
            if "status=Normal" in line:
                end = log_time(line)
    if start and end:
        out.update(stream_s=round(end - start, 2), stream_start=start, stream_end=end)
    return out


def system(out, name, disk):
    d = out / name
    if not (d / "join.json").exists():
        return None
    join = json.loads((d / "join.json").read_text())
    res = {"bootstrap_s": round(join["bootstrap_s"], 2)}
    res.update(mosaic_stream(d) if name == "mosaic" else cassandra_stream(d))
    res["new_node_disk_bytes"] = int((d / "du-new-node.txt").read_text().split()[0])
    if (d / "cpu-join.json").exists():
        res.update(json.loads((d / "cpu-join.json").read_text()))
    if (d / "load-times.json").exists():
        res["load"] = json.loads((d / "load-times.json").read_text())
        load = json.loads((d / "load.json").read_text())
        res["load"]["ops_per_s"] = round(load["throughput_ops"], 1)
        res["load"]["records"] = load["records"]
    b = res["bootstrap_s"]
    res["disk_mib_per_s_over_bootstrap"] = round(res["new_node_disk_bytes"] / MIB / b, 1)
    if res.get("stream_bytes") and res.get("stream_s"):
        res["stream_mib_per_s"] = round(res["stream_bytes"] / MIB / res["stream_s"], 1)
        res["stream_bytes_per_bootstrap_s_mib"] = round(res["stream_bytes"] / MIB / b, 1)
    if disk:
        for k in ("stream_mib_per_s", "disk_mib_per_s_over_bootstrap"):
            if k in res:
                res[k.replace("mib_per_s", "pct_of_disk")] = round(100 * res[k] / disk, 2)
    cs = chunks(d)
    # The first chunk is left out: its client connects and the servers' caches (and a JVM's
    # JIT) are cold.
    before = [c["report"] for c in cs if c["end"] <= join["join_start"] and c["i"] > 1]
    during = [c["report"] for c in cs if c["start"] < join["join_end"] and c["end"] > join["join_start"]]
    res["ycsb_b_before"] = latency_block(before)
    res["ycsb_b_during"] = latency_block(during)
    if res.get("stream_start"):
        # The chunks that overlap the streaming phase alone (not the node's start-up).
        streaming = [c["report"] for c in cs if c["start"] < res["stream_end"] and c["end"] > res["stream_start"]]
        res["ycsb_b_streaming"] = latency_block(streaming)
        res["stream_starts_after_s"] = round(res["stream_start"] - join["join_start"], 2)
    res["chunks"] = [
        {
            "i": c["i"],
            "t_s": round(c["start"] - join["join_start"], 1),
            "len_s": round(c["end"] - c["start"], 1),
            "ops_per_s": round(c["report"]["throughput_ops"], 1),
            "errors": c["report"]["errors"],
            "read_p99_ms": ms(c["report"]["operations"].get("read", {}).get("p99_us")),
            "update_p99_ms": ms(c["report"]["operations"].get("update", {}).get("p99_us")),
        }
        for c in cs
    ]
    return res


def fmt(v):
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:,.2f}"
    return f"{v:,}"


def main():
    out = Path(sys.argv[1])
    disk, dd_line = disk_mib_per_s(out)
    results = {"disk_seq_write_mib_per_s": round(disk, 1) if disk else None, "dd": dd_line,
               "env": (out / "env.txt").read_text()}
    for name in ("mosaic", "cassandra"):
        r = system(out, name, disk)
        if r:
            results[name] = r
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")

    lines = ["# Bootstrap benchmark (bench/bootstrap.sh)", "", "```", results["env"].rstrip(), "```", "",
             f"Disk sequential write (dd, 2 GiB, O_DIRECT): {fmt(results['disk_seq_write_mib_per_s'])} MiB/s", ""]
    names = [n for n in ("mosaic", "cassandra") if n in results]
    lines += ["| | " + " | ".join(names) + (" | Mosaic/Cassandra |" if len(names) == 2 else " |"),
              "|---|" + "---:|" * (len(names) + (1 if len(names) == 2 else 0))]

    def row(label, get):
        vals = [get(results[n]) for n in names]
        ratio = ""
        if len(names) == 2:
            a, b = vals
            ratio = f" {a / b:.2f} |" if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b else " – |"
        lines.append(f"| {label} | " + " | ".join(fmt(v) for v in vals) + " |" + ratio)

    row("load ops/s", lambda r: r.get("load", {}).get("ops_per_s"))
    row("load s", lambda r: r.get("load", {}).get("load_s") and round(r["load"]["load_s"], 1))
    row("bootstrap wall s (start to CQL)", lambda r: r["bootstrap_s"])
    row("streaming s (own report)", lambda r: r.get("stream_s"))
    row("bytes streamed (own report), MiB", lambda r: r.get("stream_bytes") and round(r["stream_bytes"] / MIB, 1))
    row("new node's table data on disk, MiB", lambda r: round(r["new_node_disk_bytes"] / MIB, 1))
    row("streaming MiB/s (streamed / streaming s)", lambda r: r.get("stream_mib_per_s"))
    row("… % of the disk's sequential write", lambda r: r.get("stream_pct_of_disk"))
    row("on-disk MiB / bootstrap wall s", lambda r: r.get("disk_mib_per_s_over_bootstrap"))
    row("streaming starts, s after the node's start", lambda r: r.get("stream_starts_after_s"))
    row("CPU s of the old nodes during the join (streaming out + YCSB B)", lambda r: r.get("sources_cpu_s"))
    row("CPU s of the joining node (start to CQL served)", lambda r: r.get("joiner_cpu_s"))
    row("… per GiB streamed", lambda r: r.get("joiner_cpu_s") and r.get("stream_bytes")
        and round(r["joiner_cpu_s"] / (r["stream_bytes"] / (1 << 30)), 2))
    for phase in ("before", "during", "streaming"):
        for op in ("read", "update"):
            for p in ("p50_ms", "p99_ms"):
                row(f"YCSB B {op} {p.split('_')[0]} ms, {phase}", lambda r, phase=phase, op=op, p=p: r.get(f"ycsb_b_{phase}", {}).get(op, {}).get(p))
        row(f"YCSB B ops/s achieved, {phase}", lambda r, phase=phase: r.get(f"ycsb_b_{phase}", {}).get("achieved_ops_per_s"))
        row(f"YCSB B errors, {phase}", lambda r, phase=phase: r.get(f"ycsb_b_{phase}", {}).get("errors"))
        row(f"YCSB B chunks, {phase}", lambda r, phase=phase: r.get(f"ycsb_b_{phase}", {}).get("chunks"))
    for n in names:
        lines += ["", f"## {n}: chunks (t = start relative to the join's start)", "",
                  "| chunk | t s | length s | ops/s | errors | read p99 ms | update p99 ms |", "|---:|---:|---:|---:|---:|---:|---:|"]
        for c in results[n]["chunks"]:
            lines.append(f"| {c['i']} | {c['t_s']} | {c['len_s']} | {fmt(c['ops_per_s'])} | {c['errors']} | {fmt(c['read_p99_ms'])} | {fmt(c['update_p99_ms'])} |")
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
