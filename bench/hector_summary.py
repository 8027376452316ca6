#!/usr/bin/env python3
"""Summarizes a bench/hector.sh experiment directory into results.md and results.json.

overhead: per configuration (`none`: no read stage, `fcfs`: the stage) the median over
repetitions of throughput and read latencies, and the ratio stage / none per repetition.

locality: per Zipf exponent and replica-selection policy, the median throughput and
latencies, and popularity-aware's throughput over the dynamic snitch's.

instructions: instructions per read (callgrind) without and with the read stage, and their
ratio per repetition.

rml: per queue variant and arrival rate, the achieved throughput and read latencies
(medians over repetitions), and the successful reads per second and median latency of
small and of large items; a rate is sustained when the achieved throughput reaches 95% of
it; the saturation throughput is the highest throughput achieved over the ramp, and the
highest rate sustained without a failed read is Hector's saturation point (its Fig. 8).
Each variant is compared with FCFS under the same settings.
"""

import json
import re
import statistics
import sys
from pathlib import Path


def load(path):
    j = json.loads(path.read_text())
    read = j["operations"].get("read", {})
    elapsed = j.get("elapsed_s") or 1
    sizes = {}
    for size, st in (j.get("by_size") or {}).items():
        sizes[f"{size}_ops"] = st["count"] / elapsed
        sizes[f"{size}_errors"] = st["errors"]
        sizes[f"{size}_p50_ms"] = st["p50_us"] / 1000
    return {
        **sizes,
        "throughput": j["throughput_ops"],
        "target": j.get("target_rate_ops"),
        "mean_ms": read.get("mean_us", 0) / 1000,
        "p50_ms": read.get("p50_us", 0) / 1000,
        "p99_ms": read.get("p99_us", 0) / 1000,
        "errors": j["errors"],
    }


def med(values):
    return statistics.median(values) if values else float("nan")


def instructions(d):
    """The `instructions` experiment: instructions per read under callgrind."""
    path = d / "instructions.txt"
    if not path.exists():
        return None, []
    per = {}
    for line in path.read_text().splitlines():
        name, rep, ir, ops = line.split()
        per.setdefault(name, []).append((int(rep), int(ir) / int(ops)))
    if set(per) != {"none", "fcfs"}:
        return None, []
    none, fcfs = dict(per["none"]), dict(per["fcfs"])
    ratios = [fcfs[r] / none[r] for r in sorted(set(none) & set(fcfs))]
    out = {"none_per_read": med(list(none.values())), "fcfs_per_read": med(list(fcfs.values())),
           "ratio_per_rep": ratios}
    md = ["## Read stage cost in instructions per read (callgrind, one node)", "",
          f"- no stage {out['none_per_read']:.0f}, stage (fcfs × 32) {out['fcfs_per_read']:.0f} "
          f"instructions per read (medians); stage / no stage per repetition: "
          + ", ".join(f"{r:.4f}" for r in ratios), ""]
    return out, md


