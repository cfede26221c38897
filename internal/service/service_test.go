package service

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// listenNotify listens on a datagram socket named name, as systemd does.
func listenNotify(t *testing.T, name string) *net.UnixConn {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

func receive(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	buf := make([]byte, 4096)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	n, err := conn.Read(buf)
	require.NoError(t, err)
	return string(buf[:n])
}

func TestNotify(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no unix datagram sockets")
	}
	path := filepath.Join(t.TempDir(), "notify")
	conn := listenNotify(t, path)
	require.NoError(t, Notify(path, Ready))
	require.NoError(t, Notify(path, Stopping))
	require.Equal(t, "READY=1\nSTATUS=Ready to accept connections", receive(t, conn))
	require.Equal(t, "STOPPING=1\nSTATUS=Shutting down", receive(t, conn))

	require.NoError(t, Notify("", Ready), "no socket: nothing to do")
	require.ErrorContains(t, Notify("notify", Ready), "neither a path nor an abstract socket")
	require.Error(t, Notify(filepath.Join(t.TempDir(), "none"), Ready))
}

// systemd may name an abstract socket ("@/org/freedesktop/systemd1/notify").
func TestNotifyAbstract(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("abstract sockets are Linux's")
	}
	name := fmt.Sprintf("@ratekv-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	conn := listenNotify(t, name)
	require.NoError(t, Notify(name, Ready))
	require.Equal(t, Ready, receive(t, conn))
}

func TestWritePidfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ratekv.pid")
	remove, err := WritePidfile(path)
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(os.Getpid())+"\n", string(b))
	remove()
	require.NoFileExists(t, path)

	// A file another process has taken over since stays.
	remove, err = WritePidfile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte("1\n"), 0o644))
	remove()
	require.FileExists(t, path)

	_, err = WritePidfile(filepath.Join(t.TempDir(), "no", "such", "dir.pid"))
	require.ErrorContains(t, err, "writing the pid file")
}

// A log rotated by moving the file goes on in a new file at the path.
func TestLogFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ratekv.log")
	l, err := OpenLog(path)
	require.NoError(t, err)
	for _, line := range []string{"one\n", "two\n"} {
		n, err := l.Write([]byte(line))
		require.NoError(t, err)
		require.Equal(t, len(line), n)
	}
	require.NoError(t, os.Rename(path, path+".1"))
	_, err = l.Write([]byte("three\n"))
	require.NoError(t, err)
	b, err := os.ReadFile(path + ".1")
	require.NoError(t, err)
	require.Equal(t, "one\ntwo\n", string(b))
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "three\n", string(b))

	_, err = OpenLog(filepath.Join(dir, "no", "such", "dir.log"))
	require.Error(t, err)
}

// log-format switches every logger derived from the handler, at once.
func TestLogHandlerFormat(t *testing.T) {
	var b strings.Builder
	h := NewLogHandler(&b, slog.LevelInfo, "text")
	log := slog.New(h).With("id", 7)
	log.Info("one")
	h.SetFormat("json")
	log.WithGroup("g").Info("two", "k", "v")
	log.Debug("hidden")
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 2)
	require.Regexp(t, `^time=\S+ level=INFO msg=one id=7$`, lines[0])
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &rec))
	require.Equal(t, "two", rec["msg"])
	require.EqualValues(t, 7, rec["id"])
	require.Equal(t, map[string]any{"k": "v"}, rec["g"])
}

// Reopen creates the file again at its path after it was moved away.
func TestLogFileReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ratekv.log")
	l, err := OpenLog(path)
	require.NoError(t, err)
	require.NoError(t, os.Rename(path, path+".1"))
	require.NoError(t, l.Reopen())
	_, err = os.Stat(path)
	require.NoError(t, err)
	require.NoError(t, os.Remove(path))
	require.NoError(t, os.Mkdir(path, 0o755)) // a directory where the log goes
	require.Error(t, l.Reopen())
}
