/// <reference types="vite/client" />
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
