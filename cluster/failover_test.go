package cluster

import (
	"math"
	"testing"
	"time"
)

// TestValidReplica: Redis's data-age rule for an automatic failover
// (clusterHandleSlaveFailover): the age beyond cluster-node-timeout
// against repl-ping-replica-period + node timeout × validity factor.
func TestValidReplica(t *testing.T) {
	const nt, ping = time.Second, 10 * time.Second
	for i, c := range []struct {
		age    time.Duration
		factor int64
		want   bool
	}{
		0: {0, 10, true},
		1: {nt, 10, true},
		2: {nt + ping + 10*nt, 10, true},      // at the limit
		3: {nt + ping + 10*nt + 1, 10, false}, // past it
		4: {ping + nt, 1, true},               // nt is taken off first
		5: {ping + 2*nt + time.Millisecond, 1, false},
		6: {time.Duration(math.MaxInt64), 10, false}, // never linked
		7: {time.Duration(math.MaxInt64), 0, true},   // 0: always eligible
		8: {time.Hour, math.MaxInt32, true},
	} {
		if got := validReplica(c.age, nt, ping, c.factor); got != c.want {
			t.Errorf("step %d: validReplica(%v, factor %d) = %v, want %v", i, c.age, c.factor, got, c.want)
		}
	}
}
