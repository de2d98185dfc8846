// The toolkit's Vite plugin (docs/plugins.md "Dev server and hot reload"). It
// gives a plugin's page the module `virtual:gatehouse/plugin` (its manifest as validated now, the
// validation errors, its context), watches app-manifest.json and pushes each edit to open pages
// over Vite's HMR channel as a custom event (the store is updated in place: no reload), makes
// `@gatehouse/plugin-toolkit` resolve to this checkout's toolkit, and in dev proxies the REST
// API, channel auth, the CSRF cookie and the Pusher WebSocket to the appliance so the page is
// same-origin with it — adding the token itself, which is never served (dev-access.ts).
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Plugin, ViteDevServer } from 'vite';
import { checkoutRoot, toolkitEntry } from '../checkout.js';
import { type ManifestError, parseManifestText } from '../toolkit/manifest.js';
import type { PluginManifest } from '../toolkit/types.js';
import { applianceProxy, servedFiles } from './dev-access.js';

export const VIRTUAL_ID = 'virtual:gatehouse/plugin';
const RESOLVED_ID = `\0${VIRTUAL_ID}`;
/** Packages the toolkit and the plugin must share, and the ones it brings when the plugin has none. */
const SHARED = ['vue', 'pinia', 'pusher-js'];
/** The custom HMR event a manifest edit is pushed as: {manifest, errors}. */
export const MANIFEST_EVENT = 'gatehouse:manifest';
/** Sent by a page once its HMR socket is open, with the revision it was served; answered with
 *  MANIFEST_EVENT when the manifest changed since (an edit made before the socket connected). */
export const MANIFEST_HELLO = 'gatehouse:manifest-hello';

export interface GatehouseViteOptions {
  /** The appliance the dev server forwards /api, /broadcasting and the WebSocket (/app/{key}) to. Default:
   * GATEHOUSE_URL or http://127.0.0.1:8080. */
  url?: string;
  /** The plugin's token in dev: the dev server adds it to the page's API calls it forwards (dev-access.ts). Default:
   * GATEHOUSE_TOKEN. Never served, never written into a build. */
  token?: string;
  /** The project the plugin runs in. Default: GATEHOUSE_TEAM / GATEHOUSE_PROJECT, else "default". */
  teamSlug?: string;
  projectSlug?: string;
  /** The API's origin in a build ('' = the page's own origin, the appliance serving it). Default: ''. */
  buildBaseUrl?: string;
}

/** What one read of the manifest file gave: the manifest, or why not. */
export interface ManifestState {
  manifest: PluginManifest | null;
  errors: ManifestError[];
}

export function readManifestFile(file: string): ManifestState {
  if (!existsSync(file)) return { manifest: null, errors: [{ path: '$', message: `${file} does not exist` }] };
  const parsed = parseManifestText(readFileSync(file, 'utf8'));
  return parsed.ok ? { manifest: parsed.manifest, errors: [] } : { manifest: null, errors: parsed.errors };
}

