package server

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TLS with mutual authentication through redis-py (ssl=True) and ioredis
// (tls:), each skipped where the client is not installed.

func TestTLSRedisPy(t *testing.T) {
	py := "/usr/bin/python3" // Debian's python3-redis; the python3 on PATH may lack it
	if err := exec.Command(py, "-c", "import redis").Run(); err != nil {
		t.Skip("no redis-py for /usr/bin/python3 (apt-get install python3-redis)")
	}
	m := newMutualTLS(t)
	script := `
import sys, redis
r = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]), ssl=True, ssl_ca_certs=sys.argv[2],
                ssl_certfile=sys.argv[3], ssl_keyfile=sys.argv[4])
r.set("py", "tls")
print(r.get("py").decode(), r.execute_command("CL.THROTTLE", "py:rl", 1, 2, 60)[0])
`
	out, err := exec.Command(py, "-c", script, m.port, m.ca.file, m.cert, m.key).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "tls 0\n", string(out))
}

func TestTLSIoredis(t *testing.T) {
	dir, err := filepath.Abs("../clients/node")
	require.NoError(t, err)
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "ioredis")); err != nil {
		t.Skip("ioredis not installed (npm ci in clients/node)")
	}
	m := newMutualTLS(t)
	script := `
const fs = require("fs");
const Redis = require("ioredis");
const [port, ca, cert, key] = process.argv.slice(1);
const r = new Redis({ host: "127.0.0.1", port: Number(port), maxRetriesPerRequest: 0,
  tls: { ca: fs.readFileSync(ca), cert: fs.readFileSync(cert), key: fs.readFileSync(key) } });
(async () => {
  await r.set("node", "tls");
  const v = await r.get("node");
  const t = await r.call("CL.THROTTLE", "node:rl", "1", "2", "60");
  console.log(v, t[0]);
  r.disconnect();
})().catch((e) => { console.error(e); process.exit(1); });
`
	cmd := exec.Command("node", "-e", script, m.port, m.ca.file, m.cert, m.key)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "tls 0", strings.TrimSpace(string(out)))
}
