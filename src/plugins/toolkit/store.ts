// The plugin's client-side store (docs/plugins.md; contract: "What the service does" 2, "Store operations").
// Bound elements (dom.ts, directives.ts) read it through the get* actions, so the fallback rule lives here only.
// It also keeps each dependency's resources by id (`records`), filled by callApi's GET answers and kept
// current by the socket's <Model>Created/Updated/Deleted events (events.ts; docs/plugins.md "Socket events").
import { defineStore } from 'pinia';
import { markRaw, type Ref, ref, shallowRef, toRaw } from 'vue';
import { type CallApiOptions, createCallApi, PluginApiError, type PluginContext } from './call-api.js';
import { type EventConnection, EventSocket, idleConnection, type PageLocation, type PluginEvent } from './events.js';
import type { PluginDependency, PluginManifest, SettingValue, StateValue } from './types.js';

/** A resource kept in `records`: anything with an `id`. */
export type PluginRecord = Record<string, unknown> & { id: number | string };
/** A plugin's handler of a socket event: the event's data, and where it came from. */
export type EventHandler<T = unknown> = (data: T, event: PluginEvent<T>) => void;
export interface ConnectEventsOptions {
  /** The page's location, for baseUrl '' (default: globalThis.location). */
  page?: PageLocation | null;
}

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
export function lookup<V, F>(section: Record<string, V>, key: string, fallback: F): V | F {
  const value = section[key]; // read through the proxy: subscribes the caller's effect to this key
  if (value === undefined) return fallback;
  // What Object.prototype lends is a function or an object: a string, number or boolean is the section's own.
  const type = typeof value;
  if (type === 'string' || type === 'number' || type === 'boolean') return value;
  return Object.hasOwn(toRaw(section), key) ? value : fallback;
}

/** The refs behind the store's sections, for bound elements (dom.ts): read without the store's proxy. */
export interface StoreSections {
  readonly pluginVars: Ref<Record<string, SettingValue>>;
  readonly stringsList: Ref<Record<string, string>>;
  readonly assetList: Ref<Record<string, string>>;
  readonly triggerState: Ref<Record<string, StateValue>>;
  readonly loaded: Ref<boolean>;
}

const isRecord = (value: unknown): value is PluginRecord =>
  typeof value === 'object' &&
  value !== null &&
  !Array.isArray(value) &&
  (typeof (value as { id?: unknown }).id === 'number' || typeof (value as { id?: unknown }).id === 'string');

/**
 * Whether `incoming` is an older copy than `current`: a GET answered after an event that changed the
 * resource must not undo it. By `version` (the appliance's resources carry one, raised on every change),
 * else by `updated_at`; neither: not older.
 */
function older(incoming: PluginRecord, current: PluginRecord): boolean {
  if (typeof incoming.version === 'number' && typeof current.version === 'number')
    return incoming.version < current.version;
  if (typeof incoming.updated_at === 'string' && typeof current.updated_at === 'string')
    return Date.parse(incoming.updated_at) < Date.parse(current.updated_at);
  return false;
}

/** `<Model>Created` / `<Model>Updated` with a resource upserts it, `<Model>Deleted` with `{id}` removes it
 * (docs/realtime.md: "dashboards upsert by id"). */
