package persist

import (
	"bytes"
	"testing/iotest"

	"github.com/ratekv/ratekv/journal"
	"github.com/tidwall/redcon"
)

// rec encodes one record as the journal does.
func rec(args ...string) []byte {
	b := redcon.AppendArray(nil, len(args))
	for _, a := range args {
		b = redcon.AppendBulkString(b, a)
	}
	return b
}

func strs(args [][]byte) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out
}

// readAll reads every record of data with a journal.Reader fed small
// reads, so records straddle reads.
func readAll(data []byte) (recs [][]string, err error) {
	rr := journal.NewReader(iotest.HalfReader(bytes.NewReader(data)), "f", int64(len(data)))
	for {
		args, err := rr.Next()
		if err != nil {
			return recs, err
		}
		recs = append(recs, strs(args))
	}
}
