import { createPluginApp } from '@gatehouse/plugin-toolkit';
import source from 'virtual:gatehouse/plugin';
import App from './App.vue';
import './kiosk.css';

createPluginApp(App, source).app.mount('#app');
