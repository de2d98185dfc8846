import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodeFlags } from './process-stats.js';

// The appliance as the benches that measure it from outside run it: dist/main.js in a process of
// its own on free loopback ports, a fresh data directory, rate limits off, ready once it says so,
// its log read until then and not after (the log is not what is measured), an admin token.

export const BENCH_ADMIN = { email: 'admin@bench.test', password: 'bench password long' };

export interface ApplianceProcess {
  proc: ChildProcess;
  url: string;
  dataDir: string;
  token: string;
}

export async function startApplianceProcess(
  name: string,
  env: Record<string, string> = {},
  options: { nice?: number } = {},
): Promise<ApplianceProcess> {
  const dataDir = mkdtempSync(join(tmpdir(), `gatehouse-bench-${name}-`));
  const node = [process.execPath, ...nodeFlags(), 'dist/main.js'];
  const [command, ...args] = options.nice === undefined ? node : ['nice', '-n', String(options.nice), ...node];
  const proc = spawn(command!, args, {
    env: {
      PATH: process.env.PATH ?? '',
      GATEHOUSE_DATA_DIR: dataDir,
      GATEHOUSE_HTTP_HOST: '127.0.0.1',
      GATEHOUSE_HTTP_PORT: '0',
      GATEHOUSE_MQTT_PORT: '0',
      GATEHOUSE_ADMIN_EMAIL: BENCH_ADMIN.email,
      GATEHOUSE_ADMIN_PASSWORD: BENCH_ADMIN.password,
      GATEHOUSE_RATE_LIMIT_STANDARD: '0',
      GATEHOUSE_RATE_LIMIT_BULK: '0',
      GATEHOUSE_RATE_LIMIT_SEARCH: '0',
      GATEHOUSE_LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start:\n${out.slice(-3000)}`)), 60_000);
    const take = (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const found = /Gatehouse ready at (http:\/\/\S+?)"/.exec(out)?.[1];
      if (found) {
        clearTimeout(timer);
        resolve(found);
      }
    };
    proc.stdout!.on('data', take);
    proc.stderr!.on('data', take);
    proc.on('exit', (code) => reject(new Error(`${name} exited ${code}:\n${out.slice(-3000)}`)));
  }).catch((err: Error) => {
    proc.kill('SIGKILL');
    throw err;
  });
  proc.stdout!.removeAllListeners('data');
  proc.stderr!.removeAllListeners('data');
  proc.stdout!.resume();
  proc.stderr!.resume();
  const res = await fetch(`${url}/api/v1/auth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...BENCH_ADMIN, device_name: 'bench' }),
  });
  const token = ((await res.json()) as { token: string }).token;
  return { proc, url, dataDir, token };
}

/** SIGTERM, and SIGKILL after `ms` if it has not exited. */
export function stopProcess(proc: ChildProcess, ms = 5000): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => proc.kill('SIGKILL'), ms);
    proc.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    proc.kill('SIGTERM');
  });
}
