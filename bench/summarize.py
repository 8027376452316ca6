#!/usr/bin/env python3
"""Medians over repeated bench/compare.sh runs.

    bench/summarize.py DIR1 DIR2 …      a Markdown table on stdout
    bench/summarize.py --suite SUITE    SUITE/<workload>/r<N>/ from bench/suite.sh (and
                                        SUITE/load/r<N>/ where one load served them all): writes
                                        SUITE/results.{md,json}, SUITE/throughput.svg and
                                        SUITE/latency-<workload>.svg

Each run directory holds <system>-{load,run}.json from `mosaic-bench --json`. For every
system and phase: the median (and range) of throughput, of each operation's p50 / p99 /
p99.9 latency, and of the server's disk bytes written per user byte. Plots are plain SVG
(no plotting library needed): run-phase throughput bars per workload and system, and per
workload the latency CDF of each operation (median latency at each quantile over runs).
"""
import json
import statistics
import sys
from pathlib import Path

COLORS = {"mosaic": "#1f77b4", "cassandra": "#d62728"}


def spread(values, fmt):
    m = statistics.median(values)
    if len(values) == 1:
        return fmt(m)
    return f"{fmt(m)} ({fmt(min(values))}–{fmt(max(values))})"


def load(runs, system, phase):
    return [json.loads((d / f"{system}-{phase}.json").read_text()) for d in runs
            if (d / f"{system}-{phase}.json").exists()]


def systems_of(runs):
    return sorted({p.name.split("-")[0] for d in runs
                   for p in [*d.glob("*-load.json"), *d.glob("*-run.json")]})


def summary(runs):
    """{system: {phase: {...medians...}}} over the run directories."""
    out = {}
    for system in systems_of(runs):
        for phase in ["load", "run"]:
            reports = load(runs, system, phase)
            if not reports:
                continue
            amps = [r["server_io"]["write_amplification"] for r in reports
                    if r.get("server_io") and r["server_io"].get("write_amplification") is not None]
            ops = {}
            for op in sorted(reports[0]["operations"]):
                row = [r["operations"][op] for r in reports if op in r["operations"]]
                ops[op] = {k: [o[k] for o in row] for k in ["p50_us", "p99_us", "p999_us"]}
                cdfs = [o["latency_cdf_us"] for o in row if "latency_cdf_us" in o]
                if cdfs:
                    ops[op]["cdf"] = [[q, statistics.median(c[i][1] for c in cdfs)]
                                      for i, (q, _) in enumerate(cdfs[0])]
            out.setdefault(system, {})[phase] = {
                "runs": len(reports),
                "throughput_ops": [r["throughput_ops"] for r in reports],
                "errors": sum(r["errors"] for r in reports),
                "write_amplification": amps,
                "operations": ops,
            }
    return out


def markdown(s):
    ms = lambda us: f"{us / 1000:.2f}"
    lines = ["| system | phase | ops/s | operation | p50 ms | p99 ms | p99.9 ms | errors | disk write amp |",
             "|---|---|---:|---|---:|---:|---:|---:|---:|"]
    for system, phases in s.items():
        for phase, p in phases.items():
            amp = spread(p["write_amplification"], lambda v: f"{v:.2f}") if p["write_amplification"] else "-"
            for i, (op, o) in enumerate(p["operations"].items()):
                first = i == 0
                lines.append("| " + " | ".join([
                    system if first else "", phase if first else "",
                    spread(p["throughput_ops"], lambda v: f"{v:,.0f}") if first else "",
                    op, spread(o["p50_us"], ms), spread(o["p99_us"], ms), spread(o["p999_us"], ms),
                    str(p["errors"]) if first else "", amp if first else "",
                ]) + " |")
    return "\n".join(lines)


def medians(s):
    """The JSON results: medians only."""
    med = statistics.median
    return {system: {phase: {
        "runs": p["runs"],
        "throughput_ops": med(p["throughput_ops"]),
        "errors": p["errors"],
        "write_amplification": med(p["write_amplification"]) if p["write_amplification"] else None,
        "operations": {op: {k: med(o[k]) for k in ["p50_us", "p99_us", "p999_us"]}
                       for op, o in p["operations"].items()},
    } for phase, p in phases.items()} for system, phases in s.items()}


def svg(width, height, body, title):
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'font-family="sans-serif" font-size="12">\n<rect width="100%" height="100%" fill="white"/>\n'
            f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>\n'
            + "\n".join(body) + "\n</svg>\n")


