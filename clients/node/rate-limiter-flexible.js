// Drives rate-limiter-flexible, unchanged, over ioredis and node-redis
// against the server at argv[2] (host:port) and prints one JSON line per
// step. Steps that depend on time print what the clock decides; the test
// (command/script_node_test.go) stops or advances the server's clock.
//
// Between a client's two phases it prints "advance" and waits for a line
// on stdin; with argv[3] == "once" it stops after the first phase.
'use strict';

const readline = require('readline');
const Redis = require('ioredis');
const { createClient } = require('redis');
const {
  RateLimiterRedis,
  RateLimiterRedisNonAtomic,
  BurstyRateLimiter,
} = require('rate-limiter-flexible');

const [host, port] = process.argv[2].split(':');
const once = process.argv[3] === 'once';

// res keeps the fields of a RateLimiterRes (or null, or an Error).
function res(r) {
  if (r === null || r === undefined) return null;
  if (r instanceof Error) return { error: r.message };
  return {
    consumed: r.consumedPoints,
    remaining: r.remainingPoints,
    first: r.isFirstInDuration,
    ms: r.msBeforeNext,
  };
}

// settle turns a limiter's promise (which rejects with a RateLimiterRes
// when the limit is hit) into a printable value.
async function settle(p) {
  try {
    return { ok: res(await p) };
  } catch (e) {
    return { rejected: res(e) };
  }
}

function waitLine() {
  return new Promise((resolve) => {
    const rl = readline.createInterface({ input: process.stdin });
    rl.once('line', () => {
      rl.close();
      resolve();
    });
  });
}

async function run(name, client, opts) {
  const out = (step, v) => console.log(JSON.stringify({ client: name, step, v }));
  const p = `rlf:${name}:`;
  const lim = new RateLimiterRedis({ storeClient: client, keyPrefix: p + 'a', points: 5, duration: 10, ...opts });
  for (let i = 1; i <= 6; i++) out(`consume${i}`, await settle(lim.consume('u')));
  out('get', await settle(lim.get('u')));
  out('penalty', await settle(lim.penalty('u', 2)));
  out('reward', await settle(lim.reward('u', 3)));
  out('consume-points', await settle(lim.consume('w', 4)));
  out('consume-over', await settle(lim.consume('w', 2)));
  out('block', await settle(lim.block('b', 20)));
  out('get-blocked', await settle(lim.get('b')));
  out('delete', await lim.delete('u'));
  out('delete-missing', await lim.delete('u'));
  out('get-deleted', await settle(lim.get('u')));
  out('bad-points', await settle(lim.consume('u', 1.5)));

  const blocking = new RateLimiterRedis({
    storeClient: client, keyPrefix: p + 'blk', points: 2, duration: 5, blockDuration: 30, ...opts,
  });
  for (let i = 1; i <= 3; i++) out(`blocking${i}`, await settle(blocking.consume('u')));
  out('blocking-get', await settle(blocking.get('u')));

  const forever = new RateLimiterRedis({ storeClient: client, keyPrefix: p + 'inf', points: 3, duration: 0, ...opts });
  for (let i = 1; i <= 4; i++) out(`forever${i}`, await settle(forever.consume('u')));

  const nonAtomic = new RateLimiterRedisNonAtomic({
    storeClient: client, keyPrefix: p + 'na', points: 2, duration: 10, ...opts,
  });
  for (let i = 1; i <= 3; i++) out(`nonatomic${i}`, await settle(nonAtomic.consume('u')));

  const bursty = new BurstyRateLimiter(
    new RateLimiterRedis({ storeClient: client, keyPrefix: p + 'bs', points: 2, duration: 1, ...opts }),
    new RateLimiterRedis({ storeClient: client, keyPrefix: p + 'bb', points: 1, duration: 10, ...opts }),
  );
  for (let i = 1; i <= 4; i++) out(`bursty${i}`, await settle(bursty.consume('u')));

  if (once) return;
  console.log('advance');
  await waitLine();
  // After 11 seconds the 10-second window is over; the 30-second block and
  // the 20-second block are not.
  out('after-consume', await settle(lim.consume('w')));
  out('after-blocked', await settle(lim.get('b')));
  out('after-blocking', await settle(blocking.consume('u')));
  out('after-forever', await settle(forever.get('u')));
}

async function main() {
  const io = new Redis({ host, port: Number(port), lazyConnect: true, maxRetriesPerRequest: 0 });
  await io.connect();
  const nr = createClient({ url: `redis://${host}:${port}` });
  nr.on('error', (e) => console.error('node-redis:', e.message));
  await nr.connect();
  try {
    await io.del(...(await io.keys('rlf:*')), 'rlf:none');
    // Each client runs both phases; the test advances the clock at each
    // "advance" line.
    await run('ioredis', io, {});
    await run('node-redis', nr, { useRedisPackage: true });
  } finally {
    io.disconnect();
    await nr.quit();
  }
}

// stdin, once read, would keep the process alive.
main().then(() => process.exit(0), (e) => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});
