import { describe, expect, it } from 'vitest';
import { usage } from '../../src/cli/commands.js';
import { devOptions } from '../../src/plugins/vite/dev.js';
import { runCli } from '../helpers/process.js';

// `gatehouse <command> --help` prints the usage and exits 0; each command's line names the options
// the command parses, so what a user reads in --help is what works (the README's tour runs
// `plugin dev --email … --password …`).
describe('gatehouse --help', () => {
  const lineOf = (command: string) => usage.split('\n').find((line) => line.includes(`gatehouse ${command} `))!;

  it('prints the usage, exit 0, after a command as well as alone', async () => {
    for (const args of [['--help'], ['plugin', 'dev', '--help'], ['users', 'create', '--help']]) {
      const run = await runCli(args, {});
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toBe(`${usage}\n`);
    }
  });

  it('names every option plugin dev takes, --email and --password among them', () => {
    const line = lineOf('plugin dev');
    expect(line).toContain('[--token T | --email E --password P]');
    for (const option of Object.keys(devOptions)) expect(line).toContain(`--${option} `);
  });
});
