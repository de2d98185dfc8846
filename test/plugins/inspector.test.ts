// @vitest-environment happy-dom
import { createPinia, setActivePinia } from 'pinia';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createApp, nextTick } from 'vue';
import {
  type PluginManifest,
  type PluginStore,
  processSvcStrings,
  svcToolkit,
  usePluginStore,
} from '../../src/plugins/toolkit/index.js';
import { devInspector, installInspector } from '../../src/plugins/toolkit/inspector.js';

// The developer tool's store inspector (docs/plugins.md; contract: "What the service does" 5).

function manifest(over: Partial<PluginManifest> = {}): PluginManifest {
  return {
    settings: { venue: 'Hall A', capacity: 120, open: false },
    strings: { default: { title: 'Welcome', subtitle: 'Doors open' } },
    assets: { logo: '/img/logo.png' },
    triggerState: { ready: false, count: 3, label: 'Go', mode: null },
    dependencies: [],
    permissions: [],
    ...over,
  };
}

let store: PluginStore;
let uninstall: () => void;
beforeEach(() => {
  setActivePinia(createPinia());
  store = usePluginStore();
  store.applyManifest(manifest());
});
afterEach(() => {
  uninstall?.();
  document.body.innerHTML = '';
  vi.restoreAllMocks();
});

const $ = <T extends Element = HTMLElement>(selector: string): T | null =>
  document.querySelector<T & Element>(selector);
const panel = () => $('[data-testid="inspector"]');
const value = (section: string, key: string) =>
  $<HTMLButtonElement>(`[data-testid="inspector-value"][data-section="${section}"][data-key="${key}"]`)!;
const input = () => $<HTMLTextAreaElement>('[data-testid="inspector-input"]');
const error = () => $('[data-testid="inspector-error"]');
const simControl = (key: string) => $<HTMLInputElement>(`[data-testid="inspector-sim-control"][data-key="${key}"]`)!;

function press(target: EventTarget, key: string, init: KeyboardEventInit = {}): KeyboardEvent {
  const event = new KeyboardEvent('keydown', { key, bubbles: true, cancelable: true, ...init });
  target.dispatchEvent(event);
  return event;
}
/** The shortcut as pressed while focus is on `target` (the page's body by default). */
function shortcut(
  init: KeyboardEventInit = {},
  target: EventTarget = document.activeElement ?? document.body,
): KeyboardEvent {
  return press(target, 'D', { code: 'KeyD', ctrlKey: true, shiftKey: true, ...init });
}
function type(field: HTMLInputElement | HTMLTextAreaElement, text: string): void {
  field.value = text;
  field.dispatchEvent(new Event('input', { bubbles: true }));
}
async function openPanel(): Promise<void> {
  shortcut();
  await nextTick();
}
/** Double-clicks the value, types `text` and presses Enter. */
async function edit(section: string, key: string, text: string): Promise<void> {
  value(section, key).dispatchEvent(new MouseEvent('dblclick', { bubbles: true }));
  await nextTick();
  type(input()!, text);
  press(input()!, 'Enter');
  await nextTick();
}
function bound(html: string): HTMLElement {
  const div = document.createElement('div');
  div.innerHTML = html;
  document.body.append(div);
  processSvcStrings(div, store);
  return div.firstElementChild as HTMLElement;
}

describe('the inspector shortcut', () => {
  beforeEach(() => {
    uninstall = installInspector(store);
  });

  it('is hidden until Ctrl+Shift+D, which the browser does not also act on; the same keys hide it', async () => {
    expect(panel()).toBeNull();
    const event = shortcut();
    await nextTick();
    expect(event.defaultPrevented).toBe(true);
    expect(panel()).not.toBeNull();
    shortcut();
    await nextTick();
    expect(panel()).toBeNull();
  });

  it('opens with Cmd+Shift+D on macOS', async () => {
    shortcut({ ctrlKey: false, metaKey: true });
    await nextTick();
    expect(panel()).not.toBeNull();
  });

  it('opens with the physical D key when the layout gives no Latin letter there', async () => {
    shortcut({ key: 'В' });
    await nextTick();
    expect(panel()).not.toBeNull();
  });

  it.each([
    ['Ctrl+D', { shiftKey: false, key: 'd' }],
    ['Shift+D', { ctrlKey: false }],
    ['Ctrl+Shift+E', { key: 'E', code: 'KeyE' }],
    ['Ctrl+Alt+Shift+D (AltGr)', { altKey: true }],
    ['Ctrl+Shift+ the Dvorak E on the D key', { key: 'E' }],
  ])('ignores %s', async (_name, init) => {
    const event = shortcut(init);
    await nextTick();
    expect(panel()).toBeNull();
    expect(event.defaultPrevented).toBe(false);
  });

  it('does not toggle again on key repeat', async () => {
    await openPanel();
    shortcut({ repeat: true });
    await nextTick();
    expect(panel()).not.toBeNull();
  });
});

