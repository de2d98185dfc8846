import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

// Runs the built appliance (dist/main.js) as `npm start` does, as a real child process.

export interface RunningProcess {
  proc: ChildProcess;
  output: string[];
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  exit: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export function runGatehouse(args: string[], env: Record<string, string>): RunningProcess {
  const proc = spawn(process.execPath, [...nodeFlags(), 'dist/main.js', ...args], {
    env: {
      PATH: process.env.PATH ?? '',
      GATEHOUSE_HTTP_HOST: '127.0.0.1',
      GATEHOUSE_HTTP_PORT: '0',
      GATEHOUSE_MQTT_PORT: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const waiters = new Set<() => void>();
  const take = (chunk: Buffer) => {
    output.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    for (const w of waiters) w();
  };
  proc.stdout!.on('data', take);
  proc.stderr!.on('data', take);
  // TEST_PROCESS_LOG_DIR=<dir>: each process's output also kept in <dir>/<pid>.log, to read after a failure.
  const keep = process.env.TEST_PROCESS_LOG_DIR;
  if (keep) {
    const file = join(keep, `${proc.pid}.log`);
    const append = (chunk: Buffer) => appendFileSync(file, chunk);
    proc.stdout!.on('data', append);
    proc.stderr!.on('data', append);
  }
  const exit = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  const waitFor = (pattern: RegExp, timeoutMs = 15_000) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const check = () => {
        for (const line of output) {
          const m = line.match(pattern);
          if (m) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(m);
            return;
          }
        }
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`timed out waiting for ${pattern}; output:\n${output.join('\n')}`));
      }, timeoutMs);
      waiters.add(check);
      check();
    });
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (proc.exitCode === null) proc.kill(signal);
    return exit;
  };
  return { proc, output, waitFor, exit, stop };
}

/** Runs a CLI command to completion; answers its exit code, stdout and stderr. */
export function runCli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, [...nodeFlags(), 'dist/main.js', ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    proc.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The V8 flags `npm start` runs the appliance with (scripts/node-flags.json). */
function nodeFlags(): string[] {
  return JSON.parse(readFileSync('scripts/node-flags.json', 'utf8')) as string[];
}
