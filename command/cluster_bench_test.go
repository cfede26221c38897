package command

import (
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/shards"
)

// BenchmarkClusterTopology answers CLUSTER NODES, SLOTS and SHARDS from a
// table of n nodes, half of them primaries with an equal share of the
// slots and half their replicas: what a cluster client's refresh costs a
// node as the cluster grows.
func BenchmarkClusterTopology(b *testing.B) {
	for _, n := range []int{6, 100} {
		t := &SlotTable{Epoch: 1}
		primaries := n / 2
		for i := range n {
			a := NodeAddr{ID: strings.Repeat(strconv.Itoa(i%10), 40), IP: "10.0.0." + strconv.Itoa(i), Port: 7000, BusPort: 17000, ConfigEpoch: uint64(i + 1)}
			a.ID = a.ID[:37] + strconv.Itoa(100+i)
			if i >= primaries {
				a.Primary = t.Nodes[i-primaries].ID
			}
			t.Nodes = append(t.Nodes, a)
		}
		for s := range t.Owner {
			t.Owner[s] = int32(s * primaries / shards.NumSlots)
		}
		for _, sub := range []string{"NODES", "SLOTS", "SHARDS"} {
			b.Run(strconv.Itoa(n)+"/"+sub, func(b *testing.B) {
				cfg := config.New()
				if err := cfg.Set("cluster-enabled", "yes"); err != nil {
					b.Fatal(err)
				}
				srv := NewEngine(shards.New(shards.Options{}), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
				srv.SetSlotTable(t)
				c := benchConn(b, srv)
				args := [][]byte{[]byte("CLUSTER"), []byte(sub)}
				b.ReportAllocs()
				for b.Loop() {
					c.dispatchCmd(c.Lookup(args[0]), args)
					c.Out = c.Out[:0]
				}
			})
		}
	}
}
