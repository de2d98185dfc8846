// Runs the pattern of docs/mqtt.md, "The nine-minute PUBACK: what was found", many times against the built appliance (dist/main.js):
// mosquitto_sub following a reader's decisions and mosquitto_pub publishing its QoS 1 scans, both
// with the reader's credentials, fresh connections every round. Prints each failed round and a
// summary: publishes without a PUBACK (mosquitto_pub has no timeout of its own: killed after
// HANG_MS) and decisions the subscriber did not see. docs/mqtt.md has the runs made with it.
//
//   npm run build && node scripts/mosquitto-pairs.mjs
//   ROUNDS=300 RETRY=1 node scripts/mosquitto-pairs.mjs          every request_id sent twice
//   MODE=long-sub | same-id | takeover node scripts/mosquitto-pairs.mjs
//   ../shared/tools/under-load node scripts/mosquitto-pairs.mjs   with every core busy
//
// MODE: fresh (a new mosquitto_sub every round, the scan sent once its SUBACK is in), long-sub
// (one mosquitto_sub for all rounds), same-id (sub and pub with one client id: the pub takes the
// sub's session over), takeover (one client id, the sub started TAKEOVER_MS after the pub: it
// takes the pub's session over mid-scan). APP_DIR: where dist/main.js is (default: here).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROUNDS = Number(process.env.ROUNDS ?? 100);
const MODE = process.env.MODE ?? 'fresh';
const RETRY = process.env.RETRY === '1';
const HANG_MS = Number(process.env.HANG_MS ?? 3000);
const TAKEOVER_MS = Number(process.env.TAKEOVER_MS ?? 2);
const EMAIL = 'pairs@example.test';
const PASSWORD = 'correct horse battery';

const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-pairs-'));
const appliance = spawn(process.execPath, ['--max-semi-space-size=64', 'dist/main.js'], {
  cwd: process.env.APP_DIR ?? process.cwd(),
  env: {
    PATH: process.env.PATH,
    GATEHOUSE_HTTP_HOST: '127.0.0.1',
    GATEHOUSE_HTTP_PORT: '0',
    GATEHOUSE_MQTT_PORT: '0',
    GATEHOUSE_DATA_DIR: dataDir,
    GATEHOUSE_ADMIN_EMAIL: EMAIL,
    GATEHOUSE_ADMIN_PASSWORD: PASSWORD,
    GATEHOUSE_RATE_LIMIT_STANDARD: '0',
    GATEHOUSE_LOG_LEVEL: 'info',
    GATEHOUSE_LOG_PRETTY: 'never',
  },
  stdio: ['ignore', 'pipe', 'pipe'],
});
const log = [];
for (const stream of [appliance.stdout, appliance.stderr])
  stream.on('data', (d) => log.push(...d.toString().split('\n').filter(Boolean)));
const stop = () => {
  appliance.kill('SIGTERM');
  appliance.once('exit', () => rmSync(dataDir, { recursive: true, force: true }));
};
const logged = async (pattern) => {
  for (let waited = 0; waited < 30_000; waited += 50) {
    const line = log.find((l) => pattern.test(l));
    if (line) return JSON.parse(line);
    await new Promise((r) => setTimeout(r, 50));
  }
  stop();
  throw new Error(`the appliance did not log ${pattern}:\n${log.join('\n')}`);
};
const httpPort = (await logged(/http listening/)).port;
const mqttPort = String((await logged(/mqtt listening/)).port);

