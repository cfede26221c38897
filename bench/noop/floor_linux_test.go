//go:build linux

package main

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// startFloor runs the floor on a free loopback port for the rest of the
// test binary (serveFloor does not return) and gives its address.
func startFloor(t *testing.T) string {
	t.Helper()
	addrs := make(chan net.Addr, 1)
	errs := make(chan error, 1)
	go func() { errs <- serveFloor("127.0.0.1:0", func(a net.Addr) { addrs <- a }) }()
	select {
	case a := <-addrs:
		return a.String()
	case err := <-errs:
		t.Fatal(err)
	case <-time.After(5 * time.Second):
		t.Fatal("floor did not start")
	}
	return ""
}

func TestFloorAnswersPipelinedCommands(t *testing.T) {
	addr := startFloor(t)
	c := dialFloor(t, addr)
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)

	// 1000 commands in one write, the last split across two writes.
	var b strings.Builder
	for range 500 {
		b.WriteString("*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")
	}
	if _, err := io.WriteString(c, b.String()+"*1\r\n$4\r\nPI"); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		want := "+PONG\r\n"
		if i%2 == 1 {
			want = "+OK\r\n"
		}
		if line != want {
			t.Fatalf("reply %d = %q, want %q", i, line, want)
		}
	}
	if _, err := io.WriteString(c, "NG\r\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := r.ReadString('\n'); err != nil || line != "+PONG\r\n" {
		t.Fatalf("split command: %q, %v", line, err)
	}

	// A framing error gets -ERR, then the connection closes.
	if _, err := io.WriteString(c, "*1\r\n+PING\r\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "-ERR Protocol error") {
		t.Fatalf("bad frame: %q, %v", line, err)
	}
	if _, err := r.ReadByte(); err != io.EOF {
		t.Fatalf("after the error: %v, want EOF", err)
	}

	// Other clients are still served.
	pingNewClient(t, addr)
}

// dialFloor connects to the floor; the connection closes with the test.
func dialFloor(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// pingNewClient checks that a new connection gets PONG for PING.
func pingNewClient(t *testing.T, addr string) {
	t.Helper()
	c := dialFloor(t, addr)
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "PING\r\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != "+PONG\r\n" {
		t.Fatalf("new client: %q, %v", line, err)
	}
}

// A client that sends without reading: the floor stops reading it once its
// replies fill the socket, and still serves others.
func TestFloorClientNotReading(t *testing.T) {
	addr := startFloor(t)
	c := dialFloor(t, addr)
	ping := []byte(strings.Repeat("PING\r\n", 10000))
	deadline := time.Now().Add(time.Second)
	_ = c.SetWriteDeadline(deadline)
	for time.Now().Before(deadline) {
		if _, err := c.Write(ping); err != nil {
			break // the server stopped reading: our send buffer is full
		}
	}
	pingNewClient(t, addr)
}

// A client that reads late: every reply still arrives in order, the
// framing error's last, before the close.
func TestFloorLateReaderGetsEveryReply(t *testing.T) {
	addr := startFloor(t)
	c := dialFloor(t, addr)
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	const pings = 300000
	wrote := make(chan error, 1)
	go func() {
		_, err := io.WriteString(c, strings.Repeat("PING\r\n", pings)+"*1\r\n+x\r\n")
		wrote <- err
	}()
	time.Sleep(100 * time.Millisecond)
	r := bufio.NewReader(c)
	for i := range pings {
		line, err := r.ReadString('\n')
		if err != nil || line != "+PONG\r\n" {
			t.Fatalf("reply %d: %q, %v", i, line, err)
		}
	}
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "-ERR Protocol error") {
		t.Fatalf("after the pings: %q, %v", line, err)
	}
	if _, err := r.ReadByte(); err != io.EOF {
		t.Fatalf("after the error: %v, want EOF", err)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
}
