package command

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

const errSubscribedGet = "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n"

// TestPubsubReplies checks every Pub/Sub command's replies and errors on
// one connection, in RESP2 and RESP3 (as a redis-server 7.0 gave them).
func TestPubsubReplies(t *testing.T) {
	script := []scriptStep{
		{[]string{"PUBLISH", "ch"}, "-ERR wrong number of arguments for 'publish' command\r\n", ""},
		{[]string{"SUBSCRIBE"}, "-ERR wrong number of arguments for 'subscribe' command\r\n", ""},
		{[]string{"PSUBSCRIBE"}, "-ERR wrong number of arguments for 'psubscribe' command\r\n", ""},
		{[]string{"PUBSUB"}, "-ERR wrong number of arguments for 'pubsub' command\r\n", ""},
		{[]string{"PUBSUB", "FOO"}, "-ERR unknown subcommand 'FOO'. Try PUBSUB HELP.\r\n", ""},
		{[]string{"PUBSUB", "NUMPAT", "x"}, "-ERR wrong number of arguments for 'pubsub|numpat' command\r\n", ""},
		{[]string{"PUBSUB", "channels", "a", "b"}, "-ERR unknown subcommand or wrong number of arguments for 'channels'. Try PUBSUB HELP.\r\n", ""},
		{[]string{"PUBLISH", "ch", "m"}, ":0\r\n", ""},
		{[]string{"SPUBLISH", "sh"}, "-ERR wrong number of arguments for 'spublish' command\r\n", ""},
		{[]string{"SSUBSCRIBE"}, "-ERR wrong number of arguments for 'ssubscribe' command\r\n", ""},
		{[]string{"PUBSUB", "SHARDCHANNELS", "a", "b"}, "-ERR unknown subcommand or wrong number of arguments for 'SHARDCHANNELS'. Try PUBSUB HELP.\r\n", ""},
		{[]string{"PUBSUB", "HELP", "x"}, "-ERR wrong number of arguments for 'pubsub|help' command\r\n", ""},
		{[]string{"SPUBLISH", "sh", "m"}, ":0\r\n", ""},
		{[]string{"PUBSUB", "SHARDNUMSUB"}, "*0\r\n", ""},
		{[]string{"PUBSUB", "SHARDNUMSUB", "x"}, "*2\r\n$1\r\nx\r\n:0\r\n", ""},
		{[]string{"PUBSUB", "SHARDCHANNELS"}, "*0\r\n", ""},
		{[]string{"UNSUBSCRIBE"}, "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n", ">3\r\n$11\r\nunsubscribe\r\n_\r\n:0\r\n"},
		{[]string{"PUNSUBSCRIBE"}, "*3\r\n$12\r\npunsubscribe\r\n$-1\r\n:0\r\n", ">3\r\n$12\r\npunsubscribe\r\n_\r\n:0\r\n"},
		{[]string{"SUNSUBSCRIBE"}, "*3\r\n$12\r\nsunsubscribe\r\n$-1\r\n:0\r\n", ">3\r\n$12\r\nsunsubscribe\r\n_\r\n:0\r\n"},
		{[]string{"PUBSUB", "NUMSUB"}, "*0\r\n", ""},
		{[]string{"PUBSUB", "NUMSUB", "ch", "x"}, "*4\r\n$2\r\nch\r\n:0\r\n$1\r\nx\r\n:0\r\n", ""},
		{[]string{"PUBSUB", "NUMPAT"}, ":0\r\n", ""},
		{[]string{"PUBSUB", "CHANNELS"}, "*0\r\n", ""},
		{[]string{"SUBSCRIBE", "ch"}, "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n", ">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n"},
		{[]string{"SUBSCRIBE", "ch"}, "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n", ">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n"},
		{[]string{"PSUBSCRIBE", "c*"}, "*3\r\n$10\r\npsubscribe\r\n$2\r\nc*\r\n:2\r\n", ">3\r\n$10\r\npsubscribe\r\n$2\r\nc*\r\n:2\r\n"},
		{[]string{"SSUBSCRIBE", "sh"}, "*3\r\n$10\r\nssubscribe\r\n$2\r\nsh\r\n:1\r\n", ">3\r\n$10\r\nssubscribe\r\n$2\r\nsh\r\n:1\r\n"},
		// Subscribed: RESP2 allows only a few commands; RESP3 all.
		{[]string{"GET", "x"}, errSubscribedGet, "_\r\n"},
		{[]string{"CONFIG", "GET", "x"}, "-ERR Can't execute 'config|get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n", "%0\r\n"},
		{[]string{"PING"}, "*2\r\n$4\r\npong\r\n$0\r\n\r\n", "+PONG\r\n"},
		{[]string{"PING", "hi"}, "*2\r\n$4\r\npong\r\n$2\r\nhi\r\n", "$2\r\nhi\r\n"},
		{[]string{"SET"}, "-ERR wrong number of arguments for 'set' command\r\n", ""},
		{[]string{"NOSUCH"}, "-ERR unknown command 'NOSUCH', with args beginning with: \r\n", ""},
		{[]string{"PUBSUB", "NUMSUB", "ch"}, errSubscribedGet[:20] + "pubsub|numsub" + errSubscribedGet[23:], "*2\r\n$2\r\nch\r\n:1\r\n"},
		{[]string{"UNSUBSCRIBE", "nope"}, "*3\r\n$11\r\nunsubscribe\r\n$4\r\nnope\r\n:2\r\n", ">3\r\n$11\r\nunsubscribe\r\n$4\r\nnope\r\n:2\r\n"},
		{[]string{"UNSUBSCRIBE"}, "*3\r\n$11\r\nunsubscribe\r\n$2\r\nch\r\n:1\r\n", ">3\r\n$11\r\nunsubscribe\r\n$2\r\nch\r\n:1\r\n"},
		{[]string{"PUNSUBSCRIBE", "c*"}, "*3\r\n$12\r\npunsubscribe\r\n$2\r\nc*\r\n:0\r\n", ">3\r\n$12\r\npunsubscribe\r\n$2\r\nc*\r\n:0\r\n"},
		// Still in Pub/Sub mode through the shard channel.
		{[]string{"GET", "x"}, errSubscribedGet, "_\r\n"},
		{[]string{"SUNSUBSCRIBE", "sh"}, "*3\r\n$12\r\nsunsubscribe\r\n$2\r\nsh\r\n:0\r\n", ">3\r\n$12\r\nsunsubscribe\r\n$2\r\nsh\r\n:0\r\n"},
		{[]string{"GET", "x"}, "$-1\r\n", "_\r\n"},
		{[]string{"PING"}, "+PONG\r\n", ""},
		// In a transaction, SUBSCRIBE is queued and its reply is EXEC's.
		{[]string{"MULTI"}, "+OK\r\n", ""},
		{[]string{"SUBSCRIBE", "q"}, "+QUEUED\r\n", ""},
		{[]string{"EXEC"}, "*1\r\n*3\r\n$9\r\nsubscribe\r\n$1\r\nq\r\n:1\r\n", "*1\r\n>3\r\n$9\r\nsubscribe\r\n$1\r\nq\r\n:1\r\n"},
		{[]string{"RESET"}, "+RESET\r\n", ""},
		{[]string{"PUBSUB", "NUMSUB", "q"}, "*2\r\n$1\r\nq\r\n:0\r\n", ""},
		{[]string{"PUBSUB", "HELP"}, "", ""},
	}
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			runScript(t, script, proto, nil, func(st scriptStep, have, want string) (string, string, bool) {
				if len(st.args) == 2 && st.args[1] == "HELP" {
					return have, "*14\r\n+PUBSUB <subcommand> …", strings.HasPrefix(have, "*14\r\n+PUBSUB <subcommand>")
				}
				return have, want, false
			})
		})
	}
}

