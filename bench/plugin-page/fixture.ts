// What bench:plugin's page holds (docs/performance.md, "Plugin toolkit": "a page with 2,000 bound elements"): the bound
// elements, in the attribute form plugins are told to prefer (docs/plugins.md), and the manifest whose
// values they show. A realistic mix, deterministic so every run measures the same page:
//   1,600 <span svc-string="sNNNN">            one key each, from stringsList
//     100 <span svc-string="shared">           one key bound by 100 elements (the "many" update)
//     100 <span svc-string="vNN" svc-settings> pluginVars: strings, numbers, booleans
//     100 <span svc-string="tNN" svc-state>    triggerState, a few of them null (shown as '')
//     100 <img svc-src="aNN" src=…>            assetList
// in 100 rows of 20 (a plain <div class="row">, unbound); every fifth element is one of the other four kinds.
// Every fallback differs from its value, so an element still showing its fallback fails the check.
import type { PluginManifest } from '../../src/plugins/toolkit/index.js';

export const ELEMENTS = 2000;
export const PER_ROW = 20;
export const SHARED_KEY = 'shared';
export const FALLBACK_SRC = '/img/fallback.png';

export interface BoundSpec {
  tag: 'span' | 'img';
  directive: 'svc-string' | 'svc-src';
  key: string;
  modifier: 'svc-settings' | 'svc-state' | null;
  /** The element's original text (span) or src (img). */
  fallback: string;
  /** What it must show once bound: its textContent (span) or its src attribute (img). */
  expected: string;
}

export interface Fixture {
  specs: BoundSpec[];
  /** The manifest as a plugin's app-manifest.json would hold it (validated by the page with parseManifest). */
  manifest: Pick<PluginManifest, 'settings' | 'strings' | 'assets' | 'triggerState'>;
  /** Indexes into specs: the single-bound stringsList keys, and the elements bound to SHARED_KEY. */
  singleKeys: number[];
  sharedElements: number[];
}

const pad = (n: number, width: number) => String(n).padStart(width, '0');

export function buildFixture(): Fixture {
  const settings: Record<string, string | number | boolean> = {};
  const strings: Record<string, string> = { [SHARED_KEY]: 'Doors open at 19:00' };
  const assets: Record<string, string> = {};
  const triggerState: Record<string, string | number | boolean | null> = {};
  const specs: BoundSpec[] = [];
  const singleKeys: number[] = [];
  const sharedElements: number[] = [];
  let s = 0;
  let other = 0;
  for (let i = 0; i < ELEMENTS; i++) {
    if (i % 5 !== 4) {
      pushString();
      continue;
    }
    // Every fifth element is one of the four other kinds, in turn: 100 of each.
    const kind = other % 4;
    const n = Math.floor(other++ / 4);
    if (kind === 0) {
      sharedElements.push(specs.length);
      specs.push({
        tag: 'span',
        directive: 'svc-string',
        key: SHARED_KEY,
        modifier: null,
        fallback: 'Doors open soon',
        expected: strings[SHARED_KEY]!,
      });
    } else if (kind === 1) {
      const key = `v${pad(n, 3)}`;
      const value = n % 3 === 0 ? n : n % 3 === 1 ? `Gate ${n}` : n % 2 === 0;
      settings[key] = value;
      specs.push({
        tag: 'span',
        directive: 'svc-string',
        key,
        modifier: 'svc-settings',
        fallback: `setting ${n}`,
        expected: String(value),
      });
    } else if (kind === 2) {
      const key = `t${pad(n, 3)}`;
      const value = n % 10 === 2 ? null : n % 2 === 0 ? n * 7 : `State ${n}`;
      triggerState[key] = value;
      specs.push({
        tag: 'span',
        directive: 'svc-string',
        key,
        modifier: 'svc-state',
        fallback: `state ${n}`,
        expected: value === null ? '' : String(value),
      });
    } else {
      const key = `a${pad(n, 3)}`;
      assets[key] = `/img/${key}.png`;
      specs.push({
        tag: 'img',
        directive: 'svc-src',
        key,
        modifier: null,
        fallback: FALLBACK_SRC,
        expected: assets[key]!,
      });
    }
  }
  function pushString(): void {
    const key = `s${pad(s, 4)}`;
    strings[key] = `Label ${s}: Entrance ${s % 12} → Hall ${String.fromCharCode(65 + (s % 6))}`;
    singleKeys.push(specs.length);
    specs.push({
      tag: 'span',
      directive: 'svc-string',
      key,
      modifier: null,
      fallback: `fallback ${s}`,
      expected: strings[key]!,
    });
    s++;
  }
  return {
    specs,
    manifest: { settings, strings: { default: strings }, assets, triggerState },
    singleKeys,
    sharedElements,
  };
}

/** What an element shows now, in BoundSpec.expected's terms. */
export function shown(el: Element, spec: BoundSpec): string | null {
  return spec.tag === 'img' ? el.getAttribute('src') : el.textContent;
}
