// `gatehouse plugin dev <dir>` and `gatehouse plugin build <dir>` (docs/plugins.md): Vite
// with @vitejs/plugin-vue and our plugin (index.ts) over a plugin's folder. dev serves it with hot
// reload, the API and the WebSocket proxied to the appliance; build writes a static bundle.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs, stripVTControlCharacters } from 'node:util';
import { CliError } from '../../cli/commands.js';
import { gatehouse } from './index.js';

// A plugin names its images in the manifest's assets (svc-src), as URLs relative to the page served
// from public/: templates' src attributes are left as written, not turned into module imports.
const vueOptions = { template: { transformAssetUrls: false } } as const;

/** What `plugin dev` parses; the usage (cli/commands.ts) names each one (test/cli/help.test.ts). */
export const devOptions = {
  url: { type: 'string' },
  token: { type: 'string' },
  email: { type: 'string' },
  password: { type: 'string' },
  team: { type: 'string' },
  project: { type: 'string' },
  port: { type: 'string' },
  host: { type: 'string' },
} as const;

function pluginDir(dir: string | undefined): string {
  if (!dir) throw new CliError('the plugin folder is required: gatehouse plugin dev <dir>');
  const root = resolve(dir);
  if (!existsSync(join(root, 'app-manifest.json')))
    throw new CliError(`${root} has no app-manifest.json (gatehouse plugin init <dir> makes a plugin)`);
  if (!existsSync(join(root, 'index.html'))) throw new CliError(`${root} has no index.html, the plugin's page`);
  return root;
}

/** The token for the dev page: --token, GATEHOUSE_TOKEN, or one made from --email/--password. */
async function devToken(
  url: string,
  v: { token?: string; email?: string; password?: string },
): Promise<string | undefined> {
  if ((v.email === undefined) !== (v.password === undefined)) throw new CliError('--email and --password go together');
  if (v.token) return v.token;
  if (!v.email) return process.env.GATEHOUSE_TOKEN || undefined;
  let res: Response;
  try {
    res = await fetch(`${url}/api/v1/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ email: v.email, password: v.password, device_name: 'gatehouse plugin dev' }),
    });
  } catch (err) {
    throw new CliError(`the appliance at ${url} did not answer (${(err as Error).message}); start it or pass --url`);
  }
  const body = (await res.json().catch(() => ({}))) as { token?: string; message?: string };
  if (!res.ok || !body.token)
    throw new CliError(`signing in at ${url} failed: ${res.status} ${body.message ?? ''}`.trim());
  return body.token;
}

function port(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new CliError(`--port ${value} is not a port number`);
  return n;
}

/** Starts the dev server; prints the URL it serves and keeps running until SIGINT / SIGTERM. */
export async function runDev(args: string[]): Promise<undefined> {
  const { values: v, positionals } = parseArgs({ args, options: devOptions, allowPositionals: true, strict: true });
  const root = pluginDir(positionals[0]);
  const url = (v.url ?? process.env.GATEHOUSE_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
  const token = await devToken(url, v);
  const [{ createServer }, { default: vue }] = await Promise.all([import('vite'), import('@vitejs/plugin-vue')]);
  const server = await createServer({
    root,
    configFile: false,
    logLevel: 'warn',
    clearScreen: false,
    plugins: [vue(vueOptions), gatehouse({ url, token, teamSlug: v.team, projectSlug: v.project })],
    server: { port: port(v.port) ?? 5173, strictPort: v.port !== undefined, host: v.host ?? '127.0.0.1' },
  });
  await server.listen();
  const served = server.resolvedUrls?.local[0] ?? `http://${v.host ?? '127.0.0.1'}:${server.config.server.port}/`;
  process.stdout.write(
    `gatehouse plugin dev: serving ${relative(process.cwd(), root) || '.'} at ${served} (API and WebSocket proxied to ${url})\n`,
  );
  const stop = () => void server.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return undefined;
}

function listFiles(dir: string, base = dir): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? listFiles(path, base) : [relative(base, path)];
  });
}

/** Builds the plugin into <dir>/dist (or --out): a static page with relative asset paths, hostable under any path. */
export async function runBuild(args: string[]): Promise<{ dir: string; out: string; files: string[] }> {
  const { values: v, positionals } = parseArgs({
    args,
    options: { out: { type: 'string' }, url: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  const root = pluginDir(positionals[0]);
  const out = resolve(root, v.out ?? 'dist');
  const [{ build }, { default: vue }] = await Promise.all([import('vite'), import('@vitejs/plugin-vue')]);
  try {
    await build({
      root,
      configFile: false,
      logLevel: 'warn',
      base: './',
      plugins: [vue(vueOptions), gatehouse({ buildBaseUrl: v.url })],
      build: { outDir: out, emptyOutDir: true },
    });
  } catch (err) {
    // Rolldown's message is coloured for a terminal; the CLI prints it as one plain error.
    throw new CliError(`the build of ${root} failed: ${stripVTControlCharacters((err as Error).message)}`);
  }
  return { dir: root, out, files: listFiles(out).sort() };
}
