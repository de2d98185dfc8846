import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  answerShown,
  fieldAt,
  jsonDocuments,
  type TourStep,
  type TourUnit,
  tourSteps,
} from '../helpers/readme-tour.js';
import { type Background, background, TourShell } from '../helpers/tour-shell.js';

// The README's "A five-minute tour", run as written against a fresh appliance, step by step: each
// command in one bash as a terminal would, `npm start` and `plugin dev` as the processes they are
// (in the background, stopped when done), every answer compared with the one the README shows.
// A step that no longer works fails here, named by its number and title.
//
// The checkout is a fresh one: a temporary folder whose entries link to this repository's, with a
// dist/ and data/ of its own, so `npm start` and `npm run demo` build (esbuild) and store there,
// never under another test's feet. Substituted, and only this: the ports (8080 and 1883, also in the
// answers shown), GATEHOUSE_URL for `plugin dev`'s default http://127.0.0.1:8080, what each
// `export NAME='…'   # path above` takes from the answer above, and TZ=UTC: step 10's `date +%F`
// names today in the shell's zone, the default project's is UTC.

const README = readFileSync('README.md', 'utf8');
const steps = tourSteps(README);

/** Commands that run until stopped, and the line that says they are ready. */
const LONG_RUNNING: { command: RegExp; ready: RegExp }[] = [
  { command: /\bnpm start\s*$/, ready: /Gatehouse ready at (http:\/\/\S+?)"/ },
  { command: /\bplugin dev\b/, ready: /serving \S+ at (http:\/\/\S+)/ },
];

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise((done) => server.close(done));
  return port;
}

/** A fresh checkout: links to this repository's entries, its own dist/ (with the console already built: skipped) and no data/. */
function freshCheckout(): string {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-tour-'));
  for (const entry of readdirSync('.')) {
    if (!['dist', 'data', '.git'].includes(entry)) symlinkSync(resolve(entry), join(dir, entry));
  }
  mkdirSync(join(dir, 'dist'));
  if (existsSync('dist/console')) cpSync('dist/console', join(dir, 'dist/console'), { recursive: true });
  return dir;
}

const quote = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`;
const shorten = (text: string) => (text.length > 3000 ? `${text.slice(0, 3000)}…` : text);

describe('the README tour', () => {
  let checkout: string;
  let http: number;
  let mqtt: number;
  let env: Record<string, string>;
  let shell: TourShell;
  let appliance: Background | null = null;
  /** Each command's JSON answers, newest last: what `export NAME='…'   # path above` takes from. */
  const answers: unknown[] = [];
  let broken: string | null = null;

  const ports = (text: string) => text.replaceAll(/\b8080\b/g, String(http)).replaceAll(/\b1883\b/g, String(mqtt));

  beforeAll(async () => {
    checkout = freshCheckout();
    http = await freePort();
    mqtt = await freePort();
    env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? tmpdir(),
      TZ: 'UTC',
      npm_config_update_notifier: 'false',
      GATEHOUSE_HTTP_PORT: String(http),
      GATEHOUSE_MQTT_PORT: String(mqtt),
      GATEHOUSE_URL: `http://127.0.0.1:${http}`,
    };
    shell = new TourShell(checkout, env);
  });

  afterAll(async () => {
    await shell?.stop();
    await appliance?.stop();
    if (checkout) rmSync(checkout, { recursive: true, force: true });
  });

  it('is numbered 1, 2, 3 … in order, each step with a command', () => {
    expect(steps.length).toBeGreaterThanOrEqual(10);
    expect(steps.map((s) => s.n)).toEqual(steps.map((_, i) => i + 1));
    for (const step of steps) expect(step.units.length, `step ${step.n} has no command`).toBeGreaterThan(0);
  });

  /** The command's answers; fails naming the step when it exits non-zero, answers HTTP ≥ 400 where the README shows no answer, or shows another. */
  async function runUnit(step: TourStep, unit: TourUnit): Promise<void> {
    const where = `step ${step.n} (README.md line ${unit.line}): \`${unit.command.split('\n')[0]}\``;
    if (unit.takes) {
      const value = answers
        .map((a) => fieldAt(a, unit.takes!.path))
        .reverse()
        .find((v) => typeof v === 'string' || typeof v === 'number');
      if (value === undefined) throw new Error(`${where}: no answer above has ${unit.takes.path}`);
      env[unit.takes.name] = String(value);
      await shell.run(`export ${unit.takes.name}=${quote(String(value))}`, 30_000);
      return;
    }
    const command = ports(unit.command);
    const expected = unit.expected.map(ports);
    const long = LONG_RUNNING.find((l) => l.command.test(command));
    if (long) return runLongRunning(where, command, long.ready, expected);

    const from = shell.stdoutLength;
    const run = await shell.run(command, 120_000);
    const said = `\nstdout:\n${shorten(run.stdout)}\nstderr:\n${shorten(run.stderr)}`;
    if (run.code !== 0) throw new Error(`${where} exited ${run.code}${said}`);
    const failed = run.statuses.filter((s) => s === 0 || s >= 400);
    if (failed.length > 0 && expected.length === 0)
      throw new Error(`${where} was answered HTTP ${failed.join(', ')}${said}`);
    answers.push(...jsonDocuments(run.stdout));
    // An answer may come after the command (mosquitto_sub, in the background, prints the decision).
    for (const shown of expected) {
      await shell
        .waitUntil(() => answerShown(shown, shell.stdoutSince(from)), 15_000, shown)
        .catch(() => {
          throw new Error(
            `${where} did not answer as the README shows:\n  shown:  ${shown}\n  answer: ${shorten(shell.stdoutSince(from))}\nstderr:\n${shorten(run.stderr)}`,
          );
        });
    }
    if (/\bnpm run demo\b/.test(command)) await demoRead();
  }

  async function runLongRunning(where: string, command: string, ready: RegExp, expected: string[]): Promise<void> {
    const proc = background(command, checkout, env);
    const url = (await proc.waitFor(ready, 120_000))[1]!;
    const printed = proc.output.join('\n');
    for (const shown of expected) {
      if (!answerShown(shown, printed))
        throw new Error(
          `${where} did not print what the README shows:\n  shown:   ${shown}\n  printed: ${shorten(printed)}`,
        );
    }
    const page = await fetch(url);
    expect(page.status, `${where}: ${url}`).toBe(200);
    if (/\bnpm start\s*$/.test(command)) {
      appliance = proc; // serves the rest of the tour
      return;
    }
    expect(await page.text(), `${where}: the page at ${url}`).toMatch(/<div id="app">/);
    await proc.stop();
  }

  /** Step 7's note: the running appliance reads what `npm run demo` wrote within about a second.
   * Once a read that began after the demo ended is logged, all of it is in; a read that began
   * earlier may have taken it all already, and then nothing more is logged (5 s allowed for that). */
  async function demoRead(): Promise<void> {
    const ended = Date.now();
    const reads = () =>
      appliance!.output.flatMap((line) => {
        const m =
          /"time":(\d+).*"ms":(\d+).*"msg":"venue changes made by another process read into the decision index"/.exec(
            line,
          );
        return m ? [{ began: Number(m[1]) - Number(m[2]) }] : [];
      });
    await appliance!.waitFor(/venue changes made by another process read into the decision index/, 15_000);
    await new Promise<void>((done) => {
      const deadline = Date.now() + 5_000;
      const check = () =>
        reads().some((r) => r.began >= ended) || Date.now() > deadline ? done() : setTimeout(check, 100);
      check();
    });
  }

  for (const step of steps) {
    it(`step ${step.n}: ${step.title}`, { timeout: 240_000 }, async (ctx) => {
      if (broken) ctx.skip(`${broken} failed first`);
      try {
        for (const unit of step.units) await runUnit(step, unit);
      } catch (err) {
        broken = `step ${step.n}`;
        throw err;
      }
    });
  }

  it('stops on SIGTERM: in-flight requests finish, then the store closes', async (ctx) => {
    if (broken || !appliance) ctx.skip();
    await appliance!.stop();
    expect(appliance!.output.some((line) => line.includes('"msg":"store closed"'))).toBe(true);
    appliance = null;
  });
});