// TestPubsubOwnMessage: in RESP3 a subscriber may publish, and gets its
// own message before PUBLISH's reply, as from Redis; in RESP2 PUBLISH is
// refused in Pub/Sub mode.
func TestPubsubOwnMessage(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	r.do("SUBSCRIBE", "me")
	require.Equal(t, errSubscribedGet[:20]+"publish"+errSubscribedGet[23:], r.do("PUBLISH", "me", "m"))
	r.do("RESET")
	r.do("HELLO", "3")
	r.do("SUBSCRIBE", "me")
	require.Equal(t, ">3\r\n$7\r\nmessage\r\n$2\r\nme\r\n$1\r\nm\r\n", r.do("PUBLISH", "me", "m"))
	require.Equal(t, ":1\r\n", r.reply())
}

// pubsubPair is a subscriber and a publisher connection to one server.
type pubsubPair struct{ sub, pub *rawConn }

// TestPubsubDelivery checks messages delivered to another connection:
// channels, patterns, shard channels, in both protocols.
func TestPubsubDelivery(t *testing.T) {
	ts := newTestServer(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			p := pubsubPair{ts.raw(t), ts.raw(t)}
			if proto == 3 {
				p.sub.do("HELLO", "3")
			}
			arr := "*"
			if proto == 3 {
				arr = ">"
			}
			p.sub.do("SUBSCRIBE", "news")
			p.sub.do("PSUBSCRIBE", "n*")
			p.sub.do("SSUBSCRIBE", "news")
			steps := []struct {
				args []string
				want string
				msgs []string
			}{
				{[]string{"PUBLISH", "news", "hi"}, ":2\r\n", []string{
					arr + "3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$2\r\nhi\r\n",
					arr + "4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$4\r\nnews\r\n$2\r\nhi\r\n"}},
				{[]string{"PUBLISH", "nope", ""}, ":1\r\n", []string{
					arr + "4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$4\r\nnope\r\n$0\r\n\r\n"}},
				{[]string{"PUBLISH", "other", "x"}, ":0\r\n", nil},
				{[]string{"SPUBLISH", "news", "s"}, ":1\r\n", []string{
					arr + "3\r\n$8\r\nsmessage\r\n$4\r\nnews\r\n$1\r\ns\r\n"}},
				{[]string{"PUBSUB", "NUMSUB", "news", "n*"}, "*4\r\n$4\r\nnews\r\n:1\r\n$2\r\nn*\r\n:0\r\n", nil},
				{[]string{"PUBSUB", "SHARDNUMSUB", "news"}, "*2\r\n$4\r\nnews\r\n:1\r\n", nil},
				{[]string{"PUBSUB", "NUMPAT"}, ":1\r\n", nil},
				{[]string{"PUBSUB", "CHANNELS", "ne*"}, "*1\r\n$4\r\nnews\r\n", nil},
				{[]string{"PUBSUB", "SHARDCHANNELS"}, "*1\r\n$4\r\nnews\r\n", nil},
			}
			for i, st := range steps {
				if have := p.pub.do(st.args...); have != st.want {
					t.Errorf("step %d %q: have %q, want %q", i, st.args, have, st.want)
				}
				for _, m := range st.msgs {
					if have := p.sub.reply(); have != m {
						t.Errorf("step %d %q: message %q, want %q", i, st.args, have, m)
					}
				}
			}
			info := p.pub.do("INFO", "stats")
			require.Contains(t, info, "pubsub_channels:1\r\n")
			require.Contains(t, info, "pubsub_patterns:1\r\n")
			require.Contains(t, info, "pubsubshard_channels:1\r\n")
			// A closed subscriber leaves its channels.
			p.sub.nc.Close()
			require.Eventually(t, func() bool {
				return p.pub.do("PUBSUB", "NUMSUB", "news") == "*2\r\n$4\r\nnews\r\n:0\r\n" &&
					p.pub.do("PUBSUB", "NUMPAT") == ":0\r\n"
			}, 5*time.Second, 5*time.Millisecond)
		})
	}
}

