import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventTimes } from '../../console/src/feed.js';
import { type ConsoleHarness, DEMO_PROJECT, startConsole } from '../helpers/console.js';

// The console on an empty box (a fresh data directory, no demo): it says what to do next
// instead of only "No access zones" and "No access events yet"; and the live doors' times are
// the venue's, with the date on a scan that was not today there.

describe('the console on a fresh box', () => {
  let ui: ConsoleHarness;
  let page: Page;

  beforeAll(async () => {
    ui = await startConsole({ demo: false });
    page = ui.page;
  }, 120_000);
  afterAll(async () => {
    await ui?.close();
  });

  it('points an empty box to the Access screen and the demo, and says where scans will show', async () => {
    await ui.open('/doors');
    const zones = page.getByTestId('zones-empty');
    await expect
      .poll(() => zones.textContent())
      .toMatch(
        /No access zones in this project\.\s*Add zones and gates on the\s*Access screen, or load a demo venue with npm run demo/,
      );
    await expect
      .poll(() => page.getByTestId('feed-empty').textContent())
      .toMatch(/No access events yet\..*Each scan at a gate shows here/);
    await zones.getByRole('link', { name: 'Access screen' }).click();
    await expect.poll(() => ui.path()).toBe('/access');
    expect(await ui.accessibility()).toEqual([]);
  });

  it("shows each scan's time in the venue's time zone, which it names", async () => {
    const token = await ui.gh.token();
    const api = (method: string, path: string, body?: unknown) =>
      ui.gh.request(method, `${DEMO_PROJECT}${path}`, { token, ...(body === undefined ? {} : { body }) });
    expect((await api('PUT', '', { timezone: 'Pacific/Kiritimati' })).status).toBe(200); // UTC+14: "today" there is not UTC's
    const zone = (await api('POST', '/access-zones', { name: 'Hall' })).body.data.id as number;
    const gate = (await api('POST', '/access-points', { name: 'Gate', access_zone_id: zone, direction: 'in' })).body
      .data.id as number;
    expect((await api('POST', `/access-points/${gate}/scan`, { credential_value: 'NOBODY-1' })).status).toBe(200);
    await ui.open('/doors');
    await expect.poll(() => page.getByTestId('feed-time-zone').textContent()).toBe('Times in Pacific/Kiritimati');
    const shown = await page.getByTestId('feed-row').first().locator('time').textContent();
    const at = await page.getByTestId('feed-row').first().locator('time').getAttribute('datetime');
    expect(shown).toBe(eventTimes('Pacific/Kiritimati', 'en-US').format(at!));
    expect(shown).toMatch(/^\d\d:\d\d:\d\d/); // today there
    expect(ui.unexpectedErrors()).toEqual([]);
  });
});

describe("a feed row's time", () => {
  const at = '2026-11-27T10:15:30.000Z';
  const now = Date.parse('2026-11-27T12:00:00.000Z');

  it('is the time alone on the same day in the venue, the date and time otherwise', () => {
    expect(eventTimes('Europe/Berlin', 'en-GB').format(at, now)).toBe('11:15:30');
    expect(eventTimes('Europe/Berlin', 'en-GB').format(at, Date.parse('2026-11-28T09:00:00.000Z'))).toBe(
      '27 Nov, 11:15:30',
    );
    // 10:15 UTC is already the 28th at UTC+14, while noon UTC is too: today there.
    expect(eventTimes('Pacific/Kiritimati', 'en-GB').format(at, now)).toBe('00:15:30');
    // 09:00 UTC was still the 26th in Honolulu (UTC−10), and noon UTC is the 27th there: yesterday.
    expect(eventTimes('Pacific/Honolulu', 'en-GB').format('2026-11-27T09:00:00.000Z', now)).toBe('26 Nov, 23:00:00');
  });

  it("names the zone it shows, and falls back to the browser's for one it does not know", () => {
    expect(eventTimes('America/New_York').zoneName).toBe('America/New_York');
    expect(eventTimes('Mars/Olympus_Mons').zoneName).toBe(new Intl.DateTimeFormat().resolvedOptions().timeZone);
  });
});
