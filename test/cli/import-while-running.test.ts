import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { runCli } from '../helpers/process.js';

// `gatehouse attendees import` run by an operator while the appliance is running on the same
// data directory: another process, which the appliance's bus never hears. The appliance reads
// what it wrote into its decision index within about a second (access/external-changes.ts).

describe('a CLI import while the appliance runs', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-cli-live-'));
  let gh: TestAppliance | undefined;
  afterAll(async () => {
    await gh?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('reaches the running appliance\'s decisions without a restart', async () => {
    gh = await startAppliance({}, { dataDir });
    const api = client(gh, await gh.token());
    const A = '/api/v1/projects/default/default';
    const zone = (await api.post(`${A}/access-zones`, { name: 'Hall' })).body.data.id;
    const gate = (await api.post(`${A}/access-points`, { name: 'Door', access_zone_id: zone, direction: 'both' })).body.data.id;
    const scan = async (credential_value: string) => (await api.post(`${A}/access-points/${gate}/scan`, { credential_value })).body;
    expect(await scan('CLI-1')).toMatchObject({ access_granted: false, reason: 'invalid_credential' });

    const file = join(dataDir, 'people.csv');
    writeFileSync(file, 'first_name,last_name,credential_value\nAda,Lovelace,CLI-1\nAlan,Turing,CLI-2\n');
    const imported = await runCli(['attendees', 'import', file, '--project', 'default/default'], { GATEHOUSE_DATA_DIR: dataDir });
    expect(imported.code, imported.stderr).toBe(0);

    await expect.poll(async () => (await scan('CLI-1')).access_granted, { timeout: 5000, interval: 100 }).toBe(true);
    expect(await scan('CLI-2')).toMatchObject({ access_granted: true, attendee: { first_name: 'Alan', last_name: 'Turing' } });
  });
});
