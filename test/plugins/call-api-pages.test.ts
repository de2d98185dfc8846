import { createPinia, setActivePinia } from 'pinia';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CALL_API_LIMITS,
  createCallApi,
  PluginApiError,
  type PluginContext,
} from '../../src/plugins/toolkit/call-api.js';
import { usePluginStore } from '../../src/plugins/toolkit/store.js';
import type { PluginDependency } from '../../src/plugins/toolkit/types.js';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { accessPointsDependency } from './fixtures.js';

// callApi and collections (docs/plugins.md "callApi"): a list operation called without `page` /
// `per_page` resolves to every item, page after page, so a venue with 16 gates gets 16 (the
// appliance's pages hold 15 unless asked otherwise); with either it is one page, as asked; past
// the cap it is refused with the paging option named, not cut short. The call is first sent as
// written: what is not a page, or a page holding the whole list, costs nothing more.

const A = '/api/v1/projects/default/default';
const attendees: PluginDependency = {
  identifier: 'attendees',
  model: 'Attendee',
  permissionKey: 'attendees',
  permissions: ['view_attendees'],
  operations: { 'attendees.index': 'get:/v1/projects/{teamSlug}/{projectSlug}/attendees' },
  events: {},
};
const zones: PluginDependency = {
  identifier: 'zones',
  model: 'AccessZone',
  permissionKey: 'access_zones',
  permissions: ['view_access_zones'],
  operations: { 'access-zones.index': 'get:/v1/projects/{teamSlug}/{projectSlug}/access-zones' },
  events: {},
};