describe('the inspector panel', () => {
  it('is a labelled dialog listing the four sections, each key with its value as JSON', async () => {
    uninstall = installInspector(store, { open: true });
    await nextTick();
    expect(panel()!.getAttribute('role')).toBe('dialog');
    expect(panel()!.getAttribute('aria-label')).toBe('Store inspector');
    const sections = [...document.querySelectorAll('[data-testid="inspector-section"]')];
    expect(sections.map((s) => s.getAttribute('data-section'))).toEqual([
      'pluginVars',
      'stringsList',
      'assetList',
      'triggerState',
    ]);
    expect(sections.map((s) => s.querySelector('h3')!.textContent)).toEqual([
      'pluginVars',
      'stringsList',
      'assetList',
      'triggerState',
    ]);
    expect(value('pluginVars', 'venue').textContent).toBe('"Hall A"');
    expect(value('pluginVars', 'capacity').textContent).toBe('120');
    expect(value('pluginVars', 'open').textContent).toBe('false');
    expect(value('stringsList', 'subtitle').textContent).toBe('"Doors open"');
    expect(value('assetList', 'logo').textContent).toBe('"/img/logo.png"');
    expect(value('triggerState', 'mode').textContent).toBe('null');
  });

  it('follows the store: a value changed elsewhere, a key added by a hot reload', async () => {
    uninstall = installInspector(store, { open: true });
    store.updateString('title', 'Hello');
    store.applyManifest(manifest({ strings: { default: { title: 'Hello', footer: 'Bye' } } }));
    await nextTick();
    expect(value('stringsList', 'title').textContent).toBe('"Hello"');
    expect(value('stringsList', 'footer').textContent).toBe('"Bye"');
    expect($('[data-key="subtitle"]')).toBeNull();
  });

  it('takes focus when opened; Escape closes it and gives focus back', async () => {
    const page = document.createElement('button');
    document.body.append(page);
    page.focus();
    uninstall = installInspector(store);
    await openPanel();
    expect(panel()!.contains(document.activeElement)).toBe(true);
    press(document.activeElement!, 'Escape');
    await nextTick();
    expect(panel()).toBeNull();
    expect(document.activeElement).toBe(page);
  });

  it('has a close button', async () => {
    uninstall = installInspector(store, { open: true });
    await nextTick();
    $('[data-testid="inspector-close"]')!.click();
    await nextTick();
    expect(panel()).toBeNull();
  });

  it('injects its styles once, scoped by the gh-inspector class', async () => {
    uninstall = installInspector(store, { open: true });
    const second = installInspector(store);
    await nextTick();
    const styles = document.querySelectorAll('style[data-gatehouse-inspector]');
    expect(styles).toHaveLength(1);
    expect(panel()!.classList.contains('gh-inspector')).toBe(true);
    const selectors = styles[0]!.textContent!.match(/^[^@\s}][^{]*(?=\{)/gm)!;
    expect(selectors.every((s) => s.split(',').every((part) => part.trim().startsWith('.gh-inspector')))).toBe(true);
    second();
    expect(document.querySelectorAll('style[data-gatehouse-inspector]')).toHaveLength(1);
  });
});

describe('editing a value', () => {
  beforeEach(async () => {
    uninstall = installInspector(store);
    await openPanel();
  });

  it('opens an input with the value on double-click; Enter saves to the store and a processSvcStrings element shows it at once', async () => {
    const title = bound('<h1 svc-string="title">Fallback</h1>');
    expect(title.textContent).toBe('Welcome');
    value('stringsList', 'title').dispatchEvent(new MouseEvent('dblclick', { bubbles: true }));
    await nextTick();
    expect(input()!.value).toBe('Welcome');
    expect(document.activeElement).toBe(input());
    type(input()!, 'Hello, world');
    press(input()!, 'Enter');
    await nextTick();
    expect(store.getString('title')).toBe('Hello, world');
    expect(title.textContent).toBe('Hello, world');
    expect(input()).toBeNull();
    expect(value('stringsList', 'title').textContent).toBe('"Hello, world"');
    expect(document.activeElement).toBe(value('stringsList', 'title'));
  });

  it('updates an element bound through the svcToolkit Vue plugin at once', async () => {
    const root = document.createElement('div');
    document.body.append(root);
    const pinia = createPinia();
    const app = createApp({
      template: '<p svc-string="venue" svc-settings>Venue</p><img svc-src="logo" src="/fb.png">',
    })
      .use(pinia)
      .use(svcToolkit);
    app.mount(root);
    const appStore = app.runWithContext(() => usePluginStore());
    appStore.applyManifest(manifest());
    uninstall();
    uninstall = installInspector(appStore, { open: true });
    await nextTick();
    await edit('pluginVars', 'venue', '"Hall B"');
    await edit('assetList', 'logo', '/img/other.png');
    expect(root.querySelector('p')!.textContent).toBe('Hall B');
    expect(root.querySelector('img')!.getAttribute('src')).toBe('/img/other.png');
    app.unmount();
  });

  it('Escape cancels: the store keeps its value, the panel stays open, focus is back on the value', async () => {
    value('pluginVars', 'venue').dispatchEvent(new MouseEvent('dblclick', { bubbles: true }));
    await nextTick();
    type(input()!, '"Somewhere else"');
    const escapeKey = press(input()!, 'Escape');
    await nextTick();
    expect(escapeKey.defaultPrevented).toBe(true);
    expect(input()).toBeNull();
    expect(panel()).not.toBeNull();
    expect(store.getSetting('venue')).toBe('Hall A');
    expect(document.activeElement).toBe(value('pluginVars', 'venue'));
  });

  it('works from the keyboard alone: focus a value, Enter (or F2) edits, Enter saves', async () => {
    const count = bound('<span svc-string="count" svc-state>?</span>');
    const button = value('triggerState', 'count');
    expect(button.tagName).toBe('BUTTON'); // in the tab order
    button.focus();
    press(button, 'Enter');
    await nextTick();
    expect(document.activeElement).toBe(input());
    expect(input()!.value).toBe('3');
    type(input()!, '4');
    press(input()!, 'Enter');
    await nextTick();
    expect(count.textContent).toBe('4');
    expect(document.activeElement).toBe(value('triggerState', 'count'));
    press(document.activeElement!, 'F2');
    await nextTick();
    expect(input()!.getAttribute('aria-label')).toBe('New value of triggerState count');
  });

  it('has Save and Cancel buttons for the mouse', async () => {
    value('pluginVars', 'capacity').dispatchEvent(new MouseEvent('dblclick', { bubbles: true }));
    await nextTick();
    type(input()!, '80');
    $('[data-testid="inspector-save"]')!.click();
    await nextTick();
    expect(store.getSetting('capacity')).toBe(80);
  });

  it('never replaces a section object: edits go through update* in place', async () => {
    const sections = { ...store.$state };
    await edit('pluginVars', 'capacity', '80');
    await edit('stringsList', 'title', 'Hi');
    await edit('assetList', 'logo', '/x.png');
    await edit('triggerState', 'mode', '"night"');
    for (const section of ['pluginVars', 'stringsList', 'assetList', 'triggerState'] as const)
      expect(store.$state[section]).toBe(sections[section]);
  });

  it('closes the editor when a hot reload removes its key', async () => {
    value('stringsList', 'subtitle').dispatchEvent(new MouseEvent('dblclick', { bubbles: true }));
    await nextTick();
    store.applyManifest(manifest({ strings: { default: { title: 'Welcome' } } }));
    await nextTick();
    expect(input()).toBeNull();
    expect(store.getString('subtitle')).toBeUndefined();
  });
});

describe('what an edit may be, per section', () => {
  beforeEach(async () => {
    uninstall = installInspector(store);
    await openPanel();
  });

  it('stringsList and assetList take the text as typed: 42 is the text "42", null the text "null"', async () => {
    const title = bound('<h1 svc-string="title">Fallback</h1>');
    await edit('stringsList', 'title', '42');
    expect(store.getString('title')).toBe('42');
    expect(title.textContent).toBe('42');
    await edit('stringsList', 'subtitle', 'null');
    expect(store.getString('subtitle')).toBe('null');
    await edit('assetList', 'logo', '{}');
    expect(store.getAsset('logo')).toBe('{}');
  });

  it('pluginVars reads JSON, and text without quotes as text', async () => {
    await edit('pluginVars', 'capacity', '80');
    expect(store.getSetting('capacity')).toBe(80);
    await edit('pluginVars', 'open', 'true');
    expect(store.getSetting('open')).toBe(true);
    await edit('pluginVars', 'capacity', '"80"');
    expect(store.getSetting('capacity')).toBe('80');
    await edit('pluginVars', 'venue', 'Hall B');
    expect(store.getSetting('venue')).toBe('Hall B');
    // The editor shows strings quoted, so saving it unchanged keeps the text "80" text.
    value('pluginVars', 'capacity').dispatchEvent(new MouseEvent('dblclick', { bubbles: true }));
    await nextTick();
    expect(input()!.value).toBe('"80"');
  });

  it.each([
    ['{}', 'pluginVars', 'not an object'],
    ['{"a": 1}', 'triggerState', 'not an object'],
    ['[1, 2]', 'pluginVars', 'not a list'],
    ['null', 'pluginVars', 'only triggerState values may be null'],
    ['1e999', 'triggerState', 'finite'],
    ['"Hall', 'pluginVars', 'invalid JSON at line 1, column 6'],
    ['  ', 'pluginVars', 'Empty'],
  ])('refuses %s in %s, saying why inline and keeping the editor open', async (text, section, reason) => {
    const key = section === 'pluginVars' ? 'venue' : 'label';
    const before = store.$state[section as 'pluginVars' | 'triggerState'][key];
    await edit(section, key, text);
    expect(store.$state[section as 'pluginVars' | 'triggerState'][key]).toBe(before);
    expect(error()!.textContent).toContain(reason);
    expect(error()!.getAttribute('role')).toBe('alert');
    expect(input()!.getAttribute('aria-invalid')).toBe('true');
    expect(input()!.getAttribute('aria-describedby')).toContain(error()!.id);
    expect(document.activeElement).toBe(input());
    type(input()!, '"fixed"');
    press(input()!, 'Enter');
    await nextTick();
    expect(store.$state[section as 'pluginVars' | 'triggerState'][key]).toBe('fixed');
    expect(input()).toBeNull();
  });

  it('triggerState takes null, and a bound element shows it as empty text', async () => {
    const label = bound('<span svc-string="label" svc-state>?</span>');
    await edit('triggerState', 'label', 'null');
    expect(store.getState('label')).toBeNull();
    expect(label.textContent).toBe('');
  });
});

describe('the trigger-state simulator', () => {
  beforeEach(async () => {
    uninstall = installInspector(store);
    await openPanel();
  });

  it('has a labelled control per key fitting its value', () => {
    const kinds = Object.fromEntries(
      ['ready', 'count', 'label', 'mode'].map((key) => [key, [simControl(key).type, simControl(key).dataset.kind]]),
    );
    expect(kinds).toEqual({
      ready: ['checkbox', 'boolean'],
      count: ['number', 'number'],
      label: ['text', 'string'],
      mode: ['text', 'string'],
    });
    expect(simControl('ready').getAttribute('role')).toBe('switch');
    for (const key of ['ready', 'count', 'label', 'mode'])
      expect($(`label[for="${simControl(key).id}"]`)!.textContent).toBe(key);
  });

  it('applies each change at once through updateState', async () => {
    const ready = bound('<span svc-string="ready" svc-state>?</span>');
    const count = bound('<span svc-string="count" svc-state>?</span>');
    simControl('ready').click();
    expect(store.getState('ready')).toBe(true);
    type(simControl('count'), '12.5');
    expect(store.getState('count')).toBe(12.5);
    type(simControl('label'), 'Stop');
    expect(store.getState('label')).toBe('Stop');
    type(simControl('mode'), 'night');
    expect(store.getState('mode')).toBe('night');
    await nextTick();
    expect([ready.textContent, count.textContent]).toEqual(['true', '12.5']);
    expect(value('triggerState', 'label').textContent).toBe('"Stop"');
  });

  it('does not apply a number while it is being typed, and marks it', async () => {
    type(simControl('count'), '-');
    await nextTick();
    expect(store.getState('count')).toBe(3);
    expect(simControl('count').getAttribute('aria-invalid')).toBe('true');
    simControl('count').dispatchEvent(new Event('blur'));
    await nextTick();
    expect(simControl('count').value).toBe('3');
    expect(simControl('count').getAttribute('aria-invalid')).toBe('false');
  });

  it('sets null with the null button, and the control keeps its kind', async () => {
    const button = $('[data-testid="inspector-sim-null"][data-key="count"]')!;
    expect(button.getAttribute('aria-pressed')).toBe('false');
    button.click();
    await nextTick();
    expect(store.getState('count')).toBeNull();
    expect(button.getAttribute('aria-pressed')).toBe('true');
    expect(simControl('count').type).toBe('number');
    type(simControl('count'), '7');
    expect(store.getState('count')).toBe(7);
  });
});

describe('copy store', () => {
  beforeEach(async () => {
    uninstall = installInspector(store);
    await openPanel();
  });
  afterEach(() => {
    delete (navigator as { clipboard?: unknown }).clipboard;
    delete (document as { execCommand?: unknown }).execCommand;
  });

  const expected = () => ({
    pluginVars: { venue: 'Hall A', capacity: 120, open: false },
    stringsList: { title: 'Welcome', subtitle: 'Doors open' },
    assetList: { logo: '/img/logo.png' },
    triggerState: { ready: false, count: 3, label: 'Go', mode: null },
  });
  const status = () => $('[data-testid="inspector-status"]')!;

  it('copies the four sections as JSON with the Clipboard API and announces "Copied"', async () => {
    const writeText = vi.fn(async (_text: string) => {});
    Object.defineProperty(navigator, 'clipboard', { value: { writeText }, configurable: true });
    expect(status().getAttribute('aria-live')).toBe('polite');
    $('[data-testid="inspector-copy"]')!.click();
    await vi.waitFor(() => expect(status().textContent).toBe('Copied'));
    expect(JSON.parse(writeText.mock.calls[0]![0])).toEqual(expected());
  });

  it('falls back to a selection and execCommand("copy") when the Clipboard API refuses', async () => {
    Object.defineProperty(navigator, 'clipboard', {
      value: { writeText: vi.fn(async () => Promise.reject(new Error('denied'))) },
      configurable: true,
    });
    let copied = '';
    const execCommand = vi.fn((command: string) => {
      copied = (document.activeElement as HTMLTextAreaElement).value;
      return command === 'copy';
    });
    Object.defineProperty(document, 'execCommand', { value: execCommand, configurable: true });
    $('[data-testid="inspector-copy"]')!.click();
    await vi.waitFor(() => expect(status().textContent).toBe('Copied'));
    expect(execCommand).toHaveBeenCalledWith('copy');
    expect(JSON.parse(copied)).toEqual(expected());
    expect(document.querySelectorAll('textarea')).toHaveLength(0);
  });

  it('shows the JSON, selected, when no way of copying works', async () => {
    Object.defineProperty(navigator, 'clipboard', { value: undefined, configurable: true });
    Object.defineProperty(document, 'execCommand', { value: () => false, configurable: true });
    $('[data-testid="inspector-copy"]')!.click();
    await vi.waitFor(() => expect(status().textContent).toContain('Copy failed'));
    await nextTick();
    const manual = $<HTMLTextAreaElement>('[data-testid="inspector-copy-fallback"]')!;
    expect(JSON.parse(manual.value)).toEqual(expected());
  });
});

describe('uninstalling', () => {
  it('removes the panel, its container, its styles and its key listener', async () => {
    const remove = vi.spyOn(window, 'removeEventListener');
    uninstall = installInspector(store);
    await openPanel();
    uninstall();
    expect(panel()).toBeNull();
    expect($('[data-testid="inspector-root"]')).toBeNull();
    expect($('style[data-gatehouse-inspector]')).toBeNull();
    expect(remove).toHaveBeenCalledWith('keydown', expect.any(Function), true);
    const event = shortcut();
    await nextTick();
    expect(event.defaultPrevented).toBe(false);
    expect(document.body.children).toHaveLength(0);
  });
});

describe('devInspector', () => {
  it('installs the inspector for a dev source only, and removes it when the plugin app unmounts', async () => {
    const app = createApp({ render: () => null });
    devInspector()(app, store, { dev: false });
    expect($('[data-testid="inspector-root"]')).toBeNull();
    devInspector({ open: true })(app, store, { dev: true });
    await nextTick();
    expect(panel()).not.toBeNull();
    app.mount(document.createElement('div'));
    app.unmount();
    expect($('[data-testid="inspector-root"]')).toBeNull();
  });
});
