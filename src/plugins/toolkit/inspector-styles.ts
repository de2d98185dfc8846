// The store inspector's styles: one <style> element for every installed panel, every rule under the
// `gh-inspector` class prefix. The root resets what it would inherit from the plugin's page (`all: initial`) and
// the panel's own rules are more specific than a plugin's element selectors, so neither side restyles the other.

export const CLASS = 'gh-inspector';

const CSS = `
.${CLASS} {
  all: initial;
  position: fixed; top: 0; bottom: 0; z-index: 2147483000;
  display: flex; flex-direction: column;
  width: min(380px, 100vw); box-sizing: border-box;
  background: #1e1f24; color: #e8e8ec; border: 1px solid #4a4c57;
  font: 13px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
  box-shadow: 0 0 24px rgba(0, 0, 0, 0.45);
}
.${CLASS}--right { right: 0; }
.${CLASS}--left { left: 0; }
.${CLASS} * { box-sizing: border-box; font: inherit; color: inherit; letter-spacing: normal; text-transform: none; }
.${CLASS}__header { display: flex; align-items: center; gap: 6px; padding: 8px 10px; border-bottom: 1px solid #4a4c57; }
.${CLASS} .${CLASS}__title { flex: 1; margin: 0; font-size: 14px; font-weight: 600; }
.${CLASS}__body { flex: 1; overflow-y: auto; padding: 4px 10px 12px; }
.${CLASS} .${CLASS}__heading { margin: 12px 0 4px; font-size: 12px; font-weight: 600; color: #a9b4ff; font-family: ui-monospace, Menlo, Consolas, monospace; }
.${CLASS} .${CLASS}__note { margin: 4px 0; color: #b4b6c2; font-size: 12px; }
.${CLASS} .${CLASS}__list { list-style: none; margin: 0; padding: 0; }
.${CLASS} .${CLASS}__row { display: flex; flex-wrap: wrap; align-items: baseline; gap: 2px 8px; padding: 2px 0; margin: 0; }
.${CLASS} .${CLASS}__key { flex: 0 1 auto; min-width: 6em; color: #d6d8e4; font-family: ui-monospace, Menlo, Consolas, monospace; overflow-wrap: anywhere; }
.${CLASS} button, .${CLASS} input, .${CLASS} textarea {
  margin: 0; border: 1px solid #5b5e6b; border-radius: 4px; background: #2a2c33; color: #e8e8ec; padding: 2px 6px;
}
.${CLASS} button { cursor: pointer; }
.${CLASS} button:hover { background: #363945; }
.${CLASS} .${CLASS}__value {
  flex: 1 1 8em; text-align: left; border-color: transparent; background: transparent; color: #9fe0b4;
  font-family: ui-monospace, Menlo, Consolas, monospace; white-space: pre-wrap; overflow-wrap: anywhere;
}
.${CLASS} .${CLASS}__editor { flex: 1 1 100%; display: flex; flex-wrap: wrap; gap: 4px; }
.${CLASS} .${CLASS}__editor textarea { flex: 1 1 100%; min-height: 2.2em; resize: vertical; font-family: ui-monospace, Menlo, Consolas, monospace; }
.${CLASS} [aria-invalid="true"] { border-color: #ff8080; }
.${CLASS} .${CLASS}__error { flex: 1 1 100%; margin: 0; color: #ffb0b0; }
.${CLASS} .${CLASS}__status { margin: 0; padding: 0 10px; min-height: 1.45em; color: #9fe0b4; }
.${CLASS} .${CLASS}__fallback { display: block; width: calc(100% - 20px); height: 8em; margin: 4px 10px; font-family: ui-monospace, Menlo, Consolas, monospace; }
.${CLASS} .${CLASS}__sim-row { display: flex; align-items: center; gap: 6px; padding: 2px 0; margin: 0; }
.${CLASS} .${CLASS}__sim-row label { flex: 0 1 auto; min-width: 6em; font-family: ui-monospace, Menlo, Consolas, monospace; overflow-wrap: anywhere; }
.${CLASS} .${CLASS}__sim-row input[type="text"], .${CLASS} .${CLASS}__sim-row input[type="number"] { flex: 1; min-width: 0; }
.${CLASS} button[aria-pressed="true"] { background: #4b4f8f; border-color: #a9b4ff; }
.${CLASS}:focus-visible { outline: 2px solid #a9b4ff; outline-offset: -2px; }
.${CLASS} *:focus-visible { outline: 2px solid #ffd36b; outline-offset: 1px; }
@media (prefers-reduced-motion: no-preference) { .${CLASS} button { transition: background 0.1s; } }
`;

let users = 0;
let element: HTMLStyleElement | null = null;

/** Adds the stylesheet on first use; the returned function removes it when the last panel is uninstalled. */
export function useInspectorStyles(): () => void {
  users++;
  if (element === null) {
    element = document.createElement('style');
    element.setAttribute('data-gatehouse-inspector', '');
    element.textContent = CSS;
    document.head.append(element);
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    users--;
    if (users === 0) {
      element?.remove();
      element = null;
    }
  };
}
