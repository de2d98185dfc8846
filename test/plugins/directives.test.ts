// @vitest-environment happy-dom
import { createPinia } from 'pinia';
import { afterEach, beforeEach, describe, expect, it, type MockInstance, vi } from 'vitest';
import { type App, createApp, nextTick, ref } from 'vue';
import {
  type PluginManifest,
  type PluginStore,
  type SvcBindingError,
  svcToolkit,
  usePluginStore,
} from '../../src/plugins/toolkit/index.js';

// docs/plugins.md; contract: "Directives" (table and rules 1–5), through the Vue plugin.

function manifest(over: Partial<PluginManifest> = {}): PluginManifest {
  return {
    settings: { venue: 'Hall A', capacity: 0, open: false },
    strings: { default: { title: 'Welcome', subtitle: 'Doors open', empty: '' } },
    assets: { logo: '/img/logo.png', blank: '' },
    triggerState: { count: 0, ready: false, mode: null, label: 'Go', pic: '/img/state.png' },
    dependencies: [],
    permissions: [],
    ...over,
  };
}

/** Mutation observer callbacks run in a microtask, then Vue flushes its watchers in another. */
async function settle(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 0));
  await nextTick();
}

let apps: App[] = [];
let errorSpy: MockInstance;
beforeEach(() => {
  errorSpy = vi.spyOn(console, 'error').mockImplementation(() => {});
});
afterEach(() => {
  for (const app of apps) app.unmount();
  apps = [];
  document.body.innerHTML = '';
  vi.restoreAllMocks();
});

interface Mounted {
  root: HTMLElement;
  store: PluginStore;
  app: App;
  el(selector: string): HTMLElement;
}

function mount(
  template: string,
  setup: () => Record<string, unknown> = () => ({}),
  options: { onError?: (e: SvcBindingError) => void } = {},
): Mounted {
  const root = document.createElement('div');
  document.body.append(root);
  const pinia = createPinia();
  const app = createApp({ template, setup });
  app.use(pinia).use(svcToolkit, options);
  app.mount(root);
  apps.push(app);
  const store = app.runWithContext(() => usePluginStore());
  return { root, store, app, el: (selector) => root.querySelector<HTMLElement>(selector)! };
}

