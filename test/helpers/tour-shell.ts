import { type ChildProcess, spawn } from 'node:child_process';

// One bash that runs a script's commands one after another, as a terminal would: variables and
// background jobs (`mosquitto_sub … &`) live on between commands, and what a background job prints
// later is still read. `curl` is wrapped to report each answer's HTTP status on stderr (-w
// '%{stderr}…'), so what it prints, pipes included, is what the command alone prints.

export interface ShellRun {
  stdout: string;
  stderr: string;
  code: number;
  /** The HTTP status of each curl the command ran, 0 when it reached nothing. */
  statuses: number[];
}

const PRELUDE = `curl() { command curl -w '%{stderr}\\n__TOUR_HTTP__ %{http_code}\\n' "$@"; }\n`;

export class TourShell {
  readonly #proc: ChildProcess;
  #stdout = '';
  #stderr = '';
  #runs = 0;
  readonly #waiters = new Set<() => void>();
  readonly exit: Promise<number | null>;

  constructor(cwd: string, env: Record<string, string>) {
    // Its own process group, so stop() ends the background jobs with it.
    this.#proc = spawn('bash', ['--noprofile', '--norc'], {
      cwd,
      env,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.#proc.stdout!.on('data', (c: Buffer) => this.#take('out', c));
    this.#proc.stderr!.on('data', (c: Buffer) => this.#take('err', c));
    this.exit = new Promise((resolve) => this.#proc.on('close', resolve));
    this.#proc.stdin!.write(PRELUDE);
  }

  #take(stream: 'out' | 'err', chunk: Buffer): void {
    if (stream === 'out') this.#stdout += chunk.toString('utf8');
    else this.#stderr += chunk.toString('utf8');
    for (const wake of this.#waiters) wake();
  }

  /** Everything printed on stdout from `offset` on (background jobs included). */
  stdoutSince(offset: number): string {
    return this.#stdout.slice(offset);
  }

  get stdoutLength(): number {
    return this.#stdout.length;
  }

  /** Resolves once `done(stdout, stderr)` holds, or rejects after `timeoutMs`. */
  waitUntil(done: (stdout: string, stderr: string) => boolean, timeoutMs: number, what: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!done(this.#stdout, this.#stderr)) return;
        this.#waiters.delete(check);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`));
      }, timeoutMs);
      this.#waiters.add(check);
      check();
    });
  }

  /** Runs one command in this shell (stdin from /dev/null: the script is on bash's stdin) and waits for it. */
  async run(command: string, timeoutMs: number): Promise<ShellRun> {
    const id = ++this.#runs;
    const outFrom = this.#stdout.length;
    const errFrom = this.#stderr.length;
    const mark = `__TOUR_DONE__ ${id}`;
    this.#proc.stdin!.write(
      `{ ${command}\n} </dev/null\n__tour_rc=$?\nprintf '\\n${mark} %s\\n' "$__tour_rc"\nprintf '\\n${mark}\\n' >&2\n`,
    );
    const outMark = new RegExp(`\\n${mark} (\\d+)\\n`);
    await this.waitUntil(
      (out, err) => outMark.test(out.slice(outFrom)) && err.includes(`\n${mark}\n`, errFrom),
      timeoutMs,
      `\`${command.split('\n')[0]}\` to finish`,
    );
    const out = this.#stdout.slice(outFrom);
    const done = outMark.exec(out)!;
    const err = this.#stderr.slice(errFrom, this.#stderr.indexOf(`\n${mark}\n`, errFrom));
    const statuses = [...err.matchAll(/^__TOUR_HTTP__ (\d+)$/gm)].map((m) => Number(m[1]));
    return {
      stdout: out.slice(0, done.index),
      stderr: err.replace(/^\n?__TOUR_HTTP__ \d+\n?/gm, ''),
      code: Number(done[1]),
      statuses,
    };
  }

  /** Ends the shell and every job it started. */
  async stop(): Promise<void> {
    if (this.#proc.exitCode === null && this.#proc.signalCode === null) {
      try {
        process.kill(-this.#proc.pid!, 'SIGTERM');
      } catch {
        // already gone
      }
    }
    await this.exit;
  }
}

/** A command that runs until stopped (`npm start`, `plugin dev`), in its own process group. */
export interface Background {
  output: string[];
  waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray>;
  stop(): Promise<void>;
}

export function background(command: string, cwd: string, env: Record<string, string>): Background {
  const proc = spawn('bash', ['-c', command], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const waiters = new Set<() => void>();
  let partial = '';
  const take = (chunk: Buffer) => {
    const lines = (partial + chunk.toString('utf8')).split('\n');
    partial = lines.pop()!;
    output.push(...lines);
    for (const wake of waiters) wake();
  };
  proc.stdout.on('data', take);
  proc.stderr.on('data', take);
  // 'close': every process holding its output has ended (npm start's node outlives npm on SIGTERM).
  let closed = false;
  const exit = new Promise<void>((resolve) =>
    proc.on('close', () => {
      closed = true;
      resolve();
    }),
  );
  const waitFor = (pattern: RegExp, timeoutMs: number) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const check = () => {
        for (const line of output) {
          const m = line.match(pattern);
          if (!m) continue;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(m);
          return;
        }
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(
          new Error(
            `timed out after ${timeoutMs / 1000} s waiting for ${pattern} from \`${command}\`; it printed:\n${output.slice(-40).join('\n')}`,
          ),
        );
      }, timeoutMs);
      waiters.add(check);
      void exit.then(() => {
        if (!waiters.has(check)) return;
        waiters.delete(check);
        clearTimeout(timer);
        reject(
          new Error(`\`${command}\` ended before printing ${pattern}; it printed:\n${output.slice(-40).join('\n')}`),
        );
      });
      check();
    });
  const stop = async () => {
    if (!closed) {
      try {
        process.kill(-proc.pid!, 'SIGTERM');
      } catch {
        // already gone
      }
    }
    await exit;
  };
  return { output, waitFor, stop };
}