export function gatehouse(options: GatehouseViteOptions = {}): Plugin {
  const env = process.env;
  const target = (options.url ?? env.GATEHOUSE_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
  const token = options.token ?? env.GATEHOUSE_TOKEN;
  const teamSlug = options.teamSlug ?? env.GATEHOUSE_TEAM ?? 'default';
  const projectSlug = options.projectSlug ?? env.GATEHOUSE_PROJECT ?? 'default';
  let manifestFile = '';
  let serving = false;
  let state: ManifestState = { manifest: null, errors: [] };
  // Bumped on each read of the file after the first; a page says which one it was served.
  let revision = 0;
  let lastRead: ManifestState = state;

  function moduleCode(): string {
    // In dev the page talks to the dev server (same origin, proxied,
    // the token added there); a build talks to where it is served from.
    const context = { baseUrl: serving ? '' : (options.buildBaseUrl ?? ''), teamSlug, projectSlug, token: null };
    return [
      `export const manifest = ${JSON.stringify(state.manifest)};`,
      `export const errors = ${JSON.stringify(state.errors)};`,
      `export const context = ${JSON.stringify(context)};`,
      `export const dev = ${serving};`,
      'export function onManifestUpdate(listener) {',
      '  if (!import.meta.hot) return;',
      `  import.meta.hot.on(${JSON.stringify(MANIFEST_EVENT)}, listener);`,
      // Queued by Vite's client until its socket is open; an edit seen before then comes back.
      `  import.meta.hot.send(${JSON.stringify(MANIFEST_HELLO)}, { revision: ${revision} });`,
      '}',
      'export default { manifest, errors, context, dev, onManifestUpdate };',
    ].join('\n');
  }

  function watchManifest(server: ViteDevServer): void {
    server.watcher.add(manifestFile);
    // An editor that truncates and then writes can be read in between, and the watcher may fold
    // the write's event into the truncation's (a busy machine): so each read is checked again a
    // moment later, and read again if the file changed since. A read that is not JSON at all (an
    // empty or half-written file) is pushed only once the file has stood still that long, so a
    // save never flashes a syntax error it does not have.
    const SETTLE_MS = 150;
    let readAs = '';
    let recheck: NodeJS.Timeout | null = null;
    const fileState = () => {
      try {
        const st = statSync(manifestFile);
        return `${st.mtimeMs}:${st.size}`;
      } catch {
        return 'missing';
      }
    };
    const notJson = (read: ManifestState) =>
      !read.manifest && read.errors.some((e) => e.path === '$' && e.message.startsWith('invalid JSON'));
    const changed = (file: string, settled = false) => {
      if (resolve(file) !== manifestFile) return;
      readAs = fileState();
      const next = readManifestFile(manifestFile);
      const waitForRest = !settled && notJson(next);
      if (recheck) clearTimeout(recheck);
      recheck = setTimeout(() => {
        recheck = null;
        if (fileState() !== readAs) changed(manifestFile);
        else if (waitForRest) changed(manifestFile, true);
      }, SETTLE_MS);
      recheck.unref();
      if (waitForRest) return;
      // An invalid edit keeps the last good manifest in the module (a page opened now starts from
      // it, with the errors shown); open pages keep their state and show the errors.
      state = next.manifest ? next : { manifest: state.manifest, errors: next.errors };
      lastRead = next;
      revision += 1;
      const mod = server.moduleGraph.getModuleById(RESOLVED_ID);
      if (mod) server.moduleGraph.invalidateModule(mod);
      server.ws.send({ type: 'custom', event: MANIFEST_EVENT, data: next });
    };
    // A page served revision r whose socket opened after an edit was pushed gets the latest read.
    server.ws.on(MANIFEST_HELLO, (data: { revision?: unknown }, client) => {
      // `since` names the revision asked about (a page ignores it; it tells answers apart).
      if (data?.revision !== revision) client.send(MANIFEST_EVENT, { ...lastRead, since: data?.revision ?? null });
    });
    const onEvent = (file: string) => changed(file);
    server.watcher.on('change', onEvent);
    server.watcher.on('add', onEvent);
    server.watcher.on('unlink', onEvent);
  }

  return {
    name: 'gatehouse-plugin',
    config(config, { command }) {
      serving = command === 'serve';
      const root = resolve(config.root ?? process.cwd());
      return {
        resolve: {
          alias: [{ find: /^@gatehouse\/plugin-toolkit$/, replacement: toolkitEntry() }],
          // One Vue and one Pinia for the plugin and the toolkit when the plugin installed its own (a
          // second copy splits the store); without them, the toolkit's own copies (resolveId below).
          dedupe: SHARED.filter((name) => existsSync(join(root, 'node_modules', name))),
        },
        server: {
          proxy: applianceProxy(
            target,
            token,
            typeof config.server?.host === 'string' ? config.server.host : undefined,
          ),
          fs: servedFiles(root),
        },
      };
    },
    configResolved(config) {
      manifestFile = resolve(config.root, 'app-manifest.json');
      state = readManifestFile(manifestFile);
      lastRead = state;
    },
    configureServer(server) {
      watchManifest(server);
    },
    buildStart() {
      if (!serving && !state.manifest) {
        this.error(
          `app-manifest.json is not valid:\n${state.errors.map((e) => `  ${e.path}: ${e.message}`).join('\n')}`,
        );
      }
    },
    async resolveId(id, _importer, resolveOptions) {
      if (id === VIRTUAL_ID) return RESOLVED_ID;
      // Reached only when Vite's resolver found nothing: a plugin folder without its own node_modules
      // (examples/ in this checkout, a test's temporary folder) uses the toolkit's dependencies.
      if (SHARED.includes(id))
        return this.resolve(id, join(checkoutRoot(), 'package.json'), { ...resolveOptions, skipSelf: true });
      return undefined;
    },
    load(id) {
      return id === RESOLVED_ID ? moduleCode() : undefined;
    },
    handleHotUpdate(ctx) {
      // The manifest is not a module; its edits go out as MANIFEST_EVENT only, never as a reload.
      if (resolve(ctx.file) === manifestFile) return [];
    },
  };
}
