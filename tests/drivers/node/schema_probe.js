// schema_probe.js: checks that the Node.js cassandra-driver (4.x) keeps its schema
// metadata fresh without reconnecting while another client changes the schema through
// another node.
//
// An observer client is pinned to --observer (its control connection, which receives
// SCHEMA_CHANGE events, is there); DDL goes through a second client pinned to --ddl. The
// observer reads a table's metadata before each change (the driver caches it until an
// event says it changed) and must see the change within --wait-ms. Each step prints one
// line; the exit status is 1 at the first step that does not converge.
'use strict';
const cassandra = require('cassandra-driver');

function arg(name, fallback) {
  const i = process.argv.indexOf('--' + name);
  return i >= 0 ? process.argv[i + 1] : fallback;
}
const observerHost = arg('observer', '127.0.0.3');
const ddlHost = arg('ddl', '127.0.0.1');
const port = Number(arg('port', '9042'));
const ks = arg('keyspace', 'node_probe');
const waitMs = Number(arg('wait-ms', '15000'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function client(host) {
  const lb = new cassandra.policies.loadBalancing.AllowListPolicy(
    new cassandra.policies.loadBalancing.RoundRobinPolicy(), [`${host}:${port}`]);
  return new cassandra.Client({
    contactPoints: [host],
    protocolOptions: { port },
    localDataCenter: 'datacenter1',
    policies: { loadBalancing: lb },
    socketOptions: { readTimeout: 10000 },
  });
}

// The observer's view of the keyspace: null when unknown, else table → sorted columns.
async function view(obs) {
  if (!obs.metadata.keyspaces[ks]) return null;
  const out = {};
  for (const name of ['t', 'mine']) {
    const t = await obs.metadata.getTable(ks, name);
    if (t) out[name] = t.columns.map((c) => c.name).sort().join(',');
  }
  return out;
}

async function step(name, runner, stmt, obs, want) {
  await runner.execute(stmt);
  const start = Date.now();
  let last;
  while (Date.now() - start < waitMs) {
    last = await view(obs);
    if (want(last)) {
      console.log(`ok ${name} after ${Date.now() - start} ms`);
      return;
    }
    await sleep(50);
  }
  console.log(`FAIL ${name}: after ${waitMs} ms the observer's metadata still has ${JSON.stringify(last)}`);
  process.exit(1);
}

(async () => {
  const obs = client(observerHost);
  const writer = client(ddlHost);
  await obs.connect();
  await writer.connect();
  await step('create keyspace', writer,
    `CREATE KEYSPACE ${ks} WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}`,
    obs, (v) => v !== null);
  await step('create table', writer, `CREATE TABLE ${ks}.t (k int PRIMARY KEY, v text)`,
    obs, (v) => v && v.t === 'k,v');
  await step('alter table', writer, `ALTER TABLE ${ks}.t ADD w int`,
    obs, (v) => v && v.t === 'k,v,w');
  await step('create table through the observer', obs, `CREATE TABLE ${ks}.mine (k int PRIMARY KEY, x blob)`,
    obs, (v) => v && v.mine === 'k,x');
  await step('drop table', writer, `DROP TABLE ${ks}.t`, obs, (v) => v && v.t === undefined);
  await step('drop keyspace', writer, `DROP KEYSPACE ${ks}`, obs, (v) => v === null);
  await obs.shutdown();
  await writer.shutdown();
})().catch((e) => {
  console.log(`FAIL ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
