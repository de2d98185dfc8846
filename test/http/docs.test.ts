import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAppliance, type TestAppliance } from '../helpers/appliance.js';

describe('docs/rest.md', () => {
  let gh: TestAppliance;
  beforeAll(async () => {
    gh = await startAppliance();
  });
  afterAll(() => gh.destroy());

  it('lists every route of the route table with its operation id', () => {
    const doc = readFileSync('docs/rest.md', 'utf8');
    for (const route of gh.app.routes)
      expect(doc, route.operationId).toContain(`| ${route.method} | \`${route.path}\` | \`${route.operationId}\` |`);
  });
});
