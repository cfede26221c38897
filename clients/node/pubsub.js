// Pub/Sub through ioredis and node-redis (RESP2 and RESP3): prints what
// each subscriber received, one line each.
const Redis = require('ioredis');
const { createClient } = require('redis');
const port = Number(process.argv[2]);
const timeout = (ms) => new Promise((_, rej) => setTimeout(() => rej(new Error('timeout')), ms));
async function ioredis() {
  const sub = new Redis({ port, lazyConnect: false });
  const pub = new Redis({ port });
  const got = [];
  const done = new Promise((res) => {
    const push = (s) => { got.push(s); if (got.length === 2) res(); };
    sub.on('message', (ch, m) => push(`message ${ch} ${m}`));
    sub.on('pmessage', (p, ch, m) => push(`pmessage ${p} ${ch} ${m}`));
  });
  await sub.subscribe('io');
  await sub.psubscribe('i*');
  const n = await pub.publish('io', 'hi');
  await Promise.race([done, timeout(5000)]);
  sub.disconnect(); pub.disconnect();
  return `ioredis receivers=${n} ${got.sort().join(', ')}`;
}
async function nodeRedis(RESP) {
  const c = createClient({ url: `redis://127.0.0.1:${port}`, RESP });
  const s = c.duplicate();
  await c.connect(); await s.connect();
  let got;
  const done = new Promise((res) => { got = res; });
  await s.subscribe('nr', (m, ch) => got(`${ch} ${m}`));
  const n = await c.publish('nr', `resp${RESP}`);
  const msg = await Promise.race([done, timeout(5000)]);
  await s.unsubscribe('nr');
  const left = await c.pubSubNumSub('nr');
  await c.quit(); await s.quit();
  return `node-redis RESP${RESP} receivers=${n} ${msg} left=${left['nr']}`;
}
(async () => {
  console.log(await ioredis());
  console.log(await nodeRedis(2));
  console.log(await nodeRedis(3));
  process.exit(0);
})().catch((e) => { console.error(e); process.exit(1); });
