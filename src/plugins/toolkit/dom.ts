// Binding svc-string / svc-src elements to the plugin store (docs/plugins.md; contract: "Directives",
// rules 1–6). bindElement is the one place these rules live: the Vue plugin (directives.ts) and the plain-DOM
// helpers below (rule 6, for code without Vue) both use it.
//
// What a bound element shows:
// - svc-string replaces the element's textContent (child elements included: the binding owns the content);
//   a number or boolean is shown as String(value), a null trigger state as ''.
// - svc-src sets the `src` attribute; a null trigger state removes it.
// - The text or `src` the element had when first bound is its fallback (rule 2), shown while the manifest is not
//   loaded, the key is undefined in its section (rule 4) or the modifiers are in error (rule 1).
import { type EffectScope, effect, effectScope, getCurrentScope, type ReactiveEffectRunner, stop, toRaw } from 'vue';
import { lookup, type PluginStore, type StoreSections } from './store.js';
import type { StoreSection } from './types.js';

export type SvcDirective = 'svc-string' | 'svc-src';
export const SVC_DIRECTIVES: readonly SvcDirective[] = ['svc-string', 'svc-src'];
export const SVC_MODIFIERS = ['svc-settings', 'svc-assets', 'svc-state'] as const;
export type SvcModifier = (typeof SVC_MODIFIERS)[number];

/** Spec: "Directives" table. A missing entry is a modifier the directive does not take. */
const SOURCE: Record<SvcDirective, Partial<Record<SvcModifier | 'none', StoreSection>>> = {
  'svc-string': {
    none: 'stringsList',
    'svc-settings': 'pluginVars',
    'svc-assets': 'assetList',
    'svc-state': 'triggerState',
  },
  'svc-src': { none: 'assetList', 'svc-state': 'triggerState' },
};

const MISSING = Symbol('missing');
type Shown = string | number | boolean | null;
// The store's own lookup (the fallback rule: store.ts) on its sections, not its get* actions: a Pinia action
// call also runs the $onAction machinery, which thousands of bindings pay for at every render.
// Read from the refs behind the sections (store._sections), not through the store's own proxy.
const READ: Record<StoreSection, (sections: StoreSections, key: string) => Shown | typeof MISSING> = {
  stringsList: (sections, key) => lookup(sections.stringsList.value, key, MISSING),
  pluginVars: (sections, key) => lookup(sections.pluginVars.value, key, MISSING),
  assetList: (sections, key) => lookup(sections.assetList.value, key, MISSING),
  triggerState: (sections, key) => lookup(sections.triggerState.value, key, MISSING),
};

export interface SvcBindingError {
  element: Element;
  directive: SvcDirective;
  message: string;
}

export interface BindOptions {
  /** Called once per element and message when an element's modifiers are in error; console.error is called too. */
  onError?: (error: SvcBindingError) => void;
}

export interface BindElementOptions extends BindOptions {
  /** Where the key comes from; read again by refresh(). Default: the element's `svc-string` / `svc-src` attribute. */
  key?: () => string | null;
}

export interface SvcBinding {
  readonly element: Element;
  readonly directive: SvcDirective;
  /** Reads the key and the modifier attributes again, e.g. after `:svc-string` or a modifier attribute changed. */
  refresh(): void;
  /** Stops updates; the element keeps what it shows. */
  unbind(): void;
}

type Target = { key: string | null; section: StoreSection } | { error: string };

// WeakMaps, one per directive: nothing here keeps a removed element alive.
const fallbacks: Record<SvcDirective, WeakMap<Element, string | null>> = {
  'svc-string': new WeakMap(),
  'svc-src': new WeakMap(),
};
const bindings: Record<SvcDirective, WeakMap<Element, SvcBinding>> = {
  'svc-string': new WeakMap(),
  'svc-src': new WeakMap(),
};
const reported = new WeakMap<Element, Set<string>>();

export function isElement(node: Node): node is Element {
  return node.nodeType === 1;
}

export function isBound(el: Element, directive: SvcDirective): boolean {
  return bindings[directive].has(el);
}

function resolveTarget(el: Element, directive: SvcDirective, key: string | null): Target {
  let modifier: SvcModifier | undefined;
  for (const m of SVC_MODIFIERS) {
    if (!el.hasAttribute(m)) continue;
    if (modifier !== undefined) {
      const all = SVC_MODIFIERS.filter((x) => el.hasAttribute(x));
      return {
        error: `${directive}: modifiers ${all.join(' and ')} exclude each other; use one source modifier per element (spec rule 1)`,
      };
    }
    modifier = m;
  }
  const section = SOURCE[directive][modifier ?? 'none'];
  if (section === undefined)
    return { error: `${directive} does not take the modifier ${modifier} (spec: Directives table)` };
  return { key, section };
}

function sameTarget(a: Target, b: Target): boolean {
  if ('error' in a || 'error' in b) return 'error' in a && 'error' in b && a.error === b.error;
  return a.key === b.key && a.section === b.section;
}

/** `shown`: what the element is known to show now (its fallback,
 * read when first bound), so the DOM need not be asked. */
function show(el: Element, directive: SvcDirective, value: Shown, shown?: string | null): void {
  if (directive === 'svc-string') {
    const text = value === null ? '' : String(value);
    if (shown === text) return;
    const only = el.firstChild;
    // One text node: change its data in place (no new node, no childList mutation for observers to process).
    if (only !== null && only.nodeType === 3 && only.nextSibling === null) {
      if (shown !== undefined || (only as Text).data !== text) (only as Text).data = text;
    } else if (shown !== undefined || el.textContent !== text) el.textContent = text;
  } else if (value === null) {
    el.removeAttribute('src');
  } else if (el.getAttribute('src') !== String(value)) {
    el.setAttribute('src', String(value));
  }
}

