// The developer tool's store inspector (docs/plugins.md; contract: "What the service does" 5): a panel
// toggled by Ctrl+Shift+D (Cmd+Shift+D on macOS) listing the four store sections, where a value is edited in place
// (inspector-row.ts; what an edit may be: inspector-values.ts), a trigger-state simulator (inspector-simulator.ts)
// and a copy-store button. Its own small Vue app in its own container, rendering the store it is given, so it
// works next to any plugin app and needs no Pinia of its own.
import {
  type App,
  createApp,
  defineComponent,
  h,
  nextTick,
  onBeforeUnmount,
  onMounted,
  type PropType,
  ref,
  useId,
  watch,
  watchEffect,
} from 'vue';
import { copyText } from './inspector-copy.js';
import { InspectorRow } from './inspector-row.js';
import { InspectorSimulator } from './inspector-simulator.js';
import { CLASS, useInspectorStyles } from './inspector-styles.js';
import { SECTIONS, storeJson } from './inspector-values.js';
import type { PluginStore } from './store.js';
import type { StoreSection } from './types.js';

export interface InspectorOptions {
  /** Show the panel at once; default false (hidden until the shortcut). */
  open?: boolean;
  /** The window side the panel is fixed to; default 'right'. */
  side?: 'left' | 'right';
}

/**
 * Ctrl+Shift+D or Cmd+Shift+D, without Alt (AltGr arrives as Ctrl+Alt). The letter decides when the key gives a
 * Latin letter (Dvorak's D is where QWERTY has H); the physical key D when it gives none (Cyrillic and other layouts).
 */
export function isInspectorShortcut(event: KeyboardEvent): boolean {
  if (!event.shiftKey || event.altKey || !(event.ctrlKey || event.metaKey)) return false;
  const key = event.key ?? '';
  return /^[a-z]$/i.test(key) ? key.toLowerCase() === 'd' : event.code === 'KeyD';
}

