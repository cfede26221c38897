package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// Many clients pipelining at once, with replies batched in rounds or not:
// every client gets its own replies, complete and in order.
func TestBatchedRepliesReachTheirClientsInOrder(t *testing.T) {
	for _, batch := range []string{"yes", "no"} {
		t.Run("batch-replies "+batch, func(t *testing.T) {
			ts := newTestServer(t, "batch-replies", batch)
			var wg sync.WaitGroup
			errs := make(chan error, 20)
			for g := 0; g < 20; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c := redis.NewClient(&redis.Options{Addr: ts.addr, PoolSize: 1})
					defer c.Close()
					ctx := context.Background()
					for round := 0; round < 30; round++ {
						p := c.Pipeline()
						echoes := make([]*redis.StringCmd, 40)
						for i := range echoes {
							echoes[i] = p.Echo(ctx, fmt.Sprintf("%d/%d/%d", g, round, i))
						}
						incr := p.Incr(ctx, fmt.Sprintf("n%d", g))
						if _, err := p.Exec(ctx); err != nil {
							errs <- err
							return
						}
						for i, e := range echoes {
							if want := fmt.Sprintf("%d/%d/%d", g, round, i); e.Val() != want {
								errs <- fmt.Errorf("client %d got %q, want %q", g, e.Val(), want)
								return
							}
						}
						if incr.Val() != int64(round+1) {
							errs <- fmt.Errorf("client %d: INCR = %d in round %d", g, incr.Val(), round)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
		})
	}
}

// A client that sends requests whose replies it does not read fills its
// socket; the writer must not wait for it (that would stall the replies of
// every other client it serves): the stuck connection finishes its own
// write.
func TestBatchedRepliesDoNotWaitForASlowClient(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t, 2)
	ctx := context.Background()
	const size, count = 32 << 10, 400 // 12.8 MB: beyond what socket buffers hold
	require.NoError(t, c.Set(ctx, "v", strings.Repeat("x", size), 0).Err())

	slow, err := net.Dial("tcp", ts.addr)
	require.NoError(t, err)
	defer slow.Close()
	// One request per batch, so that each reply (smaller than flushAt) goes
	// through the writer.
	for i := 0; i < count; i++ {
		_, err = slow.Write([]byte("GET v\r\n"))
		require.NoError(t, err)
		time.Sleep(200 * time.Microsecond)
	}
	time.Sleep(100 * time.Millisecond) // the socket is full by now

	// Several connections, so that some share the slow one's writer
	// (there is one per P).
	for i := 0; i < 8; i++ {
		fast := ts.raw(t)
		for j := 0; j < 10; j++ {
			require.Equal(t, "+PONG\r\n", fast.send("PING\r\n"), "connection %d, ping %d, while another client is stuck", i, j)
		}
	}

	// The slow client then gets all its replies, intact.
	slow.SetReadDeadline(time.Now().Add(20 * time.Second))
	head := fmt.Sprintf("$%d\r\n", size)
	want := len(head) + size + 2
	buf := make([]byte, count*want)
	_, err = io.ReadFull(slow, buf)
	require.NoError(t, err)
	for i := 0; i < count; i++ {
		r := string(buf[i*want : (i+1)*want])
		require.True(t, strings.HasPrefix(r, head+"xxx") && strings.HasSuffix(r, "x\r\n"), "reply %d", i)
	}
}

// CONFIG SET batch-replies switches at once, both ways.
func TestBatchRepliesConfig(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t, 2)
	ctx := context.Background()
	require.Equal(t, map[string]string{"batch-replies": "yes"}, c.ConfigGet(ctx, "batch-replies").Val())
	require.NoError(t, c.ConfigSet(ctx, "batch-replies", "no").Err())
	require.Equal(t, "PONG", c.Ping(ctx).Val())
	require.False(t, ts.srv.batchReplies.Load())
	require.NoError(t, c.ConfigSet(ctx, "batch-replies", "yes").Err())
	require.Equal(t, "PONG", c.Ping(ctx).Val())
	require.Error(t, c.ConfigSet(ctx, "batch-replies", "maybe").Err())
}
