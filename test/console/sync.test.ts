import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { AxeBuilder } from '@axe-core/playwright';
import BetterSqlite3 from 'better-sqlite3';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, watchedPage } from '../helpers/chromium.js';
import {
  CLOSING_SOCKET,
  CONSOLE_ARTIFACTS,
  type ConsoleHarness,
  EXPECTED_4XX,
  startConsole,
} from '../helpers/console.js';
import { requester } from '../helpers/appliance.js';
import { PROCESS_ADMIN } from '../helpers/process-appliance.js';
import { type Edge, type Node, P, scan, seedCloud, SyncWorld, until } from '../helpers/sync-world.js';

// The sync screen (docs/console.md "Sync") in Chromium at tablet width. On a
// standalone box (the default role) it says sync is not configured. Then a cloud and an edge as
// real processes (test/helpers/sync-world.ts), the edge's link through a TCP proxy the test cuts:
// the edge's console, signed in with the edge's own administrator, shows its link up, then down
// with a scan waiting and since when, then up again with nothing waiting; the cloud's console
// lists the edge and a conflict made as test/sync/conflicts.test.ts makes one (a ticket revoked
// on the cloud, admitted at the cut-off edge), marked reviewed through the page (and reviewed over
// REST), and a new conflict shown as it is flagged, without a reload. A read-only account sees
// the conflicts but no way to mark them. The kinds made by an edge's uploads (an id the cloud
// holds, an edit meeting a deletion both ways, an event at a deleted access point) are produced
// for real by crafted uploads with the edge's sync token (docs/sync.md "The protocol") and shown
// in words with both sides; a cleared flag (nothing on this branch clears one yet) is written
// into the cloud's SQLite. The edge's cloud_rollback line (not in the API yet) is added to the
// status answer in the browser. An edge issued by a staff member who is then deactivated shows
// suspended, in words, with a re-confirm only an administrator is offered.

const READ_ONLY = { email: 'viewer@example.test', password: 'a long enough password' };
const noSideScroll = (p: Page) =>
  p.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
