import { describe, expect, it } from 'vitest';
import { ReceiverPolicy } from '../../src/outgoing-webhooks/receiver-policy.js';
import { nextAttemptAt } from '../../src/outgoing-webhooks/retry-schedule.js';
import { Sender } from '../../src/outgoing-webhooks/sender.js';
import { startReceiver } from '../helpers/receiver.js';

describe('the receiver policy', () => {
  const strict = new ReceiverPolicy({ allowInsecure: false, allowedNetworks: [] });
  const lax = new ReceiverPolicy({ allowInsecure: true, allowedNetworks: [] });

  it('takes https URLs, and plain http only when insecure receivers are allowed', () => {
    expect(strict.urlProblem('https://tickets.venue.example/hooks')).toBeNull();
    expect(strict.urlProblem('http://tickets.venue.example/hooks')).toMatch(/must use https/);
    expect(lax.urlProblem('http://tickets.venue.example/hooks')).toBeNull();
    expect(strict.urlProblem('ftp://x.example/')).toMatch(/https/);
    expect(strict.urlProblem('https://user:pw@x.example/')).toMatch(/credentials/);
    expect(strict.urlProblem('/relative')).toMatch(/absolute/);
  });

  it('refuses loopback and link-local receivers unless insecure ones are allowed, and cloud metadata always', () => {
    expect(strict.urlProblem('https://127.0.0.1/')).toMatch(/loopback/);
    expect(strict.urlProblem('https://[::1]/')).toMatch(/loopback/);
    expect(strict.urlProblem('https://localhost/')).toMatch(/localhost/);
    expect(strict.addressProblem('::ffff:127.0.0.1')).toMatch(/loopback/); // IPv4-mapped, checked as IPv4
    expect(strict.addressProblem('169.254.3.4')).toMatch(/link-local/);
    expect(lax.addressProblem('127.0.0.1')).toBeNull();
    expect(lax.addressProblem('169.254.169.254')).toMatch(/cloud metadata/);
    expect(strict.addressProblem('fd00:ec2::254')).toMatch(/cloud metadata/);
    expect(strict.addressProblem('10.1.2.3')).toBeNull(); // the venue LAN
    expect(strict.addressProblem('192.168.1.20')).toBeNull();
    const listed = new ReceiverPolicy({ allowInsecure: false, allowedNetworks: ['169.254.169.254/32'] });
    expect(listed.addressProblem('169.254.169.254')).toBeNull();
  });

  it('checks the address a name resolves to when connecting: a name for this box is refused and nothing is sent', async () => {
    const receiver = await startReceiver();
    const sender = new Sender(strict, { timeoutMs: 2000, maxResponseBytes: 100 });
    try {
      const result = await sender.send(`http://localhost:${receiver.port}/hook`, {}, '{}');
      expect(result.statusCode).toBeNull();
      expect(result.error).toMatch(/resolves to (127\.0\.0\.1|::1).*not allowed/);
      const literal = await sender.send(`http://127.0.0.1:${receiver.port}/hook`, {}, '{}');
      expect(literal.error).toMatch(/127\.0\.0\.1 is a loopback/);
      expect(receiver.received).toHaveLength(0);
      const allowed = await new Sender(lax, { timeoutMs: 2000, maxResponseBytes: 100 }).send(
        `http://localhost:${receiver.port}/hook`,
        {},
        '{}',
      );
      expect(allowed).toMatchObject({ statusCode: 200, error: null, body: 'ok' });
    } finally {
      await sender.close();
      await receiver.close();
    }
  });
});

describe('the retry schedule', () => {
  const schedule = [5, 300, 1800];
  it('waits each step of the schedule after each failed attempt, jittered by at most 10 %, then gives up', () => {
    expect(nextAttemptAt(schedule, 1, 0, () => 0.5)).toBe(5000);
    expect(nextAttemptAt(schedule, 2, 0, () => 0)).toBe(270_000);
    expect(nextAttemptAt(schedule, 3, 0, () => 1)).toBe(1_980_000);
    expect(nextAttemptAt(schedule, 4, 0)).toBeNull();
    expect(nextAttemptAt([], 1, 0)).toBeNull();
  });
});
