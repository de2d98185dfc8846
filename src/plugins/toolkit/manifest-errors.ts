// The page's own notice of an invalid app-manifest.json (docs/plugins.md): while the manifest on
// disk is invalid the plugin keeps running on the last good one and this says why, path by path,
// until an edit makes it valid again. Plain DOM, outside the plugin's Vue app, so a broken plugin
// template cannot hide it.
import type { ManifestError } from './manifest.js';

const ID = 'gatehouse-manifest-errors';

/** Shows `errors` at the top of the page, or removes the notice when there are none. */
export function showManifestErrors(errors: readonly ManifestError[], doc: Document = document): void {
  let box = doc.getElementById(ID);
  if (errors.length === 0) {
    box?.remove();
    return;
  }
  if (!box) {
    box = doc.createElement('section');
    box.id = ID;
    box.dataset.testid = ID;
    box.setAttribute('role', 'alert');
    box.setAttribute(
      'style',
      'position:fixed;top:0;left:0;right:0;z-index:2147483646;margin:0;padding:12px 16px;background:#7f1d1d;color:#fff;font:14px/1.4 system-ui,sans-serif;max-height:40vh;overflow:auto',
    );
    doc.body.prepend(box);
  }
  const heading = doc.createElement('strong');
  heading.textContent = 'app-manifest.json is not valid; the plugin keeps its last good manifest until it is fixed:';
  const list = doc.createElement('ul');
  list.setAttribute('style', 'margin:6px 0 0;padding-left:20px');
  for (const error of errors) {
    const item = doc.createElement('li');
    const path = doc.createElement('code');
    path.textContent = error.path;
    item.append(path, `: ${error.message}`);
    list.append(item);
  }
  box.replaceChildren(heading, list);
}
