// bench:plugin's page (bench/plugin.ts builds it with Vite and loads it in Chromium). It measures itself with
// performance.now() and leaves the result in window.benchResult. `?mode=vue`: the plugin as a plugin is written
// (docs/plugins.md): Vue 3, Pinia, svcToolkit, the manifest applied to usePluginStore before app.mount(), the
// 2,000 bound elements (fixture.ts) rendered by a render function, as a compiled template would render them.
// `?mode=dom`: the baseline, the same elements built and filled in by plain DOM code from the same values.
// Each mode measures, in the page's first run of its code (a cold start, as a kiosk's):
//   firstRenderMs  from just before app.mount() (dom: before the first createElement) until every one of the
//                  2,000 elements shows its value: each one checked, in the timed span; fails if any is wrong
//   settledMs      the same until the microtasks queued by then have run: main-thread work before the page can
//                  paint. In both modes the browser starts the <img> loads there (one microtask per src set, the
//                  HTML spec's "update the image data"); with the toolkit also its MutationObserver callback,
//                  which gets a record for every element whose text its own bindings just replaced
// then `updates` times each, one at a time, the page idle in between (a macrotask):
//   updateMs       store.updateString(key, value) of a key one element binds (dom: el.textContent = value)
//   updateManyMs   the same for the key 100 elements bind (dom: the 100 textContent assignments)
// each from the call until the DOM shows the new value (after Vue's nextTick, or later if it takes longer),
// checked in the timed span. At the end every element is checked again against what it should show.
import { createPinia } from 'pinia';
import { createApp, h, nextTick, type VNode } from 'vue';
import {
  type PluginManifest,
  type PluginStore,
  parseManifest,
  processSvcSrcs,
  processSvcStrings,
  svcToolkit,
  usePluginStore,
} from '../../src/plugins/toolkit/index.js';
import { type BoundSpec, buildFixture, type Fixture, PER_ROW, SHARED_KEY, shown } from './fixture.js';

export type PageMode = 'vue' | 'dom' | 'bind' | 'vue-plain';

export type PageResult =
  | {
      mode: PageMode;
      firstRenderMs: number;
      settledMs: number;
      /** vue: how long app.mount() itself took (the toolkit binds every element inside it); dom: 0. */
      mountMs: number;
      /** When the first render's check first held. */
      firstRenderSettled: Settled;
      updateMs: number[];
      updateManyMs: number[];
      /** How many updates of each kind the DOM showed at once, after the next tick, or later. */
      updateSettled: Record<Settled, number>;
      crossOriginIsolated: boolean;
    }
  | { error: string };

declare global {
  interface Window {
    benchResult?: PageResult;
  }
}

/** When the DOM showed it: when the call returned, after Vue's next flush, or later (a macrotask or more). */
export type Settled = 'at once' | 'next tick' | 'later';

/**
 * Resolves when check() holds: at once, after Vue's next flush, or polled every macrotask for up to 2 s; `at` is
 * when it first held. The caller's `await` resumes only after the microtasks queued by then have run (the
 * toolkit's MutationObserver callback among them): settledMs and the update timings end there.
 */
async function reflected(check: () => boolean, what: () => string): Promise<{ settled: Settled; at: number }> {
  if (check()) return { settled: 'at once', at: performance.now() };
  await nextTick();
  if (check()) return { settled: 'next tick', at: performance.now() };
  const end = performance.now() + 2000;
  while (!check()) {
    if (performance.now() > end) throw new Error(`not shown after 2 s: ${what()}`);
    await idle();
  }
  return { settled: 'later', at: performance.now() };
}

/** A macrotask: the toolkit's MutationObserver callback and Vue's flushes of the last update have run. */
const idle = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

function boundElements(root: Element): Element[] {
  return [...root.querySelectorAll('[svc-string],[svc-src]')];
}

/** Index of the first element not showing `expected[i]`, or -1. */
function firstWrong(elements: Element[], specs: BoundSpec[], expected: string[]): number {
  if (elements.length !== specs.length) return Math.min(elements.length, specs.length);
  for (let i = 0; i < specs.length; i++) if (shown(elements[i]!, specs[i]!) !== expected[i]) return i;
  return -1;
}

function describeWrong(elements: Element[], specs: BoundSpec[], expected: string[]): string {
  const i = firstWrong(elements, specs, expected);
  if (elements.length !== specs.length) return `${elements.length} bound elements in the page, not ${specs.length}`;
  const spec = specs[i]!;
  return `element ${i} (${spec.directive}="${spec.key}"${spec.modifier ? ` ${spec.modifier}` : ''}) shows ${JSON.stringify(shown(elements[i]!, spec))}, not ${JSON.stringify(expected[i])}`;
}

