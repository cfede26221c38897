package command

import (
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/journal"
	"github.com/ratekv/ratekv/resp"
	"github.com/ratekv/ratekv/shards"
	"github.com/stretchr/testify/require"
)

// recordingJournal keeps every record appended, for tests that check what
// the journal writes.
type recordingJournal struct{ recs [][]byte }

func (j *recordingJournal) Append(rec []byte) uint64 {
	j.recs = append(j.recs, append([]byte(nil), rec...))
	return uint64(len(j.recs))
}
func (j *recordingJournal) Sync(uint64) error { return nil }
func (j *recordingJournal) Err() error        { return nil }

// socketless is a server without a listener and a connection to it that
// runs commands through the dispatcher's call path (locking, journaling).
type socketless struct {
	srv   *Engine
	store *shards.Store
	clock *fakeClock
	c     *Client
}

func newSocketless(t testing.TB, clock *fakeClock, j Journal) *socketless {
	t.Helper()
	store := shards.New(shards.Options{Shards: 4, Now: clock.Now})
	t.Cleanup(store.Close)
	srv := NewEngine(store, config.New(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if j != nil {
		srv.SetJournal(j)
	}
	return &socketless{srv: srv, store: store, clock: clock, c: &Client{eng: srv, proto: 2, Authed: true}}
}

// do runs one command and returns its raw reply.
func (s *socketless) do(t testing.TB, args ...string) string {
	t.Helper()
	argv := make([][]byte, len(args))
	for i, a := range args {
		argv[i] = []byte(a)
	}
	cmd := lookupCommand(argv[0])
	require.NotNil(t, cmd, args[0])
	s.c.Out = s.c.Out[:0]
	s.c.call(cmd, argv)
	return string(s.c.Out)
}

// send runs one request through the dispatcher, as a client's arrives
// (MULTI queues, EXEC runs), and returns its raw reply.
func (s *socketless) send(args ...string) string {
	argv := make([][]byte, len(args))
	for i, a := range args {
		argv[i] = []byte(a)
	}
	s.c.Out = s.c.Out[:0]
	s.c.dispatch(argv)
	return string(s.c.Out)
}

// replay runs raw records on s's server, as the log loader does.
func (s *socketless) replay(t *testing.T, recs [][]byte) (int, error) {
	t.Helper()
	i := 0
	return s.srv.Replay(func() ([][]byte, error) {
		if i == len(recs) {
			return nil, io.EOF
		}
		args, err := splitRecord(recs[i])
		require.NoError(t, err, "record %d: %q", i, recs[i])
		i++
		return args, nil
	})
}

// splitRecord decodes one RESP array of bulk strings (the journal's
// output) with the server's own request parser; it must consume all of rec.
func splitRecord(rec []byte) ([][]byte, error) {
	args, n, perr, _ := resp.ParseRequest(rec, nil, resp.Limits{MaxBulk: 1 << 20, Authed: true})
	if perr != "" || n != len(rec) {
		return nil, fmt.Errorf("not one whole record: consumed %d of %d bytes, %q", n, len(rec), perr)
	}
	return args, nil
}

func setIntPayload(n, at int64) string {
	var p [16]byte
	binary.BigEndian.PutUint64(p[:], uint64(n))
	binary.BigEndian.PutUint64(p[8:], uint64(at))
	return string(p[:])
}

// Integer images are logged as SETINT, other strings as SET, and both
// replay to the same state.
func TestJournalIntegerImagesAsSetInt(t *testing.T) {
	clock := newFakeClock()
	j := &recordingJournal{}
	live := newSocketless(t, clock, j)
	nowMs := clock.Now() / 1e6
	for _, cmd := range [][]string{
		{"INCR", "n"},
		{"SET", "neg", "-9223372036854775808"},
		{"SET", "ttl", "42", "PX", "60000"},
		{"SET", "s", "hello", "PX", "60000"},
		{"SET", "007", "007"},
		{"CL.THROTTLE", "rl:123456", "10", "5", "60"},
	} {
		require.NotEqual(t, byte('-'), live.do(t, cmd...)[0], "%v", cmd)
	}
	tat := live.store.Peek([]byte("rl:123456"), nowMs)
	require.NotNil(t, tat)
	tatN, ok := tat.Int()
	require.True(t, ok)
	want := []string{
		"*3\r\n$6\r\nSETINT\r\n$1\r\nn\r\n$16\r\n" + setIntPayload(1, 0) + "\r\n",
		"*3\r\n$6\r\nSETINT\r\n$3\r\nneg\r\n$16\r\n" + setIntPayload(-1<<63, 0) + "\r\n",
		"*3\r\n$6\r\nSETINT\r\n$3\r\nttl\r\n$16\r\n" + setIntPayload(42, nowMs+60000) + "\r\n",
		"*5\r\n$3\r\nSET\r\n$1\r\ns\r\n$5\r\nhello\r\n$4\r\nPXAT\r\n$13\r\n" + strconv.FormatInt(nowMs+60000, 10) + "\r\n",
		"*3\r\n$3\r\nSET\r\n$3\r\n007\r\n$3\r\n007\r\n",
		"*3\r\n$6\r\nSETINT\r\n$9\r\nrl:123456\r\n$16\r\n" + setIntPayload(tatN, tat.ExpireAt()) + "\r\n",
	}
	got := make([]string, len(j.recs))
	for i, r := range j.recs {
		got[i] = string(r)
	}
	require.Equal(t, want, got)
	require.Len(t, j.recs[5], 54, "the CL.THROTTLE image the SETINT comment measures")

	restored := newSocketless(t, clock, nil)
	n, err := restored.replay(t, j.recs)
	require.NoError(t, err)
	require.Equal(t, len(j.recs), n)
	for _, k := range []string{"n", "neg", "ttl", "s", "007", "rl:123456"} {
		require.Equal(t, live.do(t, "GET", k), restored.do(t, "GET", k), k)
		require.Equal(t, live.do(t, "PEXPIRETIME", k), restored.do(t, "PEXPIRETIME", k), k)
		require.Equal(t, live.do(t, "TYPE", k), restored.do(t, "TYPE", k), k)
	}
	// The restored limiter goes on exactly where the live one was.
	require.Equal(t, live.do(t, "CL.THROTTLE", "rl:123456", "10", "5", "60", "7"),
		restored.do(t, "CL.THROTTLE", "rl:123456", "10", "5", "60", "7"))
}

func TestSetIntReplay(t *testing.T) {
	clock := newFakeClock()
	nowMs := clock.Now() / 1e6
	rec := func(args ...string) []byte {
		b := resp.AppendArrayHeader(nil, len(args))
		for _, a := range args {
			b = resp.AppendBulk(b, []byte(a))
		}
		return b
	}
	for i, tt := range []struct {
		pre     [][]string // commands run first, live
		rec     []byte
		err     string // replay error, "" for none
		get     string // GET key afterwards
		expires string // PEXPIRETIME key afterwards
	}{
		{rec: journal.AppendSetInt(nil, []byte("k"), 7, 0), get: "$1\r\n7\r\n", expires: ":-1\r\n"},
		{rec: journal.AppendSetInt(nil, []byte("k"), -12, nowMs+5000), get: "$3\r\n-12\r\n", expires: ":" + strconv.FormatInt(nowMs+5000, 10) + "\r\n"},
		// A deadline already past: the key is not resurrected.
		{rec: journal.AppendSetInt(nil, []byte("k"), 1, nowMs-1), get: "$-1\r\n", expires: ":-2\r\n"},
		{pre: [][]string{{"SET", "k", "old", "EX", "100"}}, rec: journal.AppendSetInt(nil, []byte("k"), 1, 0), get: "$1\r\n1\r\n", expires: ":-1\r\n"},
		// Like SET it replaces a value of another type.
		{pre: [][]string{{"ZADD", "k", "1", "a"}}, rec: journal.AppendSetInt(nil, []byte("k"), 3, 0), get: "$1\r\n3\r\n", expires: ":-1\r\n"},
		{pre: [][]string{{"SET", "k", "v"}}, rec: rec("SETINT", "k", "short"), err: "setint replied with an error: ERR SETINT payload must be 16 bytes, got 5", get: "$1\r\nv\r\n", expires: ":-1\r\n"},
		{rec: rec("setint", "k", setIntPayload(1, -1)), err: "ERR SETINT deadline -1 is negative", get: "$-1\r\n", expires: ":-2\r\n"},
		{rec: rec("SETINT", "k"), err: "wrong number of arguments (2) for setint", get: "$-1\r\n", expires: ":-2\r\n"},
		{rec: rec("SETINT", "k", setIntPayload(1, 0), "x"), err: "wrong number of arguments (4) for setint", get: "$-1\r\n", expires: ":-2\r\n"},
	} {
		s := newSocketless(t, clock, nil)
		for _, p := range tt.pre {
			s.do(t, p...)
		}
		n, err := s.replay(t, [][]byte{tt.rec})
		if tt.err == "" {
			require.NoError(t, err, "step %d", i)
			require.Equal(t, 1, n, "step %d", i)
		} else {
			require.ErrorContains(t, err, tt.err, "step %d", i)
		}
		require.Equal(t, tt.get, s.do(t, "GET", "k"), "step %d", i)
		require.Equal(t, tt.expires, s.do(t, "PEXPIRETIME", "k"), "step %d", i)
	}
}

// TestReplStateReplay: a log that ends with REPLSTATE says where a
// replica's data is; any record after it makes the offset unknown.
func TestReplStateReplay(t *testing.T) {
	id := strings.Repeat("ab", 20)
	mark := func(off int64) []byte { return journal.AppendReplState(nil, id, off) }
	set := journal.AppendSet(nil, []byte("k"), []byte("v"), 0)
	for i, tt := range []struct {
		recs [][]byte
		off  int64 // -1: no state
		err  string
	}{
		{recs: [][]byte{set, mark(100)}, off: 100},
		{recs: [][]byte{mark(100), set, mark(120)}, off: 120},
		{recs: [][]byte{mark(100), set}, off: -1},
		{recs: [][]byte{set}, off: -1},
		{recs: [][]byte{journal.AppendReplState(nil, "short", 1)}, off: -1, err: `ERR bad REPLSTATE record: replication id "short", offset "1"`},
		{recs: [][]byte{journal.AppendReplState(nil, id, -1)}, off: -1, err: "ERR bad REPLSTATE record"},
	} {
		s := newSocketless(t, newFakeClock(), nil)
		_, err := s.replay(t, tt.recs)
		if tt.err != "" {
			require.ErrorContains(t, err, tt.err, "step %d", i)
		} else {
			require.NoError(t, err, "step %d", i)
		}
		gotID, off, ok := s.srv.LoggedReplState()
		if tt.off < 0 {
			require.False(t, ok, "step %d", i)
			continue
		}
		require.True(t, ok, "step %d", i)
		require.Equal(t, [2]any{id, tt.off}, [2]any{gotID, off}, "step %d", i)
	}
	idx, all := RecordKeys([][]byte{[]byte("REPLSTATE"), []byte(id), []byte("1")}, nil)
	require.Empty(t, idx)
	require.False(t, all, "it touches no key: snapshots leave it out")
	ts := newTestServer(t)
	require.Equal(t, "-ERR unknown command 'REPLSTATE', with args beginning with: '"+id+"' '1' \r\n", ts.raw(t).do("REPLSTATE", id, "1"))
}

// Clients cannot send log-only commands, and COMMAND does not list them.
func TestSetIntIsNotAClientCommand(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	require.Equal(t, "-ERR unknown command 'SETINT', with args beginning with: 'k' 'x' \r\n", r.do("SETINT", "k", "x"))
	require.Equal(t, "*1\r\n$-1\r\n", r.do("COMMAND", "INFO", "setint"))
	require.Equal(t, "$-1\r\n", r.do("GET", "k"))
	idx, all := RecordKeys([][]byte{[]byte("SETINT"), []byte("k"), []byte(setIntPayload(1, 0))}, nil)
	require.Equal(t, []int{1}, idx)
	require.False(t, all)
	require.Panics(t, func() { registerLog(&Command{Name: "set"}) }, "a log command may not shadow a client command")
}

// Replaying any stream of records, valid or not, never panics a handler:
// each record either runs or stops the replay with an error.
func FuzzReplayRecords(f *testing.F) {
	seed := func(recs ...[]byte) []byte {
		var b []byte
		for _, r := range recs {
			b = append(b, r...)
		}
		return b
	}
	rec := func(args ...string) []byte {
		b := resp.AppendArrayHeader(nil, len(args))
		for _, a := range args {
			b = resp.AppendBulk(b, []byte(a))
		}
		return b
	}
	f.Add(seed(journal.AppendSetInt(nil, []byte("k"), 5, 0), rec("INCR", "k"), rec("DEL", "k")))
	f.Add(seed(rec("ZADD", "k", "1", "a"), journal.AppendSetInt(nil, []byte("k"), -1, 1), rec("PEXPIREAT", "k", "1")))
	f.Add(seed(rec("SET", "k", "v", "PXAT", "1800000000000"), rec("SETINT", "k", "x"), rec("FLUSHALL")))
	f.Add(seed(journal.AppendReplState(nil, strings.Repeat("0", 40), 7), rec("REPLSTATE", "x", "-1"), rec("INCR", "k")))
	f.Add(seed(rec("CL.THROTTLE", "k", "1", "2", "3"), rec("SL.THROTTLE", "s", "3", "1000"), rec("RESTORE", "z", "0", "junk", "REPLACE", "ABSTTL")))
	f.Add(seed(rec("CL.THROTTLEMS", "k", "5", "1000", "1"), rec("CL.THROTTLE", "k", "5", "1000000", "1"), rec("CL.THROTTLEMS", "k", "0", "1000001", "1")))
	f.Add(seed(rec("HSET", "h", "a", "1", "b", "x"), rec("HINCRBY", "h", "a", "5"), rec("HINCRBYFLOAT", "h", "b", "1"), rec("HDEL", "h", "a", "b"), rec("HSETNX", "h", "c", "1")))
	f.Add(seed(rec("SET", "h", "v"), rec("HSET", "h", "a", "1"), rec("HINCRBYFLOAT", "k", "f", "inf"), rec("HMSET", "k", "a")))
	f.Add(seed(rec("RPUSH", "l", "a", "b", "c"), rec("LMOVE", "l", "m", "LEFT", "RIGHT"), rec("LTRIM", "l", "1", "0"), rec("LSET", "m", "-1", "x")))
	f.Add(seed(rec("LPUSH", "l", "1"), rec("LINSERT", "l", "BEFORE", "1", "0"), rec("LREM", "l", "-1", "0"), rec("RPOPLPUSH", "l", "l"), rec("LPOP", "l", "9")))
	f.Fuzz(func(t *testing.T, data []byte) {
		clock := &fakeClock{}
		clock.ns.Store(1_795_307_408_539_667_000)
		s := newSocketless(t, clock, nil)
		_, err := s.srv.Replay(func() ([][]byte, error) {
			if len(data) == 0 {
				return nil, io.EOF
			}
			args, n, perr, _ := resp.ParseRequest(data, nil, resp.Limits{MaxBulk: 1 << 20, Authed: true})
			if perr != "" || n == 0 {
				return nil, io.EOF
			}
			data = data[n:]
			return args, nil
		})
		if err != nil {
			require.NotContains(t, err.Error(), "panicked")
		}
	})
}

func TestRawRecord(t *testing.T) {
	req := []byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n")
	args, n, perr, _ := resp.ParseRequest(req, nil, resp.Limits{MaxBulk: 1 << 20, Authed: true})
	require.Equal(t, len(req), n, perr)
	long := []byte(multibulk("ZADD", strings.Repeat("k", 300), "1", ""))
	largs, _, _, _ := resp.ParseRequest(long, nil, resp.Limits{MaxBulk: 1 << 20, Authed: true})
	// resp.ParseRequest refuses a leading zero, as Redis does; rawRecord must
	// not take such a request for the record all the same.
	odd := []byte("*3\r\n$03\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n")
	oargs := [][]byte{odd[9:12], odd[18:19], odd[25:30]}
	trailing := append(append([]byte{}, req...), "*1\r\n"...)
	targs, _, _, _ := resp.ParseRequest(trailing, nil, resp.Limits{MaxBulk: 1 << 20, Authed: true})
	copied := [][]byte{[]byte("SET"), []byte("k"), []byte("hello")}
	swapped := append([][]byte{}, args...)
	swapped[2] = []byte("hello")

	for _, tt := range []struct {
		name string
		req  []byte
		args [][]byte
		want []byte
	}{
		{"the request itself", req, args, req},
		{"long key, empty argument", long, largs, long},
		{"no request", nil, args, nil},
		{"arguments copied (EXEC's queue)", req, copied, nil},
		{"one argument replaced", req, swapped, nil},
		{"fewer arguments", req, args[:2], nil},
		{"a length with a leading zero", odd, oargs, nil},
		{"trailing bytes", trailing, targs, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &Client{req: tt.req}
			require.Equal(t, tt.want, c.rawRecord(tt.args))
		})
	}
}

// Pipelined requests run as a runtime runs a batch: plain SET and ZADD
// are logged as received, everything else as records built from its
// arguments or its key's image, and replaying the records rebuilds the
// same keyspace.
func TestJournalLogsRequestsAsReceived(t *testing.T) {
	clock := newFakeClock()
	j := &recordingJournal{}
	live := newSocketless(t, clock, j)
	setRaw := "*3\r\n$3\r\nset\r\n$1\r\nk\r\n$5\r\nhello\r\n"
	zaddRaw := "*4\r\n$4\r\nZADD\r\n$1\r\nz\r\n$1\r\n1\r\n$1\r\na\r\n"
	pipeline := setRaw +
		"*3\r\n$3\r\nSET\r\n$1\r\nn\r\n$2\r\n42\r\n" +
		"SET i inline\r\n" +
		"*5\r\n$3\r\nSET\r\n$1\r\nx\r\n$1\r\nv\r\n$2\r\nEX\r\n$2\r\n60\r\n" +
		zaddRaw +
		"*3\r\n$6\r\nEXPIRE\r\n$1\r\nz\r\n$3\r\n100\r\n" +
		zaddRaw + // changes nothing: no record
		"*4\r\n$4\r\nZADD\r\n$1\r\nz\r\n$1\r\n2\r\n$1\r\nb\r\n" +
		"*1\r\n$5\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n$1\r\nq\r\n$1\r\nv\r\n*1\r\n$4\r\nEXEC\r\n"
	c := live.c
	used, perr := runRequests(c, []byte(pipeline))
	require.Equal(t, len(pipeline), used, perr)
	c.EndBatch()
	require.NotContains(t, string(c.Out), "-")

	nowMs := clock.Now() / 1e6
	want := []string{
		setRaw,
		"*3\r\n$3\r\nSET\r\n$1\r\nn\r\n$2\r\n42\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\ni\r\n$6\r\ninline\r\n",
		"*5\r\n$3\r\nSET\r\n$1\r\nx\r\n$1\r\nv\r\n$4\r\nPXAT\r\n$13\r\n" + strconv.FormatInt(nowMs+60000, 10) + "\r\n",
		"*2\r\n$3\r\nDEL\r\n$1\r\nz\r\n", // ZADD created z: see journalEffects
		zaddRaw,
		"*3\r\n$9\r\nPEXPIREAT\r\n$1\r\nz\r\n$13\r\n" + strconv.FormatInt(nowMs+100000, 10) + "\r\n",
		"*4\r\n$4\r\nZADD\r\n$1\r\nz\r\n$1\r\n2\r\n$1\r\nb\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nq\r\n$1\r\nv\r\n",
	}
	got := make([]string, len(j.recs))
	for i, r := range j.recs {
		got[i] = string(r)
	}
	require.Equal(t, want, got)

	restored := newSocketless(t, clock, nil)
	n, err := restored.replay(t, j.recs)
	require.NoError(t, err)
	require.Equal(t, len(j.recs), n)
	for _, k := range []string{"k", "n", "i", "x", "q"} {
		require.Equal(t, live.do(t, "GET", k), restored.do(t, "GET", k), k)
		require.Equal(t, live.do(t, "PEXPIRETIME", k), restored.do(t, "PEXPIRETIME", k), k)
	}
	require.Equal(t, live.do(t, "ZRANGE", "z", "0", "-1", "WITHSCORES"), restored.do(t, "ZRANGE", "z", "0", "-1", "WITHSCORES"))
	require.Equal(t, live.do(t, "PEXPIRETIME", "z"), restored.do(t, "PEXPIRETIME", "z"))
}

// TestExecJournalsOneAppend: the records of the commands a transaction ran
// reach the journal in one Append, between MULTI and EXEC records (one
// record alone without them), so the log never writes part of a
// transaction before a crash and the loader can drop a torn one whole;
// replayed, they rebuild the state. A command outside a transaction still
// appends its own.
func TestExecJournalsOneAppend(t *testing.T) {
	clock := newFakeClock()
	j := &recordingJournal{}
	s := newSocketless(t, clock, j)
	send := s.send
	require.Equal(t, "+OK\r\n", send("SET", "before", "1"))
	require.Len(t, j.recs, 1)
	require.Equal(t, "+OK\r\n", send("MULTI"))
	for _, cmd := range [][]string{{"SET", "a", "1"}, {"INCR", "b"}, {"ZADD", "z", "1", "m"}, {"PEXPIRE", "z", "100000"}, {"GET", "a"}, {"INCR", "b"}} {
		require.Equal(t, "+QUEUED\r\n", send(cmd...))
	}
	require.Equal(t, "*6\r\n+OK\r\n:1\r\n:1\r\n:1\r\n$1\r\n1\r\n:2\r\n", send("EXEC"))
	require.Len(t, j.recs, 2, "one Append for the transaction")
	var recs [][]byte
	for rest := j.recs[1]; len(rest) > 0; {
		_, n, perr, _ := resp.ParseRequest(rest, nil, resp.Limits{MaxBulk: 1 << 20, Authed: true})
		require.Empty(t, perr)
		require.NotZero(t, n, "a whole record")
		recs = append(recs, rest[:n])
		rest = rest[n:]
	}
	// Between MULTI and EXEC, the five writes in order; ZADD created its
	// key, so a DEL precedes it.
	require.Len(t, recs, 8, "%q", j.recs[1])
	require.Equal(t, journal.Multi, string(recs[0]))
	require.Equal(t, journal.Exec, string(recs[7]))
	recs = recs[1:7]
	require.Equal(t, "+OK\r\n", send("MULTI"))
	require.Equal(t, "+QUEUED\r\n", send("GET", "a"))
	require.Equal(t, "*1\r\n$1\r\n1\r\n", send("EXEC"))
	require.Len(t, j.recs, 2, "a transaction that wrote nothing appends nothing")
	require.Equal(t, "+OK\r\n", send("MULTI"))
	require.Equal(t, "+QUEUED\r\n", send("INCR", "c"))
	require.Equal(t, "+QUEUED\r\n", send("GET", "c"))
	require.Equal(t, "*2\r\n:1\r\n$1\r\n1\r\n", send("EXEC"))
	require.Len(t, j.recs, 3)
	require.NotContains(t, string(j.recs[2]), "MULTI", "one record alone needs no MULTI")
	recs = append(recs, j.recs[2])

	r := newSocketless(t, clock, nil)
	n, err := r.replay(t, append(j.recs[:1:1], recs...))
	require.NoError(t, err)
	require.Equal(t, 8, n)
	for _, k := range []string{"before", "a", "b", "z", "c"} {
		for _, c := range []string{"DUMP", "PEXPIRETIME"} {
			require.Equal(t, s.do(t, c, k), r.do(t, c, k), "%s %s", c, k)
		}
	}
}

// replayStep is one step of a replay round trip: a command run live, or
// (advance set) time passing on the live server.
type replayStep struct {
	cmd     []string
	advance time.Duration
}

// checkReplay runs steps on a journaled server, replays its records on a
// fresh one, and requires the same keys with the same values (DUMP) and
// deadlines. It returns the records, for checks of their form.
func checkReplay(t *testing.T, steps []replayStep) []string {
	t.Helper()
	clock := newFakeClock()
	j := &recordingJournal{}
	live := newSocketless(t, clock, j)
	for i, st := range steps {
		if st.cmd == nil {
			clock.Advance(st.advance)
			continue
		}
		require.NotEqual(t, "-", live.send(st.cmd...)[:1], "step %d: %q", i, st.cmd)
	}
	recs := splitRecords(t, j.recs)
	restored := newSocketless(t, clock, nil)
	_, err := restored.replay(t, recs)
	require.NoError(t, err)
	requireSameKeyspace(t, live, restored)
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r)
	}
	return out
}

