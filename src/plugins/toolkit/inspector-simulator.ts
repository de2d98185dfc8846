// The inspector's trigger-state simulator: one control per triggerState key, fitting the kind of its value, each
// change applied at once through applyEdit (updateState). A key whose value is null keeps the control of the kind
// it last had; a key that has only ever been null gets a text input (other kinds: edit it as JSON in the list).
import { defineComponent, h, type PropType, ref, useId } from 'vue';
import { CLASS } from './inspector-styles.js';
import { applyEdit, type StoreValue } from './inspector-values.js';
import type { PluginStore } from './store.js';

type Kind = 'boolean' | 'number' | 'string';

const SimulatorRow = defineComponent({
  name: 'GatehouseInspectorSimulatorRow',
  props: {
    store: { type: Object as PropType<PluginStore>, required: true },
    entryKey: { type: String, required: true },
  },
  setup(props) {
    const id = useId();
    const invalid = ref(false);
    let kind: Kind = 'string';
    const apply = (value: StoreValue): void => {
      applyEdit(props.store, 'triggerState', props.entryKey, value); // the controls only produce allowed values
    };

    const onNumberInput = (event: Event): void => {
      const raw = (event.target as HTMLInputElement).value.trim();
      const number = Number(raw);
      invalid.value = raw === '' || !Number.isFinite(number); // "-" or "1e" while typing: not applied yet
      if (!invalid.value) apply(number);
    };
    const onNumberBlur = (event: Event): void => {
      invalid.value = false;
      const value = props.store.triggerState[props.entryKey];
      (event.target as HTMLInputElement).value = typeof value === 'number' ? String(value) : '';
    };

    const control = (value: StoreValue) => {
      const common = { id, 'data-testid': 'inspector-sim-control', 'data-key': props.entryKey, 'data-kind': kind };
      if (kind === 'boolean') {
        return h('input', {
          ...common,
          type: 'checkbox',
          role: 'switch',
          checked: value === true,
          onChange: (event: Event) => apply((event.target as HTMLInputElement).checked),
        });
      }
      if (kind === 'number') {
        return h('input', {
          ...common,
          type: 'number',
          step: 'any',
          value: typeof value === 'number' ? value : '',
          placeholder: value === null ? 'null' : undefined,
          'aria-invalid': invalid.value ? 'true' : 'false',
          onInput: onNumberInput,
          onBlur: onNumberBlur,
        });
      }
      return h('input', {
        ...common,
        type: 'text',
        value: typeof value === 'string' ? value : '',
        placeholder: value === null ? 'null' : undefined,
        spellcheck: false,
        onInput: (event: Event) => apply((event.target as HTMLInputElement).value),
      });
    };

    return () => {
      const value = props.store.triggerState[props.entryKey] ?? null;
      if (value !== null) kind = typeof value as Kind;
      return h('li', { class: `${CLASS}__sim-row`, 'data-testid': 'inspector-sim-row', 'data-key': props.entryKey }, [
        h('label', { for: id }, props.entryKey),
        control(value),
        h(
          'button',
          {
            type: 'button',
            'aria-pressed': value === null ? 'true' : 'false',
            'aria-label': `Set ${props.entryKey} to null`,
            'data-testid': 'inspector-sim-null',
            'data-key': props.entryKey,
            onClick: () => apply(null),
          },
          'null',
        ),
      ]);
    };
  },
});

export const InspectorSimulator = defineComponent({
  name: 'GatehouseInspectorSimulator',
  props: { store: { type: Object as PropType<PluginStore>, required: true } },
  setup(props) {
    const headingId = useId();
    return () => {
      const keys = Object.keys(props.store.triggerState);
      return h('section', { 'aria-labelledby': headingId, 'data-testid': 'inspector-simulator' }, [
        h('h3', { id: headingId, class: `${CLASS}__heading` }, 'Simulate trigger state'),
        keys.length === 0
          ? h('p', { class: `${CLASS}__note` }, 'No triggerState keys.')
          : h(
              'ul',
              { class: `${CLASS}__list` },
              keys.map((key) => h(SimulatorRow, { key, store: props.store, entryKey: key })),
            ),
      ]);
    };
  },
});