describe('svc-string and svc-src, attribute form', () => {
  it('shows the original text and src while the manifest is not loaded (rules 2 and 4)', () => {
    const { el } = mount(
      '<p id="t" svc-string="title">Fallback title</p><img id="i" svc-src="logo" src="/fallback.png">',
    );
    expect(el('#t').textContent).toBe('Fallback title');
    expect(el('#i').getAttribute('src')).toBe('/fallback.png');
  });

  it('shows the store values once the manifest is applied', async () => {
    const { el, store } = mount(
      '<p id="t" svc-string="title">Fallback title</p><img id="i" svc-src="logo" src="/fallback.png">',
    );
    store.applyManifest(manifest());
    await nextTick();
    expect(el('#t').textContent).toBe('Welcome');
    expect(el('#i').getAttribute('src')).toBe('/img/logo.png');
  });

  const stringRows: [string, string, string][] = [
    ['', 'title', 'Welcome'],
    ['svc-settings', 'venue', 'Hall A'],
    ['svc-assets', 'logo', '/img/logo.png'],
    ['svc-state', 'label', 'Go'],
  ];
  it.each(stringRows)('svc-string with modifier "%s" reads its section (%s → %s)', async (modifier, key, expected) => {
    const { el, store } = mount(`<span id="x" svc-string="${key}" ${modifier}>fb</span>`);
    store.applyManifest(manifest());
    await nextTick();
    expect(el('#x').textContent).toBe(expected);
  });

  it('svc-string reads only its own section: a key of another section falls back', async () => {
    const { el, store } = mount(
      '<span id="a" svc-string="venue">fb</span><span id="b" svc-string="title" svc-state>fb</span>',
    );
    store.applyManifest(manifest());
    await nextTick();
    expect(el('#a').textContent).toBe('fb');
    expect(el('#b').textContent).toBe('fb');
  });

  const srcRows: [string, string, string][] = [
    ['', 'logo', '/img/logo.png'],
    ['svc-state', 'pic', '/img/state.png'],
  ];
  it.each(srcRows)('svc-src with modifier "%s" reads its section (%s → %s)', async (modifier, key, expected) => {
    const { el, store } = mount(`<img id="x" svc-src="${key}" ${modifier} src="/fb.png">`);
    store.applyManifest(manifest());
    await nextTick();
    expect(el('#x').getAttribute('src')).toBe(expected);
  });

  it('shows empty, 0, false and null values instead of the fallback (rule 3)', async () => {
    const { el, store } = mount(`
      <span id="empty" svc-string="empty">fb</span>
      <span id="zero" svc-string="capacity" svc-settings>fb</span>
      <span id="false" svc-string="open" svc-settings>fb</span>
      <span id="count" svc-string="count" svc-state>fb</span>
      <span id="null" svc-string="mode" svc-state>fb</span>
      <span id="blank" svc-string="blank" svc-assets>fb</span>
      <img id="src-blank" svc-src="blank" src="/fb.png">
      <img id="src-null" svc-src="mode" svc-state src="/fb.png">`);
    store.applyManifest(manifest());
    await nextTick();
    expect(el('#empty').textContent).toBe('');
    expect(el('#zero').textContent).toBe('0');
    expect(el('#false').textContent).toBe('false');
    expect(el('#count').textContent).toBe('0');
    expect(el('#null').textContent).toBe(''); // a null trigger state shows as empty text
    expect(el('#blank').textContent).toBe('');
    expect(el('#src-blank').getAttribute('src')).toBe('');
    expect(el('#src-null').hasAttribute('src')).toBe(false); // a null trigger state removes src
  });

  it('falls back for an undefined key, and again when a later manifest removes the key (rule 4)', async () => {
    const { el, store } = mount(
      '<p id="t" svc-string="title">fb title</p><p id="m" svc-string="nope">fb nope</p><img id="i" svc-src="logo" src="/fb.png">',
    );
    store.applyManifest(manifest());
    await nextTick();
    expect(el('#t').textContent).toBe('Welcome');
    expect(el('#m').textContent).toBe('fb nope');

    store.applyManifest(manifest({ strings: { default: { subtitle: 'x' } }, assets: {} }));
    await nextTick();
    expect(el('#t').textContent).toBe('fb title');
    expect(el('#i').getAttribute('src')).toBe('/fb.png');
  });

  it('shows the fallback src as no src when the element had none', async () => {
    const { el, store } = mount('<img id="i" svc-src="logo">');
    store.applyManifest(manifest());
    await nextTick();
    expect(el('#i').getAttribute('src')).toBe('/img/logo.png');
    store.applyManifest(manifest({ assets: {} }));
    await nextTick();
    expect(el('#i').hasAttribute('src')).toBe(false);
  });

  it('updates every bound element at once when update* changes a value (rule 5)', async () => {
    const { root, store } = mount(`
      <span class="s" svc-string="title">a</span><span class="s" svc-string="title">b</span><span class="s" v-svc-string="'title'">c</span>
      <span class="v" svc-string="venue" svc-settings>a</span><span class="v" v-svc-string="'venue'" svc-settings>b</span>
      <span class="a" svc-string="logo" svc-assets>a</span><img class="a" svc-src="logo"><img class="a" v-svc-src="'logo'">
      <span class="st" svc-string="mode" svc-state>a</span><img class="st" svc-src="mode" svc-state>`);
    store.applyManifest(manifest());
    store.updateString('title', 'Hello');
    store.updateSetting('venue', 42);
    store.updateAsset('logo', '/new.png');
    store.updateState('mode', 'busy');
    await nextTick();
    const shown = (cls: string) =>
      [...root.querySelectorAll(`.${cls}`)].map((e) => (e.tagName === 'IMG' ? e.getAttribute('src') : e.textContent));
    expect(shown('s')).toEqual(['Hello', 'Hello', 'Hello']);
    expect(shown('v')).toEqual(['42', '42']);
    expect(shown('a')).toEqual(['/new.png', '/new.png', '/new.png']);
    expect(shown('st')).toEqual(['busy', 'busy']);
  });

  it('binds elements added after mount, by Vue or by plain DOM code', async () => {
    const show = ref(false);
    const { root, el, store } = mount('<div id="box"><p v-if="show" id="late" svc-string="title">fb</p></div>', () => ({
      show,
    }));
    store.applyManifest(manifest());
    show.value = true;
    await settle();
    expect(el('#late').textContent).toBe('Welcome');

    const added = document.createElement('div');
    added.innerHTML = '<span svc-string="subtitle">fb</span><img svc-src="pic" svc-state>';
    el('#box').append(added);
    await settle();
    expect(added.querySelector('span')?.textContent).toBe('Doors open');
    expect(added.querySelector('img')?.getAttribute('src')).toBe('/img/state.png');

    const plain = document.createElement('b');
    root.append(plain);
    plain.setAttribute('svc-string', 'title');
    await settle();
    expect(plain.textContent).toBe('Welcome');
  });

  it('follows a :svc-string expression as it changes', async () => {
    const key = ref<string | null>('title');
    const { el, store } = mount('<p id="t" :svc-string="key">fb</p>', () => ({ key }));
    store.applyManifest(manifest());
    await settle();
    expect(el('#t').textContent).toBe('Welcome');
    key.value = 'subtitle';
    await settle();
    expect(el('#t').textContent).toBe('Doors open');
    key.value = 'nope';
    await settle();
    expect(el('#t').textContent).toBe('fb');
    key.value = null; // Vue removes the attribute: unbound, showing the fallback
    await settle();
    expect(el('#t').hasAttribute('svc-string')).toBe(false);
    expect(el('#t').textContent).toBe('fb');
    store.updateString('nope', 'late');
    key.value = 'title';
    await settle();
    expect(el('#t').textContent).toBe('Welcome');
  });

  it('follows a modifier attribute switched on and off', async () => {
    const state = ref(false);
    const { el, store } = mount('<p id="t" svc-string="label" :svc-state="state ? \'\' : null">fb</p>', () => ({
      state,
    }));
    store.applyManifest(manifest({ strings: { default: { label: 'from strings' } } }));
    await settle();
    expect(el('#t').textContent).toBe('from strings');
    state.value = true;
    await settle();
    expect(el('#t').textContent).toBe('Go');
  });

  it('stops updating elements once they are removed', async () => {
    const show = ref(true);
    const { el, store } = mount(
      '<div><p v-if="show" id="t" svc-string="title">fb</p><p v-if="show" id="d" v-svc-string="\'title\'">fb</p></div>',
      () => ({ show }),
    );
    store.applyManifest(manifest());
    await settle();
    const [attr, dir] = [el('#t'), el('#d')];
    expect([attr.textContent, dir.textContent]).toEqual(['Welcome', 'Welcome']);
    show.value = false;
    await settle();
    store.updateString('title', 'Changed');
    await settle();
    expect([attr.isConnected, attr.textContent, dir.textContent]).toEqual([false, 'Welcome', 'Welcome']);
  });

  it('stops observing the root when the app unmounts', async () => {
    const { root, app, store } = mount('<p>x</p>');
    store.applyManifest(manifest());
    app.unmount();
    apps = [];
    const late = document.createElement('span');
    late.setAttribute('svc-string', 'title');
    late.textContent = 'fb';
    root.append(late);
    await settle();
    expect(late.textContent).toBe('fb');
  });
});