// requireSameKeyspace requires b to hold the keys a holds, of the same
// types and values (DUMP) and with the same deadlines.
func requireSameKeyspace(t *testing.T, a, b *socketless) {
	t.Helper()
	keys := func(s *socketless) []string {
		var ks []string
		for _, line := range strings.Split(s.do(t, "KEYS", "*"), "\r\n")[1:] {
			if line != "" && line[0] != '$' {
				ks = append(ks, line)
			}
		}
		slices.Sort(ks)
		return ks
	}
	require.Equal(t, keys(a), keys(b))
	for _, k := range keys(a) {
		for _, c := range []string{"TYPE", "DUMP", "PEXPIRETIME"} {
			require.Equal(t, a.do(t, c, k), b.do(t, c, k), "%s %s", c, k)
		}
	}
}

// splitRecords splits the journal's appends into single records, without
// the markers around a group's, as the loader replays them.
func splitRecords(t *testing.T, appends [][]byte) [][]byte {
	t.Helper()
	var recs [][]byte
	for _, app := range appends {
		for rest := app; len(rest) > 0; {
			_, n, perr, _ := resp.ParseRequest(rest, nil, resp.Limits{MaxBulk: 1 << 20, Authed: true})
			require.Empty(t, perr)
			require.NotZero(t, n)
			if r := string(rest[:n]); r != journal.Multi && r != journal.Exec {
				recs = append(recs, rest[:n])
			}
			rest = rest[n:]
		}
	}
	return recs
}

