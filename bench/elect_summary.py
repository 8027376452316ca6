#!/usr/bin/env python3
"""Summarizes one bench/elect.sh experiment directory into results.md and results.json.

    bench/elect_summary.py DIR/<experiment>

Per configuration (uniform, erasure-tiered, alpha-A, k-K): hot, cold and total bytes, the
hot-tier saving against `uniform` of the same run, YCSB throughput, and read latency at
ONE normally and with two nodes killed (degraded reads). Phases run several times side by
side (`ycsb`: NAME-1.json, NAME-2.json, …) are reported by their median throughput, with
the ratio to `uniform` of each repetition (same turn, same machine state).
"""

import json
import sys
from pathlib import Path

PHASES = ["load", "a", "b", "c", "d", "e", "f", "c-degraded", "c-degraded-warm", "c-recovered"]


def reps(d, name):
    """The repetitions of a phase, in order (one file when it ran once)."""
    if (d / f"{name}.json").exists():
        return [d / f"{name}.json"]
    found = [(int(f.stem.rsplit("-", 1)[1]), f) for f in d.glob(f"{name}-*.json")
             if f.stem.rsplit("-", 1)[1].isdigit()]
    return [f for _, f in sorted(found)]


def phase(d, name):
    runs = [one(f) for f in reps(d, name)]
    if not runs:
        return None
    by_throughput = sorted(runs, key=lambda r: r["throughput_ops"])
    median = dict(by_throughput[len(runs) // 2])
    median["runs"] = [r["throughput_ops"] for r in runs]
    return median


def one(f):
    j = json.loads(f.read_text())
    ops = j["operations"]
    main = max(ops, key=lambda op: ops[op]["count"]) if ops else None
    return {
        "throughput_ops": j["throughput_ops"],
        "errors": j["errors"],
        "operation": main,
        "mean_us": ops[main]["mean_us"] if main else None,
        "p50_us": ops[main]["p50_us"] if main else None,
        "p99_us": ops[main]["p99_us"] if main else None,
    }


def main():
    root = Path(sys.argv[1])
    results = {}
    for d in sorted(p for p in root.iterdir() if p.is_dir() and (p / "storage.json").exists()):
        r = json.loads((d / "storage.json").read_text())
        r["total_bytes"] = r["hot_bytes"] + r["cold_bytes"]
        r["phases"] = {p: x for p in PHASES if (x := phase(d, p))}
        if (d / "recovery.json").exists():
            r["recovery"] = json.loads((d / "recovery.json").read_text())
        results[d.name] = r
    base = results.get("uniform")
    for name, r in results.items():
        if base and base["hot_bytes"]:
            r["hot_saving"] = 1 - r["hot_bytes"] / base["hot_bytes"]
            r["total_saving"] = 1 - r["total_bytes"] / base["hot_bytes"]
        c, deg = r["phases"].get("c"), r["phases"].get("c-degraded")
        if c and deg and c["mean_us"]:
            r["degraded_read_ratio"] = deg["mean_us"] / c["mean_us"]
        warm = r["phases"].get("c-degraded-warm")
        if c and warm and c["mean_us"]:
            r["degraded_warm_ratio"] = warm["mean_us"] / c["mean_us"]
        if base and c and base["phases"].get("c"):
            r["read_throughput_ratio"] = c["throughput_ops"] / base["phases"]["c"]["throughput_ops"]
        if base and name != "uniform":
            r["ratios"] = {}
            for p in "cabdef":
                mine, theirs = r["phases"].get(p), base["phases"].get(p)
                if mine and theirs and len(mine["runs"]) == len(theirs["runs"]) > 1:
                    each = [x / y for x, y in zip(mine["runs"], theirs["runs"])]
                    r["ratios"][p] = {"each": each, "median": sorted(each)[len(each) // 2]}
    (root / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    mib = lambda b: f"{b / 2**20:.1f}"
    pct = lambda x: "-" if x is None else f"{100 * x:.1f}%"
    lines = [f"# bench/elect.sh {root.name}", "",
             "| config | hot MiB | cold MiB | total MiB | hot saving | total saving | C ops/s | C mean ms | C p99 ms | degraded C mean ms | degraded / normal | again: mean ms | again / normal |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        c, deg = r["phases"].get("c"), r["phases"].get("c-degraded")
        warm = r["phases"].get("c-degraded-warm")
        ms = lambda x, k: "-" if not x or x[k] is None else f"{x[k] / 1000:.2f}"
        lines.append("| " + " | ".join([
            name, mib(r["hot_bytes"]), mib(r["cold_bytes"]), mib(r["total_bytes"]),
            pct(r.get("hot_saving")), pct(r.get("total_saving")),
            f"{c['throughput_ops']:.0f}" if c else "-", ms(c, "mean_us"), ms(c, "p99_us"),
            ms(deg, "mean_us"),
            f"{r['degraded_read_ratio']:.2f}x" if "degraded_read_ratio" in r else "-",
            ms(warm, "mean_us"),
            f"{r['degraded_warm_ratio']:.2f}x" if "degraded_warm_ratio" in r else "-",
        ]) + " |")
    ycsb = [p for p in "abdef" if any(p in r["phases"] for r in results.values())]
    if ycsb:
        lines += ["", "| config | " + " | ".join(f"{p.upper()} ops/s" for p in ["c"] + ycsb) + " |",
                  "|---|" + "---|" * (len(ycsb) + 1)]
        for name, r in results.items():
            cells = [f"{r['phases'][p]['throughput_ops']:.0f}" if p in r["phases"] else "-" for p in ["c"] + ycsb]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    paired = {name: r for name, r in results.items() if r.get("ratios")}
    if paired:
        lines += ["", "Side by side, ratio to uniform per repetition (median first):", "",
                  "| config | " + " | ".join(p.upper() for p in "cabdef") + " |",
                  "|---|" + "---|" * 6]
        for name, r in paired.items():
            cell = lambda x: "-" if not x else f"{x['median']:.2f}× (" + ", ".join(
                f"{e:.2f}" for e in x["each"]) + ")"
            lines.append(f"| {name} | " + " | ".join(cell(r["ratios"].get(p)) for p in "cabdef") + " |")
    recovered = {name: r for name, r in results.items() if "recovery" in r}
    if recovered:
        lines += ["", "| config | shards rebuilt | rebuilt after s | repair s | total s | C after ops/s |",
                  "|---|---|---|---|---|---|"]
        for name, r in recovered.items():
            x, after = r["recovery"], r["phases"].get("c-recovered")
            c_after = f"{after['throughput_ops']:.0f}" if after else "-"
            lines.append(f"| {name} | {x['shards_rebuilt']} | {x['rebuild_s']:.1f} | "
                         f"{x['repair_s']:.1f} | {x['total_s']:.1f} | {c_after} |")
    (root / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