describe('the README tour checker', () => {
  it('holds an answer to the keys and values shown, more only where ... says so', () => {
    expect(answerShown('{"a":1,"b":"x…z"}', '{"b":"xyz","a":1}')).toBe(true);
    expect(answerShown('{"a":1}', '{"a":1,"b":2}')).toBe(false);
    expect(answerShown('{"a":1,...}', '{"a":1,"b":2}')).toBe(true);
    expect(answerShown('{"a":1,...}', '{"a":2,"b":2}')).toBe(false);
    expect(answerShown('{"a":…,"b":[{"c":true},...]}', '{"a":[1],"b":[{"c":true},{"d":1}]}')).toBe(true);
    expect(answerShown('{"b":[{"c":true}]}', '{"b":[{"c":true},{"d":1}]}')).toBe(false);
    expect(answerShown('topic/a {"r":1,...}', 'topic/a {"r":1,"s":2}')).toBe(true);
    expect(answerShown('topic/a {"r":1,...}', 'topic/b {"r":1,"s":2}')).toBe(false);
    expect(answerShown('{"id":2,...}', '> npm banner\n\n{\n  "id": 2,\n  "x": 1\n}\n')).toBe(true);
    expect(answerShown('metric{route="/x"} 2', 'metric{route="/x"} 20')).toBe(false);
  });

  it('refuses a tour comment that is neither a step, an answer nor an indented note', () => {
    const tour = (body: string) => `# Title\n\n## A five-minute tour\n\n\`\`\`sh\n${body}\n\`\`\`\n\n## Next\n`;
    expect(
      tourSteps(tour('# 1. one\ncurl -s x \\\n  -d y\n# {"a":1}\nexport T=\'…\'   # data.t above')).map((s) => s.units),
    ).toEqual([
      [
        { line: 7, command: 'curl -s x \\\n  -d y', expected: ['{"a":1}'] },
        { line: 10, command: "export T='…'   # data.t above", expected: [], takes: { name: 'T', path: 'data.t' } },
      ],
    ]);
    expect(() => tourSteps(tour('# 1. one\n\n# {"a":1}'))).toThrow(/line 8: a "# " line that follows no command/);
    expect(() => tourSteps(tour('# 1. one\n#note'))).toThrow(/line 7: a comment that is neither/);
  });
});
