// The plugin toolkit's public surface (docs/plugins.md).
export type { PluginDependency, PluginManifest, SettingValue, StateValue, StoreSection } from './types.js';
export { type PluginStore, usePluginStore } from './store.js';
export { type SvcToolkitOptions, svcToolkit } from './directives.js';
export {
  type BindElementOptions,
  type BindOptions,
  bindElement,
  getSvcStringKey,
  hasSvcString,
  processSvcSrcs,
  processSvcStrings,
  type SvcBinding,
  type SvcBindingError,
  type SvcDirective,
  type SvcModifier,
} from './dom.js';
export {
  type CallApiOptions,
  createCallApi,
  PluginApiError,
  type PluginApiErrorCode,
  type PluginContext,
  xsrfCookie,
} from './call-api.js';
export {
  type ManifestError,
  type ManifestResult,
  manifestJsonSchema,
  manifestSchema,
  parseManifest,
  parseManifestText,
} from './manifest.js';
export {
  createPluginApp,
  type ManifestUpdate,
  type PluginAppOptions,
  type PluginSource,
  tokenFromLocation,
} from './plugin-app.js';
export { showManifestErrors } from './manifest-errors.js';
export { devInspector, type InspectorOptions, installInspector, isInspectorShortcut } from './inspector.js';
export type { ConnectEventsOptions, EventHandler, PluginRecord } from './store.js';
export {
  type BroadcastingConfig,
  type ChannelStatus,
  type EventConnection,
  EventSocket,
  type EventSocketOptions,
  fetchBroadcastingConfig,
  type PluginEvent,
  type SocketProblem,
  type SocketState,
  socketOptions,
} from './events.js';
export { bareEventName, EVENT_TOPICS, planSubscriptions, projectChannel } from './event-channels.js';
