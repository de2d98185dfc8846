// The staff console (docs/console.md): a plugin made with our own toolkit. Its strings,
// settings and assets are app-manifest.json's, its data comes through callApi, its live updates
// through the manifest's socket events. It runs on the appliance's origin with a cookie session
// (baseUrl '', no token), so the socket is connected by the session once a project is chosen,
// not by createPluginApp at start (signed out, the appliance would refuse it).
import { createPluginApp } from '@gatehouse/plugin-toolkit';
import source from 'virtual:gatehouse/plugin';
import App from './App.vue';
import { createConsoleRouter } from './router.js';
import { createSession, SESSION } from './session.js';
import './console.css';

const { app, store } = createPluginApp(App, source, { events: false });
const session = createSession(store);
app.provide(SESSION, session);
app.use(createConsoleRouter(session));
app.mount('#app');
