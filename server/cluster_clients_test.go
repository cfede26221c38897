package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// Cluster clients against one node in cluster mode (cluster-enabled yes):
// go-redis ClusterClient, redis-py RedisCluster, ioredis Cluster and
// redis-cli -c must start, route plain commands, pipelines, transactions
// over hash tags, the rate-limiting commands and SCAN, and see CROSSSLOT
// refusals. Each skips when its client is not installed.

const crossSlot = "CROSSSLOT Keys in request don't hash to the same slot"

func TestClusterGoRedis(t *testing.T) {
	ts := newTestServer(t, "cluster-enabled", "yes")
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{ts.addr}, Protocol: proto, MaxRedirects: 1})
			defer rdb.Close()
			p := fmt.Sprintf("p%d:", proto)
			require.NoError(t, rdb.Set(ctx, p+"plain", "v", 0).Err())
			require.Equal(t, "v", rdb.Get(ctx, p+"plain").Val())

			// A pipeline over many slots.
			cmds, err := rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
				for i := range 50 {
					pipe.Incr(ctx, fmt.Sprintf("%sk%d", p, i))
				}
				return nil
			})
			require.NoError(t, err)
			require.Len(t, cmds, 50)
			for _, c := range cmds {
				require.Equal(t, int64(1), c.(*redis.IntCmd).Val())
			}

			// MULTI/EXEC over one hash tag.
			tx, err := rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
				pipe.ZAdd(ctx, "{"+p+"user}:log", redis.Z{Score: 1, Member: "a"})
				pipe.ZCard(ctx, "{"+p+"user}:log")
				pipe.Expire(ctx, "{"+p+"user}:log", time.Minute)
				return nil
			})
			require.NoError(t, err)
			require.Equal(t, int64(1), tx[1].(*redis.IntCmd).Val())

			// The rate limiters.
			require.Equal(t, []any{int64(0), int64(11), int64(10), int64(-1), int64(1)},
				rdb.Do(ctx, "CL.THROTTLE", p+"cl", "10", "1", "1").Val())
			sl, err := rdb.Do(ctx, "SL.THROTTLE", p+"sl", "5", "1000").Slice()
			require.NoError(t, err)
			require.Equal(t, int64(0), sl[0])
			all, err := rdb.Do(ctx, "CL.THROTTLEALL", "2", "{"+p+"u}s", "10", "1", "1", "{"+p+"u}m", "100", "60", "60").Slice()
			require.NoError(t, err)
			require.Equal(t, int64(0), all[0])

			// SCAN on every master (the one node) finds the keys.
			var found []string
			require.NoError(t, rdb.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
				keys, err := c.Keys(ctx, p+"k*").Result()
				found = append(found, keys...)
				it := c.Scan(ctx, 0, p+"k1*", 10).Iterator()
				for it.Next(ctx) {
					found = append(found, "scan:"+it.Val())
				}
				return errors.Join(err, it.Err())
			}))
			require.Contains(t, found, p+"k49")
			require.Contains(t, found, "scan:"+p+"k10")

			// Keys of different slots are refused by the server.
			require.EqualError(t, rdb.MSet(ctx, p+"a", "1", p+"b", "2").Err(), crossSlot)
			require.EqualError(t, rdb.Do(ctx, "CL.THROTTLEALL", "2", p+"a", "10", "1", "1", p+"b", "10", "1", "1").Err(), crossSlot)
			require.NoError(t, rdb.MSet(ctx, "{"+p+"t}a", "1", "{"+p+"t}b", "2").Err())

			nodes, err := rdb.ClusterSlots(ctx).Result()
			require.NoError(t, err)
			require.Len(t, nodes, 1)
			require.Equal(t, ts.addr, nodes[0].Nodes[0].Addr)
		})
	}
}

// nodeModules returns the Node.js clients' node_modules directory, or
// skips the test when node or ioredis is missing.
func nodeModules(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	dir, err := filepath.Abs("../clients/node/node_modules")
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(dir, "ioredis")); err != nil {
		t.Skip("ioredis is not installed in clients/node (npm ci)")
	}
	return dir
}

// runClient runs a client program and returns its output; it fails the
// test when the program fails.
func runClient(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s:\n%s", name, out)
	return string(out)
}

func TestClusterIoredis(t *testing.T) {
	modules := nodeModules(t)
	ts := newTestServer(t, "cluster-enabled", "yes")
	host, port, _ := net.SplitHostPort(ts.addr)
	const script = `
const Redis = require('ioredis');
const assert = require('assert');
(async () => {
  const c = new Redis.Cluster([{host: process.env.HOST, port: +process.env.PORT}], {redisOptions: {maxRetriesPerRequest: 0}});
  assert.strictEqual(await c.set('plain', 'v'), 'OK');
  assert.strictEqual(await c.get('plain'), 'v');
  const p = await c.pipeline().incr('{u}a').incr('{u}a').get('{u}a').exec();
  assert.deepStrictEqual(p.map(r => r[1]), [1, 2, '2']);
  const m = await c.multi().zadd('{u}log', 1, 'x').zcard('{u}log').pexpire('{u}log', 1000).exec();
  assert.deepStrictEqual(m.map(r => r[1]), [1, 1, 1]);
  assert.deepStrictEqual(await c.call('CL.THROTTLE', 'cl', '10', '1', '1'), [0, 11, 10, -1, 1]);
  assert.strictEqual((await c.call('SL.THROTTLE', 'sl', '5', '1000'))[0], 0);
  const keys = [];
  for (const node of c.nodes('master')) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', '{u}*', 'COUNT', 10);
      cursor = next; keys.push(...batch);
    } while (cursor !== '0');
  }
  assert.deepStrictEqual(keys.sort(), ['{u}a', '{u}log']);
  await assert.rejects(c.mset('a', '1', 'b', '2'), /CROSSSLOT Keys in request don't hash to the same slot/);
  await c.quit();
  console.log('ok');
})().catch(e => { console.error(e); process.exit(1); });
`
	out := runClient(t, []string{"NODE_PATH=" + modules, "HOST=" + host, "PORT=" + port}, "node", "-e", script)
	require.Equal(t, "ok\n", out)
}

