#!/usr/bin/env python3
"""Summarizes a bench/hr.sh run: DIR/results.md and DIR/results.json.

Per scale factor: mean and p99 latency of all queries (and of Q1 and Q2) under TR (one
expert order on every replica), HR (HRCA's orders) and auto (the orders the `auto` option
chose from recorded queries), the TR/HR ratios (the bar: HR's mean at least 10x lower than
TR's at the largest scale factor), the rows returned (equal in every configuration: the
same answers), the re-layout and recovery times; then write throughput, uniform against
heterogeneous, per repetition and as a ratio of means.

    python3 bench/hr_summary.py DIR
"""
import glob
import json
import os
import re
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def kind(report, name):
    for k in (report or {}).get("kinds", []):
        if k["kind"] == name:
            return k
    return None


def main(out):
    sfs = sorted({float(m.group(1)) for p in glob.glob(os.path.join(out, "sf*-tr.json"))
                  if (m := re.search(r"sf([0-9.]+)-tr\.json$", p))})
    rows = []
    for sf in sfs:
        tag = f"{sf:g}"
        r = {"sf": sf}
        for conf in ("tr", "hr", "auto"):
            rep = load(os.path.join(out, f"sf{tag}-{conf}.json"))
            for q in ("all", "q1", "q2"):
                k = kind(rep, q)
                if k:
                    r[f"{conf}_{q}_mean_us"] = k["mean_us"]
                    r[f"{conf}_{q}_p99_us"] = k["p99_us"]
                    r[f"{conf}_{q}_rows"] = k["rows"]
        for extra in ("relayout", "recovery", "autowait", "load"):
            v = load(os.path.join(out, f"sf{tag}-{extra}.json"))
            if v:
                r.update({f"{extra}_{k}" if extra == "load" else k: x for k, x in v.items()})
        if r.get("hr_all_mean_us"):
            r["tr_over_hr_mean"] = r["tr_all_mean_us"] / r["hr_all_mean_us"]
            r["tr_over_hr_p99"] = r["tr_all_p99_us"] / max(r["hr_all_p99_us"], 1)
        if r.get("auto_all_mean_us"):
            r["tr_over_auto_mean"] = r["tr_all_mean_us"] / r["auto_all_mean_us"]
        rows.append(r)
    writes = {}
    for p in sorted(glob.glob(os.path.join(out, "write-*.json"))):
        m = re.search(r"write-(\w+)-(\d+)\.json$", p)
        v = load(p)
        if m and v:
            writes.setdefault(m.group(1), []).append(v["rows_per_sec"])
    md = ["# Heterogeneous replicas on TPC-H orders (bench/hr.sh)", ""]
    md.append("| SF | TR mean / p99 (ms) | HR mean / p99 (ms) | auto mean / p99 (ms) | TR/HR mean | TR/HR p99 | TR/auto mean | rows TR/HR/auto | re-layout s | recovery s | load rows/s |")
    md.append("|---|---|---|---|---|---|---|---|---|---|---|")
    ms = lambda us: f"{us / 1000:.2f}" if us is not None else "-"
    for r in rows:
        md.append(
            f"| {r['sf']:g} | {ms(r.get('tr_all_mean_us'))} / {ms(r.get('tr_all_p99_us'))} "
            f"| {ms(r.get('hr_all_mean_us'))} / {ms(r.get('hr_all_p99_us'))} "
            f"| {ms(r.get('auto_all_mean_us'))} / {ms(r.get('auto_all_p99_us'))} "
            f"| {r.get('tr_over_hr_mean', 0):.1f}x | {r.get('tr_over_hr_p99', 0):.1f}x "
            f"| {r.get('tr_over_auto_mean', 0):.1f}x "
            f"| {r.get('tr_all_rows', '-')}/{r.get('hr_all_rows', '-')}/{r.get('auto_all_rows', '-')} "
            f"| {r.get('relayout_s', '-')} | {r.get('recovery_s', '-')} | {r.get('load_rows_per_sec', 0):.0f} |")
    md.append("")
    md.append("Per query (mean ms): " + "; ".join(
        f"SF {r['sf']:g}: Q1 {ms(r.get('tr_q1_mean_us'))} -> {ms(r.get('hr_q1_mean_us'))}, "
        f"Q2 {ms(r.get('tr_q2_mean_us'))} -> {ms(r.get('hr_q2_mean_us'))}" for r in rows))
    summary = {"scale_factors": rows, "writes": writes}
    if writes.get("uniform") and writes.get("heterogeneous"):
        u = sum(writes["uniform"]) / len(writes["uniform"])
        h = sum(writes["heterogeneous"]) / len(writes["heterogeneous"])
        summary["write_ratio"] = h / u
        md += ["", f"Write throughput: uniform {', '.join(f'{x:.0f}' for x in writes['uniform'])} rows/s; "
               f"heterogeneous {', '.join(f'{x:.0f}' for x in writes['heterogeneous'])} rows/s; "
               f"heterogeneous / uniform = {h / u:.3f}"]
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print("\n".join(md))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
