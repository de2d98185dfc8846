import type { RedisOptions } from 'ioredis';

// redis.url (docs/config.md): where the instances of one cloud meet. Three forms:
// `redis://[user:password@]host[:port][/db]`, `rediss://…` (TLS) and `unix:///path/to/redis.sock[?db=N]`
// (a socket on this machine; `password=` in the query when the server wants one). ioredis takes the first
// two as they are; the socket form is turned into its `path` option here, as ioredis has no URL for it.

export const REDIS_URL_FORMS = 'redis://host:port/db, rediss://host:port/db or unix:///path/to/redis.sock?db=N';

/** What is wrong with the URL, or null when ioredis can be given it. */
export function redisUrlProblem(url: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `not a URL: give ${REDIS_URL_FORMS}`;
  }
  if (parsed.protocol === 'unix:') {
    if (parsed.host !== '' || parsed.pathname === '' || parsed.pathname === '/')
      return `a socket is unix:///absolute/path/to/redis.sock (three slashes), not ${redactRedisUrl(url)}`;
  } else if (parsed.protocol === 'redis:' || parsed.protocol === 'rediss:') {
    if (parsed.hostname === '') return 'names no host';
  } else {
    return `${parsed.protocol} is not a Redis scheme: give ${REDIS_URL_FORMS}`;
  }
  const db = parsed.protocol === 'unix:' ? parsed.searchParams.get('db') : parsed.pathname.slice(1);
  if (db && !/^\d{1,2}$/.test(db)) return `database ${JSON.stringify(db)} is not a number 0-99`;
  return null;
}

/** The URL as logs and error messages show it: any password replaced by ***; text that is not a URL as it is. */
export function redactRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (!parsed.password && !parsed.searchParams.has('password')) return url;
    if (parsed.password) parsed.password = '***';
    if (parsed.searchParams.has('password')) parsed.searchParams.set('password', '***');
    return parsed.toString();
  } catch {
    return url;
  }
}

/** ioredis's connection options for a URL redisUrlProblem() accepted. */
export function redisConnectionOptions(url: string): RedisOptions {
  const parsed = new URL(url);
  if (parsed.protocol !== 'unix:') {
    const db = parsed.pathname.slice(1);
    return {
      host: parsed.hostname.replace(/^\[|\]$/g, ''),
      port: parsed.port ? Number(parsed.port) : 6379,
      ...(parsed.username ? { username: decodeURIComponent(parsed.username) } : {}),
      ...(parsed.password ? { password: decodeURIComponent(parsed.password) } : {}),
      ...(db ? { db: Number(db) } : {}),
      ...(parsed.protocol === 'rediss:' ? { tls: {} } : {}),
    };
  }
  const db = parsed.searchParams.get('db');
  const password = parsed.searchParams.get('password');
  return {
    path: decodeURIComponent(parsed.pathname),
    ...(db ? { db: Number(db) } : {}),
    ...(password ? { password } : {}),
  };
}