func TestClusterRedisPy(t *testing.T) {
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import redis.cluster").Run(); err != nil {
		t.Skip("redis-py is not installed for /usr/bin/python3 (apt-get install python3-redis)")
	}
	ts := newTestServer(t, "cluster-enabled", "yes")
	host, port, _ := net.SplitHostPort(ts.addr)
	const script = `
import os, redis
from redis.cluster import RedisCluster
rc = RedisCluster(host=os.environ["HOST"], port=int(os.environ["PORT"]))
assert rc.set("plain", "v")
assert rc.get("plain") == b"v"
pipe = rc.pipeline()
for i in range(20):
    pipe.incr("k%d" % i)
assert pipe.execute() == [1] * 20
assert rc.execute_command("CL.THROTTLE", "cl", 10, 1, 1) == [0, 11, 10, -1, 1]
assert rc.execute_command("SL.THROTTLE", "sl", 5, 1000)[0] == 0
assert rc.execute_command("CL.THROTTLEALL", 2, "{u}s", 10, 1, 1, "{u}m", 100, 60, 60)[0] == 0
assert sorted(rc.scan_iter(match="k1*")) == sorted([b"k1"] + [b"k1%d" % i for i in range(10)])
node = rc.get_node_from_key("{t}a")
tx = node.redis_connection.pipeline(transaction=True)
tx.set("{t}a", 1).incr("{t}b").get("{t}a")
assert tx.execute() == [True, 1, b"1"]
try:
    node.redis_connection.mset({"a": 1, "b": 2})
    raise SystemExit("MSET over two slots was not refused")
except redis.exceptions.ClusterCrossSlotError:
    pass
try:
    rc.mset({"a": 1, "b": 2})
    raise SystemExit("RedisCluster sent MSET over two slots")
except redis.exceptions.RedisClusterException:
    pass
print("ok")
`
	out := runClient(t, []string{"HOST=" + host, "PORT=" + port}, python, "-c", script)
	require.Equal(t, "ok\n", out)
}

func TestClusterRedisCli(t *testing.T) {
	cli := lookTools(t, "redis-cli")[0]
	ts := newTestServer(t, "cluster-enabled", "yes")
	_, port, _ := net.SplitHostPort(ts.addr)
	run := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(cli, append([]string{"-c", "-p", port}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "redis-cli %q:\n%s", args, out)
		return string(out)
	}
	for i, tt := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"set", "foo", "bar"}, "OK\n"},
		{"", []string{"get", "foo"}, "bar\n"},
		{"", []string{"cl.throttle", "cl", "10", "1", "1"}, "0\n11\n10\n-1\n1\n"},
		{"", []string{"mset", "a", "1", "b", "2"}, crossSlot + "\n\n"}, // redis-cli adds a blank line after an error
		{"", []string{"cluster", "info"}, ""},
		{"MULTI\nSET {t}a 1\nINCR {t}b\nEXEC\n", nil, "OK\nQUEUED\nQUEUED\nOK\n1\n"},
		{"MULTI\nSET a 1\nSET b 1\nEXEC\nGET foo\n", nil, "OK\nQUEUED\nQUEUED\n" + crossSlot + "\n\nbar\n"},
		{"SCAN 0 MATCH fo* COUNT 1000\n", nil, "0\nfoo\n"},
	} {
		have := run(tt.stdin, tt.args...)
		if tt.want == "" {
			require.Contains(t, have, "cluster_state:ok", "step %d", i)
			continue
		}
		// redis-cli prints errors with a prefix when it writes to a
		// terminal only; compare without it.
		have = strings.ReplaceAll(have, "(error) ", "")
		if have != tt.want {
			t.Errorf("step %d redis-cli -c %q (stdin %q): have %q, want %q", i, tt.args, tt.stdin, have, tt.want)
		}
	}
	// redis-cli's cluster manager sees one master owning every slot.
	out, err := exec.Command(cli, "--cluster", "check", ts.addr).CombinedOutput()
	require.NoError(t, err, "redis-cli --cluster check:\n%s", out)
	require.Contains(t, string(out), "[OK] All 16384 slots covered.")
	require.Contains(t, string(out), "[OK] All nodes agree about slots configuration.")
	// The keys of the commands above went to the one node.
	keys := strings.Fields(run("", "keys", "*"))
	sort.Strings(keys)
	require.Equal(t, []string{"cl", "foo", "{t}a", "{t}b"}, keys)
}
