// @vitest-environment happy-dom
import { createPinia } from 'pinia';
import { afterEach, beforeEach, describe, expect, it, type MockInstance, vi } from 'vitest';
import { type App, createApp, h, nextTick, ref, Teleport, type VNode } from 'vue';
import { type PluginManifest, type PluginStore, svcToolkit, usePluginStore } from '../../src/plugins/toolkit/index.js';

// docs/plugins.md "Directives": the attribute form as a component's render makes it (render-bindings.ts). The
// same rules as the attribute form bound after the mount (directives.test.ts), for elements whose render put
// the store's value in before Vue created them.

function manifest(over: Partial<PluginManifest> = {}): PluginManifest {
  return {
    settings: { venue: 'Hall A', capacity: 0 },
    strings: { default: { title: 'Welcome', subtitle: 'Doors open', empty: '' } },
    assets: { logo: '/img/logo.png', blank: '' },
    triggerState: { mode: null, label: 'Go' },
    dependencies: [],
    permissions: [],
    ...over,
  };
}

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

/** An app whose root renders `render()`, with the manifest applied before it mounts (as createPluginApp does). */
function mount(render: () => VNode | VNode[], applied: PluginManifest | null = manifest()) {
  const root = document.createElement('div');
  document.body.append(root);
  const renders = { count: 0 };
  const app = createApp({
    render: () => {
      renders.count++;
      return render();
    },
  });
  app.use(createPinia()).use(svcToolkit);
  const store: PluginStore = app.runWithContext(() => usePluginStore());
  if (applied) store.applyManifest(applied);
  app.mount(root);
  apps.push(app);
  return { root, app, store, renders, el: (selector: string) => root.querySelector<HTMLElement>(selector)! };
}

