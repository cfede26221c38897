package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// The tests here run the ratekv binary: a second server on a data directory
// in use, a start whose port is taken and a start with a bad configuration
// all refuse, and none of them changes a byte in the directory.

var buildBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "ratekv-start-bin")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "ratekv")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		return "", &exec.ExitError{Stderr: out}
	}
	return bin, nil
})

var readyLine = regexp.MustCompile(`ready to accept connections"? addr=(\S+)`)

// startRatekv starts the binary on dir and returns its address once ready.
func startRatekv(t *testing.T, bin, dir string, args ...string) (addr string, cmd *exec.Cmd) {
	t.Helper()
	return startRatekvVia(t, nil, bin, dir, args...)
}

// startRatekvVia is startRatekv run through a wrapper command (ip netns
// exec …) when via is not empty.
func startRatekvVia(t *testing.T, via []string, bin, dir string, args ...string) (addr string, cmd *exec.Cmd) {
	t.Helper()
	argv := append(append(append([]string(nil), via...), bin, "--port", "0", "--dir", dir), args...)
	cmd = exec.Command(argv[0], argv[1:]...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := readyLine.FindStringSubmatch(sc.Text()); m != nil {
				ready <- m[1]
			}
		}
	}()
	select {
	case addr = <-ready:
	case <-time.After(20 * time.Second):
		t.Fatal("ratekv not ready after 20 s")
	}
	return addr, cmd
}

// refusedStart runs the binary with args and returns its output; it must
// exit non-zero within 20 s.
func refusedStart(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	require.Error(t, err, "the start must fail:\n%s", out)
	require.NoError(t, ctx.Err(), "the refused start must exit by itself")
	return string(out)
}

// checksums returns every file under dir with its SHA-256.
func checksums(t *testing.T, dir string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	require.NoError(t, filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		h := sha256.Sum256(b)
		sums[strings.TrimPrefix(path, dir)] = hex.EncodeToString(h[:])
		return nil
	}))
	return sums
}

func TestRefusedStartsLeaveTheDirectoryAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, err := buildBinary()
	require.NoError(t, err)
	dir := t.TempDir()

	addr, first := startRatekv(t, bin, dir, "--appendfsync", "always")
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx := context.Background()
	for i := range 100 {
		require.NoError(t, c.Set(ctx, "k"+string(rune('a'+i%26)), i, 0).Err())
	}

	// A second server on the directory in use.
	before := checksums(t, dir)
	out := refusedStart(t, bin, "--port", "0", "--dir", dir)
	require.Contains(t, out, "is in use by another ratekv (pid")
	require.Contains(t, out, addr)
	require.Equal(t, before, checksums(t, dir), "the second server touched the directory")
	require.Equal(t, "76", c.Get(ctx, "ky").Val(), "the first server goes on")

	// The first one stops; a start whose port is taken refuses.
	require.NoError(t, first.Process.Signal(syscall.SIGTERM))
	require.NoError(t, first.Wait())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	before = checksums(t, dir)
	out = refusedStart(t, bin, "--port", port, "--dir", dir)
	require.Contains(t, out, "cannot listen")
	require.Equal(t, before, checksums(t, dir), "a start that could not listen touched the directory")

	// A bad configuration refuses before anything.
	out = refusedStart(t, bin, "--port", "0", "--dir", dir, "--appendfsync", "sometimes")
	require.Contains(t, out, "appendfsync")
	require.Equal(t, before, checksums(t, dir))

	// A fresh directory that cannot be served is left empty.
	fresh := t.TempDir()
	refusedStart(t, bin, "--port", port, "--dir", fresh)
	require.Empty(t, checksums(t, fresh))

	// And the data is all there for the next start.
	addr, _ = startRatekv(t, bin, dir)
	c2 := redis.NewClient(&redis.Options{Addr: addr})
	defer c2.Close()
	require.Equal(t, "76", c2.Get(ctx, "ky").Val())
}
