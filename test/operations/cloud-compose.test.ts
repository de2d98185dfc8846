import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config/load.js';

// deploy/cloud/compose.yaml cannot run here (no container runtime); what can drift from the code
// is checked: every setting it gives the cloud instances is one this build reads, and together they
// make a cloud on PostgreSQL sharing Redis; the health checks and the load balancer's timeouts fit
// the appliance's endpoints and its longest long poll.

type Service = { environment?: Record<string, string>; healthcheck?: { test: string[] }; build?: { context: string } };

const compose = parse(readFileSync('deploy/cloud/compose.yaml', 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
};
/** ${VAR:?message} / ${VAR:-default} as an operator's .env would fill them. */
const filled = (value: string) =>
  value.replace(/\$\{([A-Z_]+)(?::[?-]([^}]*))?\}/g, (_w, name: string, fallback: string | undefined) =>
    name === 'GATEHOUSE_PUSHER_ENCRYPTION_MASTER_KEY'
      ? Buffer.alloc(32, 7).toString('base64')
      : name.endsWith('PASSWORD') || name.endsWith('KEY') || name.endsWith('SECRET')
        ? 'a-secret-0123456789'
        : (fallback ?? 'x'),
  );

describe('the cloud compose file', () => {
  it('runs two instances of this build, each configured as a cloud on PostgreSQL sharing Redis', () => {
    const clouds = Object.entries(compose.services).filter(([, s]) => s.environment?.GATEHOUSE_ROLE === 'cloud');
    expect(clouds.map(([name]) => name)).toEqual(['cloud-1', 'cloud-2']);
    for (const [name, service] of clouds) {
      expect(existsSync(`deploy/cloud/${service.build!.context}/Dockerfile`), name).toBe(true);
      const env = Object.fromEntries(Object.entries(service.environment!).map(([k, v]) => [k, filled(String(v))]));
      // An unknown GATEHOUSE_ setting or a wrong value stops loadConfig, as it stops the start.
      const config = loadConfig({ env });
      expect(config.role).toBe('cloud');
      expect(config.databaseUrl).toMatch(/^postgres:\/\/gatehouse:.*@postgres:5432\/gatehouse$/);
      expect(config.redis.url).toBe('redis://redis:6379/0');
      expect(config.http.trustProxy).toBe(true);
      expect(service.healthcheck!.test.join(' ')).toContain('/ready');
    }
    expect(Object.keys(compose.services).sort()).toEqual(['balancer', 'cloud-1', 'cloud-2', 'postgres', 'redis']);
  });

  it('balances on /ready and holds a connection past the longest long poll', () => {
    const cfg = readFileSync('deploy/cloud/haproxy.cfg', 'utf8');
    expect(cfg).toMatch(/option httpchk GET \/ready/);
    const seconds = (what: string) => Number(new RegExp(`timeout ${what} (\\d+)s`).exec(cfg)![1]);
    // sync.longPollSeconds is at most 300 (src/config/schema.ts): a held poll is never cut by the balancer.
    expect(seconds('server')).toBeGreaterThan(300);
    expect(seconds('client')).toBeGreaterThan(300);
    for (const server of ['cloud-1', 'cloud-2']) expect(cfg).toContain(`server ${server} ${server}:8080 check`);
  });
});
