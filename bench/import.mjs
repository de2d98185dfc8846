// bench:import — a 100k-row attendee CSV (each row with a credential) posted to the real
// appliance's import route, mode all. Baseline in the same run: the same file posted in
// partial mode to a second project, and a validation-only run (every row bad, nothing written).
// BENCH_QUICK=1 uses 20k rows.
import { startAppliance } from './appliance.mjs';

const rows = process.env.BENCH_QUICK === '1' ? 20_000 : 100_000;
const lines = ['first_name,last_name,email,external_id,credential_value,credential_kind,company'];
for (let n = 1; n <= rows; n++)
  lines.push(
    `First${n},Last${n},person${n}@example.test,ext-${n},CRED-${String(n).padStart(8, '0')},qr,Company ${n % 97}`,
  );
const csv = lines.join('\n');
const bad = csv.replace(/@example\.test/g, '@');

const { url, token, stop } = await startAppliance();
const auth = { authorization: `Bearer ${token}` };
await fetch(`${url}/api/v1/projects`, {
  method: 'POST',
  headers: { ...auth, 'content-type': 'application/json' },
  body: JSON.stringify({ name: 'Second', slug: 'second' }),
});

async function post(project, body, query = '') {
  const started = process.hrtime.bigint();
  const res = await fetch(`${url}/api/v1/projects/default/${project}/attendees/import${query}`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'text/csv' },
    body,
  });
  const report = await res.json();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { seconds, report };
}

const validateOnly = await post('default', bad);
if (validateOnly.report.data.imported !== 0) throw new Error('validation-only run wrote rows');
const all = await post('default', csv);
if (all.report.data.imported !== rows) throw new Error(`imported ${all.report.data.imported} of ${rows}`);
const partial = await post('second', csv, '?mode=partial');

const line = (name, value, unit) => console.log(`${name}: ${value} ${unit}`);
line('import.rows', rows, 'rows');
line('import.seconds', all.seconds.toFixed(2), 's');
line('import.rows_per_s', Math.round(rows / all.seconds), '/s');
line('import.partial_seconds', partial.seconds.toFixed(2), 's');
line('import.validate_only_seconds', validateOnly.seconds.toFixed(2), 's');
line('import.write_share', ((all.seconds - validateOnly.seconds) / all.seconds).toFixed(2), 'of total');
line('import.csv_mb', (Buffer.byteLength(csv) / 1e6).toFixed(1), 'MB');
await stop();