describe('svc-string and svc-src, directive form', () => {
  it('binds v-svc-string and v-svc-src with a quoted key, keeping the fallback until loaded', async () => {
    const { el, store } = mount(
      '<p id="t" v-svc-string="\'title\'">fb</p><img id="i" v-svc-src="\'pic\'" svc-state src="/fb.png">',
    );
    expect(el('#t').textContent).toBe('fb');
    expect(el('#i').getAttribute('src')).toBe('/fb.png');
    store.applyManifest(manifest());
    await nextTick();
    expect(el('#t').textContent).toBe('Welcome');
    expect(el('#i').getAttribute('src')).toBe('/img/state.png');
  });

  it('follows a dynamic bound value', async () => {
    const key = ref('title');
    const { el, store } = mount('<p id="t" v-svc-string="key">fb</p>', () => ({ key }));
    store.applyManifest(manifest());
    await nextTick();
    key.value = 'subtitle';
    await nextTick();
    expect(el('#t').textContent).toBe('Doors open');
    key.value = 'nope';
    await nextTick();
    expect(el('#t').textContent).toBe('fb');
  });

  it('works whether Pinia is installed before or after the toolkit', async () => {
    const root = document.createElement('div');
    document.body.append(root);
    const app = createApp({ template: '<p id="t" v-svc-string="\'title\'">fb</p><p id="u" svc-string="title">fb</p>' });
    app.use(svcToolkit).use(createPinia()).mount(root);
    apps.push(app);
    app.runWithContext(() => usePluginStore()).applyManifest(manifest());
    await nextTick();
    expect(root.querySelector('#t')?.textContent).toBe('Welcome');
    expect(root.querySelector('#u')?.textContent).toBe('Welcome');
  });
});

