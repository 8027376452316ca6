package mosaic.ycsb;

import com.datastax.driver.core.BoundStatement;
import com.datastax.driver.core.Cluster;
import com.datastax.driver.core.ColumnDefinitions;
import com.datastax.driver.core.ConsistencyLevel;
import com.datastax.driver.core.PreparedStatement;
import com.datastax.driver.core.ProtocolVersion;
import com.datastax.driver.core.ResultSet;
import com.datastax.driver.core.Row;
import com.datastax.driver.core.Session;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.Vector;
import java.util.concurrent.ConcurrentHashMap;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

/**
 * A YCSB binding over CQL (DataStax Java driver 3.x, protocol v4) for Mosaic and Apache
 * Cassandra: the schema of YCSB's Cassandra binding (keyspace {@code ycsb}, table
 * {@code usertable (y_id text PRIMARY KEY, field0..N text)}), prepared statements, one
 * {@link Cluster} shared by every client thread.
 *
 * <p>Properties: {@code hosts} (comma-separated, required), {@code port} (9042),
 * {@code cassandra.keyspace} (ycsb), {@code cassandra.readconsistencylevel} and
 * {@code cassandra.writeconsistencylevel} (ONE), {@code mosaic.createschema} (false: when
 * true, the first thread creates the keyspace with {@code mosaic.rf} (1) and the table with
 * {@code fieldcount} (10) fields if absent).
 */
public final class CqlDb extends DB {
  private static final Object LOCK = new Object();
  private static Cluster cluster;
  private static Session session;
  private static int users;
  private static final Map<String, PreparedStatement> STATEMENTS = new ConcurrentHashMap<>();
  private static ConsistencyLevel readCl;
  private static ConsistencyLevel writeCl;
  private static String keyspace;

  @Override
  public void init() throws DBException {
    synchronized (LOCK) {
      users++;
      if (session != null) {
        return;
      }
      Properties p = getProperties();
      String hosts = p.getProperty("hosts");
      if (hosts == null) {
        throw new DBException("property `hosts` is required");
      }
      int port = Integer.parseInt(p.getProperty("port", "9042"));
      keyspace = p.getProperty("cassandra.keyspace", "ycsb");
      readCl = ConsistencyLevel.valueOf(p.getProperty("cassandra.readconsistencylevel", "ONE"));
      writeCl = ConsistencyLevel.valueOf(p.getProperty("cassandra.writeconsistencylevel", "ONE"));
      try {
        cluster = Cluster.builder()
            .addContactPoints(hosts.split(","))
            .withPort(port)
            .withProtocolVersion(ProtocolVersion.V4)
            .withoutJMXReporting()
            .build();
        Session s = cluster.connect();
        if (Boolean.parseBoolean(p.getProperty("mosaic.createschema", "false"))) {
          int rf = Integer.parseInt(p.getProperty("mosaic.rf", "1"));
          int fields = Integer.parseInt(p.getProperty("fieldcount", "10"));
          s.execute("CREATE KEYSPACE IF NOT EXISTS " + keyspace + " WITH replication = "
              + "{'class': 'SimpleStrategy', 'replication_factor': " + rf + "}");
          StringBuilder columns = new StringBuilder();
          for (int i = 0; i < fields; i++) {
            columns.append(", field").append(i).append(" text");
          }
          s.execute("CREATE TABLE IF NOT EXISTS " + keyspace
              + ".usertable (y_id text PRIMARY KEY" + columns + ")");
        }
        session = s;
      } catch (RuntimeException e) {
        if (cluster != null) {
          cluster.close();
          cluster = null;
        }
        users--;
        throw new DBException(e);
      }
    }
  }

  @Override
  public void cleanup() throws DBException {
    synchronized (LOCK) {
      users--;
      if (users == 0 && cluster != null) {
        cluster.close();
        cluster = null;
        session = null;
        STATEMENTS.clear();
      }
    }
  }

  private static PreparedStatement prepared(String cql, ConsistencyLevel cl) {
    return STATEMENTS.computeIfAbsent(cql, q -> session.prepare(q).setConsistencyLevel(cl));
  }

  private static String columns(Set<String> fields) {
    return fields == null ? "*" : String.join(", ", new TreeSet<>(fields));
  }

  private static HashMap<String, ByteIterator> record(Row row, Set<String> fields) {
    HashMap<String, ByteIterator> out = new HashMap<>();
    for (ColumnDefinitions.Definition d : row.getColumnDefinitions()) {
      String name = d.getName();
      if (name.equals("y_id") || (fields != null && !fields.contains(name))) {
        continue;
      }
      ByteBuffer b = row.getBytesUnsafe(name);
      byte[] bytes = new byte[b == null ? 0 : b.remaining()];
      if (b != null) {
        b.duplicate().get(bytes);
      }
      out.put(name, new ByteArrayByteIterator(bytes));
    }
    return out;
  }

  @Override
  public Status read(String table, String key, Set<String> fields,
      Map<String, ByteIterator> result) {
    try {
      String cql = "SELECT " + columns(fields) + " FROM " + keyspace + "." + table
          + " WHERE y_id = ?";
      Row row = session.execute(prepared(cql, readCl).bind(key)).one();
      if (row == null) {
        return Status.NOT_FOUND;
      }
      result.putAll(record(row, fields));
      return Status.OK;
    } catch (RuntimeException e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
      Vector<HashMap<String, ByteIterator>> result) {
    try {
      String cql = "SELECT " + columns(fields) + " FROM " + keyspace + "." + table
          + " WHERE token(y_id) >= token(?) LIMIT ?";
      ResultSet rows = session.execute(prepared(cql, readCl).bind(startkey, recordcount));
      for (Row row : rows) {
        result.add(record(row, fields));
      }
      return Status.OK;
    } catch (RuntimeException e) {
      return Status.ERROR;
    }
  }

  private static Status write(String cql, List<Object> values) {
    try {
      BoundStatement b = prepared(cql, writeCl).bind(values.toArray());
      session.execute(b);
      return Status.OK;
    } catch (RuntimeException e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    TreeSet<String> names = new TreeSet<>(values.keySet());
    List<Object> bound = new ArrayList<>();
    StringBuilder set = new StringBuilder();
    for (String name : names) {
      set.append(set.length() == 0 ? "" : ", ").append(name).append(" = ?");
      bound.add(values.get(name).toString());
    }
    bound.add(key);
    return write("UPDATE " + keyspace + "." + table + " SET " + set + " WHERE y_id = ?", bound);
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    TreeSet<String> names = new TreeSet<>(values.keySet());
    List<Object> bound = new ArrayList<>();
    bound.add(key);
    StringBuilder marks = new StringBuilder("?");
    for (String name : names) {
      marks.append(", ?");
      bound.add(values.get(name).toString());
    }
    return write("INSERT INTO " + keyspace + "." + table + " (y_id, " + String.join(", ", names)
        + ") VALUES (" + marks + ")", bound);
  }

  @Override
  public Status delete(String table, String key) {
    List<Object> bound = new ArrayList<>();
    bound.add(key);
    return write("DELETE FROM " + keyspace + "." + table + " WHERE y_id = ?", bound);
  }
}
