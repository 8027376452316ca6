#!/usr/bin/env python3
"""Tables and plots of a bench/depart.sh experiment.

    bench/depart_summary.py DIR     DIR = /tmp/mosaic-depart/<experiment>

DIR/<config>/<layout>/ holds `mosaic-bench --json` reports per phase (load, read, scan,
update; or a..f for YCSB), `mosaic stats --json` of every node (stats-load.json,
stats-end.json) and, for Exp#6, recovery.json. Writes DIR/results.md (one table per
configuration: throughput, p99 and ratio to `uniform` per phase; disk bytes written per
user byte from /proc; the engines' own counters: bytes written by flush, compaction,
split and merge-sort, tables probed and bytes read per get, memtable memory; the load's
throughput without and with the compaction drain that followed it),
DIR/results.json and DIR/throughput-<config>.svg, and prints the Markdown.
"""
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from summarize import throughput_svg  # noqa: E402

LAYOUTS = ["uniform", "multi-lsm", "decoupled"]
COLORS = {"uniform": "#7f7f7f", "multi-lsm": "#ff7f0e", "decoupled": "#1f77b4"}
PHASES = ["load", "read", "scan", "update", "a", "b", "c", "d", "e", "f"]
COUNTERS = ["user_bytes_written", "wal_bytes_written", "flush_bytes_written",
            "compaction_bytes_written", "split_bytes_written", "merge_sort_bytes_written",
            "gets", "get_tables_probed", "get_bytes_read", "scan_bytes_read", "splits",
            "merge_sorts", "flushes", "compactions", "write_stalls", "write_stall_micros",
            "write_slowdowns", "write_slowdown_micros", "get_data_block_reads",
            "get_index_block_reads", "get_filter_block_reads", "block_cache_hits",
            "block_cache_misses"]


def engine_counters(stats):
    """Sums the engines' counters of table ycsb.usertable over every node of
    `mosaic stats --json` ({endpoint: {"tables": [{"table", "stats"}]}}): each table's
    `stats` are the sums over its layout's structures, so nothing counts twice."""
    total = {k: 0 for k in COUNTERS}
    memtable = 0
    for node in stats.values():
        for table in node.get("tables", []) if isinstance(node, dict) else []:
            if table.get("table") != "ycsb.usertable" or "stats" not in table:
                continue
            s = table["stats"]
            for k in COUNTERS:
                total[k] += s.get(k, 0)
            memtable += s.get("memtable_bytes", 0)
    total["memtable_bytes"] = memtable
    return total


def phase_names(d):
    """The phases run in `d`, in PHASES' order, a repeated phase (update-1.json, …) after
    its first run."""
    names = []
    for phase in PHASES:
        if (d / f"{phase}.json").exists():
            names.append(phase)
        again = [f.stem for f in d.glob(f"{phase}-*.json") if re.fullmatch(rf"{phase}-\d+", f.stem)]
        names += sorted(again, key=lambda n: int(n.rsplit("-", 1)[1]))
    return names


def layout_result(d):
    r = {"phases": {}}
    for phase in phase_names(d):
        f = d / f"{phase}.json"
        j = json.loads(f.read_text())
        ops = j["operations"]
        # The phase's own operation: the busiest kind.
        main = max(ops, key=lambda op: ops[op]["count"]) if ops else None
        io = j.get("server_io") or {}
        r["phases"][phase] = {
            "throughput_ops": j["throughput_ops"],
            "errors": j["errors"],
            "operation": main,
            "p99_us": ops[main]["p99_us"] if main else None,
            "disk_write_per_user_byte": io.get("write_amplification"),
            "disk_read_per_user_byte": io.get("read_amplification"),
        }
    f = d / "drain.json"
    load = r["phases"].get("load")
    if f.exists() and load:
        j = json.loads((d / "load.json").read_text())
        drain_s = json.loads(f.read_text()).get("waited_s", 0.0)
        ops = j["throughput_ops"] * j["elapsed_s"]
        r["drain"] = {"load_s": j["elapsed_s"], "drain_s": drain_s,
                      "load_drained_ops": ops / max(j["elapsed_s"] + drain_s, 1e-9)}
    for name in ["stats-load", "stats-end"]:
        f = d / f"{name}.json"
        if f.exists():
            r[name] = engine_counters(json.loads(f.read_text()))
    # What the engines did during each phase after the load: the counters' change from the
    # snapshot before it (bench/depart.sh saves stats-<phase>.json after each).
    # The phases ran in the order their snapshots were written.
    before = r.get("stats-load")
    r["during"] = {}
    ran = sorted((p for p in r["phases"] if p != "load" and (d / f"stats-{p}.json").exists()),
                 key=lambda p: (d / f"stats-{p}.json").stat().st_mtime)
    for phase in ran if before is not None else []:
        after = engine_counters(json.loads((d / f"stats-{phase}.json").read_text()))
        r["during"][phase] = {k: after[k] - before[k] for k in COUNTERS}
        before = after
    # A write phase followed by a drain (bench/depart.sh drains after each update phase):
    # its throughput with the compaction debt it left paid, as for the load.
    for phase, x in r["phases"].items():
        f = d / f"drain-{phase}.json"
        j = d / f"{phase}.json"
        if phase != "load" and f.exists():
            run = json.loads(j.read_text())
            drain_s = json.loads(f.read_text()).get("waited_s", 0.0)
            ops = run["throughput_ops"] * run["elapsed_s"]
            x["drain_s"] = drain_s
            x["drained_ops"] = ops / max(run["elapsed_s"] + drain_s, 1e-9)
    f = d / "recovery.json"
    if f.exists():
        r["recovery"] = json.loads(f.read_text())
        # Node 3's share of the ring differs between clusters (random tokens): the rate is
        # what compares.
        m = re.search(r"(\d+) entries", (d / "repair.txt").read_text()) if (d / "repair.txt").exists() else None
        if m:
            r["recovery"]["entries"] = int(m.group(1))
            r["recovery"]["entries_per_s"] = int(m.group(1)) / max(r["recovery"]["repair_s"], 1e-9)
    return r


