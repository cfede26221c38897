// Package nodeid keeps the identity of a cluster-mode server in its data
// directory: a node id of 40 hex characters, made once at the first start
// in cluster mode, and the configuration epoch. Redis keeps both in its
// nodes.conf; ratekv keeps them in a file of its own so that a restart, or
// the nodes of a later multi-node cluster, see the same node.
//
// The file is small text, written whole and atomically (a temporary file,
// fsync, rename, fsync of the directory):
//
//	# ratekv cluster node: created once, kept across restarts
//	id 7f0c…(40 hex)
//	config-epoch 1
package nodeid

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// FileName is the identity file's name inside the data directory.
const FileName = "cluster-node.conf"

// IDLen is the length of a node id, as Redis's CLUSTER_NAMELEN.
const IDLen = 40

// Identity is a node's id and configuration epoch. The zero value is no
// identity.
type Identity struct {
	ID          string
	ConfigEpoch uint64
}

// New returns a fresh identity: a random id, epoch 1 (the node owns its
// slots from its first configuration on).
func New() Identity {
	var b [IDLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return Identity{ID: hex.EncodeToString(b[:]), ConfigEpoch: 1}
}

// Load returns the identity kept in dir, creating and saving a new one
// when dir has none. A file that exists but cannot be read is an error:
// the node must not silently become another.
func Load(dir string) (Identity, error) {
	path := filepath.Join(dir, FileName)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		id := New()
		return id, Save(dir, id)
	}
	if err != nil {
		return Identity{}, err
	}
	id, err := Parse(b)
	if err != nil {
		return Identity{}, fmt.Errorf("%s: %w", path, err)
	}
	return id, nil
}

// Parse reads the file's contents: "id" and "config-epoch" lines, blank
// lines and '#' comments; anything else is an error.
func Parse(b []byte) (Identity, error) {
	var id Identity
	var haveID, haveEpoch bool
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return Identity{}, fmt.Errorf("line %d: want a name and a value", n+1)
		}
		switch f[0] {
		case "id":
			if !ValidID(f[1]) {
				return Identity{}, fmt.Errorf("line %d: the id must be %d lower-case hex characters", n+1, IDLen)
			}
			id.ID, haveID = f[1], true
		case "config-epoch":
			e, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return Identity{}, fmt.Errorf("line %d: bad config-epoch %q", n+1, f[1])
			}
			id.ConfigEpoch, haveEpoch = e, true
		default:
			return Identity{}, fmt.Errorf("line %d: unknown field %q", n+1, f[0])
		}
	}
	if !haveID || !haveEpoch {
		return Identity{}, errors.New("want both an id and a config-epoch line")
	}
	return id, nil
}

// ValidID reports whether s is a node id: 40 lower-case hex characters.
func ValidID(s string) bool {
	if len(s) != IDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// Save writes id to dir atomically: a reader sees the old file or the new
// one, never a part.
func Save(dir string, id Identity) error {
	if !ValidID(id.ID) {
		return fmt.Errorf("invalid node id %q", id.ID)
	}
	data := fmt.Sprintf("# ratekv cluster node: created once, kept across restarts\nid %s\nconfig-epoch %d\n", id.ID, id.ConfigEpoch)
	path := filepath.Join(dir, FileName)
	tmp, err := os.CreateTemp(dir, FileName+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing
	if _, err := tmp.WriteString(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
