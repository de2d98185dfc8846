import { describe, expect, it } from 'vitest';
import { CloudUrls, type UrlSwitch } from '../../sync/cloud-urls.js';
import { LinkError, unanswered } from '../../sync/link.js';

// Which of the cloud's URLs the link uses (docs/sync.md: several cloud URLs): the order of the URLs tried, what a
// late answer or a late failure of another loop moves, and when a switch is told. test/sync/failover.test.ts runs
// the same with an edge process and a cloud behind proxies.

const A = 'https://a.cloud.test/';
const B = 'https://b.cloud.test';
const C = 'https://c.cloud.test';

function listOf(list: string[]): { urls: CloudUrls; told: UrlSwitch[] } {
  const told: UrlSwitch[] = [];
  return { urls: new CloudUrls(list, (s) => told.push(s)), told };
}

describe('cloud URLs', () => {
  it('stays on the first URL while it answers, and requests go to it without a trailing slash', () => {
    const { urls, told } = listOf([A, B]);
    urls.answered(urls.index);
    urls.answered(urls.index);
    expect([urls.index, urls.base(urls.index), urls.inUse]).toEqual([0, 'https://a.cloud.test', A]);
    expect(told).toEqual([]);
  });

  it('moves to the next URL when the one in use does not answer, and tells the switch once, at its first answer', () => {
    const { urls, told } = listOf([A, B, C]);
    urls.unanswered(0, 'ECONNRESET');
    expect(urls.inUse).toBe(B);
    expect(told).toEqual([]); // not before B answered
    urls.answered(1);
    urls.answered(1);
    expect(told).toEqual([{ from: A, to: B, reason: 'ECONNRESET' }]);
  });

  it('goes round the list, and starts the next try where the last one left off', () => {
    const { urls, told } = listOf([A, B, C]);
    for (const i of [0, 1, 2]) urls.unanswered(i, `down ${i}`);
    expect(urls.index).toBe(0);
    urls.unanswered(0, 'down again');
    urls.answered(1);
    expect(told).toEqual([{ from: A, to: B, reason: 'down again' }]);
    urls.unanswered(1, 'gone');
    urls.unanswered(2, 'gone too');
    urls.answered(0); // back round to the first
    expect(told.at(-1)).toEqual({ from: B, to: A, reason: 'gone' });
  });

  it('moves nothing on a late failure or a late answer of a URL it already left (another loop’s long poll)', () => {
    const { urls, told } = listOf([A, B]);
    urls.unanswered(0, 'reset');
    urls.answered(1);
    urls.unanswered(0, 'the long poll cut with it'); // requests go to B: still
    expect(urls.inUse).toBe(B);
    urls.answered(0); // a long poll to A answered late
    expect(urls.inUse).toBe(B);
    expect(told).toHaveLength(1);
  });

  it('takes no answer, a timeout and any 5xx for a URL not answering, but not a 4xx nor a 503 saying when to come back', () => {
    const http = (status: number, retryAfterMs: number | null = null) =>
      new LinkError(`GET /x: ${status}`, 'http', status, null, retryAfterMs);
    expect(unanswered(new LinkError('GET /x: ECONNREFUSED', 'network'))).toBe(true);
    expect(unanswered(new LinkError('GET /x: no answer within 1000 ms', 'network'))).toBe(true);
    for (const status of [500, 502, 503, 504]) expect(unanswered(http(status)), String(status)).toBe(true);
    for (const status of [400, 401, 404, 409, 429]) expect(unanswered(http(status)), String(status)).toBe(false);
    expect(unanswered(http(503, 2000))).toBe(false);
    expect(unanswered(new LinkError('GET /x: too large', 'too_large', 200))).toBe(false);
    expect(unanswered(new LinkError('GET /x: not JSON', 'malformed', 200))).toBe(false);
  });

  it('refuses an empty list', () => {
    expect(() => new CloudUrls([], () => {})).toThrow(/at least one URL/);
  });
});