const seriousViolations = async (page: Page) =>
  (await new AxeBuilder({ page }).analyze()).violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);

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
  /** A time as the sync screen shows it: in the project's time zone (Sync.vue `when`). */
  const shownAt = async (page: Page, node: Node, iso: string) => {
    const timeZone = (await node.api('GET', '')).body.data.timezone as string;
    return page.evaluate(
      ([at, zone]) =>
        new Intl.DateTimeFormat(undefined, { dateStyle: 'short', timeStyle: 'medium', timeZone: zone }).format(
          new Date(at!),
        ),
      [iso, timeZone],
    );
  };
  const shot = (page: Page, name: string) =>
    page.screenshot({ path: join(CONSOLE_ARTIFACTS, `${name}.png`), fullPage: true });
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
    expect(await onEdge.getByTestId('sync-cloud-url').textContent()).toBe(edge.proxy.url);
    await expect
      .poll(() => onEdge.getByTestId('sync-last-success').textContent(), { timeout: 15_000 })
      .not.toBe('never');
    expect(await onEdge.getByTestId('sync-last-download').textContent()).not.toBe('never');
    expect(await onEdge.getByTestId('sync-not-configured').count()).toBe(0);
    expect(await onEdge.getByTestId('sync-conflicts').count()).toBe(0);
    expect(await onEdge.getByTestId('sync-rollback').count()).toBe(0); // cloud_rollback is null: the cloud was never found behind
    expect(await noSideScroll(onEdge)).toBeLessThanOrEqual(0);
    await shot(onEdge, 'sync-edge');
    expect(await seriousViolations(onEdge)).toEqual([]);
  });

  it('shows the link down without a reload when it is cut, with the scans waiting and since when; up again and drained once restored', async () => {
    const marker = await onEdge.evaluate(() => ((window as unknown as { stayed: number }).stayed = Date.now()));
    edge.proxy.set('cut');
    await linkDown();
    await expect
      .poll(() => onEdge.getByTestId('sync-link').getAttribute('data-state'), { timeout: 15_000 })
      .toBe('offline');
    expect(await onEdge.getByTestId('sync-link-state').textContent()).toBe('Down');
    admitted = await admitRevoked('T-9', 'X-9');
    await expect.poll(() => onEdge.getByTestId('sync-backlog').textContent(), { timeout: 15_000 }).not.toBe('0');
    expect(await onEdge.getByTestId('sync-oldest').textContent()).not.toBe('none');
    expect(await onEdge.getByTestId('sync-last-error').textContent()).toBeTruthy();
    await shot(onEdge, 'sync-edge-down');
    expect(await seriousViolations(onEdge)).toEqual([]);

    edge.proxy.set('pass');
    await expect
      .poll(() => onEdge.getByTestId('sync-link').getAttribute('data-state'), { timeout: 30_000 })
      .toBe('online');
    await expect.poll(() => onEdge.getByTestId('sync-backlog').textContent(), { timeout: 30_000 }).toBe('0');
    expect(await onEdge.getByTestId('sync-oldest').textContent()).toBe('none');
    expect(await onEdge.evaluate(() => (window as unknown as { stayed: number }).stayed)).toBe(marker);
  });

  it('warns when the edge found its cloud behind it (cloud_rollback in the status), and drops the line when the status has none', async () => {
    // Set on the real answer on its way to the page, which reads the status every
    // syncRefreshSeconds (a real restore: test/sync/cloud-restore.test.ts).
    const detectedAt = new Date(Date.now() - 60_000).toISOString();
    let rollback: unknown = { detected_at: detectedAt, resent_items: 42, pulled_from_start: true };
    await onEdge.route('**/sync/status', async (route) => {
      const response = await route.fetch();
      const body = await response.json();
      await route.fulfill({ response, json: { ...body, data: { ...body.data, cloud_rollback: rollback } } });
    });
    const line = onEdge.getByTestId('sync-rollback');
    await expect.poll(() => line.count(), { timeout: 15_000 }).toBe(1);
    const at = await shownAt(onEdge, edge.node, detectedAt);
    expect(await line.textContent()).toBe(
      `The cloud was behind this edge (restored from a backup?) at ${at}: 42 items uploaded again, reference data pulled again from the start.`,
    );
    expect(await seriousViolations(onEdge)).toEqual([]);
    await shot(onEdge, 'sync-edge-rollback');
    rollback = { detected_at: detectedAt, resent_items: 1, pulled_from_start: false };
    await expect
      .poll(() => line.textContent(), { timeout: 15_000 })
      .toBe(`The cloud was behind this edge (restored from a backup?) at ${at}: 1 item uploaded again.`);
    rollback = null;
    await expect.poll(() => line.count(), { timeout: 15_000 }).toBe(0);
    await onEdge.unrouteAll();
    expect(await onEdge.getByTestId('sync-link').getAttribute('data-state')).toBe('online');
  });

  it('lists the edge and the conflict on the cloud, and marks it reviewed through the page', async () => {
    await until(
      'the conflict on the cloud',
      async () =>
        (await world.cloud.api('GET', '/sync/conflicts?kind=revoked_credential')).body.data as { event_id: string }[],
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
    await expect
      .poll(() => onCloud.evaluate(() => document.activeElement?.getAttribute('data-testid')), { timeout: 10_000 })
      .toBe('conflict-reviewed-at');
    const stored = (await world.cloud.api('GET', '/sync/conflicts?kind=revoked_credential')).body.data.find(
      (c: { event_id: string }) => c.event_id === admitted.event_id,
    );
    expect(stored.reviewed_at).not.toBeNull();
    expect((await world.cloud.api('GET', '/sync/conflicts?reviewed=false')).body.data).toEqual([]);

    // The filters ask the appliance again: nothing left to review; the reviewed one under "Reviewed".
    await onCloud.getByLabel('Show').selectOption('false');
    await expect
      .poll(() => onCloud.getByTestId('conflicts-empty').textContent(), { timeout: 10_000 })
      .toBe('Nothing to review.');
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
    const made = await world.cloud.api('POST', '/api/v1/users', {
      name: 'Viewer',
      email: READ_ONLY.email,
      password: READ_ONLY.password,
    });
    expect(made.status).toBe(201);
    expect(
      (await world.cloud.api('POST', `/api/v1/users/${made.body.data.id}/teams`, { team_slug: 'default' })).status,
    ).toBeLessThan(300);
    expect((await world.cloud.api('PUT', `/api/v1/users/${made.body.data.id}`, { read_only: true })).status).toBe(200);
    const viewer = await openOn(world.cloud, '/sync', READ_ONLY);
    await expect.poll(() => viewer.getByTestId('conflict').count(), { timeout: 10_000 }).toBe(1);
    expect(await viewer.getByTestId('conflict-review').count()).toBe(0);
    expect(await viewer.locator('main button, main form, main input').count()).toBe(0);
    expect(await noSideScroll(viewer)).toBeLessThanOrEqual(0);
    await shot(viewer, 'sync-cloud-read-only');
    expect(await seriousViolations(viewer)).toEqual([]);
  });

  it('shows the kinds an upload makes in words with both sides, live: an id the cloud holds, an edit meeting a deletion either way, an event at a deleted access point', async () => {
    const marker = await onCloud.evaluate(() => ((window as unknown as { stayed: number }).stayed = Date.now()));
    const upload = (items: unknown[]) =>
      requester(world.cloud.url)('POST', `${P}/sync/upload`, {
        token: edge.syncToken,
        headers: { 'Gatehouse-Sync-Protocol': '1' },
        body: { clock: { offset_ms: 0, synchronised: true }, backlog: 0, items },
      });
    const change = (event: string, data: Record<string, unknown>) => ({
      kind: 'change',
      uuid: randomUUID(),
      event,
      data,
      created_at: new Date().toISOString(),
    });
    const attendee = async (externalId: string) =>
      (await world.cloud.api('GET', `/attendees?search=${externalId}`)).body.data[0] as {
        id: number;
        first_name: string;
      };
    const [held, deletedThere, editedThere, walker] = [
      await attendee('X-1'),
      await attendee('X-15'),
      await attendee('X-16'),
      await attendee('X-17'),
    ];
    const ticket = (await world.cloud.api('GET', `/attendees/${walker.id}/credentials`)).body.data[0].id as number;
    expect((await world.cloud.api('DELETE', `/attendees/${deletedThere.id}`)).status).toBe(204);
    expect((await world.cloud.api('PUT', `/attendees/${editedThere.id}`, { email: 'cloud@example.test' })).status).toBe(
      200,
    );
    const door = (
      await world.cloud.api('POST', '/access-points', {
        name: 'Side door',
        access_zone_id: venue.zone,
        direction: 'in',
      })
    ).body.data.id as number;
    expect((await world.cloud.api('DELETE', `/access-points/${door}`)).status).toBe(204);
    const late = {
      kind: 'access',
      uuid: randomUUID(),
      access_point_id: door,
      access_zone_id: venue.zone,
      reader_id: null,
      credential_id: ticket,
      credential_value: 'T-17',
      attendee_id: walker.id,
      granted: true,
      reason: null,
      movement: 'in',
      scanned_at: new Date().toISOString(),
      decided_at: new Date().toISOString(),
      source: 'api',
    };
    const sent = await upload([
      change('attendee.created', {
        id: held.id,
        first_name: 'Mallory',
        last_name: 'Crafted',
        email: null,
        attendee_type_id: null,
        external_id: null,
        status: 'active',
        extra: {},
      }),
      change('attendee.updated', {
        id: deletedThere.id,
        attendee_id: deletedThere.id,
        last_name: 'Edited',
        previous_attributes: { last_name: 'Test' },
      }),
      change('attendee.deleted', {
        id: editedThere.id,
        attendee_id: editedThere.id,
        previous_attributes: { first_name: 'Guest16', last_name: 'Test', email: null },
      }),
      late,
    ]);
    expect(sent.status, sent.text).toBe(200);
    expect(sent.body.data).toMatchObject({ accepted: 4, duplicates: 0 });
    const stored = (await world.cloud.api('GET', '/sync/conflicts?per_page=100')).body.data as Record<string, any>[];
    expect((await world.cloud.events()).find((e) => e.uuid === late.uuid)).toMatchObject({
      deleted_reference: 'access_point',
      access_point_id: door,
    });

    const row = (kind: string, entityId: number) =>
      onCloud.locator(`[data-testid=conflict][data-kind=${kind}][data-entity-id="${entityId}"]`);
    const text = async (item: ReturnType<typeof row>, testId: string) =>
      (await item.getByTestId(testId).textContent())?.trim();
    const idConflict = row('id_conflict', held.id);
    await expect.poll(() => idConflict.count(), { timeout: 15_000 }).toBe(1);
    expect(await idConflict.locator('.item-name').textContent()).toBe('Created under an id the cloud holds');
    expect(await text(idConflict, 'conflict-summary')).toBe(
      'The edge created a row under an id the cloud holds or held: not applied, nothing overwritten.',
    );
    expect(await text(idConflict, 'conflict-edge-value')).toBe(
      'attendee.created: first_name “Mallory”, last_name “Crafted”, status “active”',
    );
    expect(await text(idConflict, 'conflict-cloud-value')).toContain(`first_name “${held.first_name}”`);
    expect(await text(idConflict, 'conflict-cloud-value')).toContain('external_id “X-1”');
    expect(await idConflict.textContent()).toContain(`attendee#${held.id}`);
    expect(await idConflict.textContent()).toContain(`the cloud already holds attendee ${held.id}`);

    const cloudDeleted = row('deleted_row', deletedThere.id);
    await expect.poll(() => cloudDeleted.count(), { timeout: 15_000 }).toBe(1);
    const deletion = stored.find((c) => c.kind === 'deleted_row' && c.entity_id === deletedThere.id)!;
    expect(await cloudDeleted.locator('.item-name').textContent()).toBe('Attendee edited and deleted');
    expect(await text(cloudDeleted, 'conflict-summary')).toBe(
      'An attendee was edited on one side and deleted on the other: the deletion stays.',
    );
    expect(await text(cloudDeleted, 'conflict-edge-value')).toBe('attendee.updated: last_name “Edited”');
    expect(await text(cloudDeleted, 'conflict-cloud-value')).toBe(
      `deleted on the cloud at ${await shownAt(onCloud, world.cloud, deletion.cloud_value.deleted_at)}`,
    );
    expect(await cloudDeleted.textContent()).toContain(deletion.detail);

    const edgeDeleted = row('deleted_row', editedThere.id);
    await expect.poll(() => edgeDeleted.count(), { timeout: 15_000 }).toBe(1);
    expect(await text(edgeDeleted, 'conflict-edge-value')).toBe(
      'attendee.deleted, as the edge last held it: first_name “Guest16”, last_name “Test”',
    );
    expect(await text(edgeDeleted, 'conflict-cloud-value')).toMatch(
      /^its row as the deletion found it: .*email “cloud@example.test”/,
    );
    expect(await text(edgeDeleted, 'conflict-cloud-value')).toContain('first_name “Guest16”');
    expect(await edgeDeleted.textContent()).toMatch(/the cloud had changed email meanwhile/);

    const gone = onCloud.locator(`[data-testid=conflict][data-kind=deleted_reference][data-event="${late.uuid}"]`);
    await expect.poll(() => gone.count(), { timeout: 15_000 }).toBe(1);
    const flag = stored.find((c) => c.kind === 'deleted_reference' && c.event_id === late.uuid)!;
    expect(await gone.locator('.item-name').textContent()).toBe('Event names something deleted');
    expect(await text(gone, 'conflict-summary')).toBe(
      'An access event names what the cloud deleted: kept as the edge decided it, and counted into no deleted zone.',
    );
    expect(await text(gone, 'conflict-edge-value')).toBe(`access point #${door}, zone #${venue.zone}`);
    expect(await text(gone, 'conflict-cloud-value')).toBe(
      `access point #${door}: deleted ${await shownAt(onCloud, world.cloud, flag.cloud_value[0].deleted_at)}`,
    );
    expect(await gone.textContent()).toContain(flag.detail);
    expect(await gone.textContent()).toContain(late.uuid.slice(0, 8));

    expect(await onCloud.evaluate(() => (window as unknown as { stayed: number }).stayed)).toBe(marker); // live, no reload
    for (const kind of ['id_conflict', 'deleted_row', 'deleted_reference'])
      expect(await onCloud.locator(`[data-testid=conflict-filter-kind] option[value=${kind}]`).count()).toBe(1);
    expect(await noSideScroll(onCloud)).toBeLessThanOrEqual(0);
    await shot(onCloud, 'sync-cloud-kinds');
    expect(await seriousViolations(onCloud)).toEqual([]);
  });

  it('shows a flag a later arrival explained as cleared, with when, found by the filters and reviewable like any other', async () => {
    // Nothing on the cloud clears a flag yet: the row is written as one would be (migration 20's cleared_at).
    const projectId = (await world.cloud.api('GET', '')).body.data.id as number;
    const [flaggedAt, clearedAt] = [
      new Date(Date.now() - 120_000).toISOString(),
      new Date(Date.now() - 30_000).toISOString(),
    ];
    const entry = randomUUID();
    const db = new BetterSqlite3(join(world.cloud.dataDir, 'gatehouse.db'));
    try {
      db.pragma('busy_timeout = 5000');
      db.prepare(
        'INSERT INTO sync_conflicts (project_id, kind, edge_id, event_uuid, related_uuid, created_at, cleared_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ).run(projectId, 'duplicate_entry', edge.id, entry, randomUUID(), flaggedAt, clearedAt);
    } finally {
      db.close();
    }
    await onCloud.getByLabel('Kind').selectOption('duplicate_entry');
    const cleared = onCloud.locator(`[data-testid=conflict][data-event="${entry}"]`);
    await expect.poll(() => cleared.count(), { timeout: 10_000 }).toBe(1);
    expect(await onCloud.getByTestId('conflict').count()).toBe(1);
    expect(await cleared.getAttribute('data-cleared')).toBe('true');
    expect(await cleared.getAttribute('data-reviewed')).toBe('false');
    expect(await cleared.getByTestId('conflict-cleared-tag').textContent()).toBe('Cleared');
    expect(await cleared.getByTestId('conflict-cleared-at').textContent()).toBe(
      await shownAt(onCloud, world.cloud, clearedAt),
    );
    expect(await cleared.getByTestId('conflict-reviewed-at').count()).toBe(0);
    expect(await cleared.locator('.item-name').textContent()).toBe('Double entry');
    expect(await seriousViolations(onCloud)).toEqual([]);
    await shot(onCloud, 'sync-cloud-cleared');

    await cleared.getByTestId('conflict-review').click();
    await expect.poll(() => cleared.getAttribute('data-reviewed'), { timeout: 10_000 }).toBe('true');
    expect(await cleared.getAttribute('data-cleared')).toBe('true');
    await onCloud.getByLabel('Show').selectOption('true');
    await expect.poll(() => onCloud.getByTestId('conflict').count(), { timeout: 10_000 }).toBe(1);
    expect(await onCloud.getByTestId('conflict').getAttribute('data-cleared')).toBe('true');
    expect(await onCloud.getByTestId('conflict-cleared-at').count()).toBe(1);
    expect(await onCloud.getByTestId('conflict-reviewed-at').count()).toBe(1);
    expect(await seriousViolations(onCloud)).toEqual([]);
  });

  it('says on the cloud that an edge is suspended once its issuer lost access, and lets an administrator (only) re-confirm it through the page', async () => {
    // A staff member issues an edge with a token naming sync:edges, then is deactivated (docs/sync.md "Edges and their issuers").
    const email = 'issuer@example.test';
    const made = await world.cloud.api('POST', '/api/v1/users', {
      name: 'Issuer',
      email,
      password: READ_ONLY.password,
    });
    expect(made.status).toBe(201);
    expect(
      (await world.cloud.api('POST', `/api/v1/users/${made.body.data.id}/teams`, { team_slug: 'default' })).status,
    ).toBeLessThan(300);
    const staffToken = (
      await requester(world.cloud.url)('POST', '/api/v1/auth/token', {
        body: { email, password: READ_ONLY.password, device_name: 'issuing', scopes: ['sync:edges'] },
      })
    ).body.token;
    const issued = await requester(world.cloud.url)('POST', `${P}/sync/edges`, {
      token: staffToken,
      body: { name: 'south' },
    });
    expect(issued.status).toBe(201);
    expect((await world.cloud.api('PUT', `/api/v1/users/${made.body.data.id}`, { is_active: false })).status).toBe(200);
    const suspendedAt = (await world.cloud.api('GET', `/sync/edges/${issued.body.data.id}`)).body.data
      .suspended_at as string;
    expect(suspendedAt).not.toBeNull();

    const marker = await onCloud.evaluate(() => ((window as unknown as { stayed: number }).stayed = Date.now()));
    const south = onCloud.locator('[data-testid=sync-edge][data-edge="south"]');
    await expect.poll(() => south.getAttribute('data-suspended'), { timeout: 15_000 }).toBe('true'); // the status is read again every syncRefreshSeconds
    expect(await south.getByTestId('sync-edge-suspended').textContent()).toBe('suspended');
    expect(await south.getByTestId('sync-edge-suspended-why').textContent()).toBe(
      `Suspended since ${await shownAt(onCloud, world.cloud, suspendedAt)}: the user who issued it lost access to this project, so the cloud refuses its sync token until an administrator re-confirms it.`,
    );
    expect(await onCloud.locator('[data-testid=sync-edge][data-edge="north"]').getAttribute('data-suspended')).toBe(
      'false',
    );
    expect(
      await onCloud.locator('[data-testid=sync-edge][data-edge="north"]').getByTestId('edge-confirm').count(),
    ).toBe(0);
    expect(await seriousViolations(onCloud)).toEqual([]);
    await shot(onCloud, 'sync-cloud-edge-suspended');

    // Staff who are not administrators see it suspended, and no way to re-confirm it.
    const viewer = await openOn(world.cloud, '/sync', READ_ONLY);
    const seen = viewer.locator('[data-testid=sync-edge][data-edge="south"]');
    await expect.poll(() => seen.getAttribute('data-suspended'), { timeout: 10_000 }).toBe('true');
    expect(await seen.getByTestId('edge-confirm').count()).toBe(0);

    await south.getByTestId('edge-confirm').click();
    await expect
      .poll(() => onCloud.evaluate(() => document.activeElement?.getAttribute('data-testid')), { timeout: 10_000 })
      .toBe('edge-confirm-yes');
    expect(await south.textContent()).toContain('Re-confirm south? Its sync token acts on your access from now on');
    await south.getByTestId('edge-confirm-yes').click();
    await expect
      .poll(() => onCloud.getByTestId('edge-confirm-result').textContent(), { timeout: 10_000 })
      .toBe('south is re-confirmed: it syncs again, on your access.');
    expect(await south.getAttribute('data-suspended')).toBe('false');
    expect(await south.getByTestId('edge-confirm').count()).toBe(0);
    const me = (await world.cloud.api('GET', '/api/v1/me')).body.data.id;
    expect((await world.cloud.api('GET', `/sync/edges/${issued.body.data.id}`)).body.data).toMatchObject({
      issued_by: me,
      suspended_at: null,
    });
    const pulled = await requester(world.cloud.url)('GET', `${P}/sync/changes?limit=1`, {
      token: issued.body.data.token,
      headers: { 'Gatehouse-Sync-Protocol': '1' },
    });
    expect(pulled.status).toBe(200);
    expect(await onCloud.evaluate(() => (window as unknown as { stayed: number }).stayed)).toBe(marker);
    expect(await seriousViolations(onCloud)).toEqual([]);
  });

  it('logged no console errors on any page (Chromium’s own line for each 4xx the page handled aside)', () => {
    expect(pages.flatMap((p) => p.errors).filter((e) => !EXPECTED_4XX.test(e) && !CLOSING_SOCKET.test(e))).toEqual([]);
  });
});
