"""Hints capped in bytes per host (issue 21, Cassandra's `max_hints_size_per_host`): with a
replica down, a coordinator keeps at most `[cluster] max_hints_size_per_host_bytes` of hints
for it and drops the rest (counted in `mosaic_hints_dropped_total` and `mosaic stats`), while
every write still succeeds at its consistency level; repair then brings the replica up to
date."""
from test_cluster import CL, create_table, diff, keys_on, read_alone, repaired_entries, write

CAP = 4096


def test_hints_past_the_per_host_cap_are_dropped_writes_succeed_and_repair_fixes_the_node(make_cluster):
    c = make_cluster(3, [f"cluster.max_hints_size_per_host_bytes={CAP}"])
    s = c.session()
    create_table(c, s, "hc", 3)
    victim = 3
    c.kill(victim)
    c.wait_seen(c.others(victim), [victim], up=False)

    # Each row's hint is ~100 bytes: 400 rows for node 3 are ten times the cap.
    rows = {k: f"value-{k}-" + "x" * 40 for k in range(400)}
    write(s, "hc", rows, CL.QUORUM)  # every write succeeds: two replicas are up

    dropped = sum(c.metric(i, "mosaic_hints_dropped_total") for i in c.others(victim))
    stored = sum(c.metric(i, "mosaic_hints_stored_total") for i in c.others(victim))
    assert dropped > 0 and stored > 0, (dropped, stored)
    assert stored + dropped >= len(rows), (stored, dropped)
    for i in c.others(victim):
        held = c.metric(i, "mosaic_hints_bytes")
        assert 0 < held <= CAP, (i, held)
    out = c.mosaic("stats", "--host", c.admin(1), "--only").stdout
    assert "4.0 KiB per host" in out and "dropped at the cap" in out, out

    c.restart()
    c.wait_schema_agreement()
    entries, out = repaired_entries(c, victim, "hc")
    assert entries > 0, out
    found, _ = read_alone(c, victim, "hc", rows)
    on_victim = keys_on(c, s.cluster, "hc", victim, rows)
    assert len(on_victim) == len(rows)  # RF 3 on 3 nodes
    assert found == rows, diff(rows, found)
