// Prints the route table as the Markdown rows docs/rest.md carries; with --write it replaces
// the table in docs/rest.md. test/http/docs.test.ts fails when a route is missing there.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';

const out = join(process.cwd(), 'dist', 'route-table.mjs'); // inside the project, so packages resolve
await build({
  stdin: {
    contents: `import { pino } from 'pino';
      import { Gatehouse } from './src/app.ts';
      import { loadConfig } from './src/config/load.ts';
      const app = new Gatehouse(loadConfig({ env: { GATEHOUSE_DATA_DIR: process.argv[2], GATEHOUSE_HTTP_PORT: '0', GATEHOUSE_HTTP_HOST: '127.0.0.1', GATEHOUSE_ADMIN_PASSWORD: 'route-table' } }), { log: pino({ level: 'silent' }) });
      await app.start();
      for (const r of app.routes) console.log('| ' + r.method + ' | \`' + r.path + '\` | \`' + r.operationId + '\` | ' + (r.ability === 'public' ? 'none' : r.ability === 'authenticated' ? 'any token' : '\`' + r.ability + '\`') + (r.admin ? ', admin' : '') + ' | ' + r.rateClass + (r.searchQuery ? '; search with ' + r.searchQuery.map((q) => '\`' + q + '\`').join(' or ') : '') + ' |');
      await app.stop();`,
    resolveDir: process.cwd(),
    loader: 'ts',
  },
  bundle: true,
  platform: 'node',
  format: 'esm',
  packages: 'external',
  outfile: out,
  logLevel: 'error',
});
const dataDir = mkdtempSync(join(tmpdir(), 'routes-data-'));
const write = process.argv.includes('--write');
process.argv[2] = dataDir;
const rows = [];
const print = console.log;
if (write)
  console.log = (line) =>
    rows.push(String(line).replace('| `auth.session.store` | none |', '| `auth.session.store` | none (CSRF) |'));
await import(out);
console.log = print;
if (write) {
  const lines = readFileSync('docs/rest.md', 'utf8').split('\n');
  const start = lines.findIndex((l) => l.startsWith('| method | path')) + 2;
  let end = start;
  while (lines[end]?.startsWith('|')) end++;
  lines.splice(start, end - start, ...rows);
  writeFileSync('docs/rest.md', lines.join('\n'));
}
rmSync(out);
rmSync(dataDir, { recursive: true, force: true });
