// bench:http — authenticated REST throughput against the real appliance process.
// Runs `node dist/main.js` on a free loopback port, then loads it with autocannon:
//   GET /health              baseline (no auth, no store read)
//   GET /api/v1/me           bearer token: hash check, user read, ability check
//   GET /api/v1/projects     token + a paginated store query
// Prints one figure per line; BENCH_QUICK=1 finishes in well under 30 s.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import autocannon from 'autocannon';

const quick = process.env.BENCH_QUICK === '1';
const duration = quick ? 4 : 15;
const connections = 16;
const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-'));
const port = await new Promise((resolve) => {
  const probe = createServer().listen(0, '127.0.0.1', () => {
    const { port } = probe.address();
    probe.close(() => resolve(port));
  });
});
const url = `http://127.0.0.1:${port}`;

const proc = spawn(process.execPath, ['dist/main.js'], {
  env: { PATH: process.env.PATH, GATEHOUSE_DATA_DIR: dataDir, GATEHOUSE_HTTP_HOST: '127.0.0.1', GATEHOUSE_HTTP_PORT: String(port), GATEHOUSE_ADMIN_PASSWORD: 'bench password', GATEHOUSE_RATE_LIMIT_STANDARD: '0', GATEHOUSE_LOG_LEVEL: 'warn' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
// Request logs are info lines; the bench runs at warn, as a busy box would, and polls /ready.
for (let i = 0; ; i++) {
  try {
    if ((await fetch(`${url}/ready`)).ok) break;
  } catch {}
  if (i > 150 || proc.exitCode !== null) throw new Error('appliance did not start');
  await new Promise((r) => setTimeout(r, 100));
}

const res = await fetch(`${url}/api/v1/auth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'admin@gatehouse.local', password: 'bench password', device_name: 'bench' }) });
const { token } = await res.json();

async function load(path, headers = {}) {
  const result = await autocannon({ url: url + path, connections, duration, headers });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${path}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return { rps: result.requests.average, p99: result.latency.p99 };
}

const health = await load('/health');
const me = await load('/api/v1/me', { authorization: `Bearer ${token}` });
const projects = await load('/api/v1/projects', { authorization: `Bearer ${token}` });

const line = (name, value, unit) => console.log(`${name}: ${value} ${unit}`);
line('http.health_req_per_s', Math.round(health.rps), '/s');
line('http.me_req_per_s', Math.round(me.rps), '/s');
line('http.projects_req_per_s', Math.round(projects.rps), '/s');
line('http.health_p99_ms', health.p99, 'ms');
line('http.me_p99_ms', me.p99, 'ms');
line('http.me_ratio_to_health', (health.rps / me.rps).toFixed(2), 'x');

proc.kill('SIGTERM');
await new Promise((r) => proc.on('exit', r));
rmSync(dataDir, { recursive: true, force: true });
