// The attribute form bound as Vue renders it (docs/plugins.md "Directives"; docs/performance.md "Plugin toolkit").
// Binding after the mount means reading each element's key, modifiers and text back from the DOM and writing
// its value over the text Vue has just put there: at a first render of thousands of elements that costs more
// than Vue's own render of them. Here a global mixin wraps each component's render function: an element vnode
// with `svc-string` / `svc-src` gets the store's value as its text (or src) before Vue creates the element, and
// once the component is mounted or updated, its element is bound with what the render knew (dom.ts,
// bindRendered): one effect, no DOM read, no second write. The rules stay dom.ts's.
//
// Only what a render makes anew is changed: a vnode Vue reuses (cached static content, v-once, v-memo) is left
// as it is, and so are elements whose text is not a plain string (child elements), with innerHTML or
// textContent props, in a Teleport or Suspense, or rendered by functional components. The attribute-form
// scan (directives.ts) binds those after the mount, as before, and skips the elements bound here.
import {
  type ComponentInternalInstance,
  type ComponentPublicInstance,
  effectScope,
  toRaw,
  type VNode,
  type VNodeArrayChildren,
  type VNodeChild,
} from 'vue';
import { type RenderedElement, resolveTarget, type SvcDirective, type SvcModifier, type Target } from './dom.js';
import { lookup, type StoreSections } from './store.js';
import type { StoreSection } from './types.js';

// Vue's ShapeFlags and PatchFlags (@vue/shared), as the renderer reads them.
const ELEMENT = 1;
const COMPONENT = 2 | 4; // functional, stateful
const TELEPORT = 64;
const SUSPENSE = 128;
const TEXT_CHILDREN = 8;
const ARRAY_CHILDREN = 16;
const CACHED = -1;

const MISSING = Symbol('missing');

/** An element vnode of the last render, and what binding its element needs. */
export interface RenderedVNode extends RenderedElement {
  vnode: VNode;
  directive: SvcDirective;
}

type RenderFn = (this: unknown, ...args: unknown[]) => VNodeChild;
const WRAPPED = Symbol('svc-render');
const PENDING = Symbol('svc-pending');
/** On a component vnode inside a Teleport, and on the instances rendered from it: not the root's content. */
const TELEPORTED = Symbol('svc-teleported');
type Instance = ComponentInternalInstance & {
  render: (RenderFn & { [WRAPPED]?: true }) | null;
  [PENDING]?: RenderedVNode[];
  [TELEPORTED]?: boolean;
};

/** What the mixin needs of the toolkit: the store's section refs, and how to bind an element. */
export interface RenderBinder {
  sections(): StoreSections;
  /** Whether the node is inside the app's root (a component's first node: one question per component). */
  inRoot(node: Node): boolean;
  /** The directive form's definition, if this element uses it: then its binding is the directive's. */
  isDirective(dir: unknown, directive: SvcDirective): boolean;
  bind(el: Element, rendered: RenderedVNode): void;
}

/** The global mixin (svcToolkit installs it; a mixin needs Vue's options API, which plugins' builds keep). */
export function renderBindingsMixin(binder: RenderBinder) {
  return {
    beforeCreate(this: ComponentPublicInstance) {
      const instance = this.$ as Instance;
      const parent = instance.parent as Instance | null;
      instance[TELEPORTED] = (instance.vnode as { [TELEPORTED]?: true })[TELEPORTED] === true || !!parent?.[TELEPORTED];
      const render = instance.render;
      if (!render || render[WRAPPED]) return;
      const wrapped = function (this: unknown, ...args: unknown[]): VNodeChild {
        const tree = render.apply(this, args);
        if (instance[TELEPORTED]) return tree; // the root's observer binds it if the Teleport's target is inside
        const found: RenderedVNode[] = [];
        prepare(tree, binder, rawSections(binder.sections()), found);
        if (found.length > 0) instance[PENDING] = found;
        return tree;
      } as RenderFn & { [WRAPPED]?: true };
      wrapped[WRAPPED] = true;
      instance.render = wrapped;
    },
    mounted(this: ComponentPublicInstance) {
      bindPending(this.$ as Instance, binder);
    },
    updated(this: ComponentPublicInstance) {
      bindPending(this.$ as Instance, binder);
    },
  };
}

function bindPending(instance: Instance, binder: RenderBinder): void {
  const found = instance[PENDING];
  if (!found) return;
  instance[PENDING] = undefined;
  const first = instance.subTree.el as Node | null;
  if (first === null || !binder.inRoot(first)) return;
  // Out of the component's scope (the hook runs in it), in one throwaway detached scope: each binding's effect
  // lives until its unbind(), and nothing keeps this scope once the batch is made.
  effectScope(true).run(() => {
    for (const rendered of found) {
      const el = rendered.vnode.el as Node | null;
      if (el !== null && el.nodeType === 1) binder.bind(el as Element, rendered);
    }
  });
}

