// The plugin's client-side store (../shared/spec/plugin-toolkit.md: "What the service does" 2, "Store operations").
// Bound elements (dom.ts, directives.ts) read it through the get* actions, so the fallback rule lives here only.
import { defineStore } from 'pinia';
import { ref, shallowRef, toRaw } from 'vue';
import { createCallApi, PluginApiError, type PluginContext } from './call-api.js';
import type { PluginDependency, PluginManifest, SettingValue, StateValue } from './types.js';

/**
 * Makes `target` hold exactly `source`'s entries, mutating it in place: effects that read `target` stay
 * subscribed, keys missing from `source` disappear (their elements fall back), the rest update (hot reload,
 * spec: "What the service does" 4).
 */
function replaceContent<V>(target: Record<string, V>, source: Readonly<Record<string, V>>): void {
  for (const key of Object.keys(target)) {
    if (!Object.hasOwn(source, key)) delete target[key];
  }
  for (const [key, value] of Object.entries(source)) target[key] = value;
}

/**
 * The section's value, or `fallback` only when the key is undefined there: '', 0, false and null are values
 * (spec rule 3). Own keys only, so `constructor` or `toString` are not found on Object.prototype.
 */
function lookup<V, F>(section: Record<string, V>, key: string, fallback: F): V | F {
  const value = section[key]; // read through the proxy: subscribes the caller's effect to this key
  return value !== undefined && Object.hasOwn(toRaw(section), key) ? value : fallback;
}

export const usePluginStore = defineStore('gatehouse-plugin', () => {
  // Refs of records rather than reactive(): Pinia's $state / $patch and the developer tool's inspector
  // (spec: "What the service does" 5) reach the same objects the actions use.
  const pluginVars = ref<Record<string, SettingValue>>({});
  const stringsList = ref<Record<string, string>>({});
  const assetList = ref<Record<string, string>>({});
  const triggerState = ref<Record<string, StateValue>>({});
  const permissions = ref<string[]>([]);
  const dependencies = ref<PluginDependency[]>([]);
  /** False until a manifest is applied; bound elements show their fallback until then (spec rule 4). */
  const loaded = ref(false);

  /** Fills the store from a (validated) manifest; called again on hot reload, replacing the previous content. */
  function applyManifest(manifest: PluginManifest): void {
    replaceContent(pluginVars.value, manifest.settings);
    replaceContent(stringsList.value, manifest.strings.default);
    replaceContent(assetList.value, manifest.assets);
    replaceContent(triggerState.value, manifest.triggerState);
    permissions.value = [...manifest.permissions];
    dependencies.value = structuredClone(toRaw(manifest.dependencies));
    loaded.value = true;
  }

  function getString<F = undefined>(key: string, fallback?: F): string | F {
    return lookup(stringsList.value, key, fallback as F);
  }
  function getSetting<F = undefined>(key: string, fallback?: F): SettingValue | F {
    return lookup(pluginVars.value, key, fallback as F);
  }
  function getAsset<F = undefined>(key: string, fallback?: F): string | F {
    return lookup(assetList.value, key, fallback as F);
  }
  function getState<F = undefined>(key: string, fallback?: F): StateValue | F {
    return lookup(triggerState.value, key, fallback as F);
  }

  function updateString(key: string, value: string): void {
    stringsList.value[key] = value;
  }
  function updateSetting(key: string, value: SettingValue): void {
    pluginVars.value[key] = value;
  }
  function updateAsset(key: string, value: string): void {
    assetList.value[key] = value;
  }
  function updateState(key: string, value: StateValue): void {
    triggerState.value[key] = value;
  }

  function hasPermission(name: string): boolean {
    return permissions.value.includes(name);
  }

  // callApi (spec: "Endpoints"; call-api.ts): the manifest's dependencies and permissions as they
  // are now (a reloaded manifest applies at once), the plugin's context set by its host.
  const context = shallowRef<PluginContext | null>(null);
  function setContext(value: PluginContext): void {
    context.value = value;
  }
  const call = createCallApi(
    () => {
      if (!context.value) throw new PluginApiError('network', 'callApi before the plugin has its context (setContext: the appliance, project and token).');
      return context.value;
    },
    () => ({ dependencies: dependencies.value, hasPermission }),
  );
  function callApi<T = unknown>(operationId: string, identifier: string, additionalData: Record<string, unknown> = {}): Promise<T> {
    return call<T>(operationId, identifier, additionalData);
  }

  return {
    pluginVars,
    stringsList,
    assetList,
    triggerState,
    permissions,
    dependencies,
    loaded,
    applyManifest,
    getString,
    getSetting,
    getAsset,
    getState,
    updateString,
    updateSetting,
    updateAsset,
    updateState,
    hasPermission,
    context,
    setContext,
    callApi,
  };
});

export type PluginStore = ReturnType<typeof usePluginStore>;
