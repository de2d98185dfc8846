import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
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
        expect(schema.type === 'object' || Array.isArray(schema.anyOf) || Array.isArray(schema.oneOf), route.operationId).toBe(true);
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

  it('matches what the server really answers', async () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats.default(ajv);
    const token = await gh.token();
    const check = async (path: string, method = 'get', status = 200) => {
      const res = await gh.request(method.toUpperCase(), path, { token });
      expect(res.status).toBe(status);
      const template = Object.keys(doc.paths).find((p) => new RegExp(`^${p.replace(/\{\w+\}/g, '[^/]+')}$`).test(path))!;
      const schema = doc.paths[template][method].responses[status].content['application/json'].schema;
      const valid = ajv.validate(schema, res.body);
      expect(ajv.errors ?? [], path).toEqual([]);
      expect(valid).toBe(true);
    };
    await check('/api/v1/me');
    await check('/api/v1/projects');
    await check('/api/v1/projects/default/default');
    await check('/api/v1/users');
    await check('/api/v1/users/1');
    await check('/api/v1/teams');
    await check('/api/v1/settings');
    await check('/ready');
    await check('/api/v1/users/12345', 'get', 404);
  });
});
