#!/usr/bin/env python3
"""Medians over repeated bench/compare.sh runs, as a Markdown table.

    bench/summarize.py DIR1 DIR2 DIR3 …

Each DIR holds <system>-{load,run}.json from `mosaic bench --json`. For every system and
phase it prints the median (and the range) of throughput, of each operation's p50 / p99 /
p99.9 latency, and of the server's disk bytes written per user byte.
"""
import json
import statistics
import sys
from pathlib import Path


def spread(values, fmt):
    m = statistics.median(values)
    if len(values) == 1:
        return fmt(m)
    return f"{fmt(m)} ({fmt(min(values))}–{fmt(max(values))})"


def main(dirs):
    runs = [Path(d) for d in dirs]
    systems = sorted({p.name.split("-")[0] for d in runs for p in d.glob("*-load.json")})
    print(f"medians of {len(runs)} runs (range in parentheses)\n")
    print("| system | phase | ops/s | operation | p50 ms | p99 ms | p99.9 ms | errors | disk write amp |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|")
    ms = lambda us: f"{us / 1000:.2f}"
    for system in systems:
        for phase in ["load", "run"]:
            reports = [json.loads((d / f"{system}-{phase}.json").read_text()) for d in runs
                       if (d / f"{system}-{phase}.json").exists()]
            if not reports:
                continue
            ops = spread([r["throughput_ops"] for r in reports], lambda v: f"{v:,.0f}")
            amps = [r["server_io"]["write_amplification"] for r in reports
                    if r.get("server_io") and r["server_io"].get("write_amplification") is not None]
            amp = spread(amps, lambda v: f"{v:.2f}") if amps else "-"
            errors = sum(r["errors"] for r in reports)
            for i, op in enumerate(sorted(reports[0]["operations"])):
                row = [r["operations"][op] for r in reports]
                first = i == 0
                print("| " + " | ".join([
                    system if first else "",
                    phase if first else "",
                    ops if first else "",
                    op,
                    spread([o["p50_us"] for o in row], ms),
                    spread([o["p99_us"] for o in row], ms),
                    spread([o["p999_us"] for o in row], ms),
                    str(errors) if first else "",
                    amp if first else "",
                ]) + " |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