func cmds(c ...[]string) []replayStep {
	out := make([]replayStep, len(c))
	for i, a := range c {
		out[i] = replayStep{cmd: a}
	}
	return out
}

// TestHashWritesReplay: every hash write is journaled as sent (after a DEL
// when it created its key or found it expired) and replays to the live
// state, HINCRBYFLOAT's long-double sums digit for digit.
func TestHashWritesReplay(t *testing.T) {
	steps := cmds(
		[]string{"HSET", "h", "tokens", "9", "ts", "1795307408539"},
		[]string{"HINCRBY", "h", "tokens", "-1"},
		[]string{"HINCRBYFLOAT", "h", "f", "0.1"},
		[]string{"HINCRBYFLOAT", "h", "f", "0.2"}, // "0.3" in long double, not 0.30000000000000004
		[]string{"HINCRBYFLOAT", "h", "g", "99971"},
		[]string{"HINCRBYFLOAT", "h", "g", "-697.55"}, // "99273.45000000000000284"
		[]string{"HSETNX", "h", "tokens", "0"},
		[]string{"HSETNX", "h", "new", "1"},
		[]string{"HMSET", "h", "a", "1", "b", "2"},
		[]string{"HDEL", "h", "a", "nope"},
		[]string{"PEXPIRE", "h", "60000"},
		[]string{"HSET", "gone", "a", "1"},
		[]string{"HDEL", "gone", "a"},
		[]string{"HSET", "exp", "a", "1"},
		[]string{"PEXPIRE", "exp", "1000"},
	)
	steps = append(steps, replayStep{advance: 2 * time.Second})
	steps = append(steps, cmds(
		[]string{"HSET", "exp", "b", "2"}, // the old hash expired: the new one has b alone
		[]string{"HINCRBY", "exp2", "n", "5"},
		[]string{"RENAME", "exp2", "moved"},
	)...)
	big := []string{"HSET", "big"}
	for i := 0; i < 600; i++ {
		big = append(big, "f"+strconv.Itoa(i), strconv.Itoa(i))
	}
	steps = append(steps, cmds(big, []string{"HDEL", "big", "f1", "f2"}, []string{"HINCRBYFLOAT", "big", "f3", "1.5"})...)
	recs := checkReplay(t, steps)
	require.Contains(t, recs, multibulk("HINCRBYFLOAT", "h", "f", "0.2"), "logged as sent")
	i := slices.Index(recs, multibulk("HSET", "exp", "b", "2"))
	require.Positive(t, i)
	require.Equal(t, multibulk("DEL", "exp"), recs[i-1], "the expired hash is deleted first")
}

