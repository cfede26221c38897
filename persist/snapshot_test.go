package persist

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ratekv/ratekv/shards"
	"github.com/stretchr/testify/require"
)

// snapEntry is one key as a snapshot holds it.
type snapEntry struct {
	value    string // the value's encoding
	expireAt int64
}

// writeTestSnapshot writes a snapshot of keys (name → integer value, with
// deadlines for every third) and the given log records.
func writeTestSnapshot(t testing.TB, path string, keys int, records [][]byte) (map[string]snapEntry, []byte) {
	w, err := createSnapshot(path)
	require.NoError(t, err)
	want := map[string]snapEntry{}
	var block []byte
	n := 0
	st := shards.New(shards.Options{Shards: 1})
	for i := 0; i < keys; i++ {
		k := []byte(fmt.Sprintf("key:%d", i))
		st.Lock(0)
		e, _ := st.Put(k, 0)
		st.SetInt(e, int64(i*1000))
		if i%3 == 0 {
			st.SetExpire(k, e, 1_800_000_000_000+int64(i))
		}
		block = st.AppendRecord(block, k, e)
		want[string(k)] = snapEntry{string(st.AppendValue(nil, e)), e.ExpireAt()}
		st.Unlock(0)
		n++
		if n == 7 { // several key blocks
			require.NoError(t, w.block(blockKeys, block, n))
			block, n = nil, 0
		}
	}
	if n > 0 {
		require.NoError(t, w.block(blockKeys, block, n))
	}
	var recs []byte
	for _, r := range records {
		recs = append(recs, r...)
	}
	if len(records) > 0 {
		require.NoError(t, w.block(blockRecords, recs, len(records)))
	}
	_, err = w.commit()
	require.NoError(t, err)
	_, err = os.Stat(path + ".tmp")
	require.ErrorIs(t, err, os.ErrNotExist, "the temporary file is renamed")
	return want, recs
}

// readTestSnapshot loads data and returns what it held.
func readTestSnapshot(data []byte) (map[string]snapEntry, []byte, snapshotInfo, error) {
	got := map[string]snapEntry{}
	var recs []byte
	st := shards.New(shards.Options{Shards: 1})
	info, err := loadSnapshot(bytes.NewReader(data), "snap", int64(len(data)), snapshotHandler{
		key: func(key []byte, exp int64, v *shards.Value) error {
			st.Lock(0)
			defer st.Unlock(0)
			st.Restore(key, v, 0, 0)
			got[string(key)] = snapEntry{string(st.AppendValue(nil, st.Peek(key, 0))), exp}
			return nil
		},
		records: func(data []byte, n int) error {
			recs = append(recs, data...)
			return nil
		},
	})
	return got, recs, info, err
}

func TestSnapshotRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dump.rkv")
	records := [][]byte{rec("SET", "late", "1", "PXAT", "1800000000000"), rec("DEL", "key:1")}
	want, wantRecs := writeTestSnapshot(t, path, 30, records)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	got, recs, info, err := readTestSnapshot(data)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, wantRecs, recs)
	require.Equal(t, snapshotInfo{keys: 30, records: 2}, info)
}

func TestSnapshotEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dump.rkv")
	writeTestSnapshot(t, path, 0, nil)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	got, _, info, err := readTestSnapshot(data)
	require.NoError(t, err)
	require.Empty(t, got)
	require.Zero(t, info.keys)
}

// Any damage is detected, and detected before anything of a damaged block
// is handed out: flip every byte, cut at every length.
func TestSnapshotDamageIsAlwaysDetected(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dump.rkv")
	want, _ := writeTestSnapshot(t, path, 10, [][]byte{rec("DEL", "x")})
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	for i := range data {
		bad := bytes.Clone(data)
		bad[i] ^= 0x01
		got, _, _, err := readTestSnapshot(bad)
		var ce *CorruptError
		require.True(t, errors.As(err, &ce), "flip at %d: have %v, want a corruption error", i, err)
		for k, v := range got {
			require.Equal(t, want[k], v, "flip at %d: key %s handed out with a wrong value", i, k)
		}
	}
	for n := 0; n < len(data); n++ {
		_, _, _, err := readTestSnapshot(data[:n])
		var ce *CorruptError
		require.True(t, errors.As(err, &ce), "cut at %d: have %v", n, err)
	}
	_, _, _, err = readTestSnapshot(append(bytes.Clone(data), 0))
	require.ErrorContains(t, err, "data after the end block")
}

func TestSnapshotErrorsNameTheProblem(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dump.rkv")
	writeTestSnapshot(t, path, 3, nil)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	for i, tt := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty file", nil, "file ends early"},
		{"redis rdb", []byte("REDIS0011\xfa\x09redis-ver"), "bad magic"},
		{"future version", append([]byte("RATEKV\x02\x00\x00\x00"), data[headerLen:]...), "format version 2"},
		{"unknown block", append(bytes.Clone(data[:headerLen]), 'Z', 0, 0, 0, 0, 0), "unknown block type"},
		{"huge block length", append(bytes.Clone(data[:headerLen]), 'K', 0xff, 0xff, 0xff, 0xff, 0x0f), "left in the file"},
	} {
		_, _, _, err := readTestSnapshot(tt.data)
		require.ErrorContains(t, err, tt.want, "step %d (%s)", i, tt.name)
	}
}

// FuzzLoadSnapshot: garbage never panics, and nothing is allocated beyond
// the input's own size (block lengths are checked against it first).
func FuzzLoadSnapshot(f *testing.F) {
	path := filepath.Join(f.TempDir(), "dump.rkv")
	writeTestSnapshot(f, path, 5, [][]byte{rec("DEL", "k")})
	data, err := os.ReadFile(path)
	require.NoError(f, err)
	f.Add(data)
	f.Add(data[:headerLen])
	f.Add([]byte("RATEKV\x01\x00\x00\x00K\xff\xff\xff\xff\xff\xff\xff\xff\x7f"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, info, err := readTestSnapshot(data)
		if err == nil {
			require.LessOrEqual(t, info.keys+info.records, uint64(len(data)))
		}
	})
}