def throughput_svg(results, title="YCSB throughput", colors=COLORS,
                   ylabel="ops/s (run phase, median)"):
    """Grouped bars: run-phase median throughput per workload (group) and system (bar)."""
    workloads = list(results)
    systems = list(dict.fromkeys(s for w in workloads for s in results[w]))  # first-seen order
    values = {(w, s): results[w][s]["run"]["throughput_ops"] for w in workloads for s in systems
              if "run" in results[w].get(s, {})}
    top = max(values.values(), default=1) * 1.1
    left, bottom, plot_w, plot_h = 70, 40, 90 * len(workloads), 300
    body = []
    for i in range(6):
        v = top * i / 5
        y = bottom + plot_h - plot_h * i / 5
        body.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y}" y2="{y}" stroke="#ddd"/>'
                    f'<text x="{left - 5}" y="{y + 4}" text-anchor="end">{v:,.0f}</text>')
    bar = 70 / max(len(systems), 1)
    for wi, w in enumerate(workloads):
        x0 = left + 90 * wi + 10
        for si, s in enumerate(systems):
            v = values.get((w, s))
            if v is None:
                continue
            h = plot_h * v / top
            body.append(f'<rect x="{x0 + bar * si}" y="{bottom + plot_h - h}" width="{bar - 2}" '
                        f'height="{h}" fill="{colors.get(s, "#777")}"><title>{s} {w}: {v:,.0f} ops/s</title></rect>')
        body.append(f'<text x="{x0 + 35}" y="{bottom + plot_h + 16}" text-anchor="middle">{w.upper()}</text>')
    for si, s in enumerate(systems):
        body.append(f'<rect x="{left + plot_w + 15}" y="{bottom + 20 * si}" width="12" height="12" fill="{colors.get(s, "#777")}"/>'
                    f'<text x="{left + plot_w + 32}" y="{bottom + 20 * si + 11}">{s}</text>')
    body.append(f'<text x="15" y="{bottom + plot_h / 2}" transform="rotate(-90 15 {bottom + plot_h / 2})" text-anchor="middle">{ylabel}</text>')
    return svg(left + plot_w + 120, bottom + plot_h + 40, body, title)


def cdf_svg(workload, s):
    """Latency CDFs of the run phase, log-scaled latency axis."""
    import math
    curves = []
    for system, phases in s.items():
        for op, o in phases.get("run", {}).get("operations", {}).items():
            if o.get("cdf"):
                curves.append((system, op, o["cdf"]))
    if not curves:
        return None
    lo = min(max(v, 1) for _, _, c in curves for _, v in c)
    hi = max(v for _, _, c in curves for _, v in c)
    l0, l1 = math.log10(lo), math.log10(max(hi, lo * 10))
    left, bottom, plot_w, plot_h = 60, 40, 500, 300
    x = lambda us: left + plot_w * (math.log10(max(us, 1)) - l0) / (l1 - l0)
    y = lambda q: bottom + plot_h * (1 - q)
    body = []
    for d in range(math.floor(l0), math.ceil(l1) + 1):
        if l0 <= d <= l1:
            label = f"{10 ** d / 1000:g} ms"
            body.append(f'<line x1="{x(10 ** d)}" x2="{x(10 ** d)}" y1="{bottom}" y2="{bottom + plot_h}" stroke="#ddd"/>'
                        f'<text x="{x(10 ** d)}" y="{bottom + plot_h + 16}" text-anchor="middle">{label}</text>')
    for q in [0, 0.25, 0.5, 0.75, 0.9, 0.99, 1]:
        body.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(q)}" y2="{y(q)}" stroke="#eee"/>'
                    f'<text x="{left - 5}" y="{y(q) + 4}" text-anchor="end">{q:g}</text>')
    for i, (system, op, cdf) in enumerate(curves):
        dash = "" if i % 2 == 0 else ' stroke-dasharray="5,3"'
        points = " ".join(f"{x(v):.1f},{y(q):.1f}" for q, v in cdf)
        body.append(f'<polyline fill="none" stroke="{COLORS.get(system, "#777")}" stroke-width="1.5"{dash} points="{points}"/>')
        body.append(f'<line x1="{left + plot_w + 10}" x2="{left + plot_w + 30}" y1="{bottom + 18 * i + 6}" y2="{bottom + 18 * i + 6}" '
                    f'stroke="{COLORS.get(system, "#777")}" stroke-width="1.5"{dash}/>'
                    f'<text x="{left + plot_w + 35}" y="{bottom + 18 * i + 10}">{system} {op}</text>')
    return svg(left + plot_w + 200, bottom + plot_h + 40, body,
               f"YCSB {workload.upper()}: latency CDF (run phase)")


def suite(root):
    results, md = {}, []
    # The shared load phase (if any) first, then the workloads in order.
    for wdir in sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: (p.name != "load", p.name)):
        runs = sorted(p for p in wdir.iterdir() if p.is_dir())
        if not runs:
            continue
        s = summary(runs)
        results[wdir.name] = medians(s)
        what = "Load (one per repeat, before the workloads)" if wdir.name == "load" else f"Workload {wdir.name.upper()}"
        md.append(f"### {what} ({len(runs)} runs; medians, range in parentheses)\n\n{markdown(s)}\n")
        plot = cdf_svg(wdir.name, s)
        if plot:
            (root / f"latency-{wdir.name}.svg").write_text(plot)
    (root / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (root / "results.md").write_text("\n".join(md))
    runs = {w: r for w, r in sorted(results.items()) if any("run" in p for p in r.values())}
    (root / "throughput.svg").write_text(throughput_svg(runs))
    print("\n".join(md))
    print(f"wrote {root}/results.json, results.md, throughput.svg, latency-*.svg")


def main(args):
    if not args:
        sys.exit(__doc__)
    if args[0] == "--suite":
        suite(Path(args[1]))
        return
    runs = [Path(d) for d in args]
    print(f"medians of {len(runs)} runs (range in parentheses)\n")
    print(markdown(summary(runs)))


if __name__ == "__main__":
    main(sys.argv[1:])
