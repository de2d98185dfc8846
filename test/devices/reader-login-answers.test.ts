import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, ManualClock, startAppliance, type TestAppliance, type TestResponse } from '../helpers/appliance.js';

// Anonymous reader login and OTP verify answer the same whether or not the project, the reader
// or a pending login exists (docs/security.md, attack 12), so neither tells a stranger on the LAN which
// projects and readers there are. The clock stands still, so the answers can be compared byte
// for byte.

const A = '/api/v1/projects/default/default';
const OTHER = '/api/v1/projects/default/other';
const NOW = Date.parse('2026-11-23T12:00:00Z');

/** What a client can compare: status, headers (but the request id and date) and the body's bytes. */
const visible = (res: TestResponse) => ({
  status: res.status,
  headers: [...res.headers].filter(([name]) => name !== 'x-request-id' && name !== 'date').sort(),
  text: res.text,
});

describe('anonymous reader login and OTP verify', () => {
  let gh: TestAppliance;
  let api: ReturnType<typeof client>;

  beforeAll(async () => {
    gh = await startAppliance({ GATEHOUSE_READERS_VERIFY_PER_MINUTE: '1000' }, { clock: new ManualClock(NOW) });
    api = client(gh, await gh.token());
    expect((await api.post('/api/v1/projects', { name: 'Other', slug: 'other', timezone: 'UTC' })).status).toBe(201);
    expect((await api.post(`${A}/readers`, { identifier: 'R-1' })).status).toBe(201);
    expect((await api.post(`${A}/readers`, { identifier: 'R-IDLE' })).status).toBe(201);
  });
  afterAll(() => gh.destroy());

  const login = (project: string, reader_identifier: string) =>
    gh.request('POST', `${project}/readers/login`, { body: { reader_identifier } });
  const verify = (reader_identifier: string, otp: string) =>
    gh.request('POST', '/api/v1/reader-otp/verify', { body: { otp, reader_identifier } });
  const pending = async () =>
    (await api.get(`${A}/readers/logins`)).body.data as { reader_identifier: string; otp: string }[];

  it('answers a login request the same for a known reader, an unknown reader and an unknown project', async () => {
    const known = await login(A, 'R-1');
    const unknownReader = await login(OTHER, 'R-1');
    const unknownProject = await login('/api/v1/projects/default/nope', 'R-1');
    const unknownTeam = await login('/api/v1/projects/nope/default', 'R-1');
    expect(known.status).toBe(202);
    expect(known.body).toEqual({
      data: {
        reader_identifier: 'R-1',
        status: 'pending',
        expires_at: new Date(NOW + 10 * 60_000).toISOString(),
        message: 'Ask venue staff for the one-time password, then POST it to /api/v1/reader-otp/verify.',
      },
    });
    for (const other of [unknownReader, unknownProject, unknownTeam]) expect(visible(other)).toEqual(visible(known));
    // Only the known reader has a login pending.
    expect((await pending()).map((l) => l.reader_identifier)).toEqual(['R-1']);
    expect((await api.get(`${OTHER}/readers/logins`)).body.data).toEqual([]);
  });

  it('refuses an OTP the same way for an unknown reader, a wrong OTP, a reader with no login and a used OTP', async () => {
    expect((await login(A, 'R-1')).status).toBe(202);
    const otp = (await pending()).find((l) => l.reader_identifier === 'R-1')!.otp;
    const wrong = otp === '000000' ? '000001' : '000000';
    const refusals = {
      unknownReader: await verify('R-404', wrong),
      wrongOtp: await verify('R-1', wrong),
      noLogin: await verify('R-IDLE', wrong),
    };
    expect((await verify('R-1', otp)).status).toBe(200);
    const used = await verify('R-1', otp);
    const message = 'The one-time password is invalid, expired or already used: ask for a new reader login.';
    expect(refusals.wrongOtp.status).toBe(422);
    expect(refusals.wrongOtp.body).toEqual({ message, errors: { otp: [message] } });
    for (const [what, res] of Object.entries({ ...refusals, used }))
      expect(visible(res), what).toEqual(visible(refusals.wrongOtp));
  });

  it('answers a locked login like any other refusal, and still takes no OTP for it', async () => {
    expect((await login(A, 'R-IDLE')).status).toBe(202);
    const otp = (await pending()).find((l) => l.reader_identifier === 'R-IDLE')!.otp;
    const wrong = otp === '999999' ? '999998' : '999999';
    const first = await verify('R-IDLE', wrong);
    for (let i = 0; i < 4; i++) await verify('R-IDLE', wrong);
    const locked = await verify('R-IDLE', otp);
    expect(visible(locked)).toEqual(visible(first));
  });
});