const RECORD_EVENT = /(Created|Updated|Deleted)$/;

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
    for (const identifier of Object.keys(records.value)) {
      if (!dependencies.value.some((d) => d.identifier === identifier)) delete records.value[identifier];
    }
    socket?.setDependencies(toRaw(dependencies.value)); // a reloaded manifest's events apply at once
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

  // callApi (spec: "Endpoints"; call-api.ts): the manifest's dependencies as they are now (a reloaded
  // manifest applies at once), the plugin's context set by its host. The manifest's `permissions`
  // are device capabilities (hasPermission); what the token may do is the appliance's to answer.
  const context = shallowRef<PluginContext | null>(null);
  // Each dependency's resources by id, as the appliance last showed or announced them.
  const records = ref<Record<string, Record<string, PluginRecord>>>({});
  /** Sets where the appliance is and with which token; an open
   * socket reconnects with it (a new token, another project). */
  function setContext(value: PluginContext): void {
    // The records are the resources of one project on one appliance: another one starts empty.
    const before = context.value;
    if (
      before &&
      (before.baseUrl !== value.baseUrl ||
        before.teamSlug !== value.teamSlug ||
        before.projectSlug !== value.projectSlug)
    )
      records.value = {};
    context.value = value;
    if (socket) void connectEvents(socketOptions);
  }
  function upsertRecord(identifier: string, record: PluginRecord): void {
    const bucket = (records.value[identifier] ??= {});
    const current = bucket[String(record.id)];
    if (current && older(record, toRaw(current))) return;
    bucket[String(record.id)] = { ...current, ...structuredClone(toRaw(record)) };
  }
  function removeRecord(identifier: string, id: number | string): void {
    const bucket = records.value[identifier];
    if (bucket) delete bucket[String(id)];
  }
  /** The dependency's resources the store holds (ids ascending for numeric ids). */
  function getRecords<T extends PluginRecord = PluginRecord>(identifier: string): T[] {
    return Object.values(records.value[identifier] ?? {}) as T[];
  }
  function getRecord<T extends PluginRecord = PluginRecord>(identifier: string, id: number | string): T | undefined {
    return records.value[identifier]?.[String(id)] as T | undefined;
  }

  const call = createCallApi(
    () => {
      if (!context.value)
        throw new PluginApiError(
          'network',
          'callApi before the plugin has its context (setContext: the appliance, project and token).',
        );
      return context.value;
    },
    () => ({ dependencies: dependencies.value }),
  );
  async function callApi<T = unknown>(
    operationId: string,
    identifier: string,
    additionalData: Record<string, unknown> = {},
    options: CallApiOptions = {},
  ): Promise<T> {
    const answer = await call<T>(operationId, identifier, additionalData, options);
    // A GET answer (a list, a page of one, or one resource) fills the records; changes arrive as events.
    if (dependencies.value.find((d) => d.identifier === identifier)?.operations[operationId]?.startsWith('get:')) {
      const data: unknown =
        options.envelope && typeof answer === 'object' && answer !== null
          ? (answer as { data?: unknown }).data
          : answer;
      for (const item of Array.isArray(data) ? data : [data]) if (isRecord(item)) upsertRecord(identifier, item);
    }
    return answer;
  }

  // Socket events (events.ts): handed to onEvent's handlers and reflected in records.
  const connection = ref<EventConnection>(idleConnection());
  /** The latest event, and the latest of each name the plugin receives. */
  const lastEvent = shallowRef<PluginEvent | null>(null);
  const lastEvents = shallowRef<Record<string, PluginEvent>>({});
  const handlers = new Map<string, Set<EventHandler>>();
  let socket: EventSocket | null = null;
  let socketOptions: ConnectEventsOptions = {};

  /** Calls `handler` with each event received under `name` (the
   * value in a dependency's `events`); returns the unsubscribe. */
  function onEvent<T = unknown>(name: string, handler: EventHandler<T>): () => void {
    if (!handlers.has(name)) handlers.set(name, new Set());
    handlers.get(name)!.add(handler as EventHandler);
    return () => {
      handlers.get(name)?.delete(handler as EventHandler);
    };
  }

  function deliver(event: PluginEvent): void {
    const change = RECORD_EVENT.exec(event.event)?.[1];
    if (change && isRecord(event.data)) {
      for (const identifier of event.dependencies) {
        if (change === 'Deleted') removeRecord(identifier, event.data.id);
        else upsertRecord(identifier, event.data);
      }
    }
    lastEvent.value = event;
    lastEvents.value = { ...lastEvents.value, [event.name]: event };
    // Each handler on its own: one that throws does not keep the event from the others.
    for (const handler of [...(handlers.get(event.name) ?? [])]) {
      try {
        handler(event.data, event);
      } catch (err) {
        console.error(`[gatehouse] a handler of the socket event "${event.name}" failed:`, err);
      }
    }
  }

  /**
   * Connects to the appliance's socket with the context (setContext) and subscribes the dependencies'
   * events; a connection already open is closed first. Resolves once the broadcasting config is read and
   * pusher-js is connecting; never rejects: a problem is in `connection` (state and error).
   */
  async function connectEvents(options: ConnectEventsOptions = {}): Promise<void> {
    disconnectEvents();
    socketOptions = options;
    if (!context.value) {
      const message = 'connectEvents before the plugin has its context (setContext: the appliance, project and token).';
      connection.value = {
        ...idleConnection(),
        state: 'failed',
        error: { kind: 'config', message, status: null, channel: null },
      };
      return;
    }
    const current: EventSocket = new EventSocket({
      context: context.value,
      dependencies: toRaw(dependencies.value),
      deliver,
      status: (status) => {
        if (socket === current) connection.value = status;
      },
      ...options,
    });
    socket = current;
    await current.start();
  }

  /** Closes the socket: no event is handed over after it. */
  function disconnectEvents(): void {
    socket?.stop();
    socket = null;
  }

  return {
    /**
     * Internal: the same refs as the sections and `loaded`, for bound elements. Thousands of bindings read
     * them at a first render; through the store's proxy each read costs a trap and a second subscription.
     */
    _sections: markRaw<StoreSections>({ pluginVars, stringsList, assetList, triggerState, loaded }),
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
    records,
    getRecords,
    getRecord,
    connection,
    lastEvent,
    lastEvents,
    onEvent,
    connectEvents,
    disconnectEvents,
  };
});

export type PluginStore = ReturnType<typeof usePluginStore>;