// TestListWritesReplay: every list write is journaled as sent and replays
// to the live state. LMOVE and RPOPLPUSH, of two keys, replay after a DEL
// of each key they found missing or expired: a destination that expired
// live but not in the replay is not pushed onto, a source that expired is
// not popped from.
func TestListWritesReplay(t *testing.T) {
	steps := cmds(
		[]string{"RPUSH", "l", "a", "b", "c", "d", "1795307408539667"},
		[]string{"LPUSH", "l", "z"},
		[]string{"LPUSHX", "l", "y"}, []string{"RPUSHX", "nope", "x"},
		[]string{"LPOP", "l"}, []string{"RPOP", "l", "2"},
		[]string{"LSET", "l", "1", "B"},
		[]string{"LINSERT", "l", "AFTER", "B", "b2"},
		[]string{"LREM", "l", "-1", "c"},
		[]string{"LTRIM", "l", "0", "2"},
		[]string{"LTRIM", "l", "0", "-1"}, // a change, though nothing goes
		[]string{"RPUSH", "src", "1", "2", "3"},
		[]string{"LMOVE", "src", "dst", "LEFT", "RIGHT"}, // dst created: a DEL before
		[]string{"RPOPLPUSH", "src", "dst"},
		[]string{"LMOVE", "dst", "dst", "LEFT", "RIGHT"},
		[]string{"RPUSH", "old", "x"},
		[]string{"PEXPIRE", "old", "1000"},
		[]string{"RPUSH", "gone", "y"},
		[]string{"PEXPIRE", "gone", "1000"},
	)
	steps = append(steps, replayStep{advance: 2 * time.Second})
	steps = append(steps, cmds(
		[]string{"LMOVE", "src", "old", "LEFT", "LEFT"},   // old expired: a fresh list
		[]string{"RPOPLPUSH", "gone", "dst"},              // gone expired: nothing moves
		[]string{"LMOVE", "dst", "dst2", "RIGHT", "LEFT"}, // both exist, or dst2 is new
		[]string{"LPUSH", "gone", "again"},
	)...)
	long := []string{"RPUSH", "big"}
	for i := 0; i < 3000; i++ {
		long = append(long, strconv.Itoa(1795307408539667+i))
	}
	steps = append(steps, cmds(long, []string{"LTRIM", "big", "100", "-100"}, []string{"LINSERT", "big", "BEFORE", "1795307408540667", "x"},
		[]string{"LREM", "big", "0", "1795307408540000"}, []string{"LSET", "big", "-1", "end"})...)
	recs := checkReplay(t, steps)
	i := slices.Index(recs, multibulk("LMOVE", "src", "old", "LEFT", "LEFT"))
	require.Positive(t, i)
	require.Equal(t, multibulk("DEL", "old"), recs[i-1], "the expired destination is deleted first")
	i = slices.Index(recs, multibulk("RPOPLPUSH", "gone", "dst"))
	require.Positive(t, i)
	require.Equal(t, multibulk("DEL", "gone"), recs[i-1], "the expired source is deleted first: nothing moves")
}
