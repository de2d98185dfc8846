import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startProcessAppliance, type ProcessAppliance } from '../helpers/process-appliance.js';
import { runCli } from '../helpers/process.js';

// Issue 22 item 6, as it was found: the built appliance in its own process, 4 clients scanning
// over REST (so the journal's ingest worker commits every few milliseconds and the checkpointer
// follows it), and meanwhile writers of every kind: attendee updates, attendee-type zone
// changes, signed attendee-sync webhooks, attendee creates, reader OTP logins, and a CLI import
// from another process. Before every write transaction was immediate, some of these writes
// answered 500 (SQLITE_BUSY_SNAPSHOT). Now none may answer 5xx: a 503 counts as a failure too,
// since nothing here holds the lock anywhere near store.busyTimeoutMs.

const A = '/api/v1/projects/default/default';
const ROUNDS = 120; // per writer; with the OTP logins' two writes each, ~840 writes
const PEOPLE = 300;

interface Outcome {
  kind: string;
  status: number;
  body: string;
}

describe('writes while the doors are busy', () => {
  let gh: ProcessAppliance | undefined;
  afterAll(async () => gh?.destroy());

  it('answers every write of every kind without a 5xx while scans, the ingest worker, the checkpointer and another process write', async () => {
    gh = await startProcessAppliance({ GATEHOUSE_READERS_VERIFY_PER_MINUTE: '100000' });
    const app = gh;
    const token = await app.token();
    const send = (method: string, path: string, body?: unknown) =>
      app.request(method, path, { token, ...(body === undefined ? {} : { body }) });

    const zone = (await send('POST', `${A}/access-zones`, { name: 'Hall', requires_ticket: true })).body.data
      .id as number;
    const door = (
      await send('POST', `${A}/access-points`, { name: 'Hall door', access_zone_id: zone, direction: 'both' })
    ).body.data.id as number;
    expect((await send('POST', `${A}/attendee-types`, { name: 'Guest', zone_ids: [zone] })).status).toBe(201);
    const shifting = (await send('POST', `${A}/attendee-types`, { name: 'Crew', zone_ids: [] })).body.data.id as number;
    const people = Array.from({ length: PEOPLE }, (_, i) => ({
      first_name: `P${i}`,
      last_name: 'Load',
      credential_value: `LOAD-${i}`,
      attendee_type: i % 2 ? 'guest' : 'crew',
    }));
    expect((await send('POST', `${A}/attendees/import`, people)).body.data.imported).toBe(PEOPLE);
    const ids = ((await send('GET', `${A}/attendees?per_page=100`)).body.data as { id: number }[]).map((a) => a.id);
    const readers = ['R-0', 'R-1', 'R-2', 'R-3'];
    for (const identifier of readers)
      expect((await send('POST', `${A}/readers`, { identifier, access_point_id: door })).status).toBe(201);
    const source = await send('POST', `${A}/integrations/webhooks`, { kind: 'attendee-sync', name: 'CRM' });
    expect(source.status).toBe(201);
    const cliFile = join(app.dataDir, 'cli-import.csv');
    writeFileSync(
      cliFile,
      `first_name,last_name,credential_value\n${Array.from({ length: 2000 }, (_, i) => `C${i},Cli,CLI-${i}`).join('\n')}\n`,
    );

    const outcomes: Outcome[] = [];
    const record = <R extends { status: number; text: string }>(kind: string, res: R): R => {
      outcomes.push({ kind, status: res.status, body: res.text.slice(0, 300) });
      return res;
    };
    let writing = true;
    let scanned = 0;
    const scanner = async (n: number) => {
      for (let i = 0; writing; i++) {
        const credential_value = `LOAD-${(i * 7 + n) % PEOPLE}`;
        record(
          'scan',
          await send('POST', `${A}/access-points/${door}/scan`, { credential_value, request_id: `s${n}-${i}` }),
        );
        scanned++;
      }
    };
    const writer = async (_kind: string, write: (i: number) => Promise<void>) => {
      for (let i = 0; i < ROUNDS; i++) await write(i);
    };
    const writers = [
      writer(
        'attendee update',
        async (i) =>
          void record(
            'attendee update',
            await send('PUT', `${A}/attendees/${ids[i % ids.length]}`, { last_name: `Updated ${i}` }),
          ),
      ),
      writer(
        'attendee-type zones',
        async (i) =>
          void record(
            'attendee-type zones',
            await send('PUT', `${A}/attendee-types/${shifting}`, { zone_ids: i % 2 ? [] : [zone] }),
          ),
      ),
      writer('attendee-sync webhook', async (i) => {
        const body = {
          team_slug: 'default',
          project_slug: 'default',
          sync_mode: 'upsert',
          attendees: [
            { external_id: `SYNC-${i % 20}`, first_name: `Synced ${i}` },
            { external_id: `SYNC-X-${i}`, first_name: 'Fresh' },
          ],
        };
        record('attendee-sync webhook', await app.signedPost('/webhook/v1/attendee-sync', body, source.body.secret));
      }),
      writer(
        'attendee create',
        async (i) =>
          void record(
            'attendee create',
            await send('POST', `${A}/attendees`, { first_name: `New ${i}`, last_name: 'Writer' }),
          ),
      ),
      writer('reader OTP login', async (i) => {
        const reader_identifier = readers[i % readers.length]!;
        record(
          'reader login request',
          await app.request('POST', `${A}/readers/login`, { body: { reader_identifier } }),
        );
        const pending = record('reader login list', await send('GET', `${A}/readers/logins`));
        const otp =
          (pending.body?.data as { reader_identifier: string; otp: string }[] | undefined)?.find(
            (l) => l.reader_identifier === reader_identifier,
          )?.otp ?? 'missing';
        record(
          'reader OTP verify',
          await app.request('POST', '/api/v1/reader-otp/verify', { body: { otp, reader_identifier } }),
        );
      }),
      (async () => {
        // Another process writing the same store mid-storm, as an operator's import would.
        while (scanned < 200) await new Promise((resolve) => setTimeout(resolve, 50));
        const cli = await runCli(['attendees', 'import', cliFile, '--project', 'default/default'], {
          GATEHOUSE_DATA_DIR: app.dataDir,
        });
        outcomes.push({ kind: 'cli import', status: cli.code === 0 ? 200 : 500, body: cli.stderr.slice(0, 300) });
      })(),
    ];
    const scanners = Array.from({ length: 4 }, (_, n) => scanner(n));
    await Promise.all(writers).finally(() => (writing = false));
    await Promise.all(scanners);

    const expected: Record<string, number> = {
      scan: 200,
      'attendee update': 200,
      'attendee-type zones': 200,
      'attendee-sync webhook': 200,
      'attendee create': 201,
      'reader login request': 202,
      'reader login list': 200,
      'reader OTP verify': 200,
      'cli import': 200,
    };
    const failures = outcomes.filter((o) => o.status !== expected[o.kind]);
    expect(failures).toEqual([]);
    const writes = outcomes.filter((o) => o.kind !== 'scan' && o.kind !== 'reader login list').length;
    expect(writes).toBe(ROUNDS * 6 + 1);
    expect(scanned).toBeGreaterThan(200);

    // Everything written is there: the creates, the synced records and the CLI's import.
    const total = (await send('GET', `${A}/attendees?per_page=1`)).body.meta.total as number;
    expect(total).toBe(PEOPLE + ROUNDS + 20 + ROUNDS + 2000);
    const metrics = (await send('GET', '/metrics')).text;
    expect(metrics.match(/^gatehouse_store_busy_total\{.*$/gm) ?? []).toEqual([]);
    expect(app.proc.output.filter((line) => /SQLITE_BUSY|unhandled error/.test(line))).toEqual([]);
  }, 300_000);
});
