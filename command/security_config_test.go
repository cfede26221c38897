package command

import "testing"

// The TLS and protected-mode parameters under CONFIG GET and SET, as
// redis-server 7.0.15 (built with TLS, no TLS port) replies. Without a TLS
// port nothing loads, so a file that does not exist is taken, as there.
func TestConfigSecurityParams(t *testing.T) {
	r := newTestServer(t).raw(t)
	failed := func(name, reason string) string {
		return svErr("ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + reason)
	}
	runSvSteps(t, r, []svStep{
		{[]string{"CONFIG", "GET", "protected-mode"}, "*2\r\n$14\r\nprotected-mode\r\n$3\r\nyes\r\n"},
		{[]string{"CONFIG", "GET", "tls-auth-clients"}, "*2\r\n$16\r\ntls-auth-clients\r\n$3\r\nyes\r\n"},
		{[]string{"CONFIG", "GET", "tls-session-cache-size"}, "*2\r\n$22\r\ntls-session-cache-size\r\n$5\r\n20480\r\n"},
		{[]string{"CONFIG", "GET", "tls-session-cache-timeout"}, "*2\r\n$25\r\ntls-session-cache-timeout\r\n$3\r\n300\r\n"},
		{[]string{"CONFIG", "GET", "tls-port"}, "*2\r\n$8\r\ntls-port\r\n$1\r\n0\r\n"},
		{[]string{"CONFIG", "SET", "tls-auth-clients", "maybe"}, failed("tls-auth-clients", "argument(s) must be one of the following: no, yes, optional")},
		{[]string{"CONFIG", "SET", "tls-session-cache-size", "-1"}, failed("tls-session-cache-size", "argument must be between 0 and 2147483647 inclusive")},
		{[]string{"CONFIG", "SET", "protected-mode", "maybe"}, failed("protected-mode", "argument must be 'yes' or 'no'")},
		{[]string{"CONFIG", "SET", "tls-cert-file", "/nonexistent", "tls-auth-clients", "OPTIONAL"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "tls-auth-clients"}, "*2\r\n$16\r\ntls-auth-clients\r\n$8\r\noptional\r\n"},
		{[]string{"CONFIG", "SET", "protected-mode", "no"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "protected-mode"}, "*2\r\n$14\r\nprotected-mode\r\n$2\r\nno\r\n"},
	})
}