function prepare(
  node: VNodeChild | VNodeArrayChildren,
  binder: RenderBinder,
  sections: RawSections,
  found: RenderedVNode[],
): void {
  if (Array.isArray(node)) {
    for (const child of node) prepare(child, binder, sections, found);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const vnode = node as VNode & { memo?: unknown };
  // Reused as it is (cached, v-once, v-memo): changing it would change every later render's copy too.
  if (vnode.el !== null || vnode.patchFlag === CACHED || vnode.memo !== undefined) return;
  const flags = vnode.shapeFlag;
  if (flags & (COMPONENT | SUSPENSE)) return; // a component binds its own render's elements
  if (flags & TELEPORT) {
    markTeleported(vnode.children);
    return;
  }
  if (flags & ELEMENT && vnode.props !== null) {
    const props = vnode.props as Record<string, unknown>;
    if (props['svc-string'] != null) prepareString(vnode, props, binder, sections, found);
    if (props['svc-src'] != null) prepareSrc(vnode, props, binder, sections, found);
  }
  if (flags & ARRAY_CHILDREN) prepare(vnode.children as VNodeArrayChildren, binder, sections, found);
}

/** Marks the component vnodes of a Teleport's content: their renders leave the attribute form alone. */
function markTeleported(node: VNode['children'] | VNodeChild): void {
  if (Array.isArray(node)) {
    for (const child of node) markTeleported(child);
    return;
  }
  if (node === null || typeof node !== 'object' || !('shapeFlag' in node)) return;
  const vnode = node as VNode & { [TELEPORTED]?: true };
  if (vnode.shapeFlag & COMPONENT) vnode[TELEPORTED] = true;
  else if (vnode.shapeFlag & ARRAY_CHILDREN) markTeleported(vnode.children);
}

function targetOf(props: Record<string, unknown>, directive: SvcDirective): Target {
  // Vue sets a prop that is no DOM property as an attribute, and removes it for null or undefined.
  return resolveTarget(directive, String(props[directive]), (m: SvcModifier) => props[m] != null);
}

/** The sections' raw objects, null while no manifest is loaded. Raw: the component's render must not depend on
 * the keys its elements show (each element's binding follows its own). */
type RawSections = Record<StoreSection, Record<string, unknown>> | null;

function rawSections(sections: StoreSections): RawSections {
  if (!sections.loaded.value) return null;
  return {
    stringsList: toRaw(sections.stringsList.value),
    pluginVars: toRaw(sections.pluginVars.value),
    assetList: toRaw(sections.assetList.value),
    triggerState: toRaw(sections.triggerState.value),
  };
}

function storeValue(target: Target, sections: RawSections): unknown {
  if (sections === null || 'error' in target || target.key === null) return MISSING;
  return lookup(sections[target.section], target.key, MISSING);
}

function usesDirective(vnode: VNode, binder: RenderBinder, directive: SvcDirective): boolean {
  return vnode.dirs?.some((binding) => binder.isDirective(binding.dir, directive)) === true;
}

function prepareString(
  vnode: VNode,
  props: Record<string, unknown>,
  binder: RenderBinder,
  sections: RawSections,
  found: RenderedVNode[],
): void {
  const children = vnode.children;
  if (!(children === null || typeof children === 'string') || 'innerHTML' in props || 'textContent' in props) return;
  if (usesDirective(vnode, binder, 'svc-string')) return;
  const target = targetOf(props, 'svc-string');
  const fallback = children ?? '';
  const value = storeValue(target, sections);
  let shown = fallback;
  if (value !== MISSING) {
    shown = value === null ? '' : String(value);
    vnode.children = shown;
    vnode.shapeFlag |= TEXT_CHILDREN;
  }
  found.push({ vnode, directive: 'svc-string', target, fallback, shown });
}

function prepareSrc(
  vnode: VNode,
  props: Record<string, unknown>,
  binder: RenderBinder,
  sections: RawSections,
  found: RenderedVNode[],
): void {
  if ('^src' in props || '.src' in props || usesDirective(vnode, binder, 'svc-src')) return;
  const target = targetOf(props, 'svc-src');
  // Vue sets src as the DOM property, which leaves no attribute for '' or null.
  const given = props.src;
  const fallback = given === null || given === undefined || given === '' ? null : String(given);
  const value = storeValue(target, sections);
  let shown = fallback;
  // '' and null are the binding's to show (src="" and no src): as the DOM property Vue would drop both.
  if (value !== MISSING && value !== null && value !== '') {
    shown = String(value);
    vnode.props = { ...props, src: shown }; // a copy: the props object may be a compiled template's constant
  }
  found.push({ vnode, directive: 'svc-src', target, fallback, shown });
}
