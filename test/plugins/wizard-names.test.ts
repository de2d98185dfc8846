import { describe, expect, it } from 'vitest';
import { runAddDependency } from '../../src/plugins/wizard/index.js';
import { buildCatalogue } from '../../src/plugins/wizard/catalogue.js';
import {
  derivedOperationId,
  manifestPath,
  modelOf,
  permissionKeyOf,
  readableParameter,
} from '../../src/plugins/wizard/names.js';
import { startAppliance } from '../helpers/appliance.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// The names the wizard writes, for documents that do not name things as the appliance does.

describe('wizard names', () => {
  it('makes paths relative to the version root with the project parameters as {teamSlug}/{projectSlug}, whatever the document calls them', () => {
    expect(manifestPath('/api/v1/projects/{team}/{project}/access-points/{accessPointId}')).toBe(
      '/v1/projects/{teamSlug}/{projectSlug}/access-points/{access_point}',
    );
    expect(manifestPath('/api/v1/projects/{team_slug}/{slug}')).toBe('/v1/projects/{teamSlug}/{projectSlug}');
    expect(manifestPath('/api/v1/teams/{teamSlug}/members/{member_id}')).toBe('/v1/teams/{team_slug}/members/{member}');
    expect(manifestPath('/api/v1/things/{id}')).toBe('/v1/things/{id}');
  });

  it('offers nothing callApi cannot reach: it calls <baseUrl>/api<path>', () => {
    expect(manifestPath('/health')).toBeNull();
    expect(manifestPath('/webhook/v1/access-event')).toBeNull();
    expect(manifestPath('/apps/{appId}/events')).toBeNull();
  });

  it('derives Laravel resource ids for operations without an operationId', () => {
    const id = (method: string, path: string) => derivedOperationId(method, manifestPath(path)!);
    expect(id('get', '/api/v1/projects/{t}/{p}/access-points')).toBe('access-points.index');
    expect(id('post', '/api/v1/projects/{t}/{p}/access-points')).toBe('access-points.store');
    expect(id('get', '/api/v1/projects/{t}/{p}/access-points/{accessPointId}')).toBe('access-points.show');
    expect(id('put', '/api/v1/projects/{t}/{p}/access-points/{accessPointId}')).toBe('access-points.update');
    expect(id('patch', '/api/v1/projects/{t}/{p}/access-points/{accessPointId}')).toBe('access-points.update');
    expect(id('delete', '/api/v1/projects/{t}/{p}/access-points/{accessPointId}')).toBe('access-points.destroy');
    expect(id('get', '/api/v1/projects/{t}/{p}/attendees/{attendeeId}/credentials')).toBe(
      'attendees.credentials.index',
    );
    expect(id('post', '/api/v1/projects/{t}/{p}/gateways/{gatewayId}/token')).toBe('gateways.token.store');
    expect(id('post', '/api/v1/things/{id}')).toBe('things.post');
  });

  it('names a tag’s model, singular PascalCase, and its permission key', () => {
    expect([
      modelOf('Access points'),
      modelOf('Attendee types'),
      modelOf('Blocklist'),
      modelOf('Analytics'),
      modelOf('Batches'),
      modelOf('Entries'),
    ]).toEqual(['AccessPoint', 'AttendeeType', 'Blocklist', 'Analytics', 'Batch', 'Entry']);
    expect(permissionKeyOf('Access points')).toBe('access_points');
    expect(readableParameter('accessPointId')).toBe('access_point');
  });

  it('indexes a document without operationIds or tag list, and keeps ids unique', () => {
    const catalogue = buildCatalogue({
      openapi: {
        openapi: '3.1.0',
        paths: {
          '/api/v1/projects/{team}/{project}/doors': {
            get: { tags: ['Doors'] },
            post: { tags: ['Doors'], operationId: 'doors.index' },
          },
          '/health': { get: { tags: ['Ops'] } },
        },
      },
      asyncapi: { asyncapi: '3.0.0' },
    });
    expect(catalogue.tags).toEqual([
      {
        name: 'Doors',
        model: 'Door',
        permissionKey: 'doors',
        operations: [
          {
            id: 'doors.index',
            method: 'get',
            path: '/v1/projects/{teamSlug}/{projectSlug}/doors',
            apiPath: '/api/v1/projects/{team}/{project}/doors',
            summary: '',
          },
          {
            id: 'doors.index.post',
            method: 'post',
            path: '/v1/projects/{teamSlug}/{projectSlug}/doors',
            apiPath: '/api/v1/projects/{team}/{project}/doors',
            summary: '',
          },
        ],
      },
    ]);
    expect(catalogue.events).toEqual([]);
  });

  it('writes bare event names also when the appliance publishes them under pusher.eventNamespace', async () => {
    const gh = await startAppliance({ GATEHOUSE_PUSHER_EVENT_NAMESPACE: 'App\\Events' });
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-wizard-names-'));
    try {
      writeFileSync(join(dir, 'app-manifest.json'), '{}');
      const { dependency } = await runAddDependency([
        dir,
        '--url',
        gh.url,
        '--tag',
        'Access points',
        '--operations',
        'access-points.index',
      ]);
      expect(dependency.events).toEqual({
        AccessPointUpdated: 'AccessPointUpdated',
        AccessPointDeleted: 'AccessPointDeleted',
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await gh.destroy();
    }
  });
});
