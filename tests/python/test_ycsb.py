"""A YCSB-shaped table loaded and read back through prepared statements."""
import random

from cassandra.concurrent import execute_concurrent_with_args

FIELDS = [f"field{i}" for i in range(10)]


def test_usertable_load_and_read(session, ks):
    cols = ", ".join(f"{f} varchar" for f in FIELDS)
    session.execute(f"CREATE TABLE usertable (y_id varchar PRIMARY KEY, {cols})")
    ins = session.prepare(f"INSERT INTO usertable (y_id, {', '.join(FIELDS)}) VALUES (?{', ?' * len(FIELDS)})")
    rng = random.Random(7)
    records = {}
    for i in range(2000):
        key = f"user{rng.getrandbits(63)}"
        records[key] = [f"{key}-{f}-" + "x" * 90 for f in FIELDS]
    results = execute_concurrent_with_args(session, ins, [(k, *v) for k, v in records.items()], concurrency=32)
    assert all(ok for ok, _ in results)
    read = session.prepare("SELECT * FROM usertable WHERE y_id = ?")
    read_one = session.prepare("SELECT field3 FROM usertable WHERE y_id = ?")
    update = session.prepare("UPDATE usertable SET field3 = ? WHERE y_id = ?")
    for key in rng.sample(sorted(records), 300):
        row = session.execute(read, (key,)).one()
        assert [getattr(row, f) for f in FIELDS] == records[key]
        session.execute(update, ("updated", key))
        assert session.execute(read_one, (key,)).one().field3 == "updated"
    assert session.execute(read, ("user-missing",)).one() is None
    assert session.execute("SELECT count(*) FROM usertable").one().count == 2000
