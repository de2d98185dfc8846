// Starts the built appliance (dist/main.js) on a free loopback port for a bench, with an
// administrator token; stop() ends it and removes its data directory.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export async function startAppliance(env = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-'));
  const port = await new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
  const url = `http://127.0.0.1:${port}`;
  const nodeFlags = JSON.parse(readFileSync('scripts/node-flags.json', 'utf8')); // as npm start runs it
  const proc = spawn(process.execPath, [...nodeFlags, 'dist/main.js'], {
    env: {
      PATH: process.env.PATH,
      GATEHOUSE_DATA_DIR: dataDir,
      GATEHOUSE_HTTP_HOST: '127.0.0.1',
      GATEHOUSE_HTTP_PORT: String(port),
      GATEHOUSE_ADMIN_PASSWORD: 'bench password',
      GATEHOUSE_RATE_LIMIT_STANDARD: '0',
      GATEHOUSE_RATE_LIMIT_BULK: '0',
      GATEHOUSE_RATE_LIMIT_SEARCH: '0',
      GATEHOUSE_LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  // Request logs are info lines; benches run at warn, as a busy box would, and poll /ready.
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${url}/ready`)).ok) break;
    } catch {}
    if (i > 150 || proc.exitCode !== null) throw new Error('appliance did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  const res = await fetch(`${url}/api/v1/auth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'admin@gatehouse.local', password: 'bench password', device_name: 'bench' }),
  });
  const { token } = await res.json();
  const stop = async () => {
    proc.kill('SIGTERM');
    await new Promise((r) => proc.on('exit', r));
    rmSync(dataDir, { recursive: true, force: true });
  };
  return { url, token, stop };
}
