// schema-probe: checks that the Go driver (gocql v2) keeps its schema metadata fresh
// without reconnecting while another client changes the schema through another node.
//
// An observer session is pinned to --observer (its control connection, which receives
// SCHEMA_CHANGE events, is there); DDL is sent through a second session pinned to --ddl.
// After each statement the observer's KeyspaceMetadata must show the change within
// --wait. Then the observer session runs a CREATE TABLE itself and must see that table
// too (what a Go application does: create, then look up its metadata). Each step prints
// one line; the exit status is 1 at the first step that does not converge.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

var (
	observer = flag.String("observer", "127.0.0.3", "host the observer session is pinned to")
	ddl      = flag.String("ddl", "127.0.0.1", "host the DDL session is pinned to")
	port     = flag.Int("port", 9042, "CQL port")
	keyspace = flag.String("keyspace", "go_probe", "keyspace to create and drop")
	wait     = flag.Duration("wait", 15*time.Second, "how long a change may take to show")
)

func session(host string) (*gocql.Session, error) {
	c := gocql.NewCluster(host)
	c.Port = *port
	c.Timeout = 10 * time.Second
	c.ConnectTimeout = 10 * time.Second
	c.HostFilter = gocql.WhiteListHostFilter(host)
	return c.CreateSession()
}

// tableColumns is the observer's view: nil when the keyspace is unknown, else table → columns.
func tableColumns(s *gocql.Session, ks string) (map[string][]string, error) {
	m, err := s.KeyspaceMetadata(ks)
	if errors.Is(err, gocql.ErrKeyspaceDoesNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for name, t := range m.Tables {
		cols := []string{}
		for c := range t.Columns {
			cols = append(cols, c)
		}
		sort.Strings(cols)
		out[name] = cols
	}
	return out, nil
}

func describe(tables map[string][]string) string {
	if tables == nil {
		return "no keyspace"
	}
	names := []string{}
	for n, cols := range tables {
		names = append(names, n+"("+strings.Join(cols, ",")+")")
	}
	sort.Strings(names)
	return "tables [" + strings.Join(names, " ") + "]"
}

func step(name string, run *gocql.Session, stmt string, observer *gocql.Session, want func(map[string][]string) bool) {
	if err := run.Query(stmt).Exec(); err != nil {
		fmt.Printf("FAIL %s: %s: %v\n", name, stmt, err)
		os.Exit(1)
	}
	start := time.Now()
	var last map[string][]string
	for time.Since(start) < *wait {
		tables, err := tableColumns(observer, *keyspace)
		if err != nil {
			fmt.Printf("FAIL %s: metadata: %v\n", name, err)
			os.Exit(1)
		}
		last = tables
		if want(tables) {
			fmt.Printf("ok %s after %d ms\n", name, time.Since(start).Milliseconds())
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Printf("FAIL %s: after %s the observer's metadata still has %s\n", name, *wait, describe(last))
	os.Exit(1)
}

func main() {
	flag.Parse()
	obs, err := session(*observer)
	if err != nil {
		fmt.Printf("FAIL connect observer: %v\n", err)
		os.Exit(1)
	}
	defer obs.Close()
	writer, err := session(*ddl)
	if err != nil {
		fmt.Printf("FAIL connect ddl: %v\n", err)
		os.Exit(1)
	}
	defer writer.Close()
	ks := *keyspace
	has := func(table string, cols ...string) func(map[string][]string) bool {
		return func(t map[string][]string) bool {
			got, ok := t[table]
			return ok && strings.Join(got, ",") == strings.Join(cols, ",")
		}
	}
	step("create keyspace", writer,
		"CREATE KEYSPACE "+ks+" WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		obs, func(t map[string][]string) bool { return t != nil })
	step("create table", writer, "CREATE TABLE "+ks+".t (k int PRIMARY KEY, v text)", obs, has("t", "k", "v"))
	step("alter table", writer, "ALTER TABLE "+ks+".t ADD w int", obs, has("t", "k", "v", "w"))
	step("create table through the observer", obs, "CREATE TABLE "+ks+".mine (k int PRIMARY KEY, x blob)", obs, has("mine", "k", "x"))
	step("drop table", writer, "DROP TABLE "+ks+".t", obs, func(t map[string][]string) bool {
		_, ok := t["t"]
		return t != nil && !ok
	})
	step("drop keyspace", writer, "DROP KEYSPACE "+ks, obs, func(t map[string][]string) bool { return t == nil })
}
