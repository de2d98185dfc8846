import { createPinia, setActivePinia } from 'pinia';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  applyEdit,
  editText,
  parseEdit,
  type StoreValue,
  storeJson,
} from '../../src/plugins/toolkit/inspector-values.js';
import { type PluginStore, type StoreSection, usePluginStore } from '../../src/plugins/toolkit/index.js';

// What the store inspector accepts (docs/plugins.md; contract: "What the service does" 5, "Manifest top level").

describe('inspector values', () => {
  const samples: [StoreSection, StoreValue][] = [
    ['pluginVars', 'Hall A'],
    ['pluginVars', '80'],
    ['pluginVars', 'true'],
    ['pluginVars', ''],
    ['pluginVars', 'line one\nline two'],
    ['pluginVars', 80],
    ['pluginVars', -0.5],
    ['pluginVars', false],
    ['stringsList', ''],
    ['stringsList', '"quoted"'],
    ['stringsList', '{}'],
    ['stringsList', 'line one\nline two'],
    ['assetList', '/img/logo.png'],
    ['triggerState', null],
    ['triggerState', 'null'],
    ['triggerState', 0],
    ['triggerState', ' padded '],
  ];
  it.each(samples)('gives back a %s value %j saved unchanged from its editor', (section, value) => {
    expect(parseEdit(section, editText(section, value))).toEqual({ ok: true, value });
  });

  it('reads text that is not JSON as text in typed sections, unless it was begun as JSON', () => {
    expect(parseEdit('triggerState', 'open doors')).toEqual({ ok: true, value: 'open doors' });
    expect(parseEdit('pluginVars', 'tru')).toEqual({ ok: true, value: 'tru' });
    expect(parseEdit('pluginVars', '[1, 2')).toMatchObject({
      ok: false,
      message: expect.stringContaining('invalid JSON'),
    });
    expect(parseEdit('pluginVars', '{"a"')).toMatchObject({
      ok: false,
      message: expect.stringContaining('invalid JSON'),
    });
  });

  describe('applyEdit, the one way an edit reaches the store', () => {
    let store: PluginStore;
    beforeEach(() => {
      setActivePinia(createPinia());
      store = usePluginStore();
      store.applyManifest({
        settings: { venue: 'Hall A' },
        strings: { default: { title: 'Welcome' } },
        assets: {},
        triggerState: { mode: null },
        dependencies: [],
        permissions: [],
      });
    });

    it('refuses a value its section cannot hold, whoever passes it', () => {
      expect(applyEdit(store, 'stringsList', 'title', 42)).toBe('stringsList values are text, not number.');
      expect(applyEdit(store, 'pluginVars', 'venue', { a: 1 } as unknown as StoreValue)).toContain('not an object');
      expect(applyEdit(store, 'pluginVars', 'venue', Number.NaN)).toContain('finite');
      expect(store.getString('title')).toBe('Welcome');
      expect(store.getSetting('venue')).toBe('Hall A');
    });

    it('refuses a key the section does not have, rather than adding one', () => {
      expect(applyEdit(store, 'triggerState', 'gone', true)).toContain('has no key "gone"');
      expect(Object.keys(store.triggerState)).toEqual(['mode']);
    });

    it('copies the four sections, and nothing else, as JSON', () => {
      expect(JSON.parse(storeJson(store))).toEqual({
        pluginVars: { venue: 'Hall A' },
        stringsList: { title: 'Welcome' },
        assetList: {},
        triggerState: { mode: null },
      });
    });
  });
});
