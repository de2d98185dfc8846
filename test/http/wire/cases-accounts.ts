import { ADMIN_EMAIL, ADMIN_PASSWORD, createUser } from '../../helpers/appliance.js';
import { c, unique, type Venue } from './fixtures.js';
import { A, PUSHER_ENV, type Case, type World } from './world.js';

// Operations, authentication, accounts and settings, and the real-time routes (channel auth,
// the signed Pusher HTTP API).

const channel = 'private-dashboard.project.default.access';

export function accountCases(w: World, v: Venue): Case[] {
  const login = (password: string) => async () =>
    w.send({
      method: 'POST',
      path: '/api/v1/auth/session',
      json: { email: ADMIN_EMAIL, password },
      headers: await w.browser(false),
    });
  const user = async () => (await createUser(w.gh, w.admin, `user${unique()}@example.test`)).id;
  return [
    c('health.show', 200, 'alive', () => w.send({ method: 'GET', path: '/health' })),
    c('ready.show', 200, 'started', () => w.send({ method: 'GET', path: '/ready' })),
    c('metrics.show', 200, 'a scrape', () => w.send({ method: 'GET', path: '/metrics' })),
    c('openapi.show', 200, 'the document', () => w.send({ method: 'GET', path: '/api/v1/openapi.json' })),
    c('asyncapi.show', 200, 'the document', () => w.send({ method: 'GET', path: '/api/v1/asyncapi.json' })),

    c('auth.token.store', 201, 'a right password', () =>
      w.send({
        method: 'POST',
        path: '/api/v1/auth/token',
        json: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD, device_name: 'wire' },
      }),
    ),
    c('auth.token.store', 401, 'a wrong password', () =>
      w.send({
        method: 'POST',
        path: '/api/v1/auth/token',
        json: { email: ADMIN_EMAIL, password: 'wrong password', device_name: 'wire' },
      }),
    ),
    c('auth.token.store', 401, 'no body at all (spec: Authentication item 3)', () =>
      w.send({ method: 'POST', path: '/api/v1/auth/token' }),
    ),
    c('auth.token.destroy', 200, 'the token in use', async () =>
      w.send({ method: 'DELETE', path: '/api/v1/auth/token', token: await w.gh.token() }),
    ),
    c('auth.token.destroy', 400, 'a cookie session', async () =>
      w.send({ method: 'DELETE', path: '/api/v1/auth/token', headers: await w.browser(true) }),
    ),
    c('auth.tokens.destroy', 200, "every token of a user's own", async () => {
      const { token } = await createUser(w.gh, w.admin, `leaver${unique()}@example.test`);
      return w.send({ method: 'DELETE', path: '/api/v1/auth/tokens', token });
    }),
    c('attendees.check-ins', 200, 'the check-ins the partner reported', () => w.api('GET', `${A}/attendees/check-ins`)),
    c('me.show', 200, 'a token', () => w.api('GET', '/api/v1/me')),
    c('me.tokens.index', 200, "the user's tokens", () => w.api('GET', '/api/v1/me/tokens')),
    c('me.tokens.store', 201, 'a name and abilities', () =>
      w.api('POST', '/api/v1/me/tokens', { name: 'wire', abilities: ['read'] }),
    ),
    c('me.tokens.store', 422, 'no ability', () => w.api('POST', '/api/v1/me/tokens', { name: 'wire', abilities: [] })),
    c('me.tokens.destroy', 204, 'a token of the user', async () => {
      const made = await w.api('POST', '/api/v1/me/tokens', { name: 'to revoke', abilities: ['read'] });
      return w.api('DELETE', `/api/v1/me/tokens/${made.body.data.id}`);
    }),
    c('me.tokens.destroy', 404, 'an id that names none of the user', () => w.api('DELETE', '/api/v1/me/tokens/999999')),
    c('csrf-cookie.show', 204, 'a browser', () => w.send({ method: 'GET', path: '/sanctum/csrf-cookie' })),
    c('auth.session.store', 200, 'a right password with the CSRF token', login(ADMIN_PASSWORD)),
    c('auth.session.store', 401, 'a wrong password with the CSRF token', login('wrong password')),
    c('auth.session.destroy', 204, 'a logged-in session', async () =>
      w.send({ method: 'DELETE', path: '/api/v1/auth/session', headers: await w.browser(true) }),
    ),
    c('auth.session.destroy', 400, 'a token', () => w.api('DELETE', '/api/v1/auth/session')),

    c('projects.index', 200, 'a page', () => w.api('GET', '/api/v1/projects')),
    c('projects.store', 201, 'a new project', () => w.api('POST', '/api/v1/projects', { name: `Project ${unique()}` })),
    c('projects.store', 422, 'a team that does not exist', () =>
      w.api('POST', '/api/v1/projects', { name: 'Lost', team_slug: 'nowhere' }),
    ),
    c('projects.show', 200, 'the default project', () => w.api('GET', A)),
    c('projects.update', 200, 'a new name', () =>
      w.api('PUT', '/api/v1/projects/default/other', { name: 'Other venue' }),
    ),
    c('teams.index', 200, 'a page', () => w.api('GET', '/api/v1/teams')),
    c('teams.store', 201, 'a new team', () => w.api('POST', '/api/v1/teams', { name: `Team ${unique()}` })),
    c('users.index', 200, 'a page', () => w.api('GET', '/api/v1/users')),
    c('users.store', 201, 'a new user', () =>
      w.api('POST', '/api/v1/users', { name: 'New', email: `new${unique()}@example.test`, password: 'long enough pw' }),
    ),
    c('users.store', 422, 'an email taken', () =>
      w.api('POST', '/api/v1/users', { name: 'Again', email: ADMIN_EMAIL, password: 'long enough pw' }),
    ),
    c('users.show', 200, 'the administrator', () => w.api('GET', `/api/v1/users/${v.adminId}`)),
    c('users.show', 404, 'an id that names nothing', () => w.api('GET', '/api/v1/users/999999')),
    c('users.update', 200, 'a new name', async () =>
      w.api('PUT', `/api/v1/users/${await user()}`, { name: 'Renamed' }),
    ),
    c('users.update', 404, 'an id that names nothing', () => w.api('PUT', '/api/v1/users/999999', { name: 'Nobody' })),
    c('users.destroy', 204, 'a user made for it', async () => w.api('DELETE', `/api/v1/users/${await user()}`)),
    c('users.destroy', 404, 'an id that names nothing', () => w.api('DELETE', '/api/v1/users/999999')),
    c('users.destroy', 409, 'the account itself', () => w.api('DELETE', `/api/v1/users/${v.adminId}`)),
    c('users.teams.store', 200, 'a team', async () =>
      w.api('POST', `/api/v1/users/${await user()}/teams`, { team_slug: 'default' }),
    ),
    c('users.teams.store', 404, 'a team that does not exist', async () =>
      w.api('POST', `/api/v1/users/${await user()}/teams`, { team_slug: 'nowhere' }),
    ),
    c('users.teams.destroy', 200, 'a team the user has', async () => {
      const id = await user();
      await w.api('POST', `/api/v1/users/${id}/teams`, { team_slug: 'default' });
      return w.api('DELETE', `/api/v1/users/${id}/teams/default`);
    }),
    c('users.teams.destroy', 404, 'a team the user does not have', async () =>
      w.api('DELETE', `/api/v1/users/${await user()}/teams/default`),
    ),
    c('users.projects.store', 200, 'a project', async () =>
      w.api('POST', `/api/v1/users/${await user()}/projects`, { team_slug: 'default', project_slug: 'default' }),
    ),
    c('users.projects.store', 404, 'a project that does not exist', async () =>
      w.api('POST', `/api/v1/users/${await user()}/projects`, { team_slug: 'default', project_slug: 'nope' }),
    ),
    c('users.projects.destroy', 200, 'a project the user has', async () => {
      const id = await user();
      await w.api('POST', `/api/v1/users/${id}/projects`, { team_slug: 'default', project_slug: 'default' });
      return w.api('DELETE', `/api/v1/users/${id}/projects/default/default`);
    }),
    c('users.projects.destroy', 404, 'a project the user does not have', async () =>
      w.api('DELETE', `/api/v1/users/${await user()}/projects/default/default`),
    ),
    c('settings.show', 200, 'the settings', () => w.api('GET', '/api/v1/settings')),
    c('settings.update', 200, 'no token expiry', () =>
      w.api('PUT', '/api/v1/settings', { token_expiry_minutes: null }),
    ),

    c('broadcasting.auth', 200, 'a channel of a reachable project', () =>
      w.send({
        method: 'POST',
        path: '/broadcasting/auth',
        token: w.admin,
        raw: `socket_id=123.456&channel_name=${channel}`,
        type: 'application/x-www-form-urlencoded',
      }),
    ),
    c('broadcasting.auth', 403, 'a token that may not read access events', () =>
      w.send({
        method: 'POST',
        path: '/broadcasting/auth',
        token: w.weak.forms,
        raw: `socket_id=123.456&channel_name=${channel}`,
        type: 'application/x-www-form-urlencoded',
      }),
    ),
    c('broadcasting.config', 200, 'a token', () => w.api('GET', '/api/v1/broadcasting/config')),
    ...pusherCases(w),
  ];
}

