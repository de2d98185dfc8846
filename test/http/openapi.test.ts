import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAppliance, type TestAppliance } from '../helpers/appliance.js';

describe('OpenAPI description', () => {
  let gh: TestAppliance;
  let doc: any;
  beforeAll(async () => {
    gh = await startAppliance();
    doc = (await gh.request('GET', '/api/v1/openapi.json')).body;
  });
  afterAll(() => gh.destroy());

  it('is a valid OpenAPI 3.1 document according to a real validator', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('describes every route of the route table, with a unique operation id, tags, ability and rate class', () => {
    const ids = new Set<string>();
    for (const route of gh.app.routes) {
      const op = doc.paths[route.path]?.[route.method.toLowerCase()];
      expect(op, `${route.method} ${route.path}`).toBeDefined();
      expect(op.operationId).toBe(route.operationId);
      expect(ids.has(op.operationId), op.operationId).toBe(false);
      ids.add(op.operationId);
      expect(op.tags.length).toBeGreaterThan(0);
      expect(op['x-ability']).toBe(route.ability);
      expect(op['x-rate-class']).toBe(route.rateClass);
      if (route.body) {
        const schema = op.requestBody.content['application/json'].schema;
        expect(
          schema.type === 'object' || Array.isArray(schema.anyOf) || Array.isArray(schema.oneOf),
          route.operationId,
        ).toBe(true);
      }
      if (route.bodyKind === 'json-or-csv') expect(op.requestBody.content['text/csv'].schema.type).toBe('string');
    }
    const described = Object.values(doc.paths).reduce((n: number, ops: any) => n + Object.keys(ops).length, 0);
    expect(described).toBe(gh.app.routes.length);
  });

  it('generates request schemas from the validating zod schemas (required fields, unknown fields refused)', () => {
    const create = doc.paths['/api/v1/users'].post.requestBody.content['application/json'].schema;
    expect(create.required.sort()).toEqual(['email', 'name', 'password']);
    expect(create.additionalProperties).toBe(false);
    expect(create.properties.password.minLength).toBe(8);
    const params = doc.paths['/api/v1/users'].get.parameters.map((p: any) => p.name);
    expect(params).toEqual(['page', 'per_page']);
  });

  it('gives every error the envelope of its route: errors on 422, retry_after on 429 and store_busy, {error, message} on incoming webhooks', () => {
    for (const [path, methods] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(methods)) {
        for (const [status, response] of Object.entries<any>(op.responses)) {
          if (Number(status) < 400 || (path === '/ready' && status === '503')) continue;
          const schema = response.content['application/json'].schema;
          const where = `${method} ${path} ${status}`;
          expect(schema.required, where).toContain('message');
          if (op['x-error-envelope'] === 'webhook') expect(schema.required, where).toContain('error');
          if (status === '422') expect(schema.required, where).toContain('errors');
          if (response.description.includes('`store_busy`')) {
            expect(schema.required, where).toContain('retry_after');
            expect(response.headers['Retry-After']?.required, where).toBe(true);
          }
          if (status === '429') {
            expect(schema.required, where).toContain('retry_after');
            // X-RateLimit-Reset comes with the rate limit's 429, not with an account's login lock (login_locked).
            const required = Object.entries<any>(response.headers)
              .filter(([, h]) => h.required)
              .map(([name]) => name);
            expect(required, where).toEqual(expect.arrayContaining(['Retry-After', 'X-Request-Id']));
            // The limiter's counters come with a rate limit's 429 only: not with an account's login
            // lock (login_locked) nor an address's webhook failures (too_many_failures).
            const other = ['`login_locked`', '`too_many_failures`'].some((code) => response.description.includes(code));
            if (response.description.includes('`too_many_requests`')) {
              for (const name of ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'])
                expect(response.headers[name], where).toBeDefined();
              expect(response.headers['X-RateLimit-Reset'].required, where).toBe(!other);
            }
          }
        }
      }
    }
  });

  it("declares the edge's refusal of the cloud's resources (409 edge_read_only) on their writes only", () => {
    const P = '/api/v1/projects/{teamSlug}/{projectSlug}';
    const zones = doc.paths[`${P}/access-zones`];
    expect(zones.post.responses['409'].description).toContain('edge_read_only');
    expect(
      Object.values(doc.paths[`${P}/access-points/{accessPointId}`]).filter((op: any) =>
        op.responses?.['409']?.description?.includes('edge_read_only'),
      ).length,
    ).toBe(2);
    expect(zones.get.responses['409']).toBeUndefined();
    expect(doc.paths[`${P}/access-points/{accessPointId}/scan`].post.responses['409']?.description ?? '').not.toContain(
      'edge_read_only',
    );
    expect(doc.paths[`${P}/attendees`].post.responses['409']?.description ?? '').not.toContain('edge_read_only');
  });

  it('requires the body of token creation and session login (without one they answer 401 Unable to authenticate)', () => {
    expect(doc.paths['/api/v1/auth/token'].post.requestBody.required).toBe(true);
    expect(doc.paths['/api/v1/auth/session'].post.requestBody.required).toBe(true);
    expect(doc.paths['/api/v1/auth/token'].post.responses['401']).toBeDefined();
  });

  it('declares what depends on configuration as configured: the webhook header names, unsigned admission, rate limits', async () => {
    const signed = doc.paths['/webhook/v1/access-event'].post;
    expect(signed.parameters.filter((p: any) => p.in === 'header').map((p: any) => [p.name, p.required])).toEqual([
      ['X-Svc-Signature', true],
      ['X-Svc-Timestamp', false],
    ]);
    expect(signed.responses['401'].description).toContain('missing_signature');
    expect(signed.responses['200'].headers['X-Svc-Replayed'].required).toBe(false);
    // The test appliance runs without rate limits: nothing says 429 or X-RateLimit-*.
    expect(doc.paths['/api/v1/me'].get.responses['429']).toBeUndefined();
    expect(Object.keys(doc.paths['/api/v1/me'].get.responses['200'].headers).sort()).toEqual([
      'X-Content-Type-Options',
      'X-Frame-Options',
      'X-Request-Id',
    ]);

    const other = await startAppliance({
      GATEHOUSE_INCOMING_WEBHOOKS_HEADER_PREFIX: 'Acme',
      GATEHOUSE_INCOMING_WEBHOOKS_ALLOW_UNSIGNED: 'true',
      GATEHOUSE_RATE_LIMIT_STANDARD: '60',
    });
    try {
      const configured = (await other.request('GET', '/api/v1/openapi.json')).body;
      const unsigned = configured.paths['/webhook/v1/access-event'].post;
      expect(unsigned.parameters.filter((p: any) => p.in === 'header').map((p: any) => [p.name, p.required])).toEqual([
        ['X-Acme-Signature', false],
        ['X-Acme-Timestamp', false],
      ]);
      expect(unsigned.responses['401'].description).not.toContain('missing_signature');
      expect(Object.keys(unsigned.responses['200'].headers).sort()).toEqual([
        'X-Acme-Replayed',
        'X-Content-Type-Options',
        'X-Frame-Options',
        'X-Request-Id',
      ]);
      const partner = configured.paths['/webhook/v1/registration-partner'].post;
      expect(partner.parameters.map((p: any) => p.name)).toEqual(['X-Partner-Signature', 'X-Acme-Timestamp']);
      const me = configured.paths['/api/v1/me'].get;
      expect(me.responses['429'].headers['Retry-After'].required).toBe(true);
      expect(me.responses['200'].headers['X-RateLimit-Remaining'].required).toBe(true);
      // The search class stays off: the access-event log neither limits nor counts.
      expect(
        configured.paths['/api/v1/projects/{teamSlug}/{projectSlug}/access-events'].get.responses['429'],
      ).toBeUndefined();
      // The attendee list is standard unless it searches: limited, its counters sent unless it searches.
      const attendees = configured.paths['/api/v1/projects/{teamSlug}/{projectSlug}/attendees'].get;
      expect([attendees['x-rate-class'], attendees['x-rate-class-search-when']]).toEqual(['standard', ['search']]);
      expect(attendees.responses['429'].description).toContain('over the standard rate limit (per token');
      expect(attendees.responses['200'].headers['X-RateLimit-Remaining'].required).toBe(false);
    } finally {
      await other.destroy();
    }
  });
});
