import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { runCli } from '../helpers/process.js';

const A = '/api/v1/projects/default/default';
const HEADER = 'first_name,last_name,email,attendee_type,external_id,credential_value,credential_kind,tshirt';

/** A 10k-row CSV; rows whose number is in `bad` carry one fault each, of a rotating kind. */
function csv(rows: number, prefix: string, bad: Set<number>): string {
  const lines = [HEADER];
  for (let n = 1; n <= rows; n++) {
    let email = `${prefix}${n}@example.test`;
    let type = n % 2 ? 'guest' : '';
    let value = `${prefix}-CRED-${n}`;
    if (bad.has(n)) {
      const fault = n % 3;
      if (fault === 0) email = 'not-an-email';
      if (fault === 1) type = 'stowaway';
      if (fault === 2) value = `${prefix}-CRED-1`; // the first row's value again
    }
    lines.push(`First${n},"Last, ${n}",${email},${type},${prefix}-ext-${n},${value},qr,${n % 2 ? 'L' : ''}`);
  }
  return lines.join('\n');
}

describe('attendee import', () => {
  let gh: TestAppliance;
  let admin: string;
  const count = async () => (await gh.request('GET', `${A}/attendees?per_page=1`, { token: admin })).body.meta.total;
  const send = (body: string, query = '', type = 'text/csv') =>
    gh.request('POST', `${A}/attendees/import${query}`, {
      token: admin,
      rawBody: body,
      headers: { 'content-type': type },
    });

  beforeAll(async () => {
    gh = await startAppliance();
    admin = await gh.token();
    await gh.request('POST', `${A}/attendee-types`, { token: admin, body: { name: 'Guest', slug: 'guest' } });
  });
  afterAll(() => gh.destroy());

  it('writes nothing from a 10k-row CSV with bad rows by default, and reports each bad row', async () => {
    const bad = new Set([17, 499, 4242, 9999]);
    const res = await send(csv(10_000, 'all', bad));
    expect(res.status).toBe(422);
    expect(res.body.message).toMatch(/Nothing was imported\.$/);
    expect(res.body.data).toMatchObject({ mode: 'all', total: 10_000, imported: 0, failed: 4 });
    expect(res.body.data.errors.map((e: { row: number }) => e.row)).toEqual([17, 499, 4242, 9999]);
    expect(res.body.errors['rows.17.credential_value']).toHaveLength(1); // 17 % 3 = 2: reused value
    expect(res.body.errors['rows.4242.email']).toHaveLength(1); // 4242 % 3 = 0
    expect(res.body.errors['rows.499.attendee_type']).toHaveLength(1); // 499 % 3 = 1: unknown type
    expect(await count()).toBe(0);
  });

  it('writes the good rows of the same file in partial mode, with their credentials and extra columns', async () => {
    const bad = new Set([3, 4, 5]);
    const res = await send(csv(10_000, 'part', bad), '?mode=partial');
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      mode: 'partial',
      total: 10_000,
      imported: 9_997,
      failed: 3,
      credentials: 9_997,
    });
    expect(res.body.data.errors.map((e: { row: number; external_id: string }) => [e.row, e.external_id])).toEqual([
      [3, 'part-ext-3'],
      [4, 'part-ext-4'],
      [5, 'part-ext-5'],
    ]);
    expect(await count()).toBe(9_997);
    const found = (await gh.request('GET', `${A}/attendees?search=part-ext-7`, { token: admin })).body.data[0];
    expect(found).toMatchObject({
      first_name: 'First7',
      last_name: 'Last, 7',
      email: 'part7@example.test',
      attendee_type: 'guest',
      extra: { tshirt: 'L' },
    });
    const creds = (await gh.request('GET', `${A}/attendees/${found.id}/credentials`, { token: admin })).body.data;
    expect(creds).toEqual([expect.objectContaining({ value: 'part-CRED-7', kind: 'qr', status: 'active' })]);
    // The first ten rows again, now without faults: the seven written before collide and
    // nothing doubles; the three that were bad go in.
    const again = await send(csv(10, 'part', new Set()), '?mode=partial');
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ imported: 3, failed: 7 });
    expect(again.body.data.errors[0].errors.external_id).toHaveLength(1);
    expect(await count()).toBe(10_000);
  });

  it('takes JSON rows, with the mode in the body', async () => {
    const res = await gh.request('POST', `${A}/attendees/import`, {
      token: admin,
      body: {
        mode: 'partial',
        attendees: [
          { first_name: 'Json', last_name: 'One', external_id: 'json-1' },
          { last_name: 'No first name' },
          { first_name: 'Json', last_name: 'Two', credential_value: 'JSON-2', badge: 42 },
        ],
      },
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ imported: 2, failed: 1, credentials: 1 });
    expect(res.body.data.errors[0]).toMatchObject({
      row: 2,
      errors: { first_name: ['The first_name field is required.'] },
    });
    const two = (await gh.request('GET', `${A}/attendees?search=Json%20Two`, { token: admin })).body.data[0];
    expect(two.extra).toEqual({ badge: 42 });
  });

  it('refuses an unreadable CSV, an empty file, a wrong content type, and counts as a bulk request', async () => {
    const ragged = await send(`${HEADER}\nonly,two`);
    expect(ragged.status).toBe(422);
    expect(ragged.body.errors.file[0]).toMatch(/could not be read/);
    expect((await send(HEADER)).status).toBe(422);
    expect((await send('first_name\nx', '', 'application/xml')).status).toBe(415);
    expect(gh.app.routes.find((r) => r.operationId === 'attendees.import')!.rateClass).toBe('bulk');
  });

  it('answers an empty upload, of either type, with a 422 on file', async () => {
    const before = await count();
    for (const type of ['text/csv', 'application/json']) {
      // curl --data-binary @missing-or-empty.csv sends Content-Length: 0
      const res = await gh.request('POST', `${A}/attendees/import?mode=partial`, {
        token: admin,
        rawBody: '',
        headers: { 'content-type': type },
      });
      expect(res.status).toBe(422);
      expect(res.body).toEqual({
        message: 'The file is empty: send CSV with a header row, or JSON rows.',
        errors: { file: ['The file is empty: send CSV with a header row, or JSON rows.'] },
      });
    }
    const blank = await send('\n\n  \n');
    expect(blank.status).toBe(422);
    expect(Object.keys(blank.body.errors)).toEqual(['file']);
    expect(await count()).toBe(before);
  });

  it('answers a body that is not CSV text with a 422 on file, never repeating its bytes', async () => {
    const before = await count();
    // A spreadsheet sent as it is: a zip file, binary from its first bytes.
    const xlsx = Buffer.concat([
      Buffer.from('PK\u0003\u0004\u0014\u0000\u0006\u0000'),
      Buffer.from('[Content_Types].xml first_name'),
    ]);
    const binary = await gh.request('POST', `${A}/attendees/import?mode=partial`, {
      token: admin,
      rawBody: xlsx,
      headers: { 'content-type': 'text/csv' },
    });
    expect(binary.status).toBe(422);
    expect(binary.body.errors).toEqual({
      file: [
        'The file is not CSV text: it holds NUL bytes (a spreadsheet or another binary file? Save it as CSV, UTF-8).',
      ],
    });
    // Text, but not what the import reads: a spreadsheet's export with semicolons is one column.
    const semicolons = await send('first_name;last_name\nAda;Lovelace\n', '?mode=partial');
    expect(semicolons.status).toBe(422);
    expect(semicolons.body.errors).toEqual({
      file: [
        'The header row has no first_name column: the first line must name the columns, separated by commas (docs/venue.md).',
      ],
    });
    expect(JSON.stringify(semicolons.body)).not.toContain('Lovelace');
    // JSON of another shape is the body's fault, said plainly.
    const shape = await gh.request('POST', `${A}/attendees/import`, { token: admin, body: { people: [] } });
    expect(shape.status).toBe(422);
    expect(shape.body.errors).toEqual({
      body: [
        'The body field is invalid: send CSV with a header row (text/csv), or JSON: an array of rows or {"mode", "attendees"}.',
      ],
    });
    expect(await count()).toBe(before);
  });

  it('exports attendees as CSV in the import format, filtered, and the export imports back', async () => {
    const res = await fetch(`${gh.url}${A}/attendees/export?search=part-ext-12`, {
      headers: { authorization: `Bearer ${admin}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
    const text = await res.text();
    const lines = text.trim().split('\r\n');
    expect(lines[0]).toBe(
      'first_name,last_name,email,attendee_type,external_id,status,credential_value,credential_kind',
    );
    expect(lines).toContain('First12,"Last, 12",part12@example.test,,part-ext-12,active,part-CRED-12,qr');
    // Into another project, the exported file imports as it is.
    await gh.request('POST', '/api/v1/projects', { token: admin, body: { name: 'Copy', slug: 'copy' } });
    const back = await gh.request('POST', '/api/v1/projects/default/copy/attendees/import', {
      token: admin,
      rawBody: text,
      headers: { 'content-type': 'text/csv' },
    });
    expect(back.status).toBe(200);
    expect(back.body.data).toMatchObject({ imported: lines.length - 1, credentials: lines.length - 1 });
    expect(gh.app.routes.find((r) => r.operationId === 'attendees.export')!.rateClass).toBe('search');
  });

  it('imports from the command line too', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-import-'));
    const file = join(dir, 'people.csv');
    writeFileSync(file, csv(50, 'cli', new Set([10])));
    const env = { GATEHOUSE_DATA_DIR: gh.dataDir };
    const all = await runCli(['attendees', 'import', file, '--project', 'default/default'], env);
    expect(all.code).toBe(2);
    expect(all.stderr).toContain('nothing imported: 1 bad row');
    const partial = await runCli(['attendees', 'import', file, '--project', 'default/default', '--partial'], env);
    expect(partial.code, partial.stderr).toBe(0);
    expect(JSON.parse(partial.stdout)).toMatchObject({ imported: 49, failed: 1 });
  });
});
