import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { runCli } from '../helpers/process.js';

describe('demo venue (npm run demo)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-demo-'));
  let gh: TestAppliance | undefined;
  afterAll(async () => {
    await gh?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('seeds zones, gates, readers, types, 5,000 attendees with credentials, a blocklist entry and time windows, once', async () => {
    const seeded = await runCli(['demo', 'seed'], { GATEHOUSE_DATA_DIR: dataDir });
    expect(seeded.code, seeded.stderr).toBe(0);
    expect(JSON.parse(seeded.stdout)).toMatchObject({ project: 'default/default', attendees: 5000, credentials: 5000 });
    const again = await runCli(['demo', 'seed'], { GATEHOUSE_DATA_DIR: dataDir });
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('already has a venue');

    gh = await startAppliance({}, { dataDir });
    const admin = await gh.token();
    const A = '/api/v1/projects/default/default';
    const total = async (path: string) => (await gh!.request('GET', `${A}/${path}`, { token: admin })).body.meta.total;
    expect(await total('access-zones')).toBe(4);
    expect(await total('access-points')).toBe(5);
    expect(await total('readers')).toBe(6);
    expect(await total('attendee-types')).toBe(4);
    expect(await total('attendees')).toBe(5000);
    expect(await total('time-restrictions')).toBe(2);
    expect(await total('blocklist')).toBe(1);
    const gate = (await gh.request('GET', `${A}/access-points?per_page=1`, { token: admin })).body.data[0];
    expect(gate).toMatchObject({
      name: 'Main Gate In',
      direction: 'in',
      readers: [
        expect.objectContaining({ identifier: 'GATE-IN-1' }),
        expect.objectContaining({ identifier: 'GATE-IN-2' }),
      ],
    });
  });
});
