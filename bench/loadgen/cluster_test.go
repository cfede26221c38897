package main

import (
	"strings"
	"testing"
)

func TestKeySlot(t *testing.T) {
	for _, c := range []struct {
		key  string
		slot int
	}{
		{"123456789", 0x31C3},                         // the CRC16/XMODEM check value
		{"foo", 12182},                                // CLUSTER KEYSLOT foo (Redis Cluster spec)
		{"rl:1", 3387},                                // CLUSTER KEYSLOT rl:1
		{"{user1000}.following", 3443},                // the hash tag's slot
		{"{user1000}.followers", 3443},                //
		{"foo{}{bar}", keySlot([]byte("foo{}{bar}"))}, // an empty tag: the whole key
		{"", 0},
	} {
		if got := keySlot([]byte(c.key)); got != c.slot {
			t.Errorf("keySlot(%q) = %d, want %d", c.key, got, c.slot)
		}
	}
	if keySlot([]byte("foo{}{bar}")) != int(crc16([]byte("foo{}{bar}")))&(numSlots-1) {
		t.Error("an empty hash tag must hash the whole key")
	}
	if keySlot([]byte("{user1000}.following")) != keySlot([]byte("user1000")) {
		t.Error("a hash tag must hash only the tag")
	}
}

const nodesText = "07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004,h replica e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected\n" +
	"67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922\n" +
	"292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30003@31003 master - 0 1426238318243 3 connected 10923-16383 [10923->-67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1]\n" +
	"e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca :30001@31001 myself,master - 0 0 1 connected 0-5459 5460\n" +
	"824fe116063bc5fcf9f4ffd895bc17aee7731ac3 127.0.0.1:30006@31006 master,fail - 1426238316232 0 6 disconnected\n"

func TestParseClusterNodes(t *testing.T) {
	m, err := parseClusterNodes(nodesText, "10.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"127.0.0.1:30002", "127.0.0.1:30003", "10.0.0.1:30001"}
	if strings.Join(m.addrs, " ") != strings.Join(want, " ") {
		t.Fatalf("addrs %q, want %q", m.addrs, want)
	}
	for _, c := range []struct {
		slot int
		node int16
	}{{0, 2}, {5459, 2}, {5460, 2}, {5461, 0}, {10922, 0}, {10923, 1}, {16383, 1}} {
		if m.owner[c.slot] != c.node {
			t.Errorf("slot %d: node %d, want %d", c.slot, m.owner[c.slot], c.node)
		}
	}
	for _, bad := range []string{
		"", // no primary
		strings.Replace(nodesText, "5460\n", "\n", 1), // slot 5460 not served
		strings.Replace(nodesText, "5461-10922", "5461-16384", 1),
		strings.Replace(nodesText, "5461-10922", "x-10922", 1),
		strings.Replace(nodesText, "127.0.0.1:30002@", "nocolon@", 1),
	} {
		if _, err := parseClusterNodes(bad, "h"); err == nil {
			t.Errorf("no error for %q", bad)
		}
	}
	if got := bulkText([]byte("=9\r\ntxt:a b c\r\n")); got != "a b c" {
		t.Errorf("verbatim: %q", got)
	}
	if got := bulkText([]byte("$5\r\na b c\r\n")); got != "a b c" {
		t.Errorf("bulk: %q", got)
	}
}

// TestClusterWorkerKeys: with -cluster each connection sends only keys of
// its own node's slots.
func TestClusterWorkerKeys(t *testing.T) {
	m, err := parseClusterNodes(nodesText, "h")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config{workload: "throttle_cell", pipeline: 64, keys: 100000, seed: 1, cmap: m}
	cfg.throttleTail = appendThrottleArgs(nil, cfg)
	wl := workloads["throttle_cell"]
	for id := 0; id < 3; id++ {
		w := newWorker(nil, wl, cfg, id, new(result))
		w.build()
		rest, n := w.wbuf, 0
		for len(rest) > 0 {
			m2, _, err := parseReply(rest)
			if err != nil || m2 == 0 {
				t.Fatalf("bad batch: %v", err)
			}
			args := strings.Split(string(rest[:m2]), "\r\n")
			key := args[4] // *6 $11 CL.THROTTLE $n key
			if got := m.owner[keySlot([]byte(key))]; got != int16(id) {
				t.Fatalf("connection %d sent %s (slot of node %d)", id, key, got)
			}
			rest, n = rest[m2:], n+1
		}
		if n != cfg.pipeline {
			t.Fatalf("connection %d: %d requests, want %d", id, n, cfg.pipeline)
		}
	}
}

// TestClusterKeyDrawAllocs: drawing a key of its node allocates nothing.
func TestClusterKeyDrawAllocs(t *testing.T) {
	m, err := parseClusterNodes(nodesText, "h")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config{workload: "throttle_cell", pipeline: 32, keys: 100000, seed: 1, cmap: m}
	cfg.throttleTail = appendThrottleArgs(nil, cfg)
	w := newWorker(nil, workloads["throttle_cell"], cfg, 1, new(result))
	w.build()
	if a := testing.AllocsPerRun(100, w.build); a != 0 {
		t.Fatalf("%v allocations per batch", a)
	}
}
