// @vitest-environment happy-dom
import { createPinia, setActivePinia } from 'pinia';
import { beforeEach, describe, expect, it } from 'vitest';
import { computed, nextTick, watchEffect } from 'vue';
import { type PluginManifest, type PluginStore, usePluginStore } from '../../src/plugins/toolkit/index.js';

// docs/plugins.md; contract: "What the service does" 2, "Store operations", Directives rule 3.

function manifest(over: Partial<PluginManifest> = {}): PluginManifest {
  return {
    settings: { venue: 'Hall A', capacity: 0, open: false },
    strings: { default: { title: 'Welcome', empty: '' } },
    assets: { logo: '/img/logo.png', blank: '' },
    triggerState: { count: 0, ready: false, mode: null, label: '' },
    dependencies: [
      {
        identifier: 'access_points',
        model: 'AccessPoint',
        permissionKey: 'access_points',
        permissions: ['view_access_points'],
        operations: { 'access-points.index': 'get:/v1/projects/{teamSlug}/{projectSlug}/access-points' },
        events: { AccessPointUpdated: 'AccessPointUpdated' },
      },
    ],
    permissions: ['camera'],
    ...over,
  };
}

type Getter = 'getString' | 'getSetting' | 'getAsset' | 'getState';

describe('plugin store', () => {
  let store: PluginStore;
  beforeEach(() => {
    setActivePinia(createPinia());
    store = usePluginStore();
  });

  it('starts empty and not loaded, so every getter returns its fallback', () => {
    expect(store.loaded).toBe(false);
    expect(store.getString('title', 'fb')).toBe('fb');
    expect(store.getSetting('venue', 'fb')).toBe('fb');
    expect(store.getAsset('logo', 'fb')).toBe('fb');
    expect(store.getState('count', 'fb')).toBe('fb');
    expect(store.hasPermission('camera')).toBe(false);
  });

  it('fills the four sections from settings, strings.default, assets and triggerState', () => {
    store.applyManifest(manifest());
    expect(store.loaded).toBe(true);
    expect(store.pluginVars).toEqual({ venue: 'Hall A', capacity: 0, open: false });
    expect(store.stringsList).toEqual({ title: 'Welcome', empty: '' });
    expect(store.assetList).toEqual({ logo: '/img/logo.png', blank: '' });
    expect(store.triggerState).toEqual({ count: 0, ready: false, mode: null, label: '' });
    expect(store.permissions).toEqual(['camera']);
    expect(store.dependencies[0]?.identifier).toBe('access_points');
  });

  it('ignores strings other than strings.default', () => {
    const m = manifest();
    (m.strings as Record<string, Record<string, string>>).de = { title: 'Willkommen', only: 'x' };
    store.applyManifest(m);
    expect(store.getString('title')).toBe('Welcome');
    expect(store.getString('only', 'fb')).toBe('fb');
  });

  it('copies the manifest rather than keeping references to it', () => {
    const m = manifest();
    store.applyManifest(m);
    m.strings.default.title = 'changed';
    m.permissions.push('bluetooth');
    m.dependencies[0]!.permissions.push('manage_access_points');
    expect(store.getString('title')).toBe('Welcome');
    expect(store.hasPermission('bluetooth')).toBe(false);
    expect(store.dependencies[0]?.permissions).toEqual(['view_access_points']);
  });

  describe('getters return the fallback only when the key is undefined (rule 3)', () => {
    const falsy: [Getter, string, unknown][] = [
      ['getString', 'empty', ''],
      ['getSetting', 'capacity', 0],
      ['getSetting', 'open', false],
      ['getAsset', 'blank', ''],
      ['getState', 'count', 0],
      ['getState', 'ready', false],
      ['getState', 'mode', null],
      ['getState', 'label', ''],
    ];
    it.each(falsy)('%s(%s) returns %o, not the fallback', (getter, key, value) => {
      store.applyManifest(manifest());
      expect(store[getter](key, 'FALLBACK')).toBe(value);
    });

    it.each(['getString', 'getSetting', 'getAsset', 'getState'] as Getter[])(
      '%s returns the fallback, or undefined without one, for a missing key',
      (getter) => {
        store.applyManifest(manifest());
        expect(store[getter]('missing', 'FALLBACK')).toBe('FALLBACK');
        expect(store[getter]('missing')).toBeUndefined();
      },
    );

    it.each(['getString', 'getSetting', 'getAsset', 'getState'] as Getter[])(
      '%s does not find keys on Object.prototype',
      (getter) => {
        store.applyManifest(manifest());
        expect(store[getter]('constructor', 'FALLBACK')).toBe('FALLBACK');
        expect(store[getter]('toString', 'FALLBACK')).toBe('FALLBACK');
      },
    );

    it('treats keys as case-sensitive', () => {
      store.applyManifest(manifest());
      expect(store.getString('Title', 'fb')).toBe('fb');
    });

    it('returns falsy values set by update* as they are', () => {
      store.updateString('s', '');
      store.updateSetting('n', 0);
      store.updateSetting('b', false);
      store.updateAsset('a', '');
      store.updateState('x', null);
      expect([
        store.getString('s', 'fb'),
        store.getSetting('n', 'fb'),
        store.getSetting('b', 'fb'),
        store.getAsset('a', 'fb'),
        store.getState('x', 'fb'),
      ]).toEqual(['', 0, false, '', null]);
    });
  });

  it('update* set a value in their own section, adding keys', () => {
    store.applyManifest(manifest());
    store.updateString('title', 'Hello');
    store.updateSetting('capacity', 120);
    store.updateAsset('banner', '/img/b.png');
    store.updateState('mode', 'emergency');
    expect(store.getString('title')).toBe('Hello');
    expect(store.getSetting('capacity')).toBe(120);
    expect(store.getAsset('banner')).toBe('/img/b.png');
    expect(store.getState('mode')).toBe('emergency');
    expect(store.getString('banner', 'fb')).toBe('fb');
  });

  it('answers hasPermission from the manifest permissions', () => {
    store.applyManifest(manifest({ permissions: ['camera', 'notifications'] }));
    expect(store.hasPermission('camera')).toBe(true);
    expect(store.hasPermission('notifications')).toBe(true);
    expect(store.hasPermission('bluetooth')).toBe(false);
  });

  it('replaces section content in place on a second applyManifest, so readers stay subscribed', async () => {
    store.applyManifest(manifest());
    const strings = store.stringsList;
    const title = computed(() => store.getString('title', 'fb'));
    const seen: unknown[] = [];
    watchEffect(() => seen.push(store.getState('count', 'fb')));
    expect(title.value).toBe('Welcome');

    store.applyManifest(manifest({ strings: { default: { empty: '' } }, triggerState: { count: 5 }, permissions: [] }));
    await nextTick();
    expect(store.stringsList).toBe(strings);
    expect(store.stringsList).toEqual({ empty: '' });
    expect(title.value).toBe('fb');
    expect(store.triggerState).toEqual({ count: 5 });
    expect(seen).toEqual([0, 5]);
    expect(store.hasPermission('camera')).toBe(false);
  });

  it('notifies readers of a key at once when update* sets it', async () => {
    store.applyManifest(manifest());
    const seen: unknown[] = [];
    watchEffect(() => seen.push(store.getString('later', 'fb')));
    store.updateString('later', 'now');
    await nextTick();
    expect(seen).toEqual(['fb', 'now']);
  });

  it("keeps a project's records while its context changes otherwise, and starts another project's empty", async () => {
    store.applyManifest(manifest({ permissions: ['view_access_points'] }));
    const fetch = async () => Response.json({ data: [{ id: 1, name: 'North Door' }] });
    store.setContext({ baseUrl: 'http://box', teamSlug: 'default', projectSlug: 'summer', token: 't', fetch });
    await store.callApi('access-points.index', 'access_points');
    expect(store.getRecords('access_points')).toEqual([{ id: 1, name: 'North Door' }]);
    store.setContext({
      baseUrl: 'http://box',
      teamSlug: 'default',
      projectSlug: 'summer',
      token: 'another token',
      fetch,
    });
    expect(store.getRecords('access_points')).toHaveLength(1);
    store.setContext({
      baseUrl: 'http://box',
      teamSlug: 'default',
      projectSlug: 'winter',
      token: 'another token',
      fetch,
    });
    expect(store.getRecords('access_points')).toEqual([]);
  });
});
