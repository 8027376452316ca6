module mosaic/tests/drivers/go

go 1.24

require github.com/apache/cassandra-gocql-driver/v2 v2.1.2

require gopkg.in/inf.v0 v0.9.1 // indirect
