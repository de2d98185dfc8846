import type { TestAppliance } from './appliance.js';

// A browser's side of the cookie-session flow (docs/auth.md "Cookie sessions") for API tests.

/** What a browser keeps: cookies by name, sent back on every request. */
export class CookieJar {
  readonly cookies = new Map<string, string>();
  take(headers: Headers): void {
    for (const line of headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (value === '' || /max-age=0|expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

/** A browser: a cookie jar and a request function that sends its cookies (and, with `csrf`, the X-XSRF-TOKEN header). */
export function cookieBrowser(gh: Pick<TestAppliance, 'request'>) {
  const jar = new CookieJar();
  const send = async (method: string, path: string, options: { body?: unknown; csrf?: boolean | string } = {}) => {
    const headers: Record<string, string> = { cookie: jar.header() };
    if (options.csrf === true) headers['x-xsrf-token'] = jar.cookies.get('XSRF-TOKEN') ?? '';
    else if (typeof options.csrf === 'string') headers['x-xsrf-token'] = options.csrf;
    const res = await gh.request(method, path, { headers, ...(options.body ? { body: options.body } : {}) });
    jar.take(res.headers);
    return res;
  };
  return { jar, send };
}

/** A browser signed in as `email`: the CSRF cookie, then the session login (which must succeed). */
export async function signedInBrowser(gh: Pick<TestAppliance, 'request'>, email: string, password: string) {
  const browser = cookieBrowser(gh);
  await browser.send('GET', '/sanctum/csrf-cookie');
  const login = await browser.send('POST', '/api/v1/auth/session', { body: { email, password }, csrf: true });
  if (login.status !== 200) throw new Error(`session login failed: ${login.status} ${login.text}`);
  return browser;
}
