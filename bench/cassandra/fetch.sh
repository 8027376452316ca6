#!/usr/bin/env bash
# Fetches Apache Cassandra (cassandra-all and its dependencies) from Maven Central into
# $CASSANDRA_HOME/lib (default ~/.cache/mosaic-bench/cassandra-4.1.10). Idempotent.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=4.1.10
home=${CASSANDRA_HOME:-$HOME/.cache/mosaic-bench/cassandra-$version}
if [ -f "$home/lib/cassandra-all-$version.jar" ]; then
    echo "$home"
    exit 0
fi
mkdir -p "$home/lib"
mvn -q -f "$here/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$home/lib" -DincludeScope=runtime >&2
test -f "$home/lib/cassandra-all-$version.jar"
echo "$home"
