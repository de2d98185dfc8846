import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { AxeBuilder } from '@axe-core/playwright';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, watchedPage } from '../helpers/chromium.js';
import { CLOSING_SOCKET, CONSOLE_ARTIFACTS, type ConsoleHarness, EXPECTED_4XX, startConsole } from '../helpers/console.js';
import { PROCESS_ADMIN } from '../helpers/process-appliance.js';
import { type Edge, type Node, scan, seedCloud, SyncWorld, until } from '../helpers/sync-world.js';

// The sync screen (issue 29, item 4; docs/console.md "Sync") in Chromium at tablet width. On a
// standalone box (the default role) it says sync is not configured. Then a cloud and an edge as
// real processes (test/helpers/sync-world.ts), the edge's link through a TCP proxy the test cuts:
// the edge's console, signed in with the edge's own administrator, shows its link up, then down
// with a scan waiting and since when, then up again with nothing waiting; the cloud's console
// lists the edge and a conflict made as test/sync/conflicts.test.ts makes one (a ticket revoked
// on the cloud, admitted at the cut-off edge), marked reviewed through the page (and reviewed over
// REST), and a new conflict shown as it is flagged, without a reload. A read-only account sees
// the conflicts but no way to mark them.

const READ_ONLY = { email: 'viewer@example.test', password: 'a long enough password' };
const noSideScroll = (p: Page) => p.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
const seriousViolations = async (page: Page) =>
  (await new AxeBuilder({ page }).analyze()).violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);

describe('the sync screen on a standalone box', () => {
  let ui: ConsoleHarness;

  beforeAll(async () => {
    ui = await startConsole();
  }, 120_000);
  afterAll(() => ui?.close());

  it('says in words that sync is not configured, not a broken page', async () => {
    await ui.open('/sync');
    const notice = ui.page.getByTestId('sync-not-configured');
    await expect.poll(() => notice.isVisible(), { timeout: 10_000 }).toBe(true);
    expect(await notice.textContent()).toMatch(/^\s*Sync is not configured: this box runs standalone/);
    expect(await ui.page.getByTestId('sync-link').count()).toBe(0);
    expect(await ui.page.getByTestId('sync-conflicts').count()).toBe(0);
    expect(await ui.page.locator('main .error').count()).toBe(0);
    expect(await noSideScroll(ui.page)).toBeLessThanOrEqual(0);
    await ui.shot('sync-standalone');
    expect(await ui.accessibility()).toEqual([]);
    expect(ui.unexpectedErrors()).toEqual([]);
  });
});

