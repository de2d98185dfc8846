// History routing (docs/console.md "Decisions"): clean paths the appliance answers with index.html
// (http/console-files.ts), so a page can be reloaded or bookmarked, and sign-in can carry the page
// to come back to as `?redirect=`. Every page but sign-in needs a session.
import { createRouter, createWebHistory, type RouteLocationNormalized } from 'vue-router';
import { safeRedirect } from './redirect.js';
import type { Session } from './session.js';

export { safeRedirect };

export function createConsoleRouter(session: Session) {
  const router = createRouter({
    history: createWebHistory('/'),
    routes: [
      { path: '/', redirect: '/doors' },
      {
        path: '/signin',
        name: 'signin',
        component: () => import('./views/SignIn.vue'),
        meta: { public: true, title: 'Sign in' },
      },
      {
        path: '/doors',
        name: 'doors',
        component: () => import('./views/LiveDoors.vue'),
        meta: { title: 'Live doors' },
      },
      { path: '/devices', name: 'devices', component: () => import('./views/Devices.vue'), meta: { title: 'Devices' } },
      { path: '/sync', name: 'sync', component: () => import('./views/Sync.vue'), meta: { title: 'Sync' } },
      {
        path: '/webhooks',
        name: 'webhooks',
        component: () => import('./views/Webhooks.vue'),
        meta: { title: 'Webhooks' },
      },
      { path: '/access', name: 'access', component: () => import('./views/Access.vue'), meta: { title: 'Access' } },
      {
        path: '/analytics',
        name: 'analytics',
        component: () => import('./views/Analytics.vue'),
        meta: { title: 'Analytics' },
      },
      {
        path: '/settings/tokens',
        name: 'tokens',
        component: () => import('./views/ApiTokens.vue'),
        meta: { title: 'API tokens' },
      },
      {
        path: '/:rest(.*)*',
        name: 'not-found',
        component: () => import('./views/NotFound.vue'),
        meta: { title: 'Page not found' },
      },
    ],
  });

  router.beforeEach(async (to: RouteLocationNormalized) => {
    const signedIn = await session.restore().catch(() => false);
    if (to.name === 'signin') return signedIn ? safeRedirect(to.query.redirect) : true;
    if (!signedIn) return { name: 'signin', query: { redirect: to.fullPath } };
    return true;
  });
  router.afterEach((to) => {
    document.title = `${String(to.meta.title ?? 'Console')} · Gatehouse`;
  });
  // The session ended on the appliance: sign in again, then back to this page.
  session.setOnEnded(() => {
    const here = router.currentRoute.value;
    if (here.name !== 'signin') void router.push({ name: 'signin', query: { redirect: here.fullPath } });
  });
  return router;
}