/** The value plain code reads for an element: the same section rule as the toolkit's (docs/plugins.md). */
function manifestValue(manifest: PluginManifest, spec: BoundSpec): string | number | boolean | null | undefined {
  if (spec.directive === 'svc-src') return manifest.assets[spec.key];
  if (spec.modifier === 'svc-settings') return manifest.settings[spec.key];
  if (spec.modifier === 'svc-state') return manifest.triggerState[spec.key];
  return manifest.strings.default[spec.key];
}

function rowsOf<T>(items: T[]): T[][] {
  const rows: T[][] = [];
  for (let i = 0; i < items.length; i += PER_ROW) rows.push(items.slice(i, i + PER_ROW));
  return rows;
}

function vnodeOf(spec: BoundSpec): VNode {
  if (spec.tag === 'img') return h('img', { 'svc-src': spec.key, src: spec.fallback });
  return h(
    'span',
    spec.modifier ? { 'svc-string': spec.key, [spec.modifier]: '' } : { 'svc-string': spec.key },
    spec.fallback,
  );
}

/** Waits until every element shows what it should (checked each time), from `started`: when it first held, and when the microtasks queued by then had run. */
async function firstRendered(
  root: Element,
  fixture: Fixture,
  expected: string[],
  started: number,
): Promise<{ settled: Settled; at: number; elements: Element[]; settledMs: number }> {
  let elements: Element[] = [];
  const { settled, at } = await reflected(
    () => firstWrong((elements = boundElements(root)), fixture.specs, expected) < 0,
    () => describeWrong(elements, fixture.specs, expected),
  );
  return { settled, at, elements, settledMs: performance.now() - started };
}

/** The fixture's elements in rows of PER_ROW, in the attribute form, each showing `shown(spec)` (null or undefined: no src, or no text). */
function appendElements(root: Element, fixture: Fixture, shown: (spec: BoundSpec) => unknown): void {
  for (const row of rowsOf(fixture.specs)) {
    const div = document.createElement('div');
    div.className = 'row';
    for (const spec of row) {
      const el = document.createElement(spec.tag);
      el.setAttribute(spec.directive, spec.key);
      if (spec.modifier) el.setAttribute(spec.modifier, '');
      const value = shown(spec);
      if (spec.tag === 'img') {
        if (value !== null && value !== undefined) el.setAttribute('src', String(value));
      } else {
        el.textContent = value === null || value === undefined ? '' : String(value);
      }
      div.append(el);
    }
    root.append(div);
  }
}

interface Mounted {
  firstRenderMs: number;
  settledMs: number;
  mountMs: number;
  settled: Settled;
  elements: Element[];
  /** Sets the string `key` to `value` the mode's way. */
  update(key: string, value: string): void;
}

async function mountVue(
  root: Element,
  fixture: Fixture,
  manifest: PluginManifest,
  expected: string[],
): Promise<Mounted> {
  const bindErrors: string[] = [];
  const app = createApp({
    render: () => rowsOf(fixture.specs).map((row) => h('div', { class: 'row' }, row.map(vnodeOf))),
  });
  app.use(createPinia()).use(svcToolkit, { onError: (e) => bindErrors.push(e.message) });
  const store: PluginStore = app.runWithContext(() => usePluginStore());
  store.applyManifest(manifest);

  const started = performance.now();
  app.mount(root);
  const mountMs = performance.now() - started;
  const { settled, at, elements, settledMs } = await firstRendered(root, fixture, expected, started);
  if (bindErrors.length > 0) throw new Error(`binding errors: ${bindErrors.slice(0, 3).join('; ')}`);
  return {
    firstRenderMs: at - started,
    settledMs,
    mountMs,
    settled,
    elements,
    update: (key, value) => store.updateString(key, value),
  };
}

/**
 * `?mode=vue-plain`: the same Vue render without the toolkit (the elements keep their fallbacks): what Vue
 * itself costs to put 2,000 elements on the page, the baseline of the vue mode's first render. Only mountMs.
 */
function mountVuePlain(root: Element, fixture: Fixture): number {
  const app = createApp({
    render: () => rowsOf(fixture.specs).map((row) => h('div', { class: 'row' }, row.map(vnodeOf))),
  });
  const started = performance.now();
  app.mount(root);
  return performance.now() - started;
}

/**
 * `?mode=bind`: the toolkit's bindings alone. The 2,000 elements are already on the page with their fallbacks
 * (markup in the attribute form, as a page without Vue has it: not timed); from just before
 * processSvcStrings / processSvcSrcs (rule 6: the same bindElement the directives use) until every element
 * shows its store value.
 */
async function mountBind(
  root: Element,
  fixture: Fixture,
  manifest: PluginManifest,
  expected: string[],
): Promise<Mounted> {
  appendElements(root, fixture, (spec) => spec.fallback); // not timed: the page's markup
  const app = createApp({ render: () => null }).use(createPinia());
  const store: PluginStore = app.runWithContext(() => usePluginStore());
  store.applyManifest(manifest);
  await idle();

  const started = performance.now();
  processSvcStrings(root, store);
  processSvcSrcs(root, store);
  const mountMs = performance.now() - started;
  const { settled, at, elements, settledMs } = await firstRendered(root, fixture, expected, started);
  return {
    firstRenderMs: at - started,
    settledMs,
    mountMs,
    settled,
    elements,
    update: (key, value) => store.updateString(key, value),
  };
}

