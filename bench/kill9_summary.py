#!/usr/bin/env python3
"""Summarizes a bench/kill9.sh run: DIR/results.md and DIR/results.json.

Per system, speculative_retry setting and round: the open-loop rate (and the saturation it
is a share of), the throughput achieved, read and update p99 over the whole run, errors by
kind; and from the client's per-second timeline (latency from each operation's intended
start, by completion second) the errors before and after the kill, the worst one-second
p99 before and after it, the last second with an error, and the seconds around the kill.

The kill's second in the client's timeline: the client's clock starts after it has
connected and prepared its statements, so its start is taken as its exit time minus the
run's elapsed time (from its JSON), and the kill's offset is the kill's time minus that.

    bench/kill9_summary.py DIR
"""
import json
import re
import statistics
import sys
from pathlib import Path

SYSTEMS = ("mosaic", "cassandra")
SERVER_ERRORS = ("ReadTimeout", "WriteTimeout", "Unavailable", "ReadFailure", "WriteFailure",
                 "Overloaded", "IsBootstrapping")
# Seconds of the timeline shown around the kill: before, after.
AROUND = (3, 15)


def ms(us):
    return None if us is None else us / 1000.0


def run_summary(run, kill):
    ops = run["operations"]
    start = kill["client_exited"] - run["elapsed_s"]
    at = kill["killed"] - start
    timeline = run.get("timeline", [])
    # A point covers the second ending at t_s: before the kill if it ended by then.
    before = [p for p in timeline if p["t_s"] <= at]
    after = [p for p in timeline if p["t_s"] > at]
    errors_after = [p for p in after if p["errors"]]
    p99_before = [p["p99_us"] for p in before if p["ops"] > p["errors"]]
    return {
        "rate": kill["rate"],
        "throughput_ops": run["throughput_ops"],
        "attempted": run["attempted"],
        "elapsed_s": run["elapsed_s"],
        "kill_at_s": round(at, 2),
        "read_p99_ms": ms(ops.get("read", {}).get("p99_us")),
        "read_p999_ms": ms(ops.get("read", {}).get("p999_us")),
        "read_max_ms": ms(ops.get("read", {}).get("max_us")),
        "update_p99_ms": ms(ops.get("update", {}).get("p99_us")),
        "errors": run["errors"],
        "errors_per_mille": 1000.0 * run["errors"] / max(1, run["attempted"]),
        "errors_by_kind": run["errors_by_kind"],
        "server_errors": sum(n for k, n in run["errors_by_kind"].items() if k in SERVER_ERRORS),
        "errors_before_kill": sum(p["errors"] for p in before),
        "errors_after_kill": sum(p["errors"] for p in after),
        "seconds_with_errors_after_kill": len(errors_after),
        "last_error_s_after_kill": (round(errors_after[-1]["t_s"] - at, 1)
                                    if errors_after else None),
        "median_1s_p99_before_ms": ms(statistics.median(p99_before)) if p99_before else None,
        "worst_1s_p99_before_ms": ms(max(p99_before)) if p99_before else None,
        "worst_1s_p99_after_ms": ms(max((p["p99_us"] for p in after), default=None)),
        "min_ops_per_s_after_kill": min((p["ops_per_s"] for p in after[:-1]), default=None),
        "speculative_reads": kill.get("speculative_reads"),
        "client_status": kill.get("client_status"),
        "around_kill": [
            {"t_s": round(p["t_s"] - at, 1), "ops": p["ops"], "errors": p["errors"],
             "p99_ms": ms(p["p99_us"])}
            for p in timeline if -AROUND[0] <= p["t_s"] - at <= AROUND[1] + 1
        ],
    }