describe('callApi on a collection', () => {
  let gh: TestAppliance;
  let token: string;
  let gates: number[];
  const sent: string[] = [];
  const context = (): PluginContext => ({
    baseUrl: gh.url,
    teamSlug: 'default',
    projectSlug: 'default',
    token,
    fetch: (input, init) => {
      sent.push(`${init?.method} ${String(input).slice(gh.url.length)}`);
      return fetch(input, init);
    },
  });
  const callApi = createCallApi(context, () => ({ dependencies: [accessPointsDependency, attendees, zones] }));
  const sentDuring = async <T>(call: () => Promise<T>): Promise<{ answer: T; requests: string[] }> => {
    const before = sent.length;
    const answer = await call();
    return { answer, requests: sent.slice(before) };
  };

  beforeAll(async () => {
    gh = await startAppliance();
    token = await gh.token();
    const api = client(gh, token);
    const zone = (await api.post(`${A}/access-zones`, { name: 'Hall' })).body.data.id as number;
    gates = [];
    for (let i = 1; i <= 16; i++)
      gates.push((await api.post(`${A}/access-points`, { name: `Gate ${i}`, access_zone_id: zone })).body.data.id);
  });
  afterAll(() => gh.destroy());

  it('resolves to all 16 gates of a venue, not the first page of 15', async () => {
    const { answer, requests } = await sentDuring(() =>
      callApi<{ id: number }[]>('access-points.index', 'access_points'),
    );
    expect(answer.map((g) => g.id)).toEqual(gates);
    // The call as written answers the first 15 of 16: the list is read again, 100 a page.
    expect(requests).toEqual([`GET ${A}/access-points`, `GET ${A}/access-points?per_page=100&page=1`]);
  });

  it('sends a list that one page holds once, and keeps that answer with {envelope: true}', async () => {
    const { answer, requests } = await sentDuring(() =>
      callApi<{ data: { name: string }[]; meta: Record<string, number>; links?: unknown }>(
        'access-zones.index',
        'zones',
        {},
        { envelope: true },
      ),
    );
    expect(requests).toEqual([`GET ${A}/access-zones`]);
    expect(answer.data.map((z) => z.name)).toEqual(['Hall']);
    expect(answer.meta).toEqual({ total: 1, pages: 1 });
    expect(answer.links).toBeUndefined();
  });

  it('follows the pages of a list longer than one page of 100, keeping the query, each item once', async () => {
    const api = client(gh, token);
    const zone = (await api.post(`${A}/access-zones`, { name: 'Annex' })).body.data.id as number;
    for (let i = 17; i <= 230; i++)
      gates.push((await api.post(`${A}/access-points`, { name: `Gate ${i}`, access_zone_id: zone })).body.data.id);
    const { answer, requests } = await sentDuring(() =>
      callApi<{ id: number }[]>('access-points.index', 'access_points'),
    );
    expect(answer.map((g) => g.id)).toEqual(gates);
    expect(requests).toEqual([
      `GET ${A}/access-points`,
      ...[1, 2, 3].map((n) => `GET ${A}/access-points?per_page=100&page=${n}`),
    ]);
  });

  it('answers one page when the call names page or per_page, its meta with {envelope: true}', async () => {
    const second = await sentDuring(() =>
      callApi<{ id: number }[]>('access-points.index', 'access_points', { page: 2, per_page: 15 }),
    );
    expect(second.answer.map((g) => g.id)).toEqual(gates.slice(15, 30));
    expect(second.requests).toEqual([`GET ${A}/access-points?page=2&per_page=15`]);
    expect((await callApi<unknown[]>('access-points.index', 'access_points', { per_page: 5 })).length).toBe(5);
    expect(
      (await callApi<{ id: number }[]>('access-points.index', 'access_points', { page: 1 })).map((g) => g.id),
    ).toEqual(gates.slice(0, 15));
    const page = await callApi<{ data: unknown[]; meta: Record<string, number> }>(
      'access-points.index',
      'access_points',
      { page: 3, per_page: 100 },
      { envelope: true },
    );
    expect(page.meta).toEqual({ current_page: 3, per_page: 100, total: 230 });
    expect(page.data).toHaveLength(30);
  });

  it('with {envelope: true} and no page asked, resolves to every item with their count and the pages read', async () => {
    const all = await callApi<{ data: { id: number }[]; meta: Record<string, number> }>(
      'access-points.index',
      'access_points',
      {},
      { envelope: true },
    );
    expect(all.data.map((g) => g.id)).toEqual(gates);
    expect(all.meta).toEqual({ total: 230, pages: 4 });
  });

  it("fills the store's records with every item", async () => {
    setActivePinia(createPinia());
    const store = usePluginStore();
    store.applyManifest({
      settings: {},
      strings: { default: {} },
      assets: {},
      triggerState: {},
      dependencies: [accessPointsDependency],
      permissions: [],
    });
    store.setContext({ baseUrl: gh.url, teamSlug: 'default', projectSlug: 'default', token });
    await store.callApi('access-points.index', 'access_points');
    expect(store.getRecords('access_points')).toHaveLength(230);
  });

  it('sends a single resource as asked: no paging for an operation on one item', async () => {
    const { answer, requests } = await sentDuring(() =>
      callApi<{ id: number }>('access-points.show', 'access_points', { access_point: gates[0] }),
    );
    expect(answer.id).toBe(gates[0]);
    expect(requests).toEqual([`GET ${A}/access-points/${gates[0]}`]);
  });

  it(`refuses a list over ${CALL_API_LIMITS.maxItems} items after its first page, naming the paging option, and reads it page by page when asked`, async () => {
    const rows = Array.from({ length: CALL_API_LIMITS.maxItems + 1 }, (_, i) => ({
      first_name: `Guest ${i}`,
      last_name: 'Crowd',
    }));
    const imported = await client(gh, token).post(`${A}/attendees/import`, rows);
    expect(imported.body.data).toMatchObject({ imported: CALL_API_LIMITS.maxItems + 1 });
    const before = sent.length;
    const refused = await callApi('attendees.index', 'attendees', { search: 'Crowd' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PluginApiError);
    expect(refused).toMatchObject({ code: 'list_too_long', status: 0 });
    expect((refused as Error).message).toBe(
      `attendees.index of "attendees" lists ${CALL_API_LIMITS.maxItems + 1} items, more than the ${CALL_API_LIMITS.maxItems} callApi gathers in one call: ask for one page at a time with {page, per_page} in additionalData (per_page at most 100).`,
    );
    expect(sent.slice(before)).toEqual([`GET ${A}/attendees?search=Crowd`]);
    const last = await callApi<unknown[]>('attendees.index', 'attendees', {
      search: 'Crowd',
      page: 101,
      per_page: 100,
    });
    expect(last).toHaveLength(1);
    // A search that finds fewer is read whole, its query on every page: Guest 1, 10-19, 100-199, 1000-1999, 10000.
    const from = sent.length;
    const found = await callApi<{ first_name: string }[]>('attendees.index', 'attendees', { search: 'Guest 1' });
    expect(found).toHaveLength(1112);
    expect(new Set(found.map((a) => a.first_name)).size).toBe(1112);
    expect(sent.slice(from)).toEqual([
      `GET ${A}/attendees?search=Guest+1`,
      ...Array.from({ length: 12 }, (_, i) => `GET ${A}/attendees?search=Guest+1&per_page=100&page=${i + 1}`),
    ]);
  }, 60_000);
});
