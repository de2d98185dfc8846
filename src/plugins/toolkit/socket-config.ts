// How a plugin's socket reaches the appliance (events.ts uses it): the broadcasting config read
// with the plugin's credentials, pusher-js's options from it and the page's address, and the
// channel authorizer that posts to /broadcasting/auth itself, so a refusal's status and reason
// reach the connection status (pusher-js's own handler loses both).
import type { Options as PusherOptions } from 'pusher-js';
import { type PluginContext, PluginApiError, xsrfCookie } from './call-api.js';

/** GET /api/v1/broadcasting/config's `data` (docs/realtime.md "Connecting"). */
export interface BroadcastingConfig {
  key: string;
  ws_host: string;
  ws_port: number;
  ws_path: string;
  force_tls?: boolean;
  auth_endpoint: string;
}

/** The page's address (`location`), used for the WebSocket when the plugin runs on the appliance's origin. */
export type PageLocation = Pick<Location, 'protocol' | 'hostname' | 'port'>;

/**
 * pusher-js options. The WebSocket goes where the broadcasting config says (ws_host, ws_port,
 * ws_path, force_tls), except for a plugin on the page's own origin (baseUrl ''), e.g. behind the
 * dev server's proxy of /app, /broadcasting and /api: the config names the appliance as the proxy
 * reached it, which the browser may not reach, so the page's host and port are used.
 */
export function socketOptions(
  config: BroadcastingConfig,
  context: PluginContext,
  page: PageLocation | null,
): PusherOptions {
  const sameOrigin = context.baseUrl === '';
  if (sameOrigin && !page) throw new Error('baseUrl "" (the page\'s own origin) needs the page\'s location');
  const tls = sameOrigin ? page!.protocol === 'https:' : config.force_tls === true;
  const host = sameOrigin ? page!.hostname : config.ws_host;
  const port = sameOrigin ? Number(page!.port) || (tls ? 443 : 80) : config.ws_port;
  return {
    cluster: 'local', // pusher-js 8 requires one; unused when wsHost is set
    wsHost: host,
    wsPort: port,
    wssPort: port,
    wsPath: config.ws_path,
    forceTLS: tls,
    enabledTransports: ['ws', 'wss'],
    disableStats: true,
  };
}

/** What the server answered a refused request with: its `reason` (channel_forbidden) or `message`. */
async function refusal(res: Response): Promise<string> {
  const body = (await res.json().catch(() => null)) as { reason?: unknown; message?: unknown } | null;
  const said = [body?.message, body?.reason].filter((s): s is string => typeof s === 'string');
  return said.length > 0 ? said.join(': ') : `answered ${res.status}`;
}

/** The token as a bearer, or for a cookie session the XSRF-TOKEN cookie echoed (POST /broadcasting/auth needs it). */
function credentials(context: PluginContext): { headers: Record<string, string>; credentials: RequestCredentials } {
  if (context.token) return { headers: { authorization: `Bearer ${context.token}` }, credentials: 'omit' };
  const xsrf = xsrfCookie();
  return { headers: xsrf ? { 'x-xsrf-token': xsrf } : {}, credentials: 'include' };
}

/** GET /api/v1/broadcasting/config with the plugin's credentials; a PluginApiError as callApi's
 * (`network` when nothing answered, `api` with the status when refused). */
export async function fetchBroadcastingConfig(context: PluginContext): Promise<BroadcastingConfig> {
  const auth = credentials(context);
  let res: Response;
  try {
    res = await (context.fetch ?? fetch)(`${context.baseUrl.replace(/\/+$/, '')}/api/v1/broadcasting/config`, {
      headers: { accept: 'application/json', ...auth.headers },
      credentials: auth.credentials,
    });
  } catch (err) {
    throw new PluginApiError(
      'network',
      `GET /api/v1/broadcasting/config did not reach the appliance: ${(err as Error).message}`,
    );
  }
  if (!res.ok) throw new PluginApiError('api', `GET /api/v1/broadcasting/config: ${await refusal(res)}`, res.status);
  return ((await res.json()) as { data: BroadcastingConfig }).data;
}

/**
 * Authorizes a private channel at `<baseUrl>/broadcasting/auth` (form-encoded, as pusher-js
 * posts it) with the plugin's credentials and fetch, the way callApi reaches the appliance. A
 * refusal is recorded with its status and the server's reason before pusher-js hears of it.
 */
export function channelAuthorizer(
  context: PluginContext,
  refused: (channel: string, status: number | null, message: string) => void,
) {
  return (
    params: { socketId: string; channelName: string },
    callback: (error: Error | null, data: { auth: string; shared_secret?: string } | null) => void,
  ): void => {
    const auth = credentials(context);
    const body = new URLSearchParams({ socket_id: params.socketId, channel_name: params.channelName }).toString();
    const headers = {
      accept: 'application/json',
      'content-type': 'application/x-www-form-urlencoded',
      ...auth.headers,
    };
    const fail = (status: number | null, message: string) => {
      refused(params.channelName, status, message);
      callback(new Error(message), null);
    };
    void (async () => {
      let res: Response;
      try {
        res = await (context.fetch ?? fetch)(`${context.baseUrl.replace(/\/+$/, '')}/broadcasting/auth`, {
          method: 'POST',
          headers,
          body,
          credentials: auth.credentials,
        });
      } catch (err) {
        return fail(null, `/broadcasting/auth did not answer: ${(err as Error).message}`);
      }
      if (!res.ok) return fail(res.status, `/broadcasting/auth refused ${params.channelName}: ${await refusal(res)}`);
      const answer = (await res.json().catch(() => null)) as { auth?: unknown } | null;
      if (typeof answer?.auth !== 'string')
        return fail(res.status, `/broadcasting/auth answered ${params.channelName} without an auth string`);
      callback(null, answer as { auth: string });
    })();
  };
}
