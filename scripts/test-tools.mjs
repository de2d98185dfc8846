#!/usr/bin/env node
// What `npm test` needs from the system, checked before anything else runs (README: The two commands).
// The tests drive real tools: openssl makes the HTTPS and MQTT-over-TLS certificates,
// mosquitto_pub / mosquitto_sub prove MQTT interoperability, socat makes the serial pty pairs
// of the firmware bridge tests, redis-server is the Redis several cloud instances share
// (test/helpers/redis-server.ts), postgresql the throwaway servers the cloud's tests on PostgreSQL
// start (test/helpers/postgres.ts; libpq-dev builds pg-native at npm install), chromium is the
// browser of the page tests. Without one, a
// dozen files used to fail as 10-second timeouts that never named it; now the run stops at once
// with the one line that installs them. Also imported by the test runner's global setup, so
// `npx vitest run` stops the same way.
import { accessSync, constants, existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, join } from 'node:path';
import { pathToFileURL } from 'node:url';

export const INSTALL = 'apt-get install -y openssl mosquitto-clients socat redis-server postgresql libpq-dev chromium';

/** Each tool the tests run, and the Debian package it comes from. */
const TOOLS = [
  { command: 'openssl', pkg: 'openssl' },
  { command: 'mosquitto_pub', pkg: 'mosquitto-clients' },
  { command: 'mosquitto_sub', pkg: 'mosquitto-clients' },
  { command: 'socat', pkg: 'socat' },
  { command: 'redis-server', pkg: 'redis-server' },
];

function onPath(command) {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    try {
      accessSync(join(dir, command), constants.X_OK);
      return true;
    } catch {
      // not here
    }
  }
  return false;
}

/** The Debian packages missing for the tests, each once, with what is missing of it. */
export function missingTools() {
  const missing = new Map();
  for (const { command, pkg } of TOOLS) if (!onPath(command)) missing.set(pkg, [...(missing.get(pkg) ?? []), command]);
  if (!postgresBin()) missing.set('postgresql', ['/usr/lib/postgresql/<version>/bin/initdb']);
  if (!onPath('psql')) missing.set('postgresql', [...(missing.get('postgresql') ?? []), 'psql']);
  try {
    createRequire(import.meta.url)('pg-native');
  } catch {
    missing.set('libpq-dev', ['pg-native (install libpq-dev, then npm install again)']);
  }
  const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (!existsSync(chromium)) missing.set('chromium', [`${chromium} (or set CHROMIUM_PATH)`]);
  return [...missing].map(([pkg, what]) => ({ pkg, what }));
}

/** The newest PostgreSQL server's bin directory Debian installed, or null (GATEHOUSE_PG_BIN overrides). */
export function postgresBin() {
  if (process.env.GATEHOUSE_PG_BIN) return process.env.GATEHOUSE_PG_BIN;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length > 0 ? join(root, versions[0], 'bin') : null;
}

/** The message a run stops with, or null when everything is there. */
export function missingToolsMessage() {
  const missing = missingTools();
  if (missing.length === 0) return null;
  const list = missing.map((m) => `${m.pkg} (${m.what.join(', ')})`).join('; ');
  return `npm test needs these Debian packages, missing here: ${list}.\nInstall them first (as root): apt-get update && ${INSTALL}\n(README: The two commands; .ci/run does this on CI.)`;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const message = missingToolsMessage();
  if (message) {
    process.stderr.write(`${message}\n`);
    process.exit(1);
  }
}
