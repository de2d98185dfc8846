import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { configLeaves } from '../../src/config/overlay.js';

const problemsOf = (fn: () => unknown): string[] => {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
};

describe('configuration', () => {
  it('runs a standalone appliance on 8080 and 1883 with ./data when nothing is set', () => {
    const config = loadConfig({ file: 'config/default.json' });
    expect(config.role).toBe('standalone');
    expect(config.http.port).toBe(8080);
    expect(config.mqtt.port).toBe(1883);
    expect(config.dataDir).toBe('./data');
    expect(config.rateLimit).toEqual({
      standard: 60,
      bulk: 10,
      search: 20,
      windowSeconds: 60,
      sync: 600,
      syncWindowSeconds: 10,
    });
    expect(config.auth.tokenExpiryMinutes).toBeNull();
    expect(Object.isFrozen(config.http)).toBe(true);
  });

  it('understands every environment variable docs/config.md promises', () => {
    const names = configLeaves.map((l) => l.env);
    for (const name of [
      'GATEHOUSE_HTTP_PORT',
      'GATEHOUSE_MQTT_PORT',
      'GATEHOUSE_DATA_DIR',
      'GATEHOUSE_ADMIN_EMAIL',
      'GATEHOUSE_ADMIN_PASSWORD',
      'GATEHOUSE_ROLE',
      'GATEHOUSE_CLOUD_URL',
      'GATEHOUSE_SYNC_TOKEN',
      'GATEHOUSE_LOG_LEVEL',
      'GATEHOUSE_RATE_LIMIT_STANDARD',
      'GATEHOUSE_RATE_LIMIT_BULK',
      'GATEHOUSE_RATE_LIMIT_SEARCH',
      'GATEHOUSE_PUSHER_APP_ID',
      'GATEHOUSE_PUSHER_KEY',
      'GATEHOUSE_PUSHER_SECRET',
      'GATEHOUSE_WEBHOOK_ALLOW_INSECURE',
    ])
      expect(names, name).toContain(name);
    const config = loadConfig({
      env: {
        GATEHOUSE_HTTP_PORT: '9090',
        GATEHOUSE_MQTT_PORT: '0',
        GATEHOUSE_ROLE: 'edge',
        GATEHOUSE_CLOUD_URL: 'https://cloud.example.test',
        GATEHOUSE_SYNC_TOKEN: 'tok',
        GATEHOUSE_RATE_LIMIT_BULK: '0',
        GATEHOUSE_WEBHOOK_ALLOW_INSECURE: '1',
        GATEHOUSE_PUSHER_KEY: 'k',
      },
    });
    expect(config.http.port).toBe(9090);
    expect(config.mqtt.port).toBe(0);
    expect(config.role).toBe('edge');
    expect(config.cloud.url).toEqual(['https://cloud.example.test']);
    expect(config.sync.token).toBe('tok');
    expect(config.rateLimit.bulk).toBe(0);
    expect(config.webhook.allowInsecure).toBe(true);
    expect(config.pusher.key).toBe('k');
  });

  it('layers file, then environment, then flags', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-config-'));
    const file = join(dir, 'gatehouse.json');
    writeFileSync(file, JSON.stringify({ http: { port: 7000 }, log: { level: 'debug' }, dataDir: '/srv/a' }));
    const config = loadConfig({
      file,
      env: { GATEHOUSE_HTTP_PORT: '7001', GATEHOUSE_DATA_DIR: '/srv/b' },
      flags: ['--http-port', '7002', '--webhook-allow-insecure'],
    });
    expect(config.http.port).toBe(7002);
    expect(config.dataDir).toBe('/srv/b');
    expect(config.log.level).toBe('debug');
    expect(config.webhook.allowInsecure).toBe(true);
  });

  it('stops with one message naming the key, the value, where it came from and what is expected', () => {
    const problems = problemsOf(() =>
      loadConfig({ env: { GATEHOUSE_HTTP_PORT: 'eighty', GATEHOUSE_ROLE: 'satellite', GATEHOUSE_LOG_LEVEL: 'loud' } }),
    );
    expect(problems).toHaveLength(3);
    expect(problems.find((p) => p.startsWith('http.port'))).toMatch(
      /^http\.port = "eighty" \(from GATEHOUSE_HTTP_PORT\): .*expected number/,
    );
    expect(problems.find((p) => p.startsWith('role'))).toMatch(
      /role = "satellite" \(from GATEHOUSE_ROLE\): .*"standalone"\|"edge"\|"cloud"/,
    );
    expect(problems.find((p) => p.startsWith('log.level'))).toContain('"loud"');
    expect(() => loadConfig({ env: { GATEHOUSE_HTTP_PORT: '70000' } })).toThrow(
      /Invalid configuration:\n {2}- http\.port = 70000 \(from GATEHOUSE_HTTP_PORT\): .*65535/,
    );
  });

  it('takes an encryption master key of 32 bytes in base64, and refuses any other without printing it', () => {
    const key = Buffer.alloc(32, 7).toString('base64');
    expect(loadConfig({ env: { GATEHOUSE_PUSHER_ENCRYPTION_MASTER_KEY: key } }).pusher.encryptionMasterKey).toBe(key);
    expect(loadConfig({}).pusher.encryptionMasterKey).toBeNull(); // generated and kept at start (realtime.md)
    // 31 and 33 bytes, 32 characters that are not base64 of 32 bytes (the deprecated raw form), not base64 at all.
    const wrong = [
      Buffer.alloc(31, 7).toString('base64'),
      Buffer.alloc(33, 7).toString('base64'),
      'a-thirty-two-character-long-key!',
      'not base64 at all ###',
    ];
    for (const value of wrong) {
      const problems = problemsOf(() => loadConfig({ env: { GATEHOUSE_PUSHER_ENCRYPTION_MASTER_KEY: value } }));
      expect(problems).toEqual([
        `pusher.encryptionMasterKey = (hidden, ${value.length} characters) (from GATEHOUSE_PUSHER_ENCRYPTION_MASTER_KEY): must be base64 of exactly 32 bytes (make one with: openssl rand -base64 32)`,
      ]);
    }
  });

  it('requires the cloud URL and sync token for an edge', () => {
    const problems = problemsOf(() => loadConfig({ env: { GATEHOUSE_ROLE: 'edge' } }));
    expect(problems).toEqual([
      'cloud.url = (not set): required when role is "edge" (the URL of the cloud instance)',
      'sync.token = (not set): required when role is "edge" (the token the cloud issued for this edge)',
    ]);
  });

  it('takes several cloud URLs, comma-separated in the environment or a flag, a string or a list in the file', () => {
    const edge = { GATEHOUSE_ROLE: 'edge', GATEHOUSE_SYNC_TOKEN: 'tok' };
    const env = { ...edge, GATEHOUSE_CLOUD_URL: 'https://a.cloud.test, https://b.cloud.test:8443/' };
    expect(loadConfig({ env }).cloud.url).toEqual(['https://a.cloud.test', 'https://b.cloud.test:8443/']);
    expect(
      loadConfig({ env: edge, flags: ['--cloud-url', 'http://10.0.0.5:8080,https://b.cloud.test'] }).cloud.url,
    ).toEqual(['http://10.0.0.5:8080', 'https://b.cloud.test']);
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-config-'));
    const file = join(dir, 'edge.json');
    for (const url of [['https://a.cloud.test', 'https://b.cloud.test'], 'https://a.cloud.test,https://b.cloud.test']) {
      writeFileSync(file, JSON.stringify({ role: 'edge', cloud: { url }, sync: { token: 'tok' } }));
      expect(loadConfig({ file }).cloud.url).toEqual(['https://a.cloud.test', 'https://b.cloud.test']);
    }
  });

  it('names each cloud URL of the list that is not one, with its place', () => {
    const edge = { GATEHOUSE_ROLE: 'edge', GATEHOUSE_SYNC_TOKEN: 'tok' };
    const given = 'https://a.cloud.test,htps//b.cloud.test,,ftp://c.cloud.test,https://a.cloud.test';
    const shown = `cloud.url = ${JSON.stringify(given)} (from GATEHOUSE_CLOUD_URL)`;
    expect(problemsOf(() => loadConfig({ env: { ...edge, GATEHOUSE_CLOUD_URL: given } }))).toEqual([
      `${shown}: URL 2 of 5: "htps//b.cloud.test" is not an http:// or https:// URL`,
      `${shown}: URL 3 of 5: empty`,
      `${shown}: URL 4 of 5: "ftp://c.cloud.test" is not an http:// or https:// URL`,
      `${shown}: URL 5 of 5: "https://a.cloud.test" is URL 1 again`,
    ]);
    expect(problemsOf(() => loadConfig({ env: { ...edge, GATEHOUSE_CLOUD_URL: 'cloud.test' } }))).toEqual([
      'cloud.url = "cloud.test" (from GATEHOUSE_CLOUD_URL): "cloud.test" is not an http:// or https:// URL',
    ]);
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-config-'));
    const file = join(dir, 'edge.json');
    writeFileSync(file, JSON.stringify({ role: 'edge', cloud: { url: [] }, sync: { token: 'tok' } }));
    expect(problemsOf(() => loadConfig({ file }))).toEqual([
      `cloud.url = [] (from ${file}): an empty list: give at least one URL`,
    ]);
  });

  it('stops on access.antiPassback set to true, which moved to each access zone, and takes false (what every zone does unless asked) as nothing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-config-'));
    const file = join(dir, 'old.json');
    writeFileSync(file, JSON.stringify({ access: { antiPassback: true } }));
    const moved =
      /^access\.antiPassback = true \(from (.+)\): removed: anti-passback is a choice of each access zone now \(its anti_passback field; docs\/engine\.md\)$/;
    expect(problemsOf(() => loadConfig({ file }))).toEqual([expect.stringMatching(moved)]);
    expect(problemsOf(() => loadConfig({ file }))[0]).toContain(`(from ${file})`);
    for (const on of ['1', 'true'])
      expect(problemsOf(() => loadConfig({ env: { GATEHOUSE_ACCESS_ANTI_PASSBACK: on } }))).toEqual([
        expect.stringMatching(moved),
      ]);
    expect(problemsOf(() => loadConfig({ flags: ['--access-anti-passback'] }))).toEqual([expect.stringMatching(moved)]);
    // Not a boolean at all: named as such, not taken for either.
    expect(problemsOf(() => loadConfig({ env: { GATEHOUSE_ACCESS_ANTI_PASSBACK: 'sometimes' } }))[0]).toMatch(
      /^access\.antiPassback = "sometimes" \(from GATEHOUSE_ACCESS_ANTI_PASSBACK\): removed/,
    );
    writeFileSync(file, JSON.stringify({ access: { antiPassback: false }, http: { port: 9000 } }));
    const config = loadConfig({
      file,
      env: { GATEHOUSE_ACCESS_ANTI_PASSBACK: '0' },
      flags: ['--access-anti-passback=false'],
    });
    expect(config.http.port).toBe(9000);
    expect(config).not.toHaveProperty('access');
  });

  it('refuses unknown keys in the file, unknown flags and a missing named file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-config-'));
    const file = join(dir, 'bad.json');
    writeFileSync(file, JSON.stringify({ http: { prot: 1 } }));
    expect(problemsOf(() => loadConfig({ file }))[0]).toMatch(/^http prot/);
    expect(problemsOf(() => loadConfig({ flags: ['--no-such-thing', '1'] }))).toContain(
      'unknown option --no-such-thing',
    );
    expect(problemsOf(() => loadConfig({ file: join(dir, 'missing.json'), fileRequired: true }))[0]).toMatch(
      /does not exist/,
    );
    writeFileSync(file, '{not json');
    expect(problemsOf(() => loadConfig({ file }))[0]).toMatch(/not valid JSON/);
  });
});
