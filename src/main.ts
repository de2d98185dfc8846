#!/usr/bin/env -S node --max-semi-space-size=64
import { Gatehouse } from './app.js';
import { CliError, commandNames, runCommand, usage } from './cli/commands.js';
import { ConfigError, configFileFrom, loadConfig } from './config/load.js';
import { configLeaves } from './config/overlay.js';
import { createLogger } from './logger.js';
import { runSimulator } from '../firmware-bridge/simulate.js';
import { runPluginCommand } from './plugins/cli.js';
import { runBackup } from './cli/backup.js';
import { runCloudMigrate } from './cli/cloud-migrate.js';

// The thin entry: argv, config, signals and exit codes. Everything else is in app.ts.

/** How long a failed start waits for what it started to stop before it exits all the same. */
const START_FAILURE_STOP_MS = 3000;

const CONFIG_FLAGS = new Set(['config', ...configLeaves.map((l) => l.flag)]);

/** Splits argv into config flags (with their values) and the rest. */
function splitArgs(argv: string[]): { configFlags: string[]; rest: string[] } {
  const configFlags: string[] = [];
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const name = arg.startsWith('--') ? arg.slice(2).split('=')[0]! : '';
    if (!CONFIG_FLAGS.has(name)) {
      rest.push(arg);
      continue;
    }
    configFlags.push(arg);
    const leaf = configLeaves.find((l) => l.flag === name);
    const takesValue = !arg.includes('=') && leaf?.kind !== 'boolean';
    const next = argv[i + 1];
    if (takesValue && next !== undefined) configFlags.push(argv[++i]!);
    else if (!arg.includes('=') && leaf?.kind === 'boolean' && next !== undefined && /^(true|false|1|0)$/.test(next))
      configFlags.push(argv[++i]!);
  }
  return { configFlags, rest };
}

/**
 * A command's answer on stdout. `gatehouse attendees list | head` closes the pipe before the answer is
 * written: what the reader did not want is not an error (no EPIPE stack), the command ends as it would have.
 */
function print(result: unknown): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
    process.exit(process.exitCode ?? 0);
  });
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}

async function main(argv: string[]): Promise<number> {
  // `gatehouse plugin dev --help` as well as `gatehouse --help`: no command takes --help as a value.
  if (argv[0] === 'help' || argv.includes('--help')) {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  if (argv[0] === 'plugin') {
    // The plugin toolkit's developer commands (plugins/cli.ts): a plugin's folder and a running appliance, no store.
    const result = await runPluginCommand(argv.slice(1));
    if (result === undefined) return -1; // `plugin dev`: serving until stopped
    print(result);
    return 0;
  }
  const { configFlags, rest } = splitArgs(argv);
  const { file, required } = configFileFrom(configFlags, process.env);
  const config = loadConfig({ file, fileRequired: required, env: process.env, flags: configFlags });

  const group = rest[0];
  if (group === 'bridge') {
    // Not a store command: a client of the running appliance's REST API (firmware-bridge/simulate.ts).
    print(await runSimulator(rest.slice(1), config));
    return 0;
  }
  if (group === 'backup') {
    // Not a store command: it must not create, migrate or write the box's store (cli/backup.ts).
    print(await runBackup(config, rest.slice(1)));
    return 0;
  }
  if (group === 'cloud') {
    // Reads the stopped cloud's SQLite file, writes an empty PostgreSQL database (cli/cloud-migrate.ts).
    print(await runCloudMigrate(config, rest.slice(1)));
    return 0;
  }
  if (group !== undefined) {
    if (!commandNames.has(group)) throw new CliError(`unknown argument ${group}\n${usage}`);
    const log = createLogger({ ...config.log, level: 'warn' });
    const result = await runCommand(config, log, group, rest.slice(1));
    print(result);
    return 0;
  }

  const app = new Gatehouse(config);
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down');
    void app.stop().then(() => process.exit(0));
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  try {
    await app.start();
  } catch (err) {
    app.log.fatal({ err }, `start-up failed: ${(err as Error).message}`);
    process.stderr.write(`gatehouse: start-up failed: ${(err as Error).message}\n`);
    // What started is stopped (lifecycle.ts); a part that will not stop within a few seconds
    // must not keep a failed start alive, so the exit does not wait on it.
    await Promise.race([app.stop(), new Promise((r) => setTimeout(r, START_FAILURE_STOP_MS).unref())]);
    process.exit(1);
  }
  return -1; // keep running
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof ConfigError || err instanceof CliError) process.stderr.write(`gatehouse: ${err.message}\n`);
    else if (err instanceof Error && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS'))
      process.stderr.write(`gatehouse: ${err.message}\n${usage}\n`);
    else process.stderr.write(`gatehouse: ${(err as Error)?.stack ?? String(err)}\n`);
    process.exitCode = 2;
  },
);