def ratio(v, base):
    return f"{v / base:.2f}×" if v and base else "-"


def table(config, results):
    layouts = [l for l in LAYOUTS if l in results] + [l for l in results if l not in LAYOUTS]
    phases = []
    for l in layouts:
        phases += [p for p in results[l]["phases"] if p not in phases]
    base = results.get("uniform", {}).get("phases", {})
    lines = [f"### {config}", ""]
    if phases:
        lines += ["| layout | " + " | ".join(f"{p} ops/s | {p} p99 ms" for p in phases) + " |",
                  "|---|" + "---:|---:|" * len(phases)]
        for l in layouts:
            cells = []
            for p in phases:
                x = results[l]["phases"].get(p)
                if x is None:
                    cells += ["-", "-"]
                    continue
                b = base.get(p, {}).get("throughput_ops")
                rel = f" ({ratio(x['throughput_ops'], b)})" if b and l != "uniform" else ""
                cells += [f"{x['throughput_ops']:,.0f}{rel}",
                          f"{x['p99_us'] / 1000:.2f}" if x["p99_us"] is not None else "-"]
            lines.append(f"| {l} | " + " | ".join(cells) + " |")
        lines.append("")
    drained = [l for l in layouts if "drain" in results[l]]
    if drained:
        lines += ["| layout | load ops/s | load s | compaction drain s | load + drain ops/s |",
                  "|---|---:|---:|---:|---:|"]
        base_drain = results.get("uniform", {}).get("drain", {})
        for l in drained:
            x = results[l]["drain"]
            b = base_drain.get("load_drained_ops")
            rel = f" ({ratio(x['load_drained_ops'], b)})" if b and l != "uniform" else ""
            lines.append(f"| {l} | {results[l]['phases']['load']['throughput_ops']:,.0f} | "
                         f"{x['load_s']:.1f} | {x['drain_s']:.1f} | {x['load_drained_ops']:,.0f}{rel} |")
        lines.append("")
    rows = []
    for l in layouts:
        r = results[l]
        c = r.get("stats-end") or r.get("stats-load")
        load = r["phases"].get("load", {})
        if not c:
            continue
        rewrite = c["compaction_bytes_written"] + c["split_bytes_written"] + c["merge_sort_bytes_written"]
        flushed = c["flush_bytes_written"] or 1
        mem = (r.get("stats-load") or c)["memtable_bytes"]
        rows.append("| " + " | ".join([
            l,
            f"{load.get('disk_write_per_user_byte') or 0:.2f}",
            f"{(flushed + rewrite) / flushed:.2f}",
            f"{c['compaction_bytes_written'] / 2**20:,.0f}",
            f"{c['split_bytes_written'] / 2**20:,.0f}",
            f"{c['merge_sort_bytes_written'] / 2**20:,.0f}",
            f"{c['get_tables_probed'] / c['gets']:.2f}" if c["gets"] else "-",
            f"{c['get_bytes_read'] / c['gets']:,.0f}" if c["gets"] else "-",
            f"{mem / 2**20:,.1f}",
            f"{r['recovery']['total_s']:.1f}" if "recovery" in r else "-",
            f"{r['recovery'].get('entries', 0):,} / {r['recovery'].get('entries_per_s', 0):,.0f}"
            if "recovery" in r else "-",
        ]) + " |")
    during = [(l, p, c) for l in layouts for p, c in results[l].get("during", {}).items()]
    if during:
        lines += ["| layout | phase | ops/s | write stalls (ms) | level-0 slowdowns (ms) | flushes (MiB) | compactions (MiB) | splits (MiB) | merge-sorts (MiB) |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        mib = lambda b: f"{b / 2**20:,.0f}"
        for l, p, c in during:
            x = results[l]["phases"][p]
            drained = (f" ({x['drained_ops']:,.0f} with its {x['drain_s']:.0f} s drain)"
                       if "drained_ops" in x else "")
            lines.append(f"| {l} | {p} | {x['throughput_ops']:,.0f}{drained} | "
                         f"{c['write_stalls']:,} ({c['write_stall_micros'] / 1000:,.0f}) | "
                         f"{c['write_slowdowns']:,} ({c['write_slowdown_micros'] / 1000:,.0f}) | "
                         f"{c['flushes']} ({mib(c['flush_bytes_written'])}) | "
                         f"{c['compactions']} ({mib(c['compaction_bytes_written'])}) | "
                         f"{c['splits']} ({mib(c['split_bytes_written'])}) | "
                         f"{c['merge_sorts']} ({mib(c['merge_sort_bytes_written'])}) |")
        lines.append("")
        # Read amplification per phase (the paper's Fig. 11): what each get cost the engines.
        reads = [(l, p, c) for l, p, c in during if c["gets"]]
        if reads:
            lines += ["| layout | phase | gets | tables probed / get | block reads / get (data, index, filter) | bytes read / get | block cache hits |",
                      "|---|---|---:|---:|---:|---:|---:|"]
            for l, p, c in reads:
                g = c["gets"]
                blocks = [c["get_data_block_reads"], c["get_index_block_reads"], c["get_filter_block_reads"]]
                lookups = c["block_cache_hits"] + c["block_cache_misses"]
                hits = f"{c['block_cache_hits'] / lookups:.0%}" if lookups else "-"
                lines.append(f"| {l} | {p} | {g:,} | {c['get_tables_probed'] / g:.2f} | "
                             f"{sum(blocks) / g:.2f} ({', '.join(f'{b / g:.2f}' for b in blocks)}) | "
                             f"{c['get_bytes_read'] / g:,.0f} | {hits} |")
            lines.append("")
    if rows:
        lines += ["| layout | disk write / user byte (load, /proc) | table bytes written / flushed | compaction MiB | split MiB | merge-sort MiB | tables probed / get | bytes read / get | memtable MiB after load | recovery s | entries repaired / per s |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"] + rows + [""]
    return "\n".join(lines)


def main(args):
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(args[0])
    everything = {}
    md = [f"## {root.name}", ""]
    def natural(p):  # S1 < S10 < S20 < S1000000
        digits = "".join(c for c in p.name if c.isdigit())
        return (p.name.rstrip("0123456789"), int(digits) if digits else 0, p.name)

    for config in sorted((p for p in root.iterdir() if p.is_dir() and p.name != "cluster"), key=natural):
        results = {d.name: layout_result(d) for d in sorted(config.iterdir()) if d.is_dir()}
        if not results:
            continue
        everything[config.name] = results
        md.append(table(config.name, results))
        bars = {p: {l: {"run": {"throughput_ops": results[l]["phases"][p]["throughput_ops"]}}
                    for l in results if p in results[l]["phases"]}
                for p in PHASES if any(p in results[l]["phases"] for l in results)}
        if bars:
            (root / f"throughput-{config.name}.svg").write_text(
                throughput_svg(bars, title=f"{root.name} {config.name}: ops/s per phase",
                               colors=COLORS, ylabel="ops/s"))
    # One layout across configurations (Exp#8's S values): one plot, a bar per configuration.
    layouts = {l for results in everything.values() for l in results}
    if len(everything) > 1 and len(layouts) == 1:
        (layout,) = layouts
        bars = {p: {c: {"run": {"throughput_ops": r[layout]["phases"][p]["throughput_ops"]}}
                    for c, r in everything.items() if p in r[layout]["phases"]}
                for p in PHASES if any(p in r[layout]["phases"] for r in everything.values())}
        palette = ["#9ecae1", "#4292c6", "#08519c", "#08306b", "#6baed6", "#2171b5"]
        colors = {c: palette[i % len(palette)] for i, c in enumerate(everything)}
        (root / "throughput-all.svg").write_text(
            throughput_svg(bars, title=f"{root.name} ({layout}): ops/s per phase",
                           colors=colors, ylabel="ops/s"))
    (root / "results.json").write_text(json.dumps(everything, indent=1))
    (root / "results.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
