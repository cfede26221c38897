package nodeid

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoadCreatesOnceAndKeeps(t *testing.T) {
	dir := t.TempDir()
	first, err := Load(dir)
	require.NoError(t, err)
	require.True(t, ValidID(first.ID), first.ID)
	require.Equal(t, uint64(1), first.ConfigEpoch)
	again, err := Load(dir)
	require.NoError(t, err)
	require.Equal(t, first, again)
	other, err := Load(t.TempDir())
	require.NoError(t, err)
	require.NotEqual(t, first.ID, other.ID)

	first.ConfigEpoch = 7
	require.NoError(t, Save(dir, first))
	again, err = Load(dir)
	require.NoError(t, err)
	require.Equal(t, first, again)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left behind")
}

func TestParse(t *testing.T) {
	id := strings.Repeat("ab", 20)
	for i, tt := range []struct {
		in   string
		want Identity
		err  string
	}{
		0: {in: "id " + id + "\nconfig-epoch 3\n", want: Identity{id, 3}},
		1: {in: "# c\n\n  id " + id + "  \nconfig-epoch 0", want: Identity{id, 0}},
		2: {in: "id " + id + "\n", err: "want both"},
		3: {in: "config-epoch 1\n", err: "want both"},
		4: {in: "id " + strings.ToUpper(id) + "\nconfig-epoch 1\n", err: "hex"},
		5: {in: "id " + id[:39] + "\nconfig-epoch 1\n", err: "hex"},
		6: {in: "id " + id + "\nconfig-epoch -1\n", err: "bad config-epoch"},
		7: {in: "id " + id + "\nconfig-epoch 1\nslots 0-16383\n", err: "unknown field"},
		8: {in: "id\n", err: "want a name and a value"},
		9: {in: "", err: "want both"},
	} {
		have, err := Parse([]byte(tt.in))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("step %d: have error %v, want %q", i, err, tt.err)
			}
			continue
		}
		if err != nil || have != tt.want {
			t.Errorf("step %d: have %+v %v, want %+v", i, have, err, tt.want)
		}
	}
}

func TestLoadRefusesDamagedFile(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, FileName), []byte("id xyz\n"), 0o644))
	_, err := Load(dir)
	require.ErrorContains(t, err, FileName)
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	require.NoError(t, err)
	require.Equal(t, "id xyz\n", string(b), "a damaged file is left as it is")
}
