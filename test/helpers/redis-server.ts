import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// A throwaway redis-server (the Debian package, scripts/test-tools.mjs) on a unix socket in a temp
// directory: no TCP port, nothing saved, gone with the test.

export interface TestRedis {
  /** `unix:///…/redis.sock`, as redis.url takes it. */
  url: string;
  socket: string;
  /** Where the socket is: give it to startRedis() again for a new server at the same URL. */
  dir: string;
  /** Stops the server; its directory goes too unless `keepDir`. */
  stop(keepDir?: boolean): Promise<void>;
}

/** A new redis-server (empty: nothing is saved) in a new temp directory, or in `dir` again. */
export async function startRedis(dir = mkdtempSync(join(tmpdir(), 'gatehouse-redis-'))): Promise<TestRedis> {
  const socket = join(dir, 'redis.sock');
  const proc = spawn(
    'redis-server',
    [
      '--port',
      '0',
      '--unixsocket',
      socket,
      '--unixsocketperm',
      '700',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const output: string[] = [];
  proc.stdout.on('data', (c: Buffer) => output.push(c.toString()));
  proc.stderr.on('data', (c: Buffer) => output.push(c.toString()));
  const exited = new Promise<void>((resolve) => proc.on('exit', () => resolve()));
  const deadline = Date.now() + 20_000;
  while (!/ready to accept connections/i.test(output.join('')) || !existsSync(socket)) {
    if (proc.exitCode !== null || Date.now() > deadline) {
      proc.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`redis-server did not start:\n${output.join('')}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `unix://${socket}`,
    socket,
    dir,
    stop: async (keepDir = false) => {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      await exited;
      if (!keepDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
