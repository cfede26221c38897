package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPubsubNodeClients runs clients/node/pubsub.js: ioredis subscribes to
// a channel and a pattern, node-redis subscribes in RESP2 and RESP3, and
// each gets what is published. Skipped without node or the modules
// (.ci/run installs them).
func TestPubsubNodeClients(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	node, modules := nodeClients(t)
	bin, err := buildBinary()
	require.NoError(t, err)
	addr, _, _ := startArgs(t, bin, nil, "--port", "0", "--dir", t.TempDir(), "--save", "", "--appendonly", "no")
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	cmd := exec.Command(node, filepath.Join("clients", "node", "pubsub.js"), port)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	require.Equal(t, "ioredis receivers=2 message io hi, pmessage i* io hi\n"+
		"node-redis RESP2 receivers=1 nr resp2 left=0\n"+
		"node-redis RESP3 receivers=1 nr resp3 left=0\n", string(out))
}

// nodeClients returns node's path and clients/node/node_modules, or skips
// the test without node or the modules (.ci/run installs them).
func nodeClients(t *testing.T) (node, modules string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	modules, err = filepath.Abs(filepath.Join("clients", "node", "node_modules"))
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(modules, "ioredis")); err != nil {
		t.Skip("clients/node/node_modules not installed")
	}
	return node, modules
}
