package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// runtimeModes are the ways a connection can be served.
var runtimeModes = [][]string{
	{"event-loop", "yes"},
	{"event-loop", "no", "batch-replies", "yes"},
	{"event-loop", "no", "batch-replies", "no"},
}

// TestPubsubWakesSubscriber checks that a message reaches a subscriber
// waiting for its socket, in every runtime mode, and that a subscriber is
// not closed as idle (timeout), as in Redis.
func TestPubsubWakesSubscriber(t *testing.T) {
	for _, mode := range runtimeModes {
		t.Run(strings.Join(mode, "="), func(t *testing.T) {
			ts := newTestServer(t, append(mode, "timeout", "1")...)
			subs := []*rawConn{ts.raw(t), ts.raw(t)}
			subs[1].do("HELLO", "3")
			for _, s := range subs {
				s.do("SUBSCRIBE", "wake")
			}
			pub := ts.raw(t)
			for i := range 20 {
				msg := fmt.Sprint("m", i)
				require.Equal(t, ":2\r\n", pub.do("PUBLISH", "wake", msg))
				for k, s := range subs {
					head := "*3"
					if k == 1 {
						head = ">3"
					}
					require.Equal(t, head+"\r\n$7\r\nmessage\r\n$4\r\nwake\r\n$"+fmt.Sprint(len(msg))+"\r\n"+msg+"\r\n", s.reply())
				}
			}
			// Once the publisher, idle, is closed for the timeout, the
			// subscribers, idle as long, are still there.
			pub.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, err := pub.rd.ReadByte()
			require.Error(t, err)
			p2 := ts.raw(t)
			require.Equal(t, "*2\r\n$4\r\nwake\r\n:2\r\n", p2.do("PUBSUB", "NUMSUB", "wake"))
			require.Equal(t, ":2\r\n", p2.do("PUBLISH", "wake", "late"))
			for _, s := range subs {
				require.Contains(t, s.reply(), "late")
			}
		})
	}
}

// TestPubsubSlowSubscriberDropped checks that the runtime disconnects a
// subscriber that does not read once client-output-buffer-limit's pubsub
// class (32 MB hard by default) is passed, while the publisher goes on.
func TestPubsubSlowSubscriberDropped(t *testing.T) {
	for _, mode := range runtimeModes[:2] {
		t.Run(strings.Join(mode, "="), func(t *testing.T) {
			ts := newTestServer(t, mode...)
			sub := ts.raw(t)
			sub.do("SUBSCRIBE", "flood")
			pub := ts.raw(t)
			msg := strings.Repeat("x", 512<<10)
			gone := false
			for i := 0; i < 400 && !gone; i++ { // 200 MB at most
				pub.do("PUBLISH", "flood", msg)
				gone = pub.do("PUBSUB", "NUMSUB", "flood") == "*2\r\n$5\r\nflood\r\n:0\r\n"
			}
			require.True(t, gone, "a subscriber that does not read was kept")
			require.Equal(t, ":0\r\n", pub.do("PUBLISH", "flood", "after"))
		})
	}
}