describe('modifier errors (rule 1)', () => {
  it('keeps the fallback, marks the element and reports two modifiers once', async () => {
    const onError = vi.fn();
    const { el, store } = mount('<p id="t" svc-string="label" svc-state svc-settings>fb</p>', () => ({}), { onError });
    store.applyManifest(manifest());
    store.updateState('label', 'x');
    store.updateSetting('label', 'y');
    await settle();
    expect(el('#t').textContent).toBe('fb');
    expect(el('#t').getAttribute('data-svc-error')).toMatch(/svc-settings and svc-state/);
    expect(errorSpy).toHaveBeenCalledTimes(1);
    expect(onError).toHaveBeenCalledTimes(1);
    expect(onError.mock.calls[0]?.[0]).toMatchObject({ directive: 'svc-string', element: el('#t') });
  });

  it('reports the error once however often the element re-renders', async () => {
    const n = ref(0);
    const { el } = mount('<p id="t" v-svc-string="\'label\'" svc-assets svc-state :data-n="n">fb</p>', () => ({ n }));
    for (let i = 1; i <= 3; i++) {
      n.value = i;
      await settle();
    }
    expect(el('#t').hasAttribute('data-svc-error')).toBe(true);
    expect(errorSpy).toHaveBeenCalledTimes(1);
  });

  it.each(['svc-settings', 'svc-assets'])('treats svc-src with %s as an error', async (modifier) => {
    const { el, store } = mount(`<img id="i" svc-src="logo" ${modifier} src="/fb.png">`);
    store.applyManifest(manifest());
    await nextTick();
    expect(el('#i').getAttribute('src')).toBe('/fb.png');
    expect(el('#i').getAttribute('data-svc-error')).toContain(modifier);
    expect(errorSpy).toHaveBeenCalledTimes(1);
  });

  it('clears the error mark when the conflicting modifier goes away', async () => {
    const both = ref(true);
    const { el, store } = mount(
      '<p id="t" svc-string="label" svc-state :svc-settings="both ? \'\' : null">fb</p>',
      () => ({ both }),
    );
    store.applyManifest(manifest());
    await settle();
    expect(el('#t').hasAttribute('data-svc-error')).toBe(true);
    both.value = false;
    await settle();
    expect(el('#t').hasAttribute('data-svc-error')).toBe(false);
    expect(el('#t').textContent).toBe('Go');
  });
});
