"""Repair streams a mismatched range in bounded windows (issue 21): with replicas answering
pages of 7 entries (`[cluster] read_answer_rows_max`), a node that missed every write of its
ranges (down while they were made, no hints) — each range far larger than a page — is
streamed a window at a time, and the node converges: it holds every row afterwards and a
second repair streams nothing."""
from test_cluster import CL, create_table, diff, keys_on, read_alone, repaired_entries, write


def test_a_node_that_missed_every_write_is_repaired_in_windows_smaller_than_its_ranges(make_cluster):
    rows = {k: f"r{k}-" + "z" * 30 for k in range(800)}
    c = make_cluster(3, ["cluster.read_answer_rows_max=7", "cluster.max_hint_window_ms=0"])
    s = c.session()
    create_table(c, s, "rc", 3)
    victim = 3
    c.kill(victim)
    c.wait_seen(c.others(victim), [victim], up=False)
    write(s, "rc", rows, CL.QUORUM)
    c.restart()
    found, _ = read_alone(c, victim, "rc", list(rows)[:20])
    assert found == {}, "node 3 should have missed every write (no hints)"

    entries, out = repaired_entries(c, victim, "rc")
    assert entries >= len(rows), out
    found, _ = read_alone(c, victim, "rc", rows)
    assert len(keys_on(c, s.cluster, "rc", victim, rows)) == len(rows)  # RF 3 on 3 nodes
    assert found == rows, diff(rows, found)
    entries, out = repaired_entries(c, victim, "rc")
    assert entries == 0, out