const InspectorPanel = defineComponent({
  name: 'GatehouseInspector',
  props: {
    store: { type: Object as PropType<PluginStore>, required: true },
    side: { type: String as PropType<'left' | 'right'>, default: 'right' },
    initiallyOpen: { type: Boolean, default: false },
  },
  setup(props) {
    const id = useId();
    const open = ref(false);
    const editing = ref<{ section: StoreSection; key: string } | null>(null);
    const status = ref('');
    const manualCopy = ref<string | null>(null);
    const dialog = ref<HTMLElement | null>(null);
    const manualCopyArea = ref<HTMLTextAreaElement | null>(null);
    let previousFocus: Element | null = null;

    const show = (): void => {
      previousFocus = document.activeElement;
      open.value = true;
    };
    const hide = (): void => {
      const active = document.activeElement;
      const focusWasHere = active === null || active === document.body || (dialog.value?.contains(active) ?? false);
      open.value = false;
      editing.value = null;
      manualCopy.value = null;
      status.value = '';
      // Back to where the developer was, unless they have moved on to the page meanwhile.
      if (focusWasHere && previousFocus instanceof HTMLElement && previousFocus.isConnected) previousFocus.focus();
      previousFocus = null;
    };

    watch(open, (isOpen) => isOpen && dialog.value?.focus(), { flush: 'post' });
    watch(manualCopyArea, (area) => area?.select(), { flush: 'post' });
    // A hot reload may remove the key being edited.
    watchEffect(() => {
      const edit = editing.value;
      if (edit && !Object.hasOwn(props.store[edit.section], edit.key)) editing.value = null;
    });

    const onWindowKeydown = (event: KeyboardEvent): void => {
      if (!isInspectorShortcut(event)) return;
      event.preventDefault(); // the browser's own Ctrl+Shift+D (bookmark all tabs)
      if (event.repeat) return;
      if (open.value) hide();
      else show();
    };
    onMounted(() => {
      window.addEventListener('keydown', onWindowKeydown, true); // capture: before the plugin's own handlers
      if (props.initiallyOpen) show();
    });
    onBeforeUnmount(() => window.removeEventListener('keydown', onWindowKeydown, true));

    const onDialogKeydown = (event: KeyboardEvent): void => {
      if (event.key !== 'Escape' || event.defaultPrevented) return; // an open editor handles its own Escape
      event.preventDefault();
      hide();
    };

    const copyStore = async (): Promise<void> => {
      const json = storeJson(props.store);
      status.value = '';
      manualCopy.value = null;
      await nextTick(); // the live region changes from empty again: "Copied" is announced on every copy
      if (await copyText(json)) {
        status.value = 'Copied';
      } else {
        status.value = 'Copy failed: the store JSON is selected below, copy it with the keyboard.';
        manualCopy.value = json;
      }
    };

    const sectionView = (section: StoreSection) => {
      const keys = Object.keys(props.store[section]);
      const headingId = `${id}-${section}`;
      const rows = keys.map((key) =>
        h(InspectorRow, {
          key,
          store: props.store,
          section,
          entryKey: key,
          editing: editing.value?.section === section && editing.value.key === key,
          onEdit: () => (editing.value = { section, key }),
          onDone: () => (editing.value = null),
        }),
      );
      return h(
        'section',
        { 'aria-labelledby': headingId, 'data-testid': 'inspector-section', 'data-section': section },
        [
          h('h3', { id: headingId, class: `${CLASS}__heading` }, section),
          rows.length === 0
            ? h('p', { class: `${CLASS}__note` }, 'No keys.')
            : h('ul', { class: `${CLASS}__list` }, rows),
        ],
      );
    };

    return () => {
      if (!open.value) return null;
      return h(
        'div',
        {
          ref: dialog,
          class: [CLASS, `${CLASS}--${props.side}`],
          role: 'dialog',
          'aria-label': 'Store inspector',
          'aria-describedby': `${id}-help`,
          tabindex: -1,
          'data-testid': 'inspector',
          onKeydown: onDialogKeydown,
        },
        [
          h('div', { class: `${CLASS}__header` }, [
            h('h2', { class: `${CLASS}__title` }, 'Store inspector'),
            h('button', { type: 'button', 'data-testid': 'inspector-copy', onClick: copyStore }, 'Copy store'),
            h(
              'button',
              {
                type: 'button',
                'aria-label': 'Close the inspector',
                title: 'Close (Escape)',
                'data-testid': 'inspector-close',
                onClick: hide,
              },
              '×',
            ),
          ]),
          h(
            'p',
            { class: `${CLASS}__status`, role: 'status', 'aria-live': 'polite', 'data-testid': 'inspector-status' },
            status.value,
          ),
          manualCopy.value === null
            ? null
            : h('textarea', {
                ref: manualCopyArea,
                class: `${CLASS}__fallback`,
                readonly: true,
                value: manualCopy.value,
                'aria-label': 'Store JSON',
                'data-testid': 'inspector-copy-fallback',
              }),
          h('div', { class: `${CLASS}__body` }, [
            h(
              'p',
              { id: `${id}-help`, class: `${CLASS}__note` },
              'Double-click a value, or focus it and press Enter or F2, to edit it. Enter saves, Escape cancels.',
            ),
            props.store.loaded
              ? null
              : h('p', { class: `${CLASS}__note` }, 'No manifest loaded yet: bound elements show their fallback.'),
            ...SECTIONS.map(sectionView),
            h(InspectorSimulator, { store: props.store }),
          ]),
        ],
      );
    };
  },
});

/**
 * Mounts the inspector for `store` in a container appended to document.body, hidden until Ctrl+Shift+D /
 * Cmd+Shift+D. Returns the function that removes it: its key listener, its DOM, and its styles when no other
 * inspector uses them.
 */
export function installInspector(store: PluginStore, options: InspectorOptions = {}): () => void {
  if (typeof document === 'undefined') return () => {}; // rendered on a server: nothing to inspect
  const container = document.createElement('div');
  container.setAttribute('data-testid', 'inspector-root');
  document.body.append(container);
  const releaseStyles = useInspectorStyles();
  const app = createApp(InspectorPanel, { store, side: options.side ?? 'right', initiallyOpen: options.open ?? false });
  app.mount(container);

  let installed = true;
  return () => {
    if (!installed) return;
    installed = false;
    app.unmount();
    container.remove();
    releaseStyles();
  };
}

/**
 * The inspector as a createPluginApp setup hook (plugin-app.ts): installed on the dev server only
 * (`source.dev`), removed when the plugin's app unmounts.
 */
export function devInspector(
  options: InspectorOptions = {},
): (app: App, store: PluginStore, source: { dev: boolean }) => void {
  return (app, store, source) => {
    if (source.dev) app.onUnmount(installInspector(store, options));
  };
}
