package main

// -cluster: load a Redis Cluster (ratekv's or Redis's) through its
// primaries. The slot map comes from CLUSTER NODES on -addr; the
// connections are spread over the primaries in turn, and each connection
// draws only keys of its own node's slots (a rejected draw is drawn again),
// so that no request is redirected and the keys keep the workload's
// distribution within each node's share.

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

const numSlots = 16384

// clusterMap is the cluster's primaries and which of them serves each slot.
type clusterMap struct {
	addrs []string
	owner [numSlots]int16 // index into addrs; -1: not served
}

// readClusterMap asks the node at addr for CLUSTER NODES.
func readClusterMap(addr string) (*clusterMap, error) {
	c, err := dial(addr, dialTimeout)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	reply, err := c.do("CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(addr)
	return parseClusterNodes(bulkText(reply), host)
}

// bulkText returns the text of a bulk string or RESP3 verbatim reply.
func bulkText(reply []byte) string {
	i := bytes.Index(reply, []byte("\r\n"))
	if i < 0 || len(reply) < i+4 {
		return ""
	}
	s := string(reply[i+2 : len(reply)-2])
	if reply[0] == '=' && len(s) >= 4 {
		s = s[4:] // "txt:"
	}
	return s
}

// parseClusterNodes reads CLUSTER NODES text: the primaries that serve
// slots, by address (a node that names no ip gets defaultHost), and the
// owner of each slot. Importing/migrating entries ("[…]") are skipped.
func parseClusterNodes(text, defaultHost string) (*clusterMap, error) {
	m := &clusterMap{}
	for i := range m.owner {
		m.owner[i] = -1
	}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		if !strings.Contains(","+f[2]+",", ",master,") || strings.Contains(f[2], "fail") || len(f) == 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		addr, _, _ = strings.Cut(addr, ",")
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("CLUSTER NODES: bad address %q", f[1])
		}
		if host == "" {
			host = defaultHost
		}
		idx := int16(len(m.addrs))
		m.addrs = append(m.addrs, net.JoinHostPort(host, port))
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue
			}
			lo, hi, isRange := strings.Cut(r, "-")
			a, err1 := strconv.Atoi(lo)
			b := a
			var err2 error
			if isRange {
				b, err2 = strconv.Atoi(hi)
			}
			if err1 != nil || err2 != nil || a < 0 || b >= numSlots || a > b {
				return nil, fmt.Errorf("CLUSTER NODES: bad slot range %q", r)
			}
			for s := a; s <= b; s++ {
				m.owner[s] = idx
			}
		}
	}
	if len(m.addrs) == 0 {
		return nil, errors.New("CLUSTER NODES: no primary serves any slot")
	}
	for s, o := range m.owner {
		if o < 0 {
			return nil, fmt.Errorf("CLUSTER NODES: slot %d is not served", s)
		}
	}
	return m, nil
}

// keySlot is Redis Cluster's hash slot of key: CRC16 (XMODEM) of the key,
// or of its hash tag (the part between the first "{" and the next "}",
// when not empty), modulo 16384.
func keySlot(key []byte) int {
	if i := bytes.IndexByte(key, '{'); i >= 0 {
		if j := bytes.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key)) & (numSlots - 1)
}

// crc16 is CRC16/XMODEM, a table lookup per byte: the load generator
// computes it for every key it draws in -cluster mode.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^c]
	}
	return crc
}

var crc16Table = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()

// keySlotOf is the slot of the key the worker's workload names for key
// number n, built in the worker's scratch buffer.
func (w *worker) keySlotOf(n uint64) int {
	w.kbuf = strconv.AppendUint(append(w.kbuf[:0], w.wl.key...), n, 10)
	return keySlot(w.kbuf)
}
