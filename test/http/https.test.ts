import { mkdtempSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { selfSignedCertificate } from '../helpers/certificate.js';

describe('optional HTTPS listener', () => {
  let gh: TestAppliance;
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-tls-'));
    const { key, cert } = selfSignedCertificate(dir);
    gh = await startAppliance({
      GATEHOUSE_HTTPS_CERT_FILE: cert,
      GATEHOUSE_HTTPS_KEY_FILE: key,
      GATEHOUSE_HTTPS_PORT: '0',
    });
  });
  afterAll(() => gh.destroy());

  it('serves the same API over TLS beside plain HTTP', async () => {
    const port = gh.app.httpsPort;
    expect(port).toBeGreaterThan(0);
    const body = await new Promise<string>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/health', rejectUnauthorized: false }, (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve(text));
      });
      req.on('error', reject);
      req.end();
    });
    expect(JSON.parse(body)).toEqual({ status: 'ok' });
    expect((await gh.request('GET', '/health')).status).toBe(200);
  });
});
