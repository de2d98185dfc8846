import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';

// CSV exports neutralise cells a spreadsheet would run as a formula (OWASP CSV
// injection, ASVS 5 1.2.10): credential_value is whatever a QR code said. Tested through the real
// export, read back with csv-parse, an independent CSV reader.

const A = '/api/v1/projects/default/default';

/** Each value a spreadsheet may take as a formula, or strip and then take as one. */
const DANGEROUS = [
  '=HYPERLINK("http://x.test","go")',
  '+1+1',
  '-2+3',
  '@SUM(A1)',
  '\t=1+1',
  '\r=1+1',
  '\n=1+1',
  '\u0000=1+1',
];
/** Values left as they are (a minus inside, a quote, a comma, a semicolon). */
const HARMLESS = ['TICKET-1', 'a "quoted" value', 'one,two', 'x;=1+1'];

describe('CSV export', () => {
  let gh: TestAppliance;
  let api: ReturnType<typeof client>;
  let gate: number;

  beforeAll(async () => {
    gh = await startAppliance();
    api = client(gh, await gh.token());
    const zone = (await api.post(`${A}/access-zones`, { name: 'Arena' })).body.data.id;
    gate = (await api.post(`${A}/access-points`, { name: 'Gate', access_zone_id: zone })).body.data.id;
    for (const value of [...DANGEROUS, ...HARMLESS]) {
      const res = await api.post(`${A}/access-points/${gate}/scan`, { credential_value: value, scan_type: 'qr' });
      expect(res.status, JSON.stringify(value)).toBe(200);
    }
  });
  afterAll(() => gh.destroy());

  const exported = async (): Promise<Record<string, string>[]> => {
    const res = await fetch(`${gh.url}${A}/access-events?format=csv`, {
      headers: { authorization: `Bearer ${await gh.token()}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
    return parse(await res.text(), { columns: true }) as Record<string, string>[];
  };

  it('prefixes with an apostrophe every cell that starts with = + - @, a tab, CR, LF or NUL', async () => {
    const values = (await exported()).map((row) => row.credential_value!);
    expect(values).toHaveLength(DANGEROUS.length + HARMLESS.length); // a CR or LF in a value never starts a row
    for (const value of DANGEROUS) expect(values, JSON.stringify(value)).toContain(`'${value}`);
    for (const value of DANGEROUS) expect(values, JSON.stringify(value)).not.toContain(value);
  });

  it('leaves other cells as they were, quoting those with a quote, comma or semicolon', async () => {
    const values = (await exported()).map((row) => row.credential_value!);
    for (const value of HARMLESS) expect(values, value).toContain(value);
    const res = await fetch(`${gh.url}${A}/access-events?format=csv`, {
      headers: { authorization: `Bearer ${await gh.token()}` },
    });
    const text = await res.text();
    // Quoted, so a spreadsheet that splits on ';' (some locales) still reads one cell.
    expect(text).toContain('"x;=1+1"');
    expect(text).toContain('"one,two"');
  });
});