// TestPubsubSubscriptions checks the counts CLIENT LIST and CLIENT KILL
// read from other goroutines.
func TestPubsubSubscriptions(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	r.do("CLIENT", "SETNAME", "subber")
	var c *Client
	for _, o := range ts.Clients() {
		if o.Name() == "subber" {
			c = o
		}
	}
	require.NotNil(t, c)
	require.False(t, c.PubSub())
	r.do("SUBSCRIBE", "a", "b")
	r.reply()
	r.do("PSUBSCRIBE", "x*")
	r.do("SSUBSCRIBE", "s")
	ch, pat := c.Subscriptions()
	require.Equal(t, [3]int{2, 1, 1}, [3]int{ch, pat, c.ShardSubscriptions()})
	require.True(t, c.PubSub())
	r.do("UNSUBSCRIBE")
	r.reply()
	r.do("PUNSUBSCRIBE")
	require.True(t, c.PubSub())
	r.do("SUNSUBSCRIBE")
	require.False(t, c.PubSub())
}

// TestDiffPubsub compares a subscriber's and a publisher's replies with a
// real redis-server's, byte for byte, in both protocols. Channel names are
// unique to the run, as the redis-server may be shared.
func TestDiffPubsub(t *testing.T) {
	addr := redisAddr(t)
	ts := newTestServer(t)
	pre := fmt.Sprintf("ps%d:", rand.Uint64())
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			sides := [2]pubsubPair{{dialRaw(t, addr), dialRaw(t, addr)}, {ts.raw(t), ts.raw(t)}}
			if proto == 3 {
				for _, s := range sides {
					s.sub.do("HELLO", "3")
				}
			}
			ch, pat := pre+"ch", pre+"c*"
			steps := []struct {
				sub  bool // sent by the subscriber
				args []string
				msgs int // messages the subscriber then reads
			}{
				{true, []string{"SUBSCRIBE", ch}, 0},
				{true, []string{"SUBSCRIBE", ch, pre + "two"}, 0},
				{true, []string{"PSUBSCRIBE", pat}, 0},
				{false, []string{"PUBLISH", ch, "hello"}, 2},
				{false, []string{"PUBLISH", pre + "two", strings.Repeat("x", 300)}, 1},
				{false, []string{"PUBLISH", pre + "cx", ""}, 1},
				{false, []string{"PUBLISH", pre + "zz", "m"}, 0},
				{false, []string{"PUBSUB", "NUMSUB", ch, pre + "two", pre + "none"}, 0},
				{false, []string{"PUBSUB", "CHANNELS", pre + "c?"}, 0},
				{false, []string{"PUBSUB", "CHANNELS", pre + "c", "x"}, 0},
				{true, []string{"PING"}, 0},
				{true, []string{"PING", "x"}, 0},
				{true, []string{"GET", "x"}, 0},
				{true, []string{"CLIENT", "ID", "x"}, 0},
				{true, []string{"CLIENT", "INFO"}, 0},
				{true, []string{"SSUBSCRIBE", pre + "s"}, 0},
				{false, []string{"SPUBLISH", pre + "s", "sm"}, 1},
				{false, []string{"PUBSUB", "SHARDNUMSUB", pre + "s"}, 0},
				{false, []string{"PUBSUB", "SHARDCHANNELS", pre + "s*"}, 0},
				{true, []string{"SUNSUBSCRIBE", pre + "s"}, 0},
				{true, []string{"UNSUBSCRIBE", ch}, 0},
				{true, []string{"UNSUBSCRIBE", pre + "nope"}, 0},
				{true, []string{"PUNSUBSCRIBE"}, 0},
				{true, []string{"UNSUBSCRIBE"}, 0},
				{true, []string{"UNSUBSCRIBE"}, 0},
				{true, []string{"PING"}, 0},
				{true, []string{"SUBSCRIBE", ch}, 0},
				{true, []string{"RESET"}, 0},
				{true, []string{"PING"}, 0},
				{false, []string{"PUBLISH", ch, "gone"}, 0},
				{false, []string{"PUBSUB", "NUMSUB", ch}, 0},
			}
			for i, st := range steps {
				var got [2][]string
				for k, s := range sides {
					r := s.pub
					if st.sub {
						r = s.sub
					}
					got[k] = append(got[k], r.do(st.args...))
					if st.sub && len(st.args) > 2 && strings.HasSuffix(st.args[0], "SUBSCRIBE") {
						for range len(st.args) - 2 {
							got[k] = append(got[k], r.reply())
						}
					}
					for range st.msgs {
						got[k] = append(got[k], s.sub.reply())
					}
				}
				if st.args[0] == "CLIENT" && len(st.args) == 2 && proto == 3 {
					continue // CLIENT INFO's line is the client's own
				}
				if fmt.Sprint(got[0]) != fmt.Sprint(got[1]) {
					t.Errorf("step %d %q:\n  redis:  %q\n  ratekv: %q", i, st.args, got[0], got[1])
				}
			}
		})
	}
}

