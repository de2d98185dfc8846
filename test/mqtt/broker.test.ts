import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { mqttPort, readerLogin, type ReaderCredentials } from '../helpers/mqtt.js';

// The order of a connection's events (docs/security.md, attack 9): a reader that sends a PUBLISH the ACL
// refuses right after CONNACK is disconnected before aedes has finished its connect, so aedes
// reports the disconnect before the connect. The reader must still end up offline, not shown
// online for good. Each connection here is thrown out by the broker; the reader's state is read
// over REST as staff would.

const A = '/api/v1/projects/default/default';

describe('broker connection events', () => {
  let gh: TestAppliance;
  let api: ReturnType<typeof client>;
  let creds: ReaderCredentials;
  const status = async () => (await api.get(`${A}/readers/${creds.reader.id}`)).body.data.status;

  beforeAll(async () => {
    gh = await startAppliance();
    api = client(gh, await gh.token());
    const zone = (await api.post(`${A}/access-zones`, { name: 'Hall' })).body.data.id;
    const gate = (await api.post(`${A}/access-points`, { name: 'Door', access_zone_id: zone, direction: 'both' })).body
      .data.id;
    expect((await api.post(`${A}/readers`, { identifier: 'R-1', access_point_id: gate })).status).toBe(201);
    creds = await readerLogin(gh, await gh.token(), A, 'R-1');
  });
  afterAll(() => gh.destroy());

  /**
   * mosquitto_pub, another process: it sends its PUBLISH the moment CONNACK arrives, which the
   * broker reads while aedes is still finishing the connect (an in-process client is read a loop
   * turn too late to show it). Answers mosquitto_pub's stderr.
   */
  const publishRightAfterConnack = (clientId: string, topic: string, qos: 0 | 1) =>
    new Promise<string>((resolve) =>
      execFile(
        'mosquitto_pub',
        [
          '-h',
          '127.0.0.1',
          '-p',
          String(mqttPort(gh)),
          '-V',
          'mqttv311',
          '-i',
          clientId,
          '-u',
          creds.mqtt.username,
          '-P',
          creds.mqtt.password,
          '-t',
          topic,
          '-m',
          '{}',
          '-q',
          String(qos),
        ],
        { timeout: 10_000 },
        (_err, _stdout, stderr) => resolve(stderr),
      ),
    );

  it('shows a reader offline after it was thrown out for a PUBLISH the ACL refuses right after CONNACK', async () => {
    expect((await status()).status).toBe('unknown');
    const refused = [
      creds.mqtt.scans_topic.replace('/R-1/', '/R-2/'),
      creds.mqtt.decisions_topic,
      'gatehouse/default/default/gateways/G-1/status',
    ];
    for (let i = 0; i < 6; i++) {
      const stderr = await publishRightAfterConnack(`r1-mosq-${i}`, refused[i % refused.length]!, i < 3 ? 0 : 1);
      expect(stderr).not.toMatch(/Connection Refused/i); // admitted, then thrown out for the PUBLISH
      await expect.poll(async () => (await status()).status, { timeout: 10_000 }).toBe('offline');
    }
    // It was seen (so not unknown), and no connection of it is left counted.
    expect(await status()).toMatchObject({ status: 'offline', connected_via: null, last_seen: expect.any(String) });
  });
});
