// auth-probe: logs in with the Go driver (gocql v2) and its PasswordAuthenticator, then
// reads system.local. Prints "ok <release_version>" and exits 0, or "FAIL <error>" (gocql
// passes the node's message on: "Provided username … and/or password are incorrect") and
// exits 1. With --ca, connects over TLS trusting that CA certificate (PEM).
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

var (
	host     = flag.String("host", "127.0.0.1", "node to connect to")
	port     = flag.Int("port", 9042, "CQL port")
	user     = flag.String("user", "cassandra", "role to log in as")
	password = flag.String("password", "", "its password")
	ca       = flag.String("ca", "", "CA certificate (PEM) of a TLS port; empty: plaintext")
)

func main() {
	flag.Parse()
	c := gocql.NewCluster(*host)
	c.Port = *port
	c.Timeout = 10 * time.Second
	c.ConnectTimeout = 10 * time.Second
	c.ProtoVersion = 4
	c.Authenticator = gocql.PasswordAuthenticator{Username: *user, Password: *password}
	if *ca != "" {
		c.SslOpts = &gocql.SslOptions{CaPath: *ca, EnableHostVerification: true}
	}
	s, err := c.CreateSession()
	if err != nil {
		fmt.Printf("FAIL %v\n", err)
		os.Exit(1)
	}
	defer s.Close()
	var version string
	if err := s.Query("SELECT release_version FROM system.local").Scan(&version); err != nil {
		fmt.Printf("FAIL query: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("ok %s\n", version)
}
