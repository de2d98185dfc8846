// The Vue side of the string-binding toolkit (docs/plugins.md; contract: "Directives"): the directive form
// `v-svc-string="'key'"` / `v-svc-src="'key'"`, and the preferred attribute form `svc-string="key"` (also
// `:svc-string="expr"`, which Vue renders as an attribute) anywhere inside the app's root. The rules themselves
// are in dom.ts (bindElement).
import type { App, Directive } from 'vue';
import {
  type BindOptions,
  bindElement,
  elementsWith,
  isBound,
  isElement,
  SVC_DIRECTIVES,
  SVC_MODIFIERS,
  type SvcBinding,
  type SvcDirective,
} from './dom.js';
import { type PluginStore, usePluginStore } from './store.js';

export interface SvcToolkitOptions extends BindOptions {
  /** The store to bind to; default: usePluginStore() of the app's Pinia, resolved when first needed. */
  store?: PluginStore;
}

function toKey(value: unknown): string | null {
  return value === null || value === undefined ? null : String(value);
}

function directiveFor(
  directive: SvcDirective,
  store: () => PluginStore,
  options: BindOptions,
): Directive<Element, unknown> {
  const bound = new WeakMap<Element, { setKey(key: string | null): void; binding: SvcBinding }>();
  return {
    mounted(el, { value }) {
      let key = toKey(value);
      const binding = bindElement(el, directive, store(), { ...options, key: () => key });
      bound.set(el, { setKey: (next) => (key = next), binding });
    },
    // Runs on every re-render of the element: picks up a new key and changed modifier attributes.
    updated(el, { value }) {
      const entry = bound.get(el);
      if (!entry) return;
      entry.setKey(toKey(value));
      entry.binding.refresh();
    },
    unmounted(el) {
      bound.get(el)?.binding.unbind();
      bound.delete(el);
    },
  };
}

/**
 * Binds the attribute form inside `root`: the elements there now, those added later, and key or modifier
 * attribute changes (MutationObserver). Elements removed from `root` are unbound. Returns the stop function.
 */
function observeRoot(root: ParentNode, store: PluginStore, options: BindOptions): () => void {
  const owned: Record<SvcDirective, Map<Element, SvcBinding>> = { 'svc-string': new Map(), 'svc-src': new Map() };

  // `found`: the element came from a query inside root (no need to ask root whether it holds it).
  const bind = (el: Element, directive: SvcDirective, found = false): void => {
    if (isBound(el, directive) || !(found || root.contains(el))) return; // bound by v-svc-* or a plain-DOM helper: theirs
    owned[directive].set(el, bindElement(el, directive, store, options));
  };
  const release = (el: Element, directive: SvcDirective): void => {
    owned[directive].get(el)?.unbind();
    owned[directive].delete(el);
  };
  const scan = (node: Node): void => {
    if (!isElement(node)) return;
    for (const directive of SVC_DIRECTIVES) for (const el of elementsWith(node, directive)) bind(el, directive, true);
  };
  const attributeChanged = (el: Element, name: string): void => {
    const directive = SVC_DIRECTIVES.find((d) => d === name);
    if (directive === undefined) {
      for (const d of SVC_DIRECTIVES) owned[d].get(el)?.refresh(); // a modifier
      return;
    }
    const binding = owned[directive].get(el);
    if (el.hasAttribute(directive)) {
      if (binding) binding.refresh();
      else bind(el, directive);
    } else if (binding) {
      binding.refresh(); // no key: shows the fallback
      release(el, directive);
    }
  };

  const observer = new MutationObserver((records) => {
    let removedElements = false;
    for (const record of records) {
      if (record.type === 'attributes' && record.attributeName !== null && isElement(record.target)) {
        attributeChanged(record.target, record.attributeName);
      } else if (record.type === 'childList') {
        removedElements ||= [...record.removedNodes].some(isElement);
        record.addedNodes.forEach(scan);
      }
    }
    if (!removedElements) return;
    for (const directive of SVC_DIRECTIVES) {
      for (const el of [...owned[directive].keys()]) if (!root.contains(el)) release(el, directive);
    }
  });
  observer.observe(root, {
    childList: true,
    subtree: true,
    attributes: true,
    attributeFilter: [...SVC_DIRECTIVES, ...SVC_MODIFIERS],
  });
  scan(root as Node);
  observer.takeRecords(); // the records of the text the first scan's bindings just wrote: nothing to do for them

  return () => {
    observer.disconnect();
    for (const directive of SVC_DIRECTIVES) for (const el of [...owned[directive].keys()]) release(el, directive);
  };
}

/** Vue plugin: `app.use(createPinia()).use(svcToolkit, { onError })`. Pinia may be installed before or after. */
export const svcToolkit = {
  install(app: App, options: SvcToolkitOptions = {}): void {
    const { store: given, ...bindOptions } = options;
    let resolved = given;
    const store = (): PluginStore => (resolved ??= app.runWithContext(() => usePluginStore()));

    for (const directive of SVC_DIRECTIVES) app.directive(directive, directiveFor(directive, store, bindOptions));

    // The attribute form needs the app's root, known only once the app mounts.
    const mount = app.mount;
    app.mount = ((container, ...rest) => {
      const instance = mount(container, ...rest);
      const root: ParentNode | null = typeof container === 'string' ? document.querySelector(container) : container;
      if (root) app.onUnmount(observeRoot(root, store(), bindOptions));
      return instance;
    }) as App['mount'];
  },
};