const request = async (method, path, body, token) => {
  const res = await fetch(`http://127.0.0.1:${httpPort}${path}`, {
    method,
    headers: {
      accept: 'application/json',
      'content-type': 'application/json',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return res.json();
};
const A = '/api/v1/projects/default/default';
const token = (await request('POST', '/api/v1/auth/token', { email: EMAIL, password: PASSWORD, device_name: 'pairs' }))
  .token;
const zone = (await request('POST', `${A}/access-zones`, { name: 'Arena' }, token)).data.id;
const gate = (
  await request('POST', `${A}/access-points`, { name: 'Gate', access_zone_id: zone, direction: 'both' }, token)
).data.id;
await request('POST', `${A}/readers`, { identifier: 'PAIR-1', access_point_id: gate }, token);
await request(
  'POST',
  `${A}/attendees/import`,
  [{ first_name: 'Ada', last_name: 'Lovelace', credential_value: 'TICKET-1' }],
  token,
);
await request('POST', `${A}/readers/login`, { reader_identifier: 'PAIR-1' });
const otp = (await request('GET', `${A}/readers/logins`, undefined, token)).data[0].otp;
const mqtt = (await request('POST', '/api/v1/reader-otp/verify', { otp, reader_identifier: 'PAIR-1' })).data.mqtt;

/** A client process, killed if it has not exited within timeoutMs. */
const start = (args, timeoutMs) => {
  const started = performance.now();
  const proc = spawn(args[0], args.slice(1));
  const seen = { out: '', err: '' };
  proc.stdout.on('data', (d) => (seen.out += d));
  proc.stderr.on('data', (d) => (seen.err += d));
  const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
  const done = new Promise((resolve) =>
    proc.on('close', (code) => (clearTimeout(timer), resolve({ code, ms: performance.now() - started, ...seen }))),
  );
  return { proc, seen, done };
};
const base = ['-h', '127.0.0.1', '-p', mqttPort, '-V', 'mqttv311', '-u', mqtt.username, '-P', mqtt.password];
const ids = MODE === 'same-id' || MODE === 'takeover' ? ['-i', 'pairs-same-id'] : [];
/** mosquitto_sub line-buffered, so its SUBACK shows as it comes; resolves once subscribed. */
const subscriber = async (count, seconds) => {
  const sub = start(
    [
      'stdbuf',
      '-oL',
      'mosquitto_sub',
      ...base,
      ...ids,
      '-d',
      '-t',
      mqtt.decisions_topic,
      '-q',
      '1',
      '-v',
      ...(count ? ['-C', String(count), '-W', String(seconds)] : []),
    ],
    (seconds + 5) * 1000,
  );
  while (!sub.seen.out.includes('received SUBACK') && sub.proc.exitCode === null)
    await new Promise((r) => setTimeout(r, 5));
  return sub;
};

const longSub = MODE === 'long-sub' ? await subscriber(0, 3600) : null;
let hung = 0;
let unseen = 0;
const times = [];
for (let round = 0; round < ROUNDS; round++) {
  const requestId = RETRY ? `pair-${process.pid}-${round - (round % 2)}` : `pair-${process.pid}-${round}`;
  const sub = MODE === 'fresh' || MODE === 'same-id' ? await subscriber(1, Math.ceil(HANG_MS / 1000) + 2) : null;
  const pub = start(
    [
      'mosquitto_pub',
      ...base,
      ...ids,
      '-t',
      mqtt.scans_topic,
      '-q',
      '1',
      '-m',
      JSON.stringify({ request_id: requestId, credential_value: 'TICKET-1' }),
    ],
    HANG_MS,
  );
  if (MODE === 'takeover') {
    await new Promise((r) => setTimeout(r, TAKEOVER_MS));
    start(['mosquitto_sub', ...base, ...ids, '-t', mqtt.decisions_topic, '-W', '1'], 3000);
  }
  const published = await pub.done;
  times.push(published.ms);
  const followed = sub ? await sub.done : null;
  // With one client id the pub takes the sub's session over: the sub is not expected to see the decision.
  const missed = MODE === 'fresh' && !followed.out.includes(`"request_id":"${requestId}"`);
  if (published.code !== 0) hung++;
  else if (missed) unseen++;
  if (published.code !== 0 || missed)
    console.log(
      JSON.stringify({
        round,
        requestId,
        pub: { code: published.code, ms: Math.round(published.ms), err: published.err.trim() },
        sub: followed && { code: followed.code, err: followed.err.trim() },
      }),
    );
}
longSub?.proc.kill();
times.sort((a, b) => a - b);
console.log(
  JSON.stringify({
    mode: MODE,
    retry: RETRY,
    rounds: ROUNDS,
    withoutPuback: hung,
    decisionsNotSeen: unseen,
    pubMsP50: Math.round(times[ROUNDS >> 1]),
    pubMsMax: Math.round(times[ROUNDS - 1]),
  }),
);
for (const line of log) if (/"level":[45]\d/.test(line)) console.log(line);
stop();