// TestPubsubGoRedis drives Pub/Sub with go-redis's PubSub in both
// protocols.
func TestPubsubGoRedis(t *testing.T) {
	ts := newTestServer(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			rdb := ts.client(t, proto)
			ps := rdb.Subscribe(ctx, "events")
			defer ps.Close()
			_, err := ps.Receive(ctx) // the subscription
			require.NoError(t, err)
			require.NoError(t, ps.PSubscribe(ctx, "ev*"))
			n, err := rdb.Publish(ctx, "events", "one").Result()
			require.NoError(t, err)
			require.Equal(t, int64(2), n)
			got := map[string]string{}
			for len(got) < 2 { // after PSUBSCRIBE's confirmation
				m, err := ps.ReceiveTimeout(ctx, 5*time.Second)
				require.NoError(t, err)
				if msg, ok := m.(*redis.Message); ok {
					got[msg.Pattern] = msg.Channel + "=" + msg.Payload
				}
			}
			require.Equal(t, map[string]string{"": "events=one", "ev*": "events=one"}, got)
			require.NoError(t, ps.Ping(ctx, "p"))
			m, err := ps.ReceiveTimeout(ctx, 5*time.Second)
			require.NoError(t, err)
			if proto == 2 {
				require.Equal(t, &redis.Pong{Payload: "p"}, m)
			}
			nums, err := rdb.PubSubNumSub(ctx, "events").Result()
			require.NoError(t, err)
			require.Equal(t, map[string]int64{"events": 1}, nums)
			chans, err := rdb.PubSubChannels(ctx, "ev*").Result()
			require.NoError(t, err)
			require.Equal(t, []string{"events"}, chans)
			require.NoError(t, ps.Unsubscribe(ctx, "events"))
			require.NoError(t, ps.PUnsubscribe(ctx, "ev*"))
			require.Eventually(t, func() bool {
				n, err := rdb.PubSubNumPat(ctx).Result()
				return err == nil && n == 0
			}, 5*time.Second, 5*time.Millisecond)
			// The channel API, as applications use it.
			ps2 := rdb.Subscribe(ctx, "feed")
			defer ps2.Close()
			_, err = ps2.Receive(ctx)
			require.NoError(t, err)
			msgs := ps2.Channel()
			for i := range 50 {
				require.NoError(t, rdb.Publish(ctx, "feed", fmt.Sprint(i)).Err())
			}
			for i := range 50 {
				select {
				case m := <-msgs:
					require.Equal(t, fmt.Sprint(i), m.Payload)
				case <-time.After(5 * time.Second):
					t.Fatalf("message %d not delivered", i)
				}
			}
		})
	}
}

