// The files `gatehouse plugin init` writes (docs/plugins.md "Scaffold"): a plugin that installs and builds on
// a fresh machine, its toolkit resolved from this checkout (`gatehouse` as a file: dependency).

export interface ScaffoldInput {
  /** npm package name of the plugin. */
  name: string;
  /** Path from the plugin's folder to this checkout, for `"gatehouse": "file:<path>"`. */
  checkout: string;
  vueVersion: string;
  piniaVersion: string;
}

const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

export function scaffoldFiles(input: ScaffoldInput): Record<string, string> {
  const schema = './node_modules/gatehouse/src/plugins/toolkit/app-manifest.schema.json';
  return {
    'package.json': json({
      name: input.name,
      version: '0.1.0',
      private: true,
      type: 'module',
      scripts: {
        dev: 'gatehouse plugin dev .',
        build: 'gatehouse plugin build .',
      },
      dependencies: { pinia: input.piniaVersion, vue: input.vueVersion },
      devDependencies: { gatehouse: `file:${input.checkout}` },
    }),
    'app-manifest.json': json({
      $schema: schema,
      settings: { venueName: 'My venue', refreshSeconds: 30 },
      strings: { default: { title: 'Access points', empty: 'No access points yet.', load: 'Load access points' } },
      assets: { logo: 'logo.svg' },
      triggerState: { busy: false },
      dependencies: [
        {
          identifier: 'access_points',
          model: 'AccessPoint',
          permissionKey: 'access_points',
          permissions: ['view_access_points'],
          operations: { 'access-points.index': 'get:/v1/projects/{teamSlug}/{projectSlug}/access-points' },
          events: { AccessPointUpdated: 'AccessPointUpdated', AccessPointDeleted: 'AccessPointDeleted' },
        },
      ],
      // Device capabilities the plugin needs (spec: "Manifest top level": camera, bluetooth,
      // notifications); what its token may do over the API is the appliance's to answer.
      permissions: [],
    }),
    'index.html': `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <link rel="icon" href="data:," />
    <title>${input.name}</title>
  </head>
  <body>
    <div id="app"></div>
    <script type="module" src="/src/main.ts"></script>
  </body>
</html>
`,
    'src/main.ts': `import { createPluginApp } from '@gatehouse/plugin-toolkit';
import source from 'virtual:gatehouse/plugin';
import App from './App.vue';

createPluginApp(App, source).app.mount('#app');
`,
    'src/App.vue': `<script setup lang="ts">
import { usePluginStore } from '@gatehouse/plugin-toolkit';
import { ref } from 'vue';

const store = usePluginStore();
const accessPoints = ref<Array<{ id: number; name: string }>>([]);
const error = ref('');

async function load() {
  store.updateState('busy', true);
  try {
    accessPoints.value = await store.callApi('access-points.index', 'access_points');
    error.value = '';
  } catch (err) {
    error.value = (err as Error).message;
  } finally {
    store.updateState('busy', false);
  }
}
</script>

<template>
  <main>
    <img svc-src="logo" src="logo.svg" alt="" width="48" height="48" />
    <p svc-string="venueName" svc-settings>My venue</p>
    <h1 svc-string="title">Access points</h1>
    <button type="button" svc-string="load" @click="load">Load access points</button>
    <p v-if="error" role="alert">{{ error }}</p>
    <ul v-else-if="accessPoints.length">
      <li v-for="point in accessPoints" :key="point.id">{{ point.name }}</li>
    </ul>
    <p v-else svc-string="empty">No access points yet.</p>
  </main>
</template>
`,
    'src/env.d.ts': `/// <reference types="vite/client" />
declare module 'virtual:gatehouse/plugin' {
  import type { PluginSource } from '@gatehouse/plugin-toolkit';
  const source: PluginSource;
  export default source;
}
declare module '*.vue' {
  import type { DefineComponent } from 'vue';
  const component: DefineComponent;
  export default component;
}
`,
    'tsconfig.json': json({
      compilerOptions: {
        target: 'ES2022',
        module: 'ESNext',
        moduleResolution: 'Bundler',
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        paths: { '@gatehouse/plugin-toolkit': ['./node_modules/gatehouse/src/plugins/toolkit/index.ts'] },
      },
      include: ['src'],
    }),
    'public/logo.svg': `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 48 48"><rect width="48" height="48" rx="10" fill="#1d4ed8"/><path d="M14 34V18l10-6 10 6v16H28V24h-8v10z" fill="#fff"/></svg>
`,
    '.gitignore': 'node_modules\ndist\n',
    'README.md': `# ${input.name}

A Gatehouse plugin (docs/plugins.md in the gatehouse checkout).

\`\`\`sh
npm install
npm run dev -- --url http://127.0.0.1:8080 --token "$TOKEN"   # hot reload; Ctrl+Shift+D opens the inspector
npm run build                                                   # static files in dist/
\`\`\`
`,
  };
}
