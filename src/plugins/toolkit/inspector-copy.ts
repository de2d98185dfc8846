// Copying text for the inspector's copy-store button. The async Clipboard API needs a secure context (https or
// localhost) and may be refused; a plugin served over plain http on the venue network has neither, so the old
// selection-and-execCommand way is tried next. False when both fail: the caller shows the text to copy by hand.

function copyBySelection(text: string): boolean {
  if (typeof document.execCommand !== 'function') return false;
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.cssText = 'position: fixed; top: 0; left: 0; width: 1px; height: 1px; opacity: 0;';
  const previous = document.activeElement;
  document.body.append(area);
  area.focus();
  area.select();
  try {
    return document.execCommand('copy');
  } catch {
    return false;
  } finally {
    area.remove();
    if (previous instanceof HTMLElement) previous.focus();
  }
}

export async function copyText(text: string): Promise<boolean> {
  if (typeof navigator !== 'undefined' && typeof navigator.clipboard?.writeText === 'function') {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch {
      // not allowed here (permissions, document not focused): try the selection
    }
  }
  return copyBySelection(text);
}
