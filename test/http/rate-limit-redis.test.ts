import PusherServerLib from 'pusher';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProcessAppliance, type ProcessAppliance } from '../helpers/process-appliance.js';
import { startRedis, type TestRedis } from '../helpers/redis-server.js';

// Rate limits across the instances of a cloud (http/rate-limit.ts, docs/realtime.md "Several
// instances"): two processes sharing one redis-server count one budget, and when Redis goes away
// each instance goes on counting in memory instead of failing the requests.

const APP = { appId: '515151', key: 'limits-key-0001', secret: 'limits-secret-0001' };
const LIMIT = 6;

describe('rate limits shared through Redis (processes)', () => {
  let redis: TestRedis;
  let one: ProcessAppliance;
  let two: ProcessAppliance;

  beforeAll(async () => {
    redis = await startRedis();
    const env = {
      GATEHOUSE_ROLE: 'cloud',
      GATEHOUSE_REDIS_URL: redis.url,
      GATEHOUSE_PUSHER_APP_ID: APP.appId,
      GATEHOUSE_PUSHER_KEY: APP.key,
      GATEHOUSE_PUSHER_SECRET: APP.secret,
      GATEHOUSE_RATE_LIMIT_STANDARD: String(LIMIT),
      GATEHOUSE_RATE_LIMIT_WINDOW_SECONDS: '600', // the window cannot end during the test
    };
    [one, two] = await Promise.all([startProcessAppliance(env), startProcessAppliance(env)]);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([one?.destroy(), two?.destroy()]);
    await redis?.stop();
  }, 60_000);

  /** One request of the standard budget (the Pusher HTTP API, per client address): its status and headers. */
  const ask = async (instance: ProcessAppliance) => {
    const lib = new PusherServerLib({ ...APP, host: '127.0.0.1', port: new URL(instance.url).port, useTLS: false });
    return lib.get({ path: '/channels' }).then(
      (res) => ({ status: res.status, remaining: res.headers.get('x-ratelimit-remaining') }),
      (err: { status: number }) => ({ status: err.status, remaining: '0' }),
    );
  };

  it('refuses the request past the limit on either instance when the budget was spent half on each', async () => {
    const answers = [];
    for (let i = 0; i < LIMIT; i++) answers.push(await ask(i % 2 === 0 ? one : two));
    expect(answers.map((a) => a.status)).toEqual(Array(LIMIT).fill(200));
    // One budget: what is left counts down across both instances.
    expect(answers.map((a) => Number(a.remaining))).toEqual([...Array(LIMIT).keys()].map((i) => LIMIT - 1 - i));
    expect((await ask(one)).status).toBe(429);
    expect((await ask(two)).status).toBe(429);
  });

  it('counts in memory on each instance while Redis is down, answering rather than failing', async () => {
    await redis.stop();
    await expect
      .poll(() => one.proc.output.some((l) => l.includes('Redis connection')), { timeout: 30_000 })
      .toBe(true);
    // Each instance's memory count starts afresh: the first request passes, with the limit's headers.
    const answer = await ask(one);
    expect(answer).toEqual({ status: 200, remaining: String(LIMIT - 1) });
    expect((await ask(two)).status).toBe(200);
  });
});
