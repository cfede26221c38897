package server

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// INFO stats counts the socket reads and writes (total_reads_processed,
// total_writes_processed), with the event loops and with a goroutine per
// client; CONFIG RESETSTAT zeroes them.
func TestReadsWritesProcessed(t *testing.T) {
	for _, loop := range []string{"yes", "no"} {
		t.Run("event-loop "+loop, func(t *testing.T) {
			ts := newTestServer(t, "event-loop", loop)
			rdb := ts.client(t, 2)
			ctx := context.Background()
			field := func(name string) int64 {
				text, err := rdb.Info(ctx, "stats").Result()
				require.NoError(t, err)
				m := regexp.MustCompile(fmt.Sprintf(`(?m)^%s:(\d+)\r$`, name)).FindStringSubmatch(text)
				require.NotNil(t, m, name)
				n, _ := strconv.ParseInt(m[1], 10, 64)
				return n
			}
			reads, writes := field("total_reads_processed"), field("total_writes_processed")
			require.Positive(t, reads)
			for range 5 {
				require.NoError(t, rdb.Ping(ctx).Err())
			}
			// Five pings and the INFO: one read and one write each at least.
			require.GreaterOrEqual(t, field("total_reads_processed"), reads+6)
			require.GreaterOrEqual(t, field("total_writes_processed"), writes+6)
			require.NoError(t, rdb.ConfigResetStat(ctx).Err())
			require.Less(t, field("total_reads_processed"), int64(3))
		})
	}
}