function report(el: Element, directive: SvcDirective, message: string, options: BindOptions): void {
  const seen = reported.get(el) ?? new Set<string>();
  reported.set(el, seen);
  if (seen.has(message)) return;
  seen.add(message);
  console.error(`[gatehouse plugin] ${message}`, el);
  options.onError?.({ element: el, directive, message });
}

/**
 * Binds one element to the store: it shows its value now and follows it reactively (rule 5) until unbind().
 * Binding an element again for the same directive replaces the earlier binding (one effect per element and
 * directive); the fallback captured by the first binding is kept.
 *
 * Thousands of elements are bound at a page's first render (bench:plugin), so this is kept lean: one
 * synchronous effect per element that reads only the key it shows (an element shows a new value as soon as
 * the store has it), the target in a plain variable that refresh() changes and re-runs the effect for.
 */
export function bindElement(
  el: Element,
  directive: SvcDirective,
  store: PluginStore,
  options: BindElementOptions = {},
): SvcBinding {
  bindings[directive].get(el)?.unbind();
  const known = fallbacks[directive];
  let fallback = known.get(el);
  const firstTime = fallback === undefined;
  if (fallback === undefined) {
    fallback = directive === 'svc-string' ? (el.textContent ?? '') : el.getAttribute('src');
    known.set(el, fallback);
  }
  // Bound for the first time, the element shows its fallback, just read; bound again, it may show anything.
  const binding = new Binding(el, directive, store, options, fallback, firstTime ? fallback : undefined);
  bindings[directive].set(el, binding);
  return binding;
}

/** One bound element: a class, so each of thousands costs one object and one closure (its effect's). */
class Binding implements SvcBinding {
  #target: Target;
  #errorShown = false;
  #shown: string | null | undefined;
  readonly #sections: StoreSections;
  readonly #runner: ReactiveEffectRunner;
  readonly #scope: EffectScope | null;

  constructor(
    readonly element: Element,
    readonly directive: SvcDirective,
    store: PluginStore,
    private readonly options: BindElementOptions,
    private readonly fallback: string | null,
    /** What the element is known to show at binding, if known. */
    shownNow: string | null | undefined,
  ) {
    this.#shown = shownNow;
    this.#sections = toRaw(store)._sections; // past the proxy: its get would pass the object through reactive() on every binding
    this.#target = resolveTarget(element, directive, this.#key());
    if ('error' in this.#target) this.#applyError(this.#target);
    // Detached from whatever scope is active now (a component's, say): the effect lives until unbind().
    this.#scope = getCurrentScope() ? effectScope(true) : null;
    const render = () => this.#render();
    this.#runner = this.#scope ? this.#scope.run(() => effect(render))! : effect(render);
  }

  #key(): string | null {
    return this.options.key ? this.options.key() : this.element.getAttribute(this.directive);
  }

  #render(): void {
    const t = this.#target;
    const sections = this.#sections;
    const value = 'error' in t || t.key === null || !sections.loaded.value ? MISSING : READ[t.section](sections, t.key);
    // Known on the first run of a first binding only; later the DOM is asked (someone else may have written).
    show(this.element, this.directive, value === MISSING ? this.fallback : value, this.#shown);
    this.#shown = undefined;
  }

  #applyError(next: Target): void {
    if ('error' in next) {
      this.element.setAttribute('data-svc-error', next.error);
      this.#errorShown = true;
      report(this.element, this.directive, next.error, this.options);
    } else if (this.#errorShown) {
      this.element.removeAttribute('data-svc-error');
      this.#errorShown = false;
    }
  }

  refresh(): void {
    const next = resolveTarget(this.element, this.directive, this.#key());
    if (sameTarget(next, this.#target)) return;
    this.#target = next;
    this.#applyError(next);
    this.#runner(); // reads the new key (and stops depending on the old one)
  }

  unbind(): void {
    stop(this.#runner);
    this.#scope?.stop();
    if (bindings[this.directive].get(this.element) === this) bindings[this.directive].delete(this.element);
  }
}

/** `container` itself (when it is an element) and its descendants that carry the directive attribute. */
export function elementsWith(container: ParentNode, directive: SvcDirective): Element[] {
  const found = [...container.querySelectorAll(`[${directive}]`)];
  if (isElement(container) && container.hasAttribute(directive)) found.unshift(container);
  return found;
}

function processAll(
  container: ParentNode,
  directive: SvcDirective,
  store: PluginStore,
  options: BindOptions,
): () => void {
  const made = elementsWith(container, directive)
    .filter((el) => !isBound(el, directive))
    .map((el) => bindElement(el, directive, store, options));
  return () => {
    for (const binding of made) binding.unbind();
  };
}

/**
 * Binds every `svc-string` element in `container` that is not bound yet, with the key its attribute has now
 * (spec rule 6). Elements added later need another call. Returns a function that stops these bindings.
 */
export function processSvcStrings(container: ParentNode, store: PluginStore, options: BindOptions = {}): () => void {
  return processAll(container, 'svc-string', store, options);
}

/** As processSvcStrings, for `svc-src` elements. */
export function processSvcSrcs(container: ParentNode, store: PluginStore, options: BindOptions = {}): () => void {
  return processAll(container, 'svc-src', store, options);
}

export function hasSvcString(el: Element): boolean {
  return el.hasAttribute('svc-string');
}

/** The element's `svc-string` key, or null when it has no such attribute. */
export function getSvcStringKey(el: Element): string | null {
  return el.getAttribute('svc-string');
}
