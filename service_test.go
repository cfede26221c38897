package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// The tests here start ratekv as a service manager would: from a stock
// redis.conf, under systemd's notification socket, with a pid file and a
// log file.

// stockRedisConfs are the stock Redis 7 files at hand: the copy in
// config/testdata and the installed one, if any.
func stockRedisConfs(t *testing.T) []string {
	files := []string{filepath.Join("config", "testdata", "redis.conf")}
	if _, err := os.Stat("/etc/redis/redis.conf"); err == nil {
		files = append(files, "/etc/redis/redis.conf")
	}
	return files
}

// startArgs starts the binary with args as given (and env added to the
// environment) and returns its address once ready, with what it wrote to
// standard error until then.
func startArgs(t *testing.T, bin string, env []string, args ...string) (addr string, cmd *exec.Cmd, stderr *strings.Builder) {
	t.Helper()
	cmd = exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	pipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	stderr = new(strings.Builder)
	deadline := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("ratekv exited before it was ready:\n%s", stderr)
			}
			stderr.WriteString(l + "\n")
			if m := readyLine.FindStringSubmatch(l); m != nil {
				go func() { // drain the rest
					for range lines {
					}
				}()
				return m[1], cmd, stderr
			}
		case <-deadline:
			t.Fatalf("ratekv not ready after 20 s:\n%s", stderr)
		}
	}
}

// notifySocket listens where a test systemd would, and returns its name.
func notifySocket(t *testing.T) (string, *net.UnixConn) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return path, conn
}

func receiveNotify(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	buf := make([]byte, 4096)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	n, err := conn.Read(buf)
	require.NoError(t, err)
	return string(buf[:n])
}

// A stock redis.conf starts ratekv with what Debian's unit passes to
// redis-server (--supervised systemd --daemonize no), plus a port, a data
// directory, a pid file and standard error for the test. It warns once
// per directive that differs, tells systemd when it is ready and when it
// stops, and removes its pid file at exit.
func TestStartsFromRedisConf(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, err := buildBinary()
	require.NoError(t, err)
	for _, conf := range stockRedisConfs(t) {
		t.Run(conf, func(t *testing.T) {
			dir := t.TempDir()
			pidfile := filepath.Join(t.TempDir(), "ratekv.pid")
			socket, notify := notifySocket(t)

			// As shipped, the file says daemonize yes: refused, before
			// anything is created.
			out := refusedStart(t, bin, conf, "--port", "0", "--dir", dir, "--logfile", "", "--pidfile", pidfile)
			require.Contains(t, out, ": daemonize yes: ratekv does not fork")
			require.Empty(t, checksums(t, dir))
			require.NoFileExists(t, pidfile)

			addr, cmd, stderr := startArgs(t, bin, []string{"NOTIFY_SOCKET=" + socket}, conf,
				"--port", "0", "--dir", dir, "--logfile", "", "--pidfile", pidfile,
				"--supervised", "systemd", "--daemonize", "no")
			require.Equal(t, "READY=1\nSTATUS=Ready to accept connections", receiveNotify(t, notify))
			b, err := os.ReadFile(pidfile)
			require.NoError(t, err)
			require.Equal(t, strconv.Itoa(cmd.Process.Pid)+"\n", string(b))
			for _, w := range []string{"databases 16: ratekv has only db 0", "dbfilename dump.rdb: ratekv writes its own"} {
				require.Equal(t, 1, strings.Count(stderr.String(), w), "%q in\n%s", w, stderr)
			}
			require.Equal(t, 2, strings.Count(stderr.String(), "level=WARN"), stderr.String())

			c := redis.NewClient(&redis.Options{Addr: addr})
			defer c.Close()
			require.NoError(t, c.Set(context.Background(), "k", "v", 0).Err())

			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			require.Equal(t, "STOPPING=1\nSTATUS=Shutting down", receiveNotify(t, notify))
			require.NoError(t, cmd.Wait())
			require.NoFileExists(t, pidfile)
			require.FileExists(t, filepath.Join(dir, "dump.rdb"), "appendonly no: the data is in the snapshot")
		})
	}
}

// logfile: the log goes to the file, and goes on in a new file at the path
// after the old one was moved away (logrotate without copytruncate).
func TestLogFile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, err := buildBinary()
	require.NoError(t, err)
	dir := t.TempDir()
	logfile := filepath.Join(t.TempDir(), "ratekv.log")
	cmd := exec.Command(bin, "--port", "0", "--dir", dir, "--logfile", logfile)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitFor := func(path, text string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if b, _ := os.ReadFile(path); strings.Contains(string(b), text) {
				return
			}
		}
		b, _ := os.ReadFile(path)
		t.Fatalf("no %q in %s:\n%s", text, path, b)
	}
	waitFor(logfile, "ready to accept connections")
	require.NoError(t, os.Rename(logfile, logfile+".1"))
	// logrotate's postrotate: SIGHUP reopens the log, the server goes on.
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	waitFor(logfile, "log file reopened")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait())
	waitFor(logfile, "ready to exit")
	require.Empty(t, stderr.String(), "everything goes to the log file")

	out := refusedStart(t, bin, "--port", "0", "--dir", dir, "--logfile", filepath.Join(dir, "no", "such", "ratekv.log"))
	require.Contains(t, out, "can't open the log file")

	// log-format json: one JSON object a line.
	jsonLog := filepath.Join(t.TempDir(), "ratekv.json")
	cmd = exec.Command(bin, "--port", "0", "--dir", dir, "--logfile", jsonLog, "--log-format", "json")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitFor(jsonLog, "ready to accept connections")
	b, err := os.ReadFile(jsonLog)
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "%q", line)
		require.Contains(t, rec, "msg")
	}
}
