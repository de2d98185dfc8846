// @vitest-environment happy-dom
import { createPinia, setActivePinia } from 'pinia';
import { afterEach, beforeEach, describe, expect, it, type MockInstance, vi } from 'vitest';
import { nextTick } from 'vue';
import {
  bindElement,
  getSvcStringKey,
  hasSvcString,
  type PluginManifest,
  type PluginStore,
  processSvcSrcs,
  processSvcStrings,
  usePluginStore,
} from '../../src/plugins/toolkit/index.js';

// docs/plugins.md; contract: "Directives" rule 6: processing helpers for code without Vue (no app is created here).

function manifest(over: Partial<PluginManifest> = {}): PluginManifest {
  return {
    settings: { venue: 'Hall A', capacity: 0 },
    strings: { default: { title: 'Welcome', empty: '' } },
    assets: { logo: '/img/logo.png' },
    triggerState: { mode: null, open: false, pic: '/img/state.png' },
    dependencies: [],
    permissions: [],
    ...over,
  };
}

function container(html: string): HTMLElement {
  const div = document.createElement('div');
  div.innerHTML = html;
  document.body.append(div);
  return div;
}

let store: PluginStore;
let errorSpy: MockInstance;
beforeEach(() => {
  setActivePinia(createPinia());
  store = usePluginStore();
  errorSpy = vi.spyOn(console, 'error').mockImplementation(() => {});
});
afterEach(() => {
  document.body.innerHTML = '';
  vi.restoreAllMocks();
});

describe('processSvcStrings', () => {
  it('binds every svc-string element in the container with its modifier, reactively', async () => {
    const box = container(`
      <h1 svc-string="title">fb</h1>
      <p><span svc-string="venue" svc-settings>fb</span><span svc-string="logo" svc-assets>fb</span></p>
      <i svc-string="open" svc-state>fb</i>`);
    processSvcStrings(box, store);
    const texts = () => [...box.querySelectorAll('[svc-string]')].map((e) => e.textContent);
    expect(texts()).toEqual(['fb', 'fb', 'fb', 'fb']);

    store.applyManifest(manifest());
    await nextTick();
    expect(texts()).toEqual(['Welcome', 'Hall A', '/img/logo.png', 'false']);

    store.updateString('title', 'Hi');
    store.updateSetting('venue', 7);
    await nextTick();
    expect(texts()).toEqual(['Hi', '7', '/img/logo.png', 'false']);
  });

  it('shows empty strings, 0 and null as such, and falls back for missing keys', async () => {
    const box = container(
      '<b svc-string="empty">fb</b><b svc-string="capacity" svc-settings>fb</b><b svc-string="mode" svc-state>fb</b><b svc-string="nope">fb</b>',
    );
    processSvcStrings(box, store);
    store.applyManifest(manifest());
    await nextTick();
    expect([...box.children].map((e) => e.textContent)).toEqual(['', '0', '', 'fb']);
  });

  it('shows the fallback until a manifest is applied, even for a value set before (rule 4)', async () => {
    const box = container('<b svc-string="early">fb</b>');
    processSvcStrings(box, store);
    store.updateString('early', 'set early');
    await nextTick();
    expect(store.getString('early')).toBe('set early');
    expect(box.querySelector('b')?.textContent).toBe('fb');
    store.applyManifest(manifest());
    store.updateString('early', 'set after');
    await nextTick();
    expect(box.querySelector('b')?.textContent).toBe('set after');
  });

  it('binds the container itself when it carries svc-string', async () => {
    const el = container('fb');
    el.setAttribute('svc-string', 'title');
    processSvcStrings(el, store);
    store.applyManifest(manifest());
    await nextTick();
    expect(el.textContent).toBe('Welcome');
  });

  it('replaces the whole text content, child elements included', async () => {
    const box = container('<p svc-string="title">Hello <em>there</em></p>');
    processSvcStrings(box, store);
    expect(box.querySelector('p')?.innerHTML).toBe('Hello <em>there</em>');
    store.applyManifest(manifest());
    await nextTick();
    expect(box.querySelector('p')?.innerHTML).toBe('Welcome');
  });

  it('returns a function that stops the updates', async () => {
    const box = container('<p svc-string="title">fb</p>');
    const unbind = processSvcStrings(box, store);
    store.applyManifest(manifest());
    await nextTick();
    unbind();
    store.updateString('title', 'Changed');
    store.applyManifest(manifest({ strings: { default: {} } }));
    await nextTick();
    expect(box.querySelector('p')?.textContent).toBe('Welcome');
  });

  it('skips elements already bound, so a second call binds only new ones', async () => {
    const box = container('<p id="a" svc-string="title">fb</p>');
    const first = processSvcStrings(box, store);
    box.insertAdjacentHTML('beforeend', '<p id="b" svc-string="title">fb</p>');
    const second = processSvcStrings(box, store);
    second(); // only #b
    store.applyManifest(manifest());
    await nextTick();
    expect([box.querySelector('#a')?.textContent, box.querySelector('#b')?.textContent]).toEqual(['Welcome', 'fb']);
    first();
  });
});

