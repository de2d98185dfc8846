// The plugin manifest (app-manifest.json) as the toolkit reads it (docs/plugins.md; contract:
// "Manifest top level", "Dependency object"); manifest.ts validates a file into this shape.

/** A setting's value: administrator-configurable per deployment. */
export type SettingValue = string | number | boolean;
/** A trigger state's value: may change while the plugin runs. */
export type StateValue = boolean | number | string | null;

export interface PluginDependency {
  /** Unique name, used by callApi. */
  identifier: string;
  /** Resource name in the API. */
  model: string;
  permissionKey: string;
  /** Permissions required to use the dependency, e.g. view_access_points. */
  permissions: string[];
  /** Operation id to `<method>:<path>`, method lower case, path from the API version root:
   * `get:/v1/projects/{teamSlug}/{projectSlug}/access-points/{access_point}`. */
  operations: Record<string, string>;
  /** Socket event name to socket event name. */
  events: Record<string, string>;
}

export interface PluginManifest {
  $schema?: string;
  settings: Record<string, SettingValue>;
  strings: { default: Record<string, string> };
  assets: Record<string, string>;
  triggerState: Record<string, StateValue>;
  dependencies: PluginDependency[];
  permissions: string[];
}

/** The four store sections the manifest fills (spec: "What the service does", 2). */
export type StoreSection = 'pluginVars' | 'stringsList' | 'assetList' | 'triggerState';
