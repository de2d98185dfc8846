import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { redactRedisUrl, redisConnectionOptions, redisUrlProblem } from '../../src/cluster/redis-url.js';
import { runGatehouse } from '../helpers/process.js';

// redis.url (src/cluster/redis-url.ts, src/cluster/redis.ts): a URL that is not one of the three
// forms stops start-up as a config error; a Redis that cannot be reached stops it naming the URL,
// its password hidden.

describe('redis.url', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  const start = async (url: string) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-redis-url-'));
    dirs.push(dataDir);
    const proc = runGatehouse([], {
      GATEHOUSE_DATA_DIR: dataDir,
      GATEHOUSE_ROLE: 'cloud',
      GATEHOUSE_REDIS_URL: url,
      GATEHOUSE_REDIS_CONNECT_TIMEOUT_MS: '2000',
    });
    const code = await proc.exit;
    return { code, output: proc.output.join('\n') };
  };

  it('takes redis://, rediss:// and unix:// URLs as ioredis options', () => {
    expect(redisConnectionOptions('redis://:s3cret@cache.internal:6380/2')).toEqual({
      host: 'cache.internal',
      port: 6380,
      password: 's3cret',
      db: 2,
    });
    expect(redisConnectionOptions('rediss://cache.internal')).toMatchObject({ port: 6379, tls: {} });
    expect(redisConnectionOptions('unix:///run/redis/redis.sock?db=3')).toEqual({
      path: '/run/redis/redis.sock',
      db: 3,
    });
    expect(redactRedisUrl('redis://user:s3cret@cache.internal:6380/2')).toBe('redis://user:***@cache.internal:6380/2');
    expect(redisUrlProblem('redis://cache.internal/x')).toBe('database "x" is not a number 0-99');
    expect(redisUrlProblem('unix://relative/redis.sock')).toContain('unix:///absolute/path/to/redis.sock');
  });

  it('stops start-up with a config error naming the forms for a URL that is not one', async () => {
    const { code, output } = await start('http://cache.internal:6379');
    expect(code).toBe(2);
    expect(output).toContain(
      'redis.url = "http://cache.internal:6379" (from GATEHOUSE_REDIS_URL): http: is not a Redis scheme',
    );
    expect(output).toContain('unix:///path/to/redis.sock');
  });

  it('stops start-up naming the URL, password hidden, when Redis cannot be reached', async () => {
    const { code, output } = await start('redis://:hunter2@127.0.0.1:1/0');
    expect(code).toBe(1);
    expect(output).toContain(
      'gatehouse: start-up failed: Redis at redis://:***@127.0.0.1:1/0 (redis.url) could not be reached: ' +
        'connect ECONNREFUSED',
    );
    expect(output).not.toContain('hunter2');
  });

  it('names the socket when there is no Redis behind it', async () => {
    const { code, output } = await start('unix:///nonexistent/redis.sock');
    expect(code).toBe(1);
    expect(output).toContain(
      'Redis at unix:///nonexistent/redis.sock (redis.url) could not be reached: connect ENOENT',
    );
  });
});
