package command

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTransactionsReplayToTheLiveState: transactions of every kind of
// write (all-shard flushes, the limiters' images, many-key DEL, a command
// failing at run time, writes that change nothing, a handler panic) are
// journaled so that replaying the log, with the markers left out as the
// loader does, gives the live keyspace, deadlines included.
func TestTransactionsReplayToTheLiveState(t *testing.T) {
	type cmd = []string
	tests := []struct {
		name  string
		setup []cmd
		tx    []cmd
	}{
		{"flushall", []cmd{{"SET", "a", "1"}, {"SET", "b", "2", "PX", "5000"}},
			[]cmd{{"SET", "c", "3"}, {"FLUSHALL"}, {"INCR", "d"}, {"PEXPIRE", "d", "9000"}}},
		{"flushdb first", []cmd{{"SET", "a", "1"}},
			[]cmd{{"FLUSHDB"}, {"SET", "a", "2", "PX", "7000"}}},
		{"flushall alone on an empty keyspace", nil, []cmd{{"FLUSHALL"}, {"GET", "x"}}},
		{"limiters", []cmd{{"SL.THROTTLE", "sl", "3", "10000"}},
			[]cmd{{"SL.THROTTLE", "sl", "3", "10000"}, {"SW.THROTTLE", "sw", "5", "60000", "QUANTITY", "2"},
				{"CL.THROTTLE", "cl", "10", "5", "60"}, {"SL.THROTTLE", "sl", "3", "10000", "QUANTITY", "2"},
				{"SL.THROTTLE", "sl", "3", "10000", "RECORDBLOCKED"}, {"CL.THROTTLE", "cl", "10", "5", "60", "100"},
				{"CL.THROTTLEMS", "cm", "10", "1000", "1", "3"}}},
		{"del of many keys", []cmd{{"SET", "k1", "1"}, {"SET", "k3", "x", "PX", "4000"}, {"ZADD", "k5", "1", "m"}},
			[]cmd{{"DEL", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8"}, {"SET", "k2", "v"}, {"DEL", "k2", "k9"}}},
		{"wrongtype at run time", []cmd{{"ZADD", "z", "1", "a"}, {"SET", "s", "str"}},
			[]cmd{{"INCR", "n"}, {"INCR", "z"}, {"ZADD", "s", "1", "b"}, {"ZADD", "z", "2", "b"}, {"SL.THROTTLE", "s", "1", "1000"}, {"SET", "m", "v"}}},
		{"writes that change nothing", []cmd{{"SET", "a", "1"}},
			[]cmd{{"SET", "a", "2", "NX"}, {"DEL", "nope"}, {"ZREM", "nope", "m"}, {"PERSIST", "a"}}},
		{"one change among no-ops", []cmd{{"SET", "a", "1"}},
			[]cmd{{"SET", "a", "2", "NX"}, {"PEXPIRE", "a", "3000"}, {"DEL", "nope"}}},
		{"zadd creating its key twice", nil,
			[]cmd{{"ZADD", "z", "1", "a"}, {"DEL", "z"}, {"ZADD", "z", "2", "b"}, {"PEXPIRE", "z", "2000"}}},
		{"handler panic", []cmd{{"SET", "a", "1"}},
			[]cmd{{"INCR", "a"}, {"SET", "b", "x", "PX", "8000"}, {"TEST.PANIC", "c"}, {"SET", "never", "run"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{}
			clock.ns.Store(time.Now().UnixNano())
			j := &recordingJournal{}
			live := newSocketless(t, clock, j)
			send := live.send
			for _, c := range tt.setup {
				require.NotEqual(t, "-", send(c...)[:1], "%v", c)
				clock.Advance(time.Millisecond)
			}
			require.Equal(t, "+OK\r\n", send("MULTI"))
			for _, c := range tt.tx {
				require.Equal(t, "+QUEUED\r\n", send(c...), "%v", c)
			}
			send("EXEC")
			live.c.CloseAfter = false

			recs := splitRecords(t, j.recs)
			r := newSocketless(t, clock, nil)
			_, err := r.replay(t, recs)
			require.NoError(t, err)
			requireSameKeyspace(t, live, r)
		})
	}
}
