// Writes unique keys through ioredis's Cluster, unchanged, while the
// cluster reshards and fails over.
//
// Usage: node cluster_writer.js host:port[,host:port…] prefix writes-per-second
//
// Writes SET prefix:N N for N = 0, 1, …, and every tenth N a CL.THROTTLE
// on one of eight keys prefix:rl:M. Prints one line per write: "ok KEY US"
// when acknowledged at US (Unix time, µs), "err KEY US MESSAGE" when
// refused. Stops when stdin closes. The test is cluster_clients_test.go.
const Redis = require('ioredis');
const { performance } = require('perf_hooks');

const [addrs, prefix, rate] = process.argv.slice(2);
const nodes = addrs.split(',').map((a) => {
  const i = a.lastIndexOf(':');
  return { host: a.slice(0, i), port: Number(a.slice(i + 1)) };
});
const interval = 1000 / Number(rate);
const us = () => Math.round((performance.timeOrigin + performance.now()) * 1000);
const sleep = (ms) => new Promise((res) => setTimeout(res, ms));

let stop = false;
process.stdin.on('end', () => { stop = true; });
process.stdin.resume();

(async () => {
  const c = new Redis.Cluster(nodes, {
    redisOptions: { commandTimeout: 2000, connectTimeout: 1000 },
  });
  c.on('error', () => {}); // each command reports its own error
  let due = performance.now();
  for (let n = 0; !stop; n++) {
    const writes = [[`${prefix}:${n}`, ['SET', `${prefix}:${n}`, String(n)]]];
    if (n % 10 === 0) {
      const rl = `${prefix}:rl:${Math.floor(n / 10) % 8}`;
      writes.push([rl, ['CL.THROTTLE', rl, '1000', '1', '3600']]);
    }
    for (const [key, cmd] of writes) {
      try {
        await c.call(...cmd);
        process.stdout.write(`ok ${key} ${us()}\n`);
      } catch (e) { // every refusal is reported, none ends the run
        process.stdout.write(`err ${key} ${us()} ${String(e.message).replace(/\s+/g, ' ')}\n`);
      }
    }
    due = Math.max(due + interval, performance.now() - 100);
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
  }
  c.disconnect();
  process.exit(0);
})().catch((e) => { console.error(e); process.exit(1); });