describe('processSvcSrcs', () => {
  it('binds svc-src elements to assets or trigger state, with the original src as fallback', async () => {
    const box = container(
      '<img id="a" svc-src="logo" src="/fb.png"><img id="s" svc-src="pic" svc-state><img id="n" svc-src="nope" src="/fb.png">',
    );
    const unbind = processSvcSrcs(box, store);
    const src = (id: string) => box.querySelector(`#${id}`)?.getAttribute('src');
    expect([src('a'), src('s'), src('n')]).toEqual(['/fb.png', null, '/fb.png']);

    store.applyManifest(manifest());
    await nextTick();
    expect([src('a'), src('s'), src('n')]).toEqual(['/img/logo.png', '/img/state.png', '/fb.png']);

    store.updateAsset('logo', '/new.png');
    await nextTick();
    expect(src('a')).toBe('/new.png');
    unbind();
    store.updateAsset('logo', '/newer.png');
    await nextTick();
    expect(src('a')).toBe('/new.png');
  });

  it('does not touch svc-string elements, nor processSvcStrings svc-src ones', async () => {
    const box = container('<img svc-src="logo" src="/fb.png"><p svc-string="title">fb</p>');
    processSvcSrcs(box, store);
    store.applyManifest(manifest());
    await nextTick();
    expect(box.querySelector('p')?.textContent).toBe('fb');
    expect(box.querySelector('img')?.getAttribute('src')).toBe('/img/logo.png');
  });

  it('reports svc-src with svc-settings as an error and keeps the fallback', async () => {
    const onError = vi.fn();
    const box = container('<img svc-src="logo" svc-settings src="/fb.png">');
    processSvcSrcs(box, store, { onError });
    store.applyManifest(manifest());
    await nextTick();
    expect(box.querySelector('img')?.getAttribute('src')).toBe('/fb.png');
    expect(box.querySelector('img')?.getAttribute('data-svc-error')).toContain('svc-settings');
    expect(errorSpy).toHaveBeenCalledTimes(1);
    expect(onError).toHaveBeenCalledTimes(1);
  });
});

describe('bindElement', () => {
  it('reads the key from a given function again on refresh()', async () => {
    const el = container('fb');
    let key = 'title';
    const binding = bindElement(el, 'svc-string', store, { key: () => key });
    store.applyManifest(manifest());
    await nextTick();
    expect(el.textContent).toBe('Welcome');
    key = 'empty';
    binding.refresh();
    await nextTick();
    expect(el.textContent).toBe('');
    binding.unbind();
  });

  it('keeps the first fallback when an element is bound again', async () => {
    const el = container('<p svc-string="title">fb</p>').querySelector('p')!;
    store.applyManifest(manifest());
    bindElement(el, 'svc-string', store).unbind();
    expect(el.textContent).toBe('Welcome');
    const again = bindElement(el, 'svc-string', store);
    store.applyManifest(manifest({ strings: { default: {} } }));
    await nextTick();
    expect(el.textContent).toBe('fb');
    again.unbind();
  });

  it('asks the DOM what an element shows when it is bound again: text another hand wrote there is replaced, even by a value equal to the fallback', () => {
    const el = container('<p svc-string="title">Welcome</p>').querySelector('p')!;
    store.applyManifest(manifest()); // title: 'Welcome', the fallback's own text
    bindElement(el, 'svc-string', store).unbind();
    expect(el.textContent).toBe('Welcome');
    el.textContent = 'written by other code';
    const again = bindElement(el, 'svc-string', store);
    expect(el.textContent).toBe('Welcome');
    again.unbind();
  });

  it('reports an element with two modifiers once, even when bound again', () => {
    const el = container('<p svc-string="title" svc-state svc-assets>fb</p>').querySelector('p')!;
    store.applyManifest(manifest());
    bindElement(el, 'svc-string', store).refresh();
    bindElement(el, 'svc-string', store).unbind();
    expect(el.textContent).toBe('fb');
    expect(el.getAttribute('data-svc-error')).toMatch(/svc-assets and svc-state/);
    expect(errorSpy).toHaveBeenCalledTimes(1);
  });
});

describe('hasSvcString and getSvcStringKey', () => {
  it('tell whether an element has svc-string and read its key', () => {
    const box = container('<p svc-string="title">x</p><p svc-string="">x</p><p svc-src="logo">x</p>');
    const [a, b, c] = [...box.children];
    expect([hasSvcString(a!), hasSvcString(b!), hasSvcString(c!)]).toEqual([true, true, false]);
    expect([getSvcStringKey(a!), getSvcStringKey(b!), getSvcStringKey(c!)]).toEqual(['title', '', null]);
  });
});