describe('attribute form in a render function', () => {
  it('creates the elements showing their values, of every section, and follows updates (rules 3 and 5)', async () => {
    const { el, store } = mount(() => [
      h('p', { id: 't', 'svc-string': 'title' }, 'fb'),
      h('p', { id: 'v', 'svc-string': 'capacity', 'svc-settings': '' }, 'fb'),
      h('p', { id: 'a', 'svc-string': 'logo', 'svc-assets': '' }, 'fb'),
      h('p', { id: 'n', 'svc-string': 'mode', 'svc-state': '' }, 'fb'),
      h('p', { id: 'e', 'svc-string': 'empty' }),
      h('img', { id: 'i', 'svc-src': 'logo', src: '/fb.png' }),
    ]);
    const texts = () => ['#t', '#v', '#a', '#n', '#e'].map((s) => el(s).textContent);
    expect(texts()).toEqual(['Welcome', '0', '/img/logo.png', '', '']);
    expect(el('#i').getAttribute('src')).toBe('/img/logo.png');

    store.updateString('title', 'Hello');
    store.updateSetting('capacity', 12);
    store.updateState('mode', 'busy');
    store.updateAsset('logo', '/new.png');
    expect(texts()).toEqual(['Hello', '12', '/new.png', 'busy', '']);
    expect(el('#i').getAttribute('src')).toBe('/new.png');
  });

  it('keeps the text of the render as the fallback, shown once a later manifest drops the key (rules 2, 4)', async () => {
    const { el, store } = mount(() => [
      h('p', { id: 't', 'svc-string': 'title' }, 'fb title'),
      h('p', { id: 'x', 'svc-string': 'nope' }, 'fb nope'),
      h('img', { id: 'i', 'svc-src': 'logo', src: '/fb.png' }),
      h('img', { id: 'j', 'svc-src': 'logo' }),
    ]);
    expect(el('#t').textContent).toBe('Welcome');
    expect(el('#x').textContent).toBe('fb nope');
    store.applyManifest(manifest({ strings: { default: {} }, assets: {} }));
    await nextTick();
    expect(el('#t').textContent).toBe('fb title');
    expect(el('#i').getAttribute('src')).toBe('/fb.png');
    expect(el('#j').hasAttribute('src')).toBe(false);
  });

  it('shows the fallback until a manifest is applied, then the values', async () => {
    const { el, store } = mount(() => [h('p', { id: 't', 'svc-string': 'title' }, 'fb')], null);
    expect(el('#t').textContent).toBe('fb');
    store.applyManifest(manifest());
    await settle();
    expect(el('#t').textContent).toBe('Welcome');
  });

  it('gives svc-src an empty src for an empty value and none for a null one', () => {
    const { el } = mount(() => [
      h('img', { id: 'blank', 'svc-src': 'blank', src: '/fb.png' }),
      h('img', { id: 'null', 'svc-src': 'mode', 'svc-state': '', src: '/fb.png' }),
    ]);
    expect(el('#blank').getAttribute('src')).toBe('');
    expect(el('#null').hasAttribute('src')).toBe(false);
  });

  it('does not render the component again when a value changes: only the element is written', async () => {
    const { el, store, renders } = mount(() => [h('p', { id: 't', 'svc-string': 'title' }, 'fb')]);
    expect(renders.count).toBe(1);
    store.updateString('title', 'Changed');
    await settle();
    expect(el('#t').textContent).toBe('Changed');
    expect(renders.count).toBe(1);
  });

  it('shows the current value after the component renders again for another reason', async () => {
    const n = ref(0);
    const { el, store } = mount(() => [h('p', { id: 't', 'svc-string': 'title', 'data-n': n.value }, 'fb')]);
    store.updateString('title', 'Changed');
    n.value = 1;
    await settle();
    expect(el('#t').textContent).toBe('Changed');
    store.updateString('title', 'Again');
    expect(el('#t').textContent).toBe('Again');
  });

  it('follows a key that changes between renders, and unbinds an element its render removes', async () => {
    const key = ref('title');
    const show = ref(true);
    const { el, root, store } = mount(() => [
      h('p', { id: 't', 'svc-string': key.value }, 'fb'),
      show.value ? h('p', { id: 'gone', 'svc-string': 'title' }, 'fb') : h('i'),
    ]);
    const gone = el('#gone');
    key.value = 'subtitle';
    show.value = false;
    await settle();
    expect(el('#t').textContent).toBe('Doors open');
    expect(root.contains(gone)).toBe(false);
    store.updateString('title', 'Changed');
    store.updateString('subtitle', 'Later');
    expect([el('#t').textContent, gone.textContent]).toEqual(['Later', 'Welcome']);
  });

  it('binds elements of child components and of elements a re-render adds', async () => {
    const more = ref(false);
    const Child = { render: () => h('span', { class: 'c', 'svc-string': 'title' }, 'fb') };
    const { root, store } = mount(() => [h(Child), more.value ? h(Child) : h('i')]);
    more.value = true;
    await settle();
    store.updateString('title', 'Both');
    expect([...root.querySelectorAll('.c')].map((e) => e.textContent)).toEqual(['Both', 'Both']);
  });

  it('leaves an element teleported out of the root unbound, as the attribute form has always been', async () => {
    const target = document.createElement('div');
    document.body.append(target);
    const Child = { render: () => h('span', { id: 'out', 'svc-string': 'title' }, 'fb') };
    mount(() => [h(Teleport, { to: target }, [h(Child)])]);
    await settle();
    expect(target.querySelector('#out')?.textContent).toBe('fb');
  });

  it('stops the bindings its renders made when the app unmounts', async () => {
    const { el, app, store } = mount(() => [h('p', { id: 't', 'svc-string': 'title' }, 'fb')]);
    const p = el('#t');
    app.unmount();
    apps = [];
    store.updateString('title', 'Changed');
    expect(p.textContent).toBe('Welcome');
  });

  it('reports two modifiers once and keeps the fallback (rule 1)', async () => {
    const { el, store } = mount(() => [
      h('p', { id: 't', 'svc-string': 'label', 'svc-state': '', 'svc-settings': '' }, 'fb'),
    ]);
    store.updateState('label', 'x');
    await settle();
    expect(el('#t').textContent).toBe('fb');
    expect(el('#t').getAttribute('data-svc-error')).toMatch(/svc-settings and svc-state/);
    expect(errorSpy).toHaveBeenCalledTimes(1);
  });
});
