#!/usr/bin/env python3
"""Summarizes a bench/security.sh run: DIR/results.md and DIR/results.json.

Per system and configuration (plain, auth, tls): the median over the rounds of the
throughput, the read and update p99 and the server CPU per operation, and each divided by
the same system's plain median (the cost of the setting: throughput 0.93 = 7% fewer
operations per second, p99 1.10 = 10% slower), with the per-round values.

    bench/security_summary.py DIR
"""
import json
import re
import statistics
import sys
from pathlib import Path

SYSTEMS = ("mosaic", "cassandra")
CONFIGS = ("plain", "auth", "tls")


def load(out):
    runs = {}  # system -> config -> round -> metrics
    for s in SYSTEMS:
        for p in sorted((out / s).glob("*-*.json")):
            m = re.fullmatch(r"(\w+)-(\d+)\.json", p.name)
            if not m or m[1] not in CONFIGS:
                continue
            r = json.loads(p.read_text())
            ops = r["operations"]
            runs.setdefault(s, {}).setdefault(m[1], {})[int(m[2])] = {
                "ops_per_s": r["throughput_ops"],
                "read_p99_us": ops.get("read", {}).get("p99_us"),
                "update_p99_us": ops.get("update", {}).get("p99_us"),
                "cpu_us_per_op": r.get("cpu_us_per_op", {}).get("servers"),
                "errors": r.get("errors", 0),
            }
    return runs


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def ratio(a, b):
    return a / b if a is not None and b else None


def main():
    out = Path(sys.argv[1])
    runs = load(out)
    metrics = ("ops_per_s", "read_p99_us", "update_p99_us", "cpu_us_per_op")
    result = {}
    for s, by in runs.items():
        result[s] = {}
        for c in CONFIGS:
            if c not in by:
                continue
            rounds = by[c]
            result[s][c] = {
                "rounds": rounds,
                **{k: median([x[k] for x in rounds.values()]) for k in metrics},
                "errors": sum(x["errors"] for x in rounds.values()),
            }
        plain = result[s].get("plain")
        for c, row in result[s].items():
            row["vs_plain"] = {k: ratio(row[k], plain and plain[k]) for k in metrics}
    (out / "results.json").write_text(json.dumps(result, indent=1) + "\n")

    fmt = lambda v, d=0: "—" if v is None else f"{v:,.{d}f}"
    ms = lambda us: fmt(None if us is None else us / 1000, 2)
    env = (out / "env.txt").read_text().strip() if (out / "env.txt").exists() else ""
    lines = ["# bench/security.sh results", "", "```", env, "```", "",
             "| system | config | ops/s | vs plain | per round | read p99 ms | vs plain | update p99 ms | vs plain | server CPU µs/op | vs plain | errors |",
             "|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for s in SYSTEMS:
        for c in CONFIGS:
            row = result.get(s, {}).get(c)
            if not row:
                continue
            v = row["vs_plain"]
            per_round = ", ".join(fmt(x["ops_per_s"]) for _, x in sorted(row["rounds"].items()))
            lines.append(
                f"| {s} | {c} | {fmt(row['ops_per_s'])} | **{fmt(v['ops_per_s'], 2)}** | {per_round} "
                f"| {ms(row['read_p99_us'])} | {fmt(v['read_p99_us'], 2)} "
                f"| {ms(row['update_p99_us'])} | {fmt(v['update_p99_us'], 2)} "
                f"| {fmt(row['cpu_us_per_op'])} | {fmt(v['cpu_us_per_op'], 2)} | {row['errors']} |")
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
