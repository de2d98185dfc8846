// One key of one store section in the inspector: its value as a focusable button, and the editor that replaces it
// (spec: "What the service does" 5). Double-click, Enter or F2 opens the editor; in it Enter saves (Shift+Enter is a
// line break), Escape cancels. A refused value keeps the editor open with the reason under the input.
import { defineComponent, h, type PropType, ref, useId, watch } from 'vue';
import { applyEdit, displayValue, editText, parseEdit, sectionHint } from './inspector-values.js';
import { CLASS } from './inspector-styles.js';
import type { PluginStore } from './store.js';
import type { StoreSection } from './types.js';

export const InspectorRow = defineComponent({
  name: 'GatehouseInspectorRow',
  props: {
    store: { type: Object as PropType<PluginStore>, required: true },
    section: { type: String as PropType<StoreSection>, required: true },
    entryKey: { type: String, required: true },
    editing: { type: Boolean, required: true },
  },
  emits: { edit: () => true, done: () => true },
  setup(props, { emit }) {
    const id = useId();
    const text = ref('');
    const error = ref<string | null>(null);
    const button = ref<HTMLButtonElement | null>(null);
    const input = ref<HTMLTextAreaElement | null>(null);
    let returnFocus = false;

    const current = () => props.store[props.section][props.entryKey] ?? null;

    // Before the render that shows the editor: it opens with the current value as text.
    watch(
      () => props.editing,
      (editing) => {
        if (!editing) return;
        text.value = editText(props.section, current());
        error.value = null;
        returnFocus = false;
      },
    );
    // After it ('post': the input or the button is in the DOM by then).
    watch(
      () => props.editing,
      (editing) => {
        if (editing) {
          input.value?.focus();
          input.value?.select();
        } else if (returnFocus) {
          button.value?.focus();
        }
      },
      { flush: 'post' },
    );

    const finish = (): void => {
      returnFocus = true;
      emit('done');
    };
    const save = (): void => {
      const parsed = parseEdit(props.section, text.value);
      const refused = parsed.ok ? applyEdit(props.store, props.section, props.entryKey, parsed.value) : parsed.message;
      if (refused !== null) {
        error.value = refused;
        input.value?.focus();
        return;
      }
      finish();
    };

    const onValueKeydown = (event: KeyboardEvent): void => {
      if (event.key !== 'Enter' && event.key !== 'F2') return;
      event.preventDefault(); // Enter would also click the button
      emit('edit');
    };
    const onInputKeydown = (event: KeyboardEvent): void => {
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        save();
      } else if (event.key === 'Escape') {
        event.preventDefault(); // the panel closes on an Escape nobody handled
        finish();
      }
    };

    return () => {
      const { section, entryKey } = props;
      const keyId = `${id}-key`;
      const rowAttrs = { 'data-section': section, 'data-key': entryKey };
      const value = current();
      const body = props.editing
        ? h('div', { class: `${CLASS}__editor` }, [
            h('textarea', {
              ref: input,
              rows: Math.min(4, text.value.split('\n').length),
              value: text.value,
              spellcheck: false,
              'aria-label': `New value of ${section} ${entryKey}`,
              'aria-invalid': error.value === null ? 'false' : 'true',
              'aria-describedby': error.value === null ? `${id}-hint` : `${id}-error ${id}-hint`,
              'data-testid': 'inspector-input',
              ...rowAttrs,
              onInput: (event: Event) => (text.value = (event.target as HTMLTextAreaElement).value),
              onKeydown: onInputKeydown,
            }),
            error.value === null
              ? null
              : h(
                  'p',
                  { id: `${id}-error`, class: `${CLASS}__error`, role: 'alert', 'data-testid': 'inspector-error' },
                  error.value,
                ),
            h('button', { type: 'button', 'data-testid': 'inspector-save', onClick: save }, 'Save'),
            h('button', { type: 'button', 'data-testid': 'inspector-cancel', onClick: finish }, 'Cancel'),
            h(
              'p',
              { id: `${id}-hint`, class: `${CLASS}__note` },
              `${sectionHint(section)} Enter saves, Escape cancels.`,
            ),
          ])
        : h(
            'button',
            {
              ref: button,
              type: 'button',
              class: `${CLASS}__value`,
              title: 'Double-click, Enter or F2 to edit',
              id: `${id}-value`,
              'aria-labelledby': `${keyId} ${id}-value`, // named "venue "Hall A"": the key, then the value
              'data-testid': 'inspector-value',
              ...rowAttrs,
              onDblclick: () => emit('edit'),
              onKeydown: onValueKeydown,
            },
            displayValue(value),
          );
      return h('li', { class: `${CLASS}__row`, 'data-testid': 'inspector-row', ...rowAttrs }, [
        h('span', { id: keyId, class: `${CLASS}__key` }, entryKey),
        body,
      ]);
    };
  },
});