async function mountDom(
  root: Element,
  fixture: Fixture,
  manifest: PluginManifest,
  expected: string[],
): Promise<Mounted> {
  const byKey = new Map<string, Element[]>();
  const started = performance.now();
  appendElements(root, fixture, (spec) => manifestValue(manifest, spec));
  const { settled, at, elements, settledMs } = await firstRendered(root, fixture, expected, started);
  // What plain code keeps to update a string: its elements (not timed; the toolkit's equivalent is its bindings).
  fixture.specs.forEach((spec, i) => {
    if (spec.directive === 'svc-string' && spec.modifier === null)
      byKey.set(spec.key, [...(byKey.get(spec.key) ?? []), elements[i]!]);
  });
  const update = (key: string, value: string) => {
    for (const el of byKey.get(key) ?? []) el.textContent = value;
  };
  return { firstRenderMs: at - started, settledMs, mountMs: 0, settled, elements, update };
}

/** Times `count` updates of keys picked by `pick`, each until every element of `indexes(k)` shows the new value. */
async function timeUpdates(
  page: Mounted,
  expected: string[],
  count: number,
  pick: (k: number) => { key: string; indexes: number[] },
  label: string,
  tally: Record<Settled, number>,
): Promise<number[]> {
  const samples: number[] = [];
  for (let k = 0; k < count; k++) {
    const { key, indexes } = pick(k);
    const value = `${label} ${k}: ${key}`;
    for (const i of indexes) expected[i] = value;
    await idle();
    const started = performance.now();
    page.update(key, value);
    const { settled } = await reflected(
      () => indexes.every((i) => page.elements[i]!.textContent === value),
      () => `${label} of "${key}" to ${JSON.stringify(value)}`,
    );
    samples.push(performance.now() - started);
    tally[settled]++;
  }
  return samples;
}

async function run(mode: PageMode, updates: number): Promise<PageResult> {
  const fixture = buildFixture();
  const parsed = parseManifest(fixture.manifest);
  if (!parsed.ok)
    throw new Error(
      `the fixture's manifest is invalid: ${parsed.errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`,
    );
  const expected = fixture.specs.map((spec) => spec.expected);
  const root = document.getElementById('app')!;
  if (mode === 'vue-plain') {
    const mountMs = mountVuePlain(root, fixture);
    const none = { 'at once': 0, 'next tick': 0, later: 0 };
    return {
      mode,
      firstRenderMs: mountMs,
      settledMs: mountMs,
      mountMs,
      firstRenderSettled: 'at once',
      updateMs: [],
      updateManyMs: [],
      updateSettled: none,
      crossOriginIsolated: window.crossOriginIsolated,
    };
  }
  const page = await (mode === 'vue' ? mountVue : mode === 'bind' ? mountBind : mountDom)(
    root,
    fixture,
    parsed.manifest,
    expected,
  );

  const updateSettled: Record<Settled, number> = { 'at once': 0, 'next tick': 0, later: 0 };
  const singles = fixture.singleKeys;
  // 7,919 is prime, so the first 1,600 picks are all different keys.
  const updateMs = await timeUpdates(
    page,
    expected,
    updates,
    (k) => {
      const at = singles[(k * 7919) % singles.length]!;
      return { key: fixture.specs[at]!.key, indexes: [at] };
    },
    'update',
    updateSettled,
  );
  const updateManyMs = await timeUpdates(
    page,
    expected,
    updates,
    () => ({ key: SHARED_KEY, indexes: fixture.sharedElements }),
    'shared update',
    updateSettled,
  );

  await idle();
  const elements = boundElements(root);
  if (firstWrong(elements, fixture.specs, expected) >= 0)
    throw new Error(`after the updates: ${describeWrong(elements, fixture.specs, expected)}`);
  const { firstRenderMs, settledMs, mountMs, settled: firstRenderSettled } = page;
  return {
    mode,
    firstRenderMs,
    settledMs,
    mountMs,
    firstRenderSettled,
    updateMs,
    updateManyMs,
    updateSettled,
    crossOriginIsolated: window.crossOriginIsolated,
  };
}

const params = new URLSearchParams(location.search);
const modes: PageMode[] = ['vue', 'dom', 'bind', 'vue-plain'];
const mode = modes.find((m) => m === params.get('mode')) ?? 'vue';
run(mode, Number(params.get('updates') ?? '200')).then(
  (result) => (window.benchResult = result),
  (error: unknown) =>
    (window.benchResult = { error: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
);
