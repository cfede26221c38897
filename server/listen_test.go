package server

import (
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/shards"
	"github.com/stretchr/testify/require"
)

// bind as redis.conf writes it: a "-" address is optional (skipped when it
// does not exist here, 192.0.2.1 being TEST-NET), "*" is every IPv4 address.
func TestListenBind(t *testing.T) {
	for i, tt := range []struct {
		bind      string
		listeners int
		err       string
	}{
		{"127.0.0.1", 1, ""},
		{"127.0.0.1 -192.0.2.1", 1, ""},
		{"-192.0.2.1 127.0.0.1", 1, ""},
		{"127.0.0.1 192.0.2.1", 0, "listen on 192.0.2.1"},
		{"-192.0.2.1", 0, "bind names no address"},
		{"*", 1, ""},
	} {
		cfg := config.New()
		require.NoError(t, cfg.Set("port", "0"))
		require.NoError(t, cfg.Set("bind", tt.bind))
		store := shards.New(shards.Options{Shards: 1})
		srv := New(store, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		err := srv.Listen()
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("step %d: bind %q: have %v, want %q", i, tt.bind, err, tt.err)
			}
		} else if err != nil {
			t.Errorf("step %d: bind %q: %v", i, tt.bind, err)
		}
		if err == nil && len(srv.listeners) != tt.listeners {
			t.Errorf("step %d: bind %q: have %d listeners, want %d", i, tt.bind, len(srv.listeners), tt.listeners)
		}
		if tt.bind == "*" && err == nil {
			require.True(t, srv.Addr().(*net.TCPAddr).IP.Equal(net.IPv4zero), "bind *: %s", srv.Addr())
		}
		srv.closeListeners()
		store.Close()
	}
}