// TestPubsubRedisCli subscribes with redis-cli, in both protocols.
func TestPubsubRedisCli(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not installed")
	}
	ts := newTestServer(t)
	for _, proto := range []string{"-2", "-3"} {
		t.Run(proto, func(t *testing.T) {
			cmd := exec.Command(cli, "-p", ts.Port(), proto, "SUBSCRIBE", "cli")
			out := &lockedBuilder{}
			cmd.Stdout = out
			require.NoError(t, cmd.Start())
			defer cmd.Process.Kill()
			pub := ts.raw(t)
			require.Eventually(t, func() bool {
				return pub.do("PUBSUB", "NUMSUB", "cli") == "*2\r\n$3\r\ncli\r\n:1\r\n"
			}, 5*time.Second, 5*time.Millisecond)
			require.Equal(t, ":1\r\n", pub.do("PUBLISH", "cli", "hello from ratekv"))
			want := "subscribe\ncli\n1\nmessage\ncli\nhello from ratekv\n"
			require.Eventually(t, func() bool { return strings.Contains(out.String(), "hello from ratekv") },
				5*time.Second, 5*time.Millisecond)
			cmd.Process.Kill()
			cmd.Wait()
			require.Equal(t, want, out.String())
		})
	}
}

// lockedBuilder is a strings.Builder safe for a writer and a reader.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestPubsubSlowSubscriber checks that a subscriber that does not read
// is disconnected once its pending messages pass the pubsub class's hard
// limit, or stay past the soft limit for its period (the store's clock),
// instead of being buffered without bound.
func TestPubsubSlowSubscriber(t *testing.T) {
	msg := strings.Repeat("m", 64<<10)
	for _, tc := range []struct {
		name  string
		limit string        // client-output-buffer-limit
		step  time.Duration // clock advance per message
	}{
		{"hard", "pubsub 256kb 0 0", 0},
		{"soft", "pubsub 0 256kb 10", 11 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t, "client-output-buffer-limit", tc.limit)
			sub := ts.raw(t)
			sub.do("SUBSCRIBE", "flood")
			pub := ts.raw(t)
			gone := false
			for i := 0; i < 2000 && !gone; i++ { // at most 128 MB: far past any socket buffers
				pub.do("PUBLISH", "flood", msg)
				ts.clock.Advance(tc.step)
				gone = pub.do("PUBSUB", "NUMSUB", "flood") == "*2\r\n$5\r\nflood\r\n:0\r\n"
			}
			require.True(t, gone, "the subscriber that does not read was never disconnected")
		})
	}
	// Below the soft limit's period, a subscriber is kept.
	ts := newTestServer(t, "client-output-buffer-limit", "pubsub 0 1 3600")
	sub := ts.raw(t)
	sub.do("SUBSCRIBE", "slow")
	pub := ts.raw(t)
	for range 3 {
		require.Equal(t, ":1\r\n", pub.do("PUBLISH", "slow", "x"))
		require.Equal(t, "*3\r\n$7\r\nmessage\r\n$4\r\nslow\r\n$1\r\nx\r\n", sub.reply())
	}
}
