"""User-defined types through the Python driver (issue 15): a class registered for a UDT,
the cqlengine object mapper on a model with collections and a UDT, the driver's schema
metadata of types, and DESCRIBE output that recreates the schema."""
import pytest
from cassandra import InvalidRequest
from cassandra.cqlengine import columns, connection, management
from cassandra.cqlengine.models import Model
from cassandra.cqlengine.usertype import UserType


class Address:
    def __init__(self, street=None, city=None, zip=None):
        self.street, self.city, self.zip = street, city, zip

def test_a_registered_class_round_trips_through_bound_values(cluster, session, ks):
    session.execute("CREATE TYPE address (street text, city text, zip int)")
    session.execute("CREATE TABLE t (k int PRIMARY KEY, home frozen<address>, work address, "
                    "past list<frozen<address>>)")
    cluster.register_user_type(ks, "address", Address)
    ins = session.prepare("INSERT INTO t (k, home, work, past) VALUES (?, ?, ?, ?)")
    session.execute(ins, (1, Address("1 Main", "Springfield", 5), Address(city="Shelbyville"),
                           [Address("a", "b", 1), Address("c", "d", None)]))
    session.execute("UPDATE t SET work.zip = 7 WHERE k = 1")
    row = session.execute("SELECT home, work, past, home.city FROM t WHERE k = 1").one()
    assert (row.home.street, row.home.city, row.home.zip) == ("1 Main", "Springfield", 5)
    assert (row.work.street, row.work.city, row.work.zip) == (None, "Shelbyville", 7)
    assert [(a.street, a.zip) for a in row.past] == [("a", 1), ("c", None)]
    assert row.home_city == "Springfield"
    meta = cluster.metadata.keyspaces[ks]
    cluster.refresh_user_type_metadata(ks, "address")
    assert meta.user_types["address"].field_names == ["street", "city", "zip"]
    assert meta.tables["t"].columns["home"].cql_type == "frozen<address>"
    assert meta.tables["t"].columns["work"].cql_type == "address"

def test_altering_a_type_changes_what_reads_return(session, ks):
    session.execute("CREATE TYPE address (street text, city text)")
    session.execute("CREATE TABLE t (k int PRIMARY KEY, a frozen<address>)")
    session.execute("INSERT INTO t (k, a) VALUES (1, {street: 's', city: 'c'})")
    session.execute("ALTER TYPE address ADD zip int")
    session.execute("ALTER TYPE address RENAME city TO town")
    row = session.execute("SELECT a FROM t WHERE k = 1").one()
    assert (row.a.street, row.a.town, row.a.zip) == ("s", "c", None)
    with pytest.raises(InvalidRequest, match="still used by table"):
        session.execute("DROP TYPE address")
    session.execute("DROP TABLE t")
    session.execute("DROP TYPE address")
    assert list(session.execute(f"SELECT * FROM system_schema.types WHERE keyspace_name = '{ks}'")) == []

def test_describe_recreates_types_before_tables(session, ks):
    session.execute("CREATE TYPE address (street text, city text)")
    session.execute("CREATE TYPE person (name text, home frozen<address>)")
    session.execute("CREATE TABLE t (k int PRIMARY KEY, p frozen<person>, tags set<text>)")
    rows = list(session.execute(f"DESCRIBE KEYSPACE {ks}"))
    kinds = [(r.type, r.name) for r in rows]
    assert kinds == [("keyspace", ks), ("type", "address"), ("type", "person"), ("table", "t")]
    statements = [r.create_statement for r in rows]
    session.execute(f"DROP KEYSPACE {ks}")
    for statement in statements:
        session.execute(statement)
    assert session.execute(f"SELECT type FROM system_schema.columns WHERE keyspace_name = '{ks}' "
                           "AND table_name = 't' AND column_name = 'p'").one().type == "frozen<person>"

class CqlAddress(UserType):
    __type_name__ = "cql_address"
    street = columns.Text()
    city = columns.Text()

class Person(Model):
    id = columns.Integer(primary_key=True)
    name = columns.Text()
    tags = columns.Set(columns.Text)
    scores = columns.Map(columns.Text, columns.Integer)
    visits = columns.List(columns.Integer)
    home = columns.UserDefinedType(CqlAddress)

def test_cqlengine_model_with_collections_and_a_user_type(node, ks, monkeypatch):
    monkeypatch.setenv("CQLENG_ALLOW_SCHEMA_MANAGEMENT", "1")
    # Its own driver: unregistering the connection shuts its cluster down.
    connection.register_connection("mosaic", session=node.cluster().connect(), default=True)
    try:
        Person.__keyspace__ = ks
        CqlAddress.__keyspace__ = ks
        management.sync_table(Person, keyspaces=[ks], connections=["mosaic"])
        Person.create(id=1, name="ann", tags={"a"}, scores={"x": 1}, visits=[1],
                      home=CqlAddress(street="1 Main", city="Springfield"))
        p = Person.objects(id=1).get()
        p.tags.add("b")
        p.scores["y"] = 2
        p.visits.append(2)
        p.home = CqlAddress(street="2 Side", city="Shelbyville")
        p.save()
        Person.objects(id=1).update(visits__append=[3], tags__remove={"a"})
        got = Person.objects(id=1).get()
        assert got.tags == {"b"}
        assert got.scores == {"x": 1, "y": 2}
        assert got.visits == [1, 2, 3]
        assert (got.home.street, got.home.city) == ("2 Side", "Shelbyville")
    finally:
        connection.unregister_connection("mosaic")
