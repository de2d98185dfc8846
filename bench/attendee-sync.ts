// bench:sync — POST /webhook/v1/attendee-sync with 10,000 records in one signed request
// (docs/performance.md, "Attendee sync webhook": "10,000 records in one request in well under a second"), against an appliance in this
// process on a real SQLite file, over real HTTP. Three requests in a row on the same records:
//   sync.create_10k_ms  all new (upsert creates)
//   sync.update_10k_ms  every record changed (upsert updates; versions bumped, index refreshed)
//   sync.skip_10k_ms    the same records again (nothing to write)
// and as the baseline measured in the same run, the REST bulk import of 10,000 other attendees
// (POST .../attendees/import, the same set-based writer): sync.baseline_import_10k_ms.
// Each figure is the time from sending the request to the answer, median of 3 runs (1 quick).
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { Gatehouse } from '../src/app.js';
import { benchConfig } from './bench-config.js';
import { line } from './process-stats.js';

const quick = process.env.BENCH_QUICK === '1';
const runs = quick ? 1 : 3;
const A = '/api/v1/projects/default/default';
const N = 10_000;

const results: Record<string, number[]> = { create: [], update: [], skip: [], import: [] };
for (let run = 0; run < runs; run++) {
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-sync-'));
  const config = benchConfig(dataDir, { GATEHOUSE_RATE_LIMIT_STANDARD: '0', GATEHOUSE_RATE_LIMIT_BULK: '0' });
  const app = new Gatehouse(config, { log: pino({ level: 'warn' }) });
  await app.start();
  const url = `http://127.0.0.1:${app.httpPort}`;
  const call = async (path: string, body: string, headers: Record<string, string>) => {
    const started = performance.now();
    const res = await fetch(url + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
    const text = await res.text();
    const ms = performance.now() - started;
    if (!res.ok) throw new Error(`${path}: ${res.status} ${text.slice(0, 300)}`);
    return { ms, body: JSON.parse(text) as Record<string, any> };
  };
  const { body: tokenBody } = await call(
    '/api/v1/auth/token',
    JSON.stringify({ email: 'admin@gatehouse.local', password: 'bench password', device_name: 'bench' }),
    {},
  );
  const bearer = { authorization: `Bearer ${tokenBody.token}` };
  const { body: source } = await call(
    `${A}/integrations/webhooks`,
    JSON.stringify({ kind: 'attendee-sync', name: 'bench', rate_limit_per_minute: 1000 }),
    bearer,
  );
  // `resend` adds a byte of whitespace: the gate refuses the identical signed body as a replay.
  const sync = (attendees: unknown[], resend = false) => {
    const body =
      JSON.stringify({ team_slug: 'default', project_slug: 'default', sync_mode: 'upsert', attendees }) +
      (resend ? ' ' : '');
    const signature = `sha256=${createHmac('sha256', source.secret).update(body).digest('hex')}`;
    return call('/webhook/v1/attendee-sync', body, { 'X-Svc-Signature': signature });
  };
  const records = (suffix: string) =>
    Array.from({ length: N }, (_, i) => ({
      external_id: `EXT-${i}`,
      first_name: `First${i}`,
      last_name: `Last${i}${suffix}`,
      email: `p${i}@example.test`,
    }));
  const created = await sync(records(''));
  const updated = await sync(records('-v2'));
  const skipped = await sync(records('-v2'), true);
  if (created.body.results.created !== N || updated.body.results.updated !== N || skipped.body.results.skipped !== N)
    throw new Error(
      `unexpected results ${JSON.stringify([created.body.results, updated.body.results, skipped.body.results]).slice(0, 300)}`,
    );
  const imported = await call(
    `${A}/attendees/import`,
    JSON.stringify(
      Array.from({ length: N }, (_, i) => ({ first_name: `Imp${i}`, last_name: 'Bulk', external_id: `IMP-${i}` })),
    ),
    bearer,
  );
  results.create!.push(created.ms);
  results.update!.push(updated.ms);
  results.skip!.push(skipped.ms);
  results.import!.push(imported.ms);
  await app.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
line('sync.create_10k_ms', median(results.create!).toFixed(0), 'ms');
line('sync.update_10k_ms', median(results.update!).toFixed(0), 'ms');
line('sync.skip_10k_ms', median(results.skip!).toFixed(0), 'ms');
line('sync.baseline_import_10k_ms', median(results.import!).toFixed(0), 'ms');
line('sync.ratio_create_to_import', (median(results.create!) / median(results.import!)).toFixed(2), 'x');
