package persist_test

import (
	"bufio"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rawDo sends RESP requests on nc and returns the next n replies' first
// lines (bulk replies with their payload line), or the read error.
func rawDo(nc net.Conn, rd *bufio.Reader, req string, n int) ([]string, error) {
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write([]byte(req)); err != nil {
		return nil, err
	}
	var out []string
	for range n {
		line, err := rd.ReadString('\n')
		if err != nil {
			return out, err
		}
		if strings.HasPrefix(line, "$") && line != "$-1\r\n" {
			body, err := rd.ReadString('\n')
			if err != nil {
				return out, err
			}
			line += body
		}
		out = append(out, line)
	}
	return out, nil
}

// exited waits for the process to end by itself and returns its exit code.
func (s *process) exited(t *testing.T) int {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("ratekv did not exit:\n%s", s.output())
	}
	s.cmd.Wait()
	return s.cmd.ProcessState.ExitCode()
}

// TestShutdownGoesOnWhenTheFinalSaveFails: the final snapshot cannot be
// written (its temporary file's name is taken by a directory). SHUTDOWN
// gets Redis's error and the client's next request runs; SIGTERM leaves
// the server serving; once the disk is fixed SHUTDOWN exits 0 with the
// snapshot written; SHUTDOWN FORCE exits even while saving fails. Nothing
// acknowledged is lost on the way.
func TestShutdownGoesOnWhenTheFinalSaveFails(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a ratekv process")
	}
	bin, err := buildOnce()
	require.NoError(t, err)
	dir := t.TempDir()
	blocker := filepath.Join(dir, "dump.rkv.tmp")
	block := func() { require.NoError(t, os.MkdirAll(filepath.Join(blocker, "x"), 0o755)) }
	ctx := context.Background()

	srv := startServer(t, bin, dir, "--save", "3600 1")
	c := srv.client()
	defer c.Close()
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	block()

	nc, err := net.Dial("tcp", srv.addr)
	require.NoError(t, err)
	defer nc.Close()
	rd := bufio.NewReader(nc)
	got, err := rawDo(nc, rd, "*1\r\n$8\r\nSHUTDOWN\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", 2)
	require.NoError(t, err, "replies %q\n%s", got, srv.output())
	require.Equal(t, []string{"-ERR Errors trying to SHUTDOWN. Check logs.\r\n", "$1\r\nv\r\n"}, got)
	require.NoError(t, c.Set(ctx, "k2", "v2", 0).Err())

	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGTERM))
	require.Eventually(t, func() bool {
		return strings.Count(srv.output(), "errors trying to shut down") >= 2
	}, 20*time.Second, 10*time.Millisecond, srv.output())
	require.Equal(t, "PONG", c.Ping(ctx).Val(), "the server must go on after a SIGTERM it could not honour")
	require.NoError(t, c.Set(ctx, "k3", "v3", 0).Err())

	// Fixed: SHUTDOWN exits, without a reply, after saving.
	require.NoError(t, os.RemoveAll(blocker))
	_, err = rawDo(nc, rd, "*1\r\n$8\r\nSHUTDOWN\r\n", 1)
	require.Error(t, err, "SHUTDOWN must close the connection without a reply")
	require.Equal(t, 0, srv.exited(t), srv.output())
	_, err = os.Stat(filepath.Join(dir, "dump.rkv"))
	require.NoError(t, err, "the final snapshot")

	srv = startServer(t, bin, dir, "--save", "3600 1")
	c2 := srv.client()
	defer c2.Close()
	for k, v := range map[string]string{"k": "v", "k2": "v2", "k3": "v3"} {
		require.Equal(t, v, c2.Get(ctx, k).Val(), k)
	}
	require.NoError(t, c2.Set(ctx, "k4", "v4", 0).Err())

	// FORCE exits while the snapshot still fails; the log has everything.
	block()
	nc2, err := net.Dial("tcp", srv.addr)
	require.NoError(t, err)
	defer nc2.Close()
	_, err = rawDo(nc2, bufio.NewReader(nc2), "*2\r\n$8\r\nSHUTDOWN\r\n$5\r\nFORCE\r\n", 1)
	require.Error(t, err)
	require.Equal(t, 0, srv.exited(t), srv.output())
	require.Contains(t, srv.output(), "exiting anyway")
	require.NoError(t, os.RemoveAll(blocker))

	srv = startServer(t, bin, dir)
	c3 := srv.client()
	defer c3.Close()
	require.Equal(t, "v4", c3.Get(ctx, "k4").Val())
	require.Equal(t, int64(4), c3.DBSize(ctx).Val())
}