def load(out):
    result = {}
    for s in SYSTEMS:
        d = out / s
        if not d.is_dir():
            continue
        entry = {}
        sat = d / "saturation.json"
        if sat.exists():
            entry["saturation_ops"] = json.loads(sat.read_text())["throughput_ops"]
        runs = {}
        for p in sorted(d.glob("*-*.kill.json")):
            m = re.fullmatch(r"(.+)-(\d+)\.kill\.json", p.name)
            if not m or not (d / f"{m[1]}-{m[2]}.json").exists():
                continue
            run_path = d / f"{m[1]}-{m[2]}.json"
            kill = json.loads(p.read_text())
            try:
                run = json.loads(run_path.read_text())
            except json.JSONDecodeError:
                continue
            runs.setdefault(m[1], {})[int(m[2])] = run_summary(run, kill)
        entry["runs"] = runs
        if runs or "saturation_ops" in entry:
            result[s] = entry
    return result


def fmt(x, digits=1):
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:,.{digits}f}"
    return f"{x:,}"


def kinds(by_kind):
    return ", ".join(f"{k} {n:,}" for k, n in sorted(by_kind.items(), key=lambda kv: -kv[1])) or "none"


def markdown(out, result):
    env = (out / "env.txt").read_text() if (out / "env.txt").exists() else ""
    lines = ["# YCSB B across a kill -9 of one node (bench/kill9.sh)", "", "```", env.rstrip(),
             "```", ""]
    lines += ["| system | speculative_retry | round | saturation ops/s | rate ops/s | achieved ops/s "
              "| read p99 ms | update p99 ms | errors (‰ of ops) | errors after the kill "
              "| last error, s after kill | worst 1-s p99 before / after kill, ms "
              "| speculative reads |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    names = {"mosaic": "Mosaic", "cassandra": "Cassandra 4.1.10"}
    for s, entry in result.items():
        for setting, rounds in entry["runs"].items():
            for r, x in sorted(rounds.items()):
                spec = x["speculative_reads"]
                spec = ", ".join(f"{c} {n:,.0f}" for c, n in spec.items()) if spec else "–"
                lines.append(
                    f"| {names[s]} | {setting} | {r} | {fmt(entry.get('saturation_ops'), 0)} "
                    f"| {x['rate']:,} | {fmt(x['throughput_ops'], 0)} | {fmt(x['read_p99_ms'], 2)} "
                    f"| {fmt(x['update_p99_ms'], 2)} | {x['errors']:,} ({x['errors_per_mille']:.2f}) "
                    f"| {x['errors_after_kill']:,} | {fmt(x['last_error_s_after_kill'])} "
                    f"| {fmt(x['worst_1s_p99_before_ms'], 2)} / {fmt(x['worst_1s_p99_after_ms'], 2)} "
                    f"| {spec} |")
    lines += ["", "Errors by kind:", ""]
    for s, entry in result.items():
        for setting, rounds in entry["runs"].items():
            for r, x in sorted(rounds.items()):
                status = x["client_status"]
                exited = "" if status == 0 else f"; the client exited {status}"
                lines.append(f"- {names[s]}, {setting}, round {r}: {kinds(x['errors_by_kind'])}"
                             f" (kill at {x['kill_at_s']} s of the client's {x['elapsed_s']:.1f} s"
                             f"{exited})")
    lines += ["", "Seconds around the kill (t = seconds after the kill, end of each one-second "
              "window; operations finished / errors / p99 ms of the window's successes):", ""]
    for s, entry in result.items():
        for setting, rounds in entry["runs"].items():
            for r, x in sorted(rounds.items()):
                pts = " ".join(f"{p['t_s']:+.1f}:{p['ops']}/{p['errors']}/{fmt(p['p99_ms'], 0)}"
                               for p in x["around_kill"])
                lines.append(f"- {names[s]}, {setting}, round {r}: {pts}")
    return "\n".join(lines) + "\n"


def main():
    out = Path(sys.argv[1])
    result = load(out)
    (out / "results.json").write_text(json.dumps(result, indent=1) + "\n")
    text = markdown(out, result)
    (out / "results.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