function pusherCases(w: World): Case[] {
  const event = JSON.stringify({ name: 'Wire', data: '{}', channel: 'news' });
  const batch = JSON.stringify({ batch: [{ name: 'Wire', data: '{}', channel: 'news' }] });
  const unsigned = (method: string, path: string, raw?: string) => () =>
    w.send({
      method,
      path: `/apps/${PUSHER_ENV.GATEHOUSE_PUSHER_APP_ID}${path}`,
      ...(raw ? { raw, type: 'application/json' } : {}),
    });
  return [
    c('pusher.events', 200, 'a signed event', () => w.pusher('POST', '/events', {}, event)),
    c('pusher.events', 200, 'a signed event asking for counts', () =>
      w.pusher(
        'POST',
        '/events',
        {},
        JSON.stringify({ name: 'Wire', data: '{}', channels: ['news'], info: 'subscription_count' }),
      ),
    ),
    c('pusher.events', 401, 'no signature', unsigned('POST', '/events', event)),
    c('pusher.events', 404, 'another app id', () => w.pusher('POST', '/events', {}, event, '999')),
    c('pusher.events', 413, 'data over pusher.maxEventBytes', () =>
      w.pusher('POST', '/events', {}, JSON.stringify({ name: 'Big', data: 'x'.repeat(110_000), channel: 'news' })),
    ),
    c('pusher.batch-events', 200, 'a signed batch', () => w.pusher('POST', '/batch_events', {}, batch)),
    c('pusher.batch-events', 400, "an event's data over pusher.maxEventBytes", () =>
      w.pusher(
        'POST',
        '/batch_events',
        {},
        JSON.stringify({ batch: [{ name: 'Big', data: 'x'.repeat(110_000), channel: 'news' }] }),
      ),
    ),
    c('pusher.batch-events', 401, 'no signature', unsigned('POST', '/batch_events', batch)),
    c('pusher.batch-events', 404, 'another app id', () => w.pusher('POST', '/batch_events', {}, batch, '999')),
    c('pusher.channels', 200, 'a signed request', () => w.pusher('GET', '/channels', { info: 'subscription_count' })),
    c('pusher.channels', 401, 'no signature', unsigned('GET', '/channels')),
    c('pusher.channels', 404, 'another app id', () => w.pusher('GET', '/channels', {}, undefined, '999')),
    c('pusher.channel', 200, 'a signed request', () =>
      w.pusher('GET', '/channels/news', { info: 'subscription_count' }),
    ),
    c('pusher.channel', 401, 'no signature', unsigned('GET', '/channels/news')),
    c('pusher.channel', 404, 'a channel name no channel can have', () => w.pusher('GET', '/channels/no!such')),
    // A path that names no route under /apps/ answers in the Pusher HTTP API's envelope too.
    c('pusher.channel', 404, 'a channel name with a slash', () => w.pusher('GET', '/channels/no/such'), {
      error: 'route_not_found',
    }),
    c('pusher.events', 404, 'an empty app id', () => w.pusher('POST', '/events', {}, event, ''), {
      error: 'route_not_found',
    }),
    c('pusher.batch-events', 404, 'an empty app id', () => w.pusher('POST', '/batch_events', {}, batch, ''), {
      error: 'route_not_found',
    }),
    c('pusher.channels', 404, 'an empty app id', () => w.pusher('GET', '/channels', {}, undefined, ''), {
      error: 'route_not_found',
    }),
    c(
      'pusher.channel-users',
      404,
      'an empty app id',
      () => w.pusher('GET', '/channels/presence-wire/users', {}, undefined, ''),
      { error: 'route_not_found' },
    ),
    c('pusher.channel-users', 200, 'a presence channel', () => w.pusher('GET', '/channels/presence-wire/users')),
    c('pusher.channel-users', 400, 'a channel that is not a presence channel', () =>
      w.pusher('GET', '/channels/news/users'),
    ),
    c('pusher.channel-users', 401, 'no signature', unsigned('GET', '/channels/presence-wire/users')),
    c('pusher.channel-users', 404, 'another app id', () =>
      w.pusher('GET', '/channels/presence-wire/users', {}, undefined, '999'),
    ),
  ];
}
