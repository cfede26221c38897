package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ratekv/ratekv/internal/nodeid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestClusterNodeKept: a server in cluster mode makes its node id once and
// keeps it, with the config epoch, in the data directory: a restart is the
// same node. Outside cluster mode no identity file is made, and a damaged
// one refuses the start rather than becoming another node.
func TestClusterNodeKept(t *testing.T) {
	bin, err := buildBinary()
	require.NoError(t, err)
	ctx := context.Background()
	dir := t.TempDir()
	myid := func(args ...string) string {
		addr, cmd := startRatekv(t, bin, dir, args...)
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		defer rdb.Close()
		id, err := rdb.ClusterMyID(ctx).Result()
		if err != nil {
			require.NoError(t, cmd.Process.Kill())
			cmd.Wait()
			return "error: " + err.Error()
		}
		require.NoError(t, cmd.Process.Kill())
		cmd.Wait()
		return id
	}
	require.Equal(t, "error: ERR This instance has cluster support disabled", myid())
	_, err = os.Stat(filepath.Join(dir, nodeid.FileName))
	require.ErrorIs(t, err, os.ErrNotExist, "no identity outside cluster mode")

	first := myid("--cluster-enabled", "yes")
	require.True(t, nodeid.ValidID(first), first)
	require.Equal(t, first, myid("--cluster-enabled", "yes"), "a restart is the same node")
	kept, err := nodeid.Load(dir)
	require.NoError(t, err)
	require.Equal(t, nodeid.Identity{ID: first, ConfigEpoch: 1}, kept)

	require.NoError(t, os.WriteFile(filepath.Join(dir, nodeid.FileName), []byte("id nothex\n"), 0o644))
	out := refusedStart(t, bin, "--port", "0", "--dir", dir, "--cluster-enabled", "yes")
	require.Contains(t, out, "cannot load the cluster node's identity")
}
