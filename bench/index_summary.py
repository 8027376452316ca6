#!/usr/bin/env python3
"""Summarizes a bench/index.sh run: DIR/results.md and DIR/results.json.

    python3 bench/index_summary.py DIR

Reads DIR/{mosaic,cassandra}/load.json and DIR/{mosaic,cassandra}/<workload>-<rep>.json
(`mosaic-bench index` reports). Per workload: each system's median ops/s and rows/s over
the repetitions, Mosaic/Cassandra of the medians and of each repetition (the two systems
ran one after the other within a repetition), median p50/p99 latency, server CPU per
operation (summed over the nodes), errors summed over the repetitions.
"""
import json
import re
import statistics
import sys
from pathlib import Path

SYSTEMS = ("mosaic", "cassandra")


def load(path):
    with open(path) as f:
        return json.load(f)


def main_op(report):
    """The report's operation with the most successes (the workload's own)."""
    ops = report.get("operations", {})
    if not ops:
        return {}
    return max(ops.values(), key=lambda o: o.get("count", 0))


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(v, digits=0):
    if v is None:
        return "—"
    return f"{v:,.{digits}f}"


def cores(out, system, workload, rep):
    """Cores used during a run (from bench/index.sh's /proc snapshots): by each cluster and
    by everything else on the machine (the client included), or None without them."""
    before = out / system / f"{workload}-{rep}.cpu-before.json"
    after = out / system / f"{workload}-{rep}.cpu-after.json"
    if not (before.exists() and after.exists()):
        return None
    b, a = load(before), load(after)
    seconds = a["t"] - b["t"]
    if seconds <= 0:
        return None
    per = lambda k: (a[k] - b[k]) / a["hz"] / seconds
    busy = per("total") - per("idle")
    used = {s: per(s) for s in SYSTEMS}
    return {"busy": busy, **used, "else": busy - sum(used.values()), "seconds": seconds}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = Path(sys.argv[1])
    runs = {}  # workload -> system -> rep -> report
    for system in SYSTEMS:
        for p in sorted((out / system).glob("*-*.json")):
            m = re.fullmatch(r"(\w+)-(\d+)\.json", p.name)
            if m:
                runs.setdefault(m[1], {}).setdefault(system, {})[int(m[2])] = load(p)
    result = {"dir": str(out), "load": {}, "workloads": {}}
    env = (out / "env.txt").read_text() if (out / "env.txt").exists() else ""
    lines = ["# bench/index.sh results", "", "```", env.strip(), "```", ""]

    lines += ["## Load", "", "| system | rows/s | errors | p99 µs | server CPU µs/op | index built wait s (before / after) |",
              "|---|---:|---:|---:|---:|---|"]
    for system in SYSTEMS:
        p = out / system / "load.json"
        if not p.exists():
            continue
        r = load(p)
        wait = r.get("index", {}).get("index_built_wait_s", {})
        result["load"][system] = {
            "ops_per_s": r["throughput_ops"],
            "errors": r["errors"],
            "errors_by_kind": r["errors_by_kind"],
            "p99_us": main_op(r).get("p99_us"),
            "cpu_us_per_op": r["cpu_us_per_op"]["servers"],
            "index_built_wait_s": wait,
        }
        lines.append(
            f"| {system} | {fmt(r['throughput_ops'])} | {r['errors']} | {fmt(main_op(r).get('p99_us'))} "
            f"| {fmt(r['cpu_us_per_op']['servers'])} | {fmt(wait.get('before_load'), 1)} / {fmt(wait.get('after_load'), 1)} |"
        )
    lines.append("")

    lines += ["## Workloads", "",
              "| workload | Mosaic ops/s | Cassandra ops/s | **Mosaic/Cassandra** | per repetition | Mosaic rows/s | Cassandra rows/s "
              "| Mosaic p50 / p99 µs | Cassandra p50 / p99 µs | Mosaic CPU µs/op | Cassandra CPU µs/op | errors M / C |",
              "|---|---:|---:|---:|---|---:|---:|---|---|---:|---:|---|"]
    order = [w for w in ("low", "high", "append") if w in runs] + sorted(w for w in runs if w not in ("low", "high", "append"))
    for w in order:
        per = {}
        for system in SYSTEMS:
            reps = runs[w].get(system, {})
            ops = {n: r["throughput_ops"] for n, r in reps.items()}
            per[system] = {
                "ops_per_s": ops,
                "median_ops_per_s": median(ops.values()),
                "median_rows_per_s": median(r.get("rows_per_s") for r in reps.values()),
                "median_p50_us": median(main_op(r).get("p50_us") for r in reps.values()),
                "median_p99_us": median(main_op(r).get("p99_us") for r in reps.values()),
                "median_cpu_us_per_op": median(r["cpu_us_per_op"]["servers"] for r in reps.values()),
                "errors": sum(r["errors"] for r in reps.values()),
                "errors_by_kind": {
                    k: sum(r["errors_by_kind"].get(k, 0) for r in reps.values())
                    for k in sorted({k for r in reps.values() for k in r["errors_by_kind"]})
                },
                "result_errors": [e for r in reps.values() for e in r.get("result_errors", [])][:10],
            }
        m, c = per["mosaic"], per["cassandra"]
        ratio = (m["median_ops_per_s"] / c["median_ops_per_s"]
                 if m["median_ops_per_s"] and c["median_ops_per_s"] else None)
        rep_ratios = {
            n: m["ops_per_s"][n] / c["ops_per_s"][n]
            for n in sorted(set(m["ops_per_s"]) & set(c["ops_per_s"]))
            if c["ops_per_s"][n]
        }
        result["workloads"][w] = {"mosaic": m, "cassandra": c, "ratio_of_medians": ratio,
                                  "ratio_per_rep": rep_ratios}
        lines.append(
            f"| {w} | {fmt(m['median_ops_per_s'])} | {fmt(c['median_ops_per_s'])} | **{fmt(ratio, 2)}×** "
            f"| {', '.join(f'{x:.2f}' for x in rep_ratios.values())} "
            f"| {fmt(m['median_rows_per_s'])} | {fmt(c['median_rows_per_s'])} "
            f"| {fmt(m['median_p50_us'])} / {fmt(m['median_p99_us'])} | {fmt(c['median_p50_us'])} / {fmt(c['median_p99_us'])} "
            f"| {fmt(m['median_cpu_us_per_op'])} | {fmt(c['median_cpu_us_per_op'])} | {m['errors']} / {c['errors']} |"
        )
    lines.append("")

    lines += ["## Each run", "",
              "Cores used while the run went on (warm-up included; 2 cores = the whole machine): by the measured "
              "cluster, by the idle one, and by everything else (the client included).", "",
              "| workload | rep | Mosaic ops/s | Cassandra ops/s | Mosaic/Cassandra | cores in Mosaic's run (Mosaic / Cassandra / else) "
              "| cores in Cassandra's run (Cassandra / Mosaic / else) |",
              "|---|---:|---:|---:|---:|---|---|"]
    for w in order:
        m, c = result["workloads"][w]["mosaic"], result["workloads"][w]["cassandra"]
        for n in sorted(set(m["ops_per_s"]) | set(c["ops_per_s"])):
            mc, cc = cores(out, "mosaic", w, n), cores(out, "cassandra", w, n)
            m.setdefault("cores", {})[n] = mc
            c.setdefault("cores", {})[n] = cc
            mo, co = m["ops_per_s"].get(n), c["ops_per_s"].get(n)
            three = lambda x, first, second: (
                "—" if x is None else f"{x[first]:.2f} / {x[second]:.2f} / {x['else']:.2f}")
            lines.append(
                f"| {w} | {n} | {fmt(mo)} | {fmt(co)} | {fmt(mo / co if mo and co else None, 2)} "
                f"| {three(mc, 'mosaic', 'cassandra')} | {three(cc, 'cassandra', 'mosaic')} |"
            )
    lines.append("")
    for w in order:
        for system in SYSTEMS:
            s = result["workloads"][w][system]
            if s["errors"]:
                lines.append(f"- {w}, {system}: errors {s['errors_by_kind']}")
                lines += [f"  - {e}" for e in s["result_errors"]]
    (out / "results.md").write_text("\n".join(lines) + "\n")
    (out / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
