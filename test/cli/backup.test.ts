import BetterSqlite3 from 'better-sqlite3';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { journalLine, segmentName } from '../../src/journal/journal-format.js';
import { PROCESS_ADMIN, startProcessAppliance, type ProcessAppliance } from '../helpers/process-appliance.js';
import { eventRow } from '../helpers/access-event-rows.js';
import { requester } from '../helpers/appliance.js';
import { runCli, runGatehouse, type RunningProcess } from '../helpers/process.js';

// `gatehouse backup` (src/cli/backup.ts) and the restore docs/operations.md describes, with real
// processes and files: the appliance in its own process taking attendees and scans over REST while
// the backup runs as another; then the box stopped, the backup put in a fresh data directory as its
// database, a box started on it and checked.

const A = '/api/v1/projects/default/default';
const PEOPLE = 200;
const root = mkdtempSync(join(tmpdir(), 'gatehouse-backup-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface Report {
  file: string;
  bytes: number;
  pages: number;
  page_size: number;
  integrity: string;
  journal_events: number;
  rows: Record<string, number>;
}

/** A refusal as the CLI prints it: one line on stderr. */
const says = (...parts: string[]) => `gatehouse: ${parts.join('')}\n`;

function backup(dataDir: string, args: string[]) {
  return runCli(['backup', ...args], { GATEHOUSE_DATA_DIR: dataDir });
}

/** What SQLite says of a file, and its rows that the tests count. */
function inspect(file: string) {
  const db = new BetterSqlite3(file, { readonly: true, fileMustExist: true });
  try {
    const count = (table: string) => (db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;
    return {
      integrity: db.pragma('integrity_check', { simple: true }) as string,
      rows: Object.fromEntries(
        ['access_events', 'attendees', 'credentials', 'users', 'projects', 'domain_events'].map((t) => [t, count(t)]),
      ),
      eventUuids: new Set(
        (db.prepare('SELECT uuid FROM access_events').all() as { uuid: string }[]).map((r) => r.uuid),
      ),
      attendeeIds: new Set((db.prepare('SELECT id FROM attendees').all() as { id: number }[]).map((r) => r.id)),
    };
  } finally {
    db.close();
  }
}

describe('gatehouse backup', () => {
  let box: ProcessAppliance | undefined;
  let restored: RunningProcess | undefined;
  afterAll(async () => {
    await restored?.stop();
    await box?.destroy();
  });

  it('copies a box taking writes; a box started on the copy holds every row written before and serves', async () => {
    box = await startProcessAppliance();
    const app = box;
    const token = await app.token();
    const send = (method: string, path: string, body?: unknown) =>
      app.request(method, path, { token, ...(body === undefined ? {} : { body }) });
    const zone = (await send('POST', `${A}/access-zones`, { name: 'Hall' })).body.data.id as number;
    const door = (await send('POST', `${A}/access-points`, { name: 'Door', access_zone_id: zone, direction: 'both' }))
      .body.data.id as number;
    const people = Array.from({ length: PEOPLE }, (_, i) => ({
      first_name: `P${i}`,
      last_name: 'Backup',
      credential_value: `BK-${i}`,
    }));
    expect((await send('POST', `${A}/attendees/import`, people)).body.data.imported).toBe(PEOPLE);

    // Writers that go on until told: scans (each answer names its event) and attendee creates.
    const scans: { uuid: string; at: number }[] = [];
    const attendees: { id: number; at: number }[] = [];
    let writing = true;
    const scanner = async (n: number) => {
      for (let i = 0; writing; i++) {
        const res = await send('POST', `${A}/access-points/${door}/scan`, {
          credential_value: `BK-${(i * 3 + n) % PEOPLE}`,
          request_id: `bk-${n}-${i}`,
        });
        expect(res.status, res.text).toBe(200);
        scans.push({ uuid: res.body.event_id as string, at: performance.now() });
      }
    };
    const creator = async () => {
      for (let i = 0; writing; i++) {
        const res = await send('POST', `${A}/attendees`, { first_name: `New ${i}`, last_name: 'During' });
        expect(res.status, res.text).toBe(201);
        attendees.push({ id: res.body.data.id as number, at: performance.now() });
      }
    };
    const writers = [scanner(0), scanner(1), scanner(2), creator()];
    await expect.poll(() => scans.length >= 300 && attendees.length >= 30, { timeout: 60_000 }).toBe(true);

    const file = join(root, 'live', 'nested', 'box.db');
    const began = performance.now();
    const run = await backup(app.dataDir, [file]);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as Report;
    // Writes went on while the backup ran.
    await expect.poll(() => scans.filter((s) => s.at > began).length, { timeout: 60_000 }).toBeGreaterThan(50);
    writing = false;
    await Promise.all(writers);
    expect(await app.proc.stop()).toBe(0);

    expect(report).toMatchObject({ file, integrity: 'ok', page_size: 4096 });
    expect(report.bytes).toBe(statSync(file).size);
    expect(report.pages * report.page_size).toBe(report.bytes);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(root, 'live', 'nested'))).toEqual(['box.db']); // no temporary file left

    // Restore: a fresh data directory with the backup as its database.
    const fresh = join(root, 'restored-data');
    mkdirSync(fresh, { mode: 0o700 });
    copyFileSync(file, join(fresh, 'gatehouse.db'));
    const before = inspect(join(fresh, 'gatehouse.db'));
    expect(before.integrity).toBe('ok');
    expect(before.rows).toEqual(report.rows);
    const written = (at: number) => at < began;
    for (const s of scans.filter((s) => written(s.at))) expect(before.eventUuids.has(s.uuid), s.uuid).toBe(true);
    for (const a of attendees.filter((a) => written(a.at))) expect(before.attendeeIds.has(a.id), `${a.id}`).toBe(true);
    expect(before.rows.attendees).toBeGreaterThanOrEqual(PEOPLE + attendees.filter((a) => written(a.at)).length);
    expect(before.rows.access_events).toBeGreaterThanOrEqual(scans.filter((s) => written(s.at)).length);

    restored = runGatehouse([], {
      GATEHOUSE_DATA_DIR: fresh,
      GATEHOUSE_RATE_LIMIT_STANDARD: '0',
      GATEHOUSE_RATE_LIMIT_SEARCH: '0',
    });
    const [, url] = await restored.waitFor(/Gatehouse ready at (http:\/\/\S+?)"/, 60_000);
    const request = requester(url!);
    const login = await request('POST', '/api/v1/auth/token', { body: { ...PROCESS_ADMIN, device_name: 'restored' } });
    expect(login.status, login.text).toBe(201); // the administrator and the password of the box backed up
    const as = { token: login.body.token as string };
    const someone = attendees.find((a) => written(a.at))!;
    const got = await request('GET', `${A}/attendees/${someone.id}`, as);
    expect(got.status, got.text).toBe(200);
    expect(got.body.data.last_name).toBe('During');
    const listed = await request('GET', `${A}/access-events?per_page=1`, as);
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.meta.total).toBe(report.rows.access_events);
    // It decides: a known credential is decided and recorded, an unknown one is refused.
    const scan = await request('POST', `${A}/access-points/${door}/scan`, {
      ...as,
      body: { credential_value: 'BK-7', request_id: 'after-restore' },
    });
    expect(scan.status, scan.text).toBe(200);
    expect(typeof scan.body.access_granted).toBe('boolean');
    const unknown = await request('POST', `${A}/access-points/${door}/scan`, {
      ...as,
      body: { credential_value: 'NOBODY' },
    });
    expect(unknown.body).toMatchObject({ access_granted: false, reason: 'invalid_credential' });
    await expect
      .poll(async () => (await request('GET', `${A}/access-events?per_page=1`, as)).body.meta.total, {
        timeout: 15_000,
      })
      .toBe(report.rows.access_events! + 2);
    expect(await restored.stop()).toBe(0);
    expect(inspect(join(fresh, 'gatehouse.db')).integrity).toBe('ok');
  }, 240_000);

  it('takes the decisions still in the journal into the copy, and leaves the box as it was', async () => {
    const dataDir = join(root, 'journaled');
    const made = await runCli(['projects', 'list'], { GATEHOUSE_DATA_DIR: dataDir }); // a migrated store
    expect(made.code, made.stderr).toBe(0);
    // What a killed box leaves: answered decisions in a segment, not ingested yet; then a line cut short.
    const event = (n: number) =>
      journalLine(eventRow(n, { uuid: `0190a000-0000-7000-8000-00000000000${n}`, credentialValue: `JOURNAL-${n}` }));
    mkdirSync(join(dataDir, 'journal'), { mode: 0o700 });
    const segment = join(dataDir, 'journal', segmentName(1));
    writeFileSync(segment, `${event(1)}\n${event(2)}\n${event(3)}\n${event(4).slice(0, 40)}`);

    const file = join(root, 'journaled.db');
    const run = await backup(dataDir, [file]);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as Report;
    expect(report.journal_events).toBe(3);
    expect(report.rows.access_events).toBe(3);
    const copy = inspect(file);
    expect([...copy.eventUuids].sort()).toEqual([1, 2, 3].map((n) => `0190a000-0000-7000-8000-00000000000${n}`));
    const db = new BetterSqlite3(file, { readonly: true });
    expect(db.prepare('SELECT segment, offset FROM event_journal_position').get()).toEqual({
      segment: 1,
      offset: `${event(1)}\n${event(2)}\n${event(3)}\n`.length,
    });
    db.close();
    // The box's own store and journal are untouched: its next start ingests them itself.
    expect(inspect(join(dataDir, 'gatehouse.db')).rows.access_events).toBe(0);
    expect(existsSync(segment)).toBe(true);
  }, 60_000);

  it('refuses an existing file, an unwritable path, a data dir without a database or with another file', async () => {
    const dataDir = join(root, 'refusals');
    expect((await runCli(['projects', 'list'], { GATEHOUSE_DATA_DIR: dataDir })).code).toBe(0);
    const notOurs = join(root, 'not-ours');
    mkdirSync(notOurs);
    writeFileSync(join(notOurs, 'gatehouse.db'), 'a text file where the database should be');
    const existing = join(root, 'existing.db');
    writeFileSync(existing, 'an earlier backup');
    const runs = await Promise.all([
      backup(dataDir, [existing]),
      backup(dataDir, [existing, '--force']),
      backup(dataDir, [join(existing, 'inside.db')]),
      backup(dataDir, [join(existing, 'deeper', 'inside.db')]),
      backup(dataDir, [root]),
      backup(dataDir, [join(dataDir, 'gatehouse.db')]),
      backup(dataDir, []),
      backup(join(root, 'no-box-here'), [join(root, 'never.db')]),
      backup(notOurs, [join(root, 'never.db')]),
    ]);
    const [exists, forced, inFile, deeper, folder, itself, unnamed, noBox, garbage] = runs;
    expect(exists).toMatchObject({
      code: 2,
      stdout: '',
      stderr: `gatehouse: ${existing} exists: give --force to replace it\n`,
    });
    expect(forced.code, forced.stderr).toBe(0);
    expect(JSON.parse(forced.stdout)).toMatchObject({ file: existing, replaced: true, integrity: 'ok' });
    expect(inspect(existing).integrity).toBe('ok'); // replaced by a database
    expect(inFile).toMatchObject({
      code: 2,
      stderr: `gatehouse: cannot write the backup in ${existing}: it is a file, not a folder\n`,
    });
    expect(deeper).toMatchObject({
      code: 2,
      stderr: says(
        `cannot create the folder ${join(existing, 'deeper')} for the backup: `,
        'a part of the path is a file, not a folder (ENOTDIR)',
      ),
    });
    expect(folder).toMatchObject({
      code: 2,
      stderr: `gatehouse: ${root} is a folder: name the backup file to write\n`,
    });
    expect(itself).toMatchObject({
      code: 2,
      stderr: says(join(dataDir, 'gatehouse.db'), " is the box's own database: write the backup somewhere else"),
    });
    expect(unnamed).toMatchObject({
      code: 2,
      stderr: 'gatehouse: name one file to write the backup to: gatehouse backup FILE [--force]\n',
    });
    expect(noBox).toMatchObject({
      code: 2,
      stderr: says(
        `no database at ${join(root, 'no-box-here', 'gatehouse.db')}: `,
        "give the box's data directory (--data-dir, GATEHOUSE_DATA_DIR)",
      ),
    });
    expect(garbage).toMatchObject({
      code: 2,
      stderr: `gatehouse: cannot read ${join(notOurs, 'gatehouse.db')}: file is not a database\n`,
    });
    expect(existsSync(join(root, 'no-box-here'))).toBe(false); // nothing made where there was no box
    expect(existsSync(join(root, 'never.db'))).toBe(false);
    expect(readdirSync(root).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  }, 120_000);
});