describe('the sync screen on a cloud and an edge (processes)', () => {
  const world = new SyncWorld();
  let edge: Edge;
  let venue: { zone: number; entry: number; exit: number };
  let browser: Browser;
  const pages: { page: Page; errors: string[] }[] = [];
  let onEdge: Page;
  let onCloud: Page;
  let admitted: { event_id: string };

  /** A page of its own (cookies per node) signed in on `node` by typing, at `path`. */
  async function openOn(node: Node, path: string, who = PROCESS_ADMIN): Promise<Page> {
    const watched = await watchedPage(await browser.newContext({ viewport: { width: 768, height: 1024 } }));
    pages.push(watched);
    const { page } = watched;
    await page.goto(`${node.url}${path}`);
    await expect.poll(() => new URL(page.url()).pathname, { timeout: 10_000 }).toBe('/signin');
    await page.getByLabel('Email').fill(who.email);
    await page.getByLabel('Password').fill(who.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => new URL(page.url()).pathname, { timeout: 10_000 }).toBe(path);
    await expect.poll(() => page.getByTestId('live-state').textContent(), { timeout: 10_000 }).toBe('Live');
    return page;
  }
  const shot = (page: Page, name: string) => page.screenshot({ path: join(CONSOLE_ARTIFACTS, `${name}.png`), fullPage: true });
  const linkDown = () =>
    until(
      'the edge link down',
      () => edge.node.api('GET', '/sync/status'),
      (r) => r.body.data.online === false,
      20_000,
    );
  /** Revokes the ticket on the cloud while the edge is cut off, then admits it at the edge: a revoked_credential conflict once the link is back. */
  async function admitRevoked(ticket: string, externalId: string): Promise<{ event_id: string }> {
    const attendee = (await world.cloud.api('GET', `/attendees?search=${externalId}`)).body.data[0];
    const credential = (await world.cloud.api('GET', `/attendees/${attendee.id}/credentials`)).body.data[0];
    expect((await world.cloud.api('DELETE', `/credentials/${credential.id}`)).status).toBe(200);
    const decision = await scan(edge.node, venue.entry, ticket);
    expect(decision.access_granted).toBe(true); // the edge could not know
    return decision;
  }

  beforeAll(async () => {
    mkdirSync(CONSOLE_ARTIFACTS, { recursive: true });
    await world.startCloud();
    venue = await seedCloud(world.cloud, 20);
    edge = await world.addEdge('north');
    await until(
      'the tickets on the edge',
      () => edge.node.api('GET', '/attendees?search=X-20'),
      (r) => r.body.data?.length === 1,
      60_000,
    );
    browser = await launchChromium();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await world.destroy();
  });

  it('shows the edge’s link up, nothing waiting and its last success, signed in with the edge’s own administrator', async () => {
    onEdge = await openOn(edge.node, '/sync');
    const link = onEdge.getByTestId('sync-link');
    await expect.poll(() => link.getAttribute('data-state'), { timeout: 15_000 }).toBe('online');
    expect(await onEdge.getByTestId('sync-link-state').textContent()).toBe('Up');
    expect(await onEdge.getByTestId('sync-backlog').textContent()).toBe('0');
    expect(await onEdge.getByTestId('sync-oldest').textContent()).toBe('none');
    await expect.poll(() => onEdge.getByTestId('sync-last-success').textContent(), { timeout: 15_000 }).not.toBe('never');
    expect(await onEdge.getByTestId('sync-last-download').textContent()).not.toBe('never');
    expect(await onEdge.getByTestId('sync-not-configured').count()).toBe(0);
    expect(await onEdge.getByTestId('sync-conflicts').count()).toBe(0);
    expect(await noSideScroll(onEdge)).toBeLessThanOrEqual(0);
    await shot(onEdge, 'sync-edge');
    expect(await seriousViolations(onEdge)).toEqual([]);
  });

  it('shows the link down without a reload when it is cut, with the scans waiting and since when; up again and drained once restored', async () => {
    const marker = await onEdge.evaluate(() => ((window as unknown as { stayed: number }).stayed = Date.now()));
    edge.proxy.set('cut');
    await linkDown();
    await expect.poll(() => onEdge.getByTestId('sync-link').getAttribute('data-state'), { timeout: 15_000 }).toBe('offline');
    expect(await onEdge.getByTestId('sync-link-state').textContent()).toBe('Down');
    admitted = await admitRevoked('T-9', 'X-9');
    await expect.poll(() => onEdge.getByTestId('sync-backlog').textContent(), { timeout: 15_000 }).not.toBe('0');
    expect(await onEdge.getByTestId('sync-oldest').textContent()).not.toBe('none');
    expect(await onEdge.getByTestId('sync-last-error').textContent()).toBeTruthy();
    await shot(onEdge, 'sync-edge-down');
    expect(await seriousViolations(onEdge)).toEqual([]);

    edge.proxy.set('pass');
    await expect.poll(() => onEdge.getByTestId('sync-link').getAttribute('data-state'), { timeout: 30_000 }).toBe('online');
    await expect.poll(() => onEdge.getByTestId('sync-backlog').textContent(), { timeout: 30_000 }).toBe('0');
    expect(await onEdge.getByTestId('sync-oldest').textContent()).toBe('none');
    expect(await onEdge.evaluate(() => (window as unknown as { stayed: number }).stayed)).toBe(marker);
  });

  it('lists the edge and the conflict on the cloud, and marks it reviewed through the page', async () => {
    await until(
      'the conflict on the cloud',
      async () => (await world.cloud.api('GET', '/sync/conflicts?kind=revoked_credential')).body.data as { event_id: string }[],
      (list) => list.some((c) => c.event_id === admitted.event_id),
    );
    onCloud = await openOn(world.cloud, '/sync');
    await expect.poll(() => onCloud.getByTestId('sync-cloud').isVisible(), { timeout: 10_000 }).toBe(true);
    const edgeRow = onCloud.locator('[data-testid=sync-edge][data-edge="north"]');
    await expect.poll(() => edgeRow.count(), { timeout: 10_000 }).toBe(1);
    expect(await edgeRow.getByTestId('sync-edge-contact').textContent()).not.toBe('never');
    const conflict = onCloud.locator(`[data-testid=conflict][data-event="${admitted.event_id}"]`);
    await expect.poll(() => conflict.count(), { timeout: 10_000 }).toBe(1);
    expect(await conflict.getAttribute('data-kind')).toBe('revoked_credential');
    expect(await conflict.textContent()).toContain('Admitted with a revoked ticket');
    expect(await conflict.textContent()).toContain('north');
    expect(await noSideScroll(onCloud)).toBeLessThanOrEqual(0);
    await shot(onCloud, 'sync-cloud');
    expect(await seriousViolations(onCloud)).toEqual([]);

    await conflict.getByTestId('conflict-review').click();
    await expect.poll(() => conflict.getAttribute('data-reviewed'), { timeout: 10_000 }).toBe('true');
    expect(await conflict.getByTestId('conflict-review').count()).toBe(0);
    await expect.poll(() => onCloud.evaluate(() => document.activeElement?.getAttribute('data-testid')), { timeout: 10_000 }).toBe('conflict-reviewed-at');
    const stored = (await world.cloud.api('GET', '/sync/conflicts?kind=revoked_credential')).body.data.find((c: { event_id: string }) => c.event_id === admitted.event_id);
    expect(stored.reviewed_at).not.toBeNull();
    expect((await world.cloud.api('GET', '/sync/conflicts?reviewed=false')).body.data).toEqual([]);

    // The filters ask the appliance again: nothing left to review; the reviewed one under "Reviewed".
    await onCloud.getByLabel('Show').selectOption('false');
    await expect.poll(() => onCloud.getByTestId('conflicts-empty').textContent(), { timeout: 10_000 }).toBe('Nothing to review.');
    await onCloud.getByLabel('Show').selectOption('true');
    await expect.poll(() => onCloud.getByTestId('conflict').count(), { timeout: 10_000 }).toBe(1);
    await onCloud.getByLabel('Show').selectOption('false');
    await expect.poll(() => onCloud.getByTestId('conflict').count(), { timeout: 10_000 }).toBe(0);
    await shot(onCloud, 'sync-cloud-reviewed');
  });

  it('shows a conflict on the cloud as it is flagged, without a reload', async () => {
    const marker = await onCloud.evaluate(() => ((window as unknown as { stayed: number }).stayed = Date.now()));
    edge.proxy.set('cut');
    await linkDown();
    const second = await admitRevoked('T-10', 'X-10');
    edge.proxy.set('pass');
    const conflict = onCloud.locator(`[data-testid=conflict][data-event="${second.event_id}"]`);
    await expect.poll(() => conflict.count(), { timeout: 30_000 }).toBe(1);
    expect(await conflict.getAttribute('data-reviewed')).toBe('false');
    expect(await onCloud.evaluate(() => (window as unknown as { stayed: number }).stayed)).toBe(marker);
    expect(await seriousViolations(onCloud)).toEqual([]);
  });

  it('shows a read-only account on the cloud the conflicts but no way to mark them reviewed', async () => {
    const made = await world.cloud.api('POST', '/api/v1/users', { name: 'Viewer', email: READ_ONLY.email, password: READ_ONLY.password });
    expect(made.status).toBe(201);
    expect((await world.cloud.api('POST', `/api/v1/users/${made.body.data.id}/teams`, { team_slug: 'default' })).status).toBeLessThan(300);
    expect((await world.cloud.api('PUT', `/api/v1/users/${made.body.data.id}`, { read_only: true })).status).toBe(200);
    const viewer = await openOn(world.cloud, '/sync', READ_ONLY);
    await expect.poll(() => viewer.getByTestId('conflict').count(), { timeout: 10_000 }).toBe(1);
    expect(await viewer.getByTestId('conflict-review').count()).toBe(0);
    expect(await viewer.locator('main button, main form, main input').count()).toBe(0);
    expect(await noSideScroll(viewer)).toBeLessThanOrEqual(0);
    await shot(viewer, 'sync-cloud-read-only');
    expect(await seriousViolations(viewer)).toEqual([]);
  });

  it('logged no console errors on any page (Chromium’s own line for each 4xx the page handled aside)', () => {
    expect(pages.flatMap((p) => p.errors).filter((e) => !EXPECTED_4XX.test(e) && !CLOSING_SOCKET.test(e))).toEqual([]);
  });
});
