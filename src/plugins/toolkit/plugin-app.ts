// A plugin's app as the toolkit starts it (docs/plugins.md "Starting a
// plugin"): Vue with Pinia and the svc directives, the store filled from the manifest, the context
// set, and in dev the manifest's hot reload and the inspector. A plugin's main.ts is three lines:
//
//   import { createPluginApp } from '@gatehouse/plugin-toolkit';
//   import source from 'virtual:gatehouse/plugin';
//   createPluginApp(App, source).app.mount('#app');
import { createPinia } from 'pinia';
import { type App, type Component, createApp } from 'vue';
import type { PluginContext } from './call-api.js';
import { svcToolkit } from './directives.js';
import { devInspector } from './inspector.js';
import type { ManifestError } from './manifest.js';
import { showManifestErrors } from './manifest-errors.js';
import { type PluginStore, usePluginStore } from './store.js';
import type { PluginManifest } from './types.js';

/** What one read of app-manifest.json gave (the Vite plugin's `virtual:gatehouse/plugin` and its HMR event). */
export interface ManifestUpdate {
  manifest: PluginManifest | null;
  errors: ManifestError[];
}

/** Where the plugin's manifest and context come from: `virtual:gatehouse/plugin`, or a host's own. */
export interface PluginSource extends ManifestUpdate {
  context: PluginContext;
  /** The dev server: the inspector is installed. */
  dev: boolean;
  /** Each later read of the manifest (dev: every edit of the file). */
  onManifestUpdate?(listener: (update: ManifestUpdate) => void): void;
}

export interface PluginAppOptions {
  /** The store inspector (Ctrl+Shift+D) on the dev server; default true. Never installed in a build. */
  inspector?: boolean;
  /** Connect the socket when a dependency lists events (store.connectEvents); default true. */
  events?: boolean;
  /** Extra hooks run with the app and its store before it mounts. */
  setup?: Array<(app: App, store: PluginStore, source: PluginSource) => void>;
}

/**
 * The token when the context has none: from the page address's fragment (`#token=…`, never sent to
 * a server), which is then removed from the address bar, so a kiosk can be provisioned by its URL.
 */
export function tokenFromLocation(
  loc: Location | undefined = globalThis.location,
  hist: History | undefined = globalThis.history,
): string | null {
  if (!loc?.hash) return null;
  const params = new URLSearchParams(loc.hash.slice(1));
  const token = params.get('token');
  if (!token) return null;
  params.delete('token');
  const rest = params.toString();
  hist?.replaceState(hist.state, '', `${loc.pathname}${loc.search}${rest ? `#${rest}` : ''}`);
  return token;
}

export function createPluginApp(
  root: Component,
  source: PluginSource,
  options: PluginAppOptions = {},
): { app: App; store: PluginStore } {
  const app = createApp(root).use(createPinia()).use(svcToolkit);
  const store = app.runWithContext(() => usePluginStore());
  store.setContext({ ...source.context, token: source.context.token ?? tokenFromLocation() });

  // The socket opens once a dependency lists events (at start, or when a reloaded manifest adds
  // some); from then on the store keeps its subscriptions in step with the manifest.
  let socketOpened = false;
  const openSocket = () => {
    if (socketOpened || options.events === false || !store.dependencies.some((d) => Object.keys(d.events).length > 0))
      return;
    socketOpened = true;
    void store.connectEvents();
    app.onUnmount(() => store.disconnectEvents());
  };
  const apply = (update: ManifestUpdate) => {
    // An invalid manifest never reaches the store: the last good one stays, its errors are shown.
    if (update.manifest) store.applyManifest(update.manifest);
    if (typeof document !== 'undefined') showManifestErrors(update.errors);
    openSocket();
  };
  apply(source);
  source.onManifestUpdate?.(apply);
  const hooks = [...(options.inspector === false ? [] : [devInspector()]), ...(options.setup ?? [])];
  for (const hook of hooks) hook(app, store, source);
  return { app, store };
}
