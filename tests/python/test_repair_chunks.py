"""Repair streams a mismatched range in bounded windows (issue 21): with replicas answering
pages of 7 entries (`[cluster] read_answer_rows_max`), a wiped node's ranges — each far larger
than a page — are streamed a window at a time, and the node converges: it holds every row
afterwards and a second repair streams nothing."""
from test_cluster import CL, diff, keys_on, loaded_cluster, read_alone, repaired_entries


def test_a_wiped_node_is_repaired_in_windows_smaller_than_its_ranges(make_cluster):
    rows = {k: f"r{k}-" + "z" * 30 for k in range(800)}
    c, s = loaded_cluster(make_cluster, 3, "rc", rows, CL.ALL, ["cluster.read_answer_rows_max=7"])
    victim = 3
    c.wipe(victim)
    c.wait_seen(c.others(victim), [victim], up=False)
    c.restart()
    c.wait_schema_agreement()

    entries, out = repaired_entries(c, victim, "rc")
    assert entries >= len(rows), out
    found, _ = read_alone(c, victim, "rc", rows)
    assert len(keys_on(c, s.cluster, "rc", victim, rows)) == len(rows)  # RF 3 on 3 nodes
    assert found == rows, diff(rows, found)
    entries, out = repaired_entries(c, victim, "rc")
    assert entries == 0, out