def overhead(d):
    if (d / "instructions.txt").exists():
        # Throughput under valgrind says nothing about the stage.
        return None, []
    runs = {}
    for p in d.glob("*.json"):
        m = re.fullmatch(r"(none|fcfs)-(\d+)\.json", p.name)
        if m:
            runs.setdefault(m[1], {})[int(m[2])] = load(p)
    if set(runs) != {"none", "fcfs"}:
        return None, []
    reps = sorted(set(runs["none"]) & set(runs["fcfs"]))
    ratios = [runs["fcfs"][r]["throughput"] / runs["none"][r]["throughput"] for r in reps]
    out = {
        name: {k: med([r[k] for r in runs[name].values()]) for k in ("throughput", "mean_ms", "p50_ms", "p99_ms")}
        for name in ("none", "fcfs")
    }
    out["throughput_ratio_per_rep"] = ratios
    out["throughput_ratio_median"] = med(ratios)
    md = [
        "## Read stage overhead (YCSB C, closed loop)",
        "",
        "| configuration | ops/s | mean ms | p50 ms | p99 ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, label in (("none", "no stage (`read_concurrency = 0`)"), ("fcfs", "stage, fcfs × 32")):
        r = out[name]
        md.append(f"| {label} | {r['throughput']:.0f} | {r['mean_ms']:.2f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} |")
    md += ["", f"Stage / no stage throughput per repetition: {', '.join(f'{x:.3f}' for x in ratios)} "
           f"(median {out['throughput_ratio_median']:.3f}).", ""]
    return out, md


def ramp(d):
    runs = {}
    for p in d.glob("*.json"):
        m = re.fullmatch(r"(.+)-(\d+)-rate(\d+)\.json", p.name)
        if m:
            runs.setdefault(m[1], {}).setdefault(int(m[3]), []).append(load(p))
    if not runs:
        return None, []
    out = {}
    md = [
        "## Local scheduling, heterogeneous items (75% 1 KiB, 25% 1 MiB), open-loop ramp",
        "",
        "| queue | rate ops/s | achieved ops/s | sustained | mean ms | p50 ms | p99 ms | errors "
        "| small ok/s (p50 ms) | large ok/s (p50 ms) |",
        "|---|---:|---:|:-:|---:|---:|---:|---:|---:|---:|",
    ]
    for queue in sorted(runs):
        rows = []
        for rate in sorted(runs[queue]):
            rs = runs[queue][rate]
            keys = ("throughput", "mean_ms", "p50_ms", "p99_ms", "usual_ops", "usual_p50_ms",
                    "large_ops", "large_p50_ms")
            row = {k: med([r[k] for r in rs if k in r]) for k in keys}
            row["rate"] = rate
            row["errors"] = sum(r["errors"] for r in rs)
            row["sustained"] = row["throughput"] >= 0.95 * rate
            rows.append(row)
            by_size = " | ".join(
                "-" if row[f"{k}_ops"] != row[f"{k}_ops"]
                else f"{row[f'{k}_ops']:.0f} ({row[f'{k}_p50_ms']:.0f})"
                for k in ("usual", "large"))
            md.append(
                f"| {queue} | {rate} | {row['throughput']:.0f} | {'yes' if row['sustained'] else 'no'} | "
                f"{row['mean_ms']:.1f} | {row['p50_ms']:.1f} | {row['p99_ms']:.1f} | {row['errors']} "
                f"| {by_size} |"
            )
        sustained = [r["rate"] for r in rows if r["sustained"]]
        # Hector's saturation point: the highest rate the open loop offered without a read
        # failing (its client issues on schedule however many are in flight, up to
        # --concurrency; the achieved rate above also counts the last reads' drain).
        clean = [r["rate"] for r in rows if r["errors"] == 0]
        out[queue] = {
            "rates": rows,
            "saturation_ops": max(r["throughput"] for r in rows),
            "highest_sustained_rate": max(sustained) if sustained else 0,
            "highest_rate_without_timeouts": max(clean) if clean else 0,
        }
    md.append("")
    for queue, r in list(out.items()):
        md.append(f"- {queue}: saturation {r['saturation_ops']:.0f} ops/s, highest rate sustained "
                  f"{r['highest_sustained_rate']} ops/s, without a failed read "
                  f"{r['highest_rate_without_timeouts']} ops/s")
    for queue in [q for q in list(out) if not q.startswith("fcfs")]:
        # Against FCFS with the same settings, the queue's own ones (reserved_slots) aside.
        settings = [kv for kv in queue.split("+")[1:] if not kv.startswith("reserved_slots=")]
        base = "+".join(["fcfs"] + settings)
        if base not in out:
            continue
        ratio = out[queue]["saturation_ops"] / out[base]["saturation_ops"]
        if queue == "random-multi-level":
            out["rml_over_fcfs_saturation"] = ratio
        out[queue]["over_fcfs_saturation"] = ratio
        md.append(f"- {queue} / {base} saturation: {ratio:.2f}×")
        if out[base]["highest_rate_without_timeouts"]:
            clean = (out[queue]["highest_rate_without_timeouts"]
                     / out[base]["highest_rate_without_timeouts"])
            out[queue]["over_fcfs_rate_without_timeouts"] = clean
            md.append(f"- {queue} / {base} highest rate without a failed read: {clean:.2f}×")
    md.append("")
    return out, md


def locality(d):
    runs = {}
    for p in d.glob("*.json"):
        m = re.fullmatch(r"(dynamic-snitch|popularity-aware-local|popularity-aware|c3)-zipf([0-9.]+)-(\d+)\.json", p.name)
        if m:
            runs.setdefault(m[2], {}).setdefault(m[1], []).append(load(p))
    if not runs:
        return None, []
    out = {}
    md = [
        "## Replica selection and cache locality (YCSB C, Zipf keys, closed loop)",
        "",
        "| Zipf exponent | policy | ops/s (median) | mean ms | p99 ms | runs |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for zipf in sorted(runs, key=float):
        out[zipf] = {}
        for policy in ("dynamic-snitch", "popularity-aware", "popularity-aware-local", "c3"):
            rs = runs[zipf].get(policy, [])
            if not rs:
                continue
            row = {k: med([r[k] for r in rs]) for k in ("throughput", "mean_ms", "p99_ms")}
            row["runs"] = len(rs)
            out[zipf][policy] = row
            md.append(f"| {zipf} | {policy} | {row['throughput']:.0f} | {row['mean_ms']:.2f} | "
                      f"{row['p99_ms']:.2f} | {row['runs']} |")
        ds = out[zipf].get("dynamic-snitch")
        pa = out[zipf].get("popularity-aware")
        if ds and pa:
            out[zipf]["pa_over_ds"] = pa["throughput"] / ds["throughput"]
        local = out[zipf].get("popularity-aware-local")
        if ds and local:
            out[zipf]["pa_local_over_ds"] = local["throughput"] / ds["throughput"]
    md.append("")
    for zipf, r in out.items():
        if "pa_over_ds" in r:
            md.append(f"- Zipf {zipf}: popularity-aware / dynamic-snitch throughput {r['pa_over_ds']:.2f}×")
        if "pa_local_over_ds" in r:
            md.append(f"- Zipf {zipf}: popularity-aware (popular = local) / dynamic-snitch {r['pa_local_over_ds']:.2f}×")
    md.append("")
    return out, md


def main():
    d = Path(sys.argv[1])
    results, md = {}, [f"# bench/hector.sh: {d.name}", ""]
    for name, f in (("overhead", overhead), ("instructions", instructions), ("rml", ramp),
                    ("locality", locality)):
        out, lines = f(d)
        if out is not None:
            results[name] = out
            md += lines
    (d / "results.json").write_text(json.dumps(results, indent=2))
    (d / "results.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
