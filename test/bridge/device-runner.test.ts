import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { DeviceRunner, type RunnerDeps } from '../../firmware-bridge/device-runner.js';
import { rdm6300 } from '../helpers/pty.js';
import type { OpenedPort, PortEvents, Transport } from '../../firmware-bridge/transport.js';
import { ManualClock } from '../helpers/appliance.js';
import { type BridgeDevice, DEVICE_DEFAULTS, IDLE_STATE } from '../../src/resources/bridge-device.js';

// One device's runner against a transport of the test's (the pty tests cover the real ports):
// bad frames are counted every time but logged at most once per interval, with the number not
// logged since; a scan the engine cannot decide is an error with the deny bytes; a device that
// is not there says why once, not once per retry.

const device = (over: Partial<BridgeDevice> = {}): BridgeDevice => ({
  ...DEVICE_DEFAULTS,
  feedback: { grant: '06', deny: '15' },
  id: 1,
  projectId: 1,
  name: 'Door',
  reader_identifier: 'R-1',
  framing: 'rdm6300',
  path: '/dev/ttyFAKE',
  managedBy: 'api',
  createdAt: '',
  updatedAt: '',
  ...over,
});

class FakePort implements Transport {
  events: PortEvents | null = null;
  written: string[] = [];
  present = true;
  locates = 0;
  async locate(d: BridgeDevice) {
    this.locates++;
    return this.present ? { path: d.path! } : { absent: `${d.path} is not there` };
  }
  async open(path: string, _d: BridgeDevice, events: PortEvents): Promise<OpenedPort> {
    this.events = events;
    return { path, write: async (b) => void this.written.push(b.toString('hex')), close: async () => {} };
  }
}

function harness(transport: FakePort, decide: RunnerDeps['decide'], over: Partial<BridgeDevice> = {}) {
  const lines: { msg: string; reason?: string; not_logged_since?: number }[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const clock = new ManualClock(Date.parse('2026-11-26T10:00:00Z'));
  const state = { ...IDLE_STATE };
  const runner = new DeviceRunner(device(over), state, {
    transport,
    decide,
    clock,
    log,
    reopen: { minMs: 5, maxMs: 20 },
    badFrameLogIntervalMs: 10_000,
    connected: () => {},
    disconnected: () => {},
  });
  return { runner, state, lines, clock };
}

const tick = () => new Promise((r) => setTimeout(r, 10));

describe('a device runner', () => {
  it('counts every bad frame and logs them at most once per interval, saying how many were not logged', async () => {
    const port = new FakePort();
    const { runner, state, lines, clock } = harness(port, async () => ({ granted: true }));
    runner.start();
    await tick();
    expect(state.connected).toBe(true);
    const bad = Buffer.from('\x0262E3086CEDFF\x03', 'latin1'); // wrong checksum
    for (let i = 0; i < 50; i++) port.events!.data(bad);
    clock.advance(10_001);
    port.events!.data(bad);
    expect(state.bad_frames).toBe(51);
    const logged = lines.filter((l) => l.msg === 'bad frame from bridge device');
    expect(logged).toHaveLength(2);
    expect(logged[0]).toMatchObject({ reason: 'checksum', not_logged_since: 0 });
    expect(logged[1]).toMatchObject({ reason: 'checksum', not_logged_since: 49 });
    await runner.stop();
  });

  it('writes the deny bytes and counts an error when the scan cannot be decided', async () => {
    const port = new FakePort();
    const { runner, state } = harness(port, async () => ({
      refused: 'The reader is not assigned to an access point.',
    }));
    runner.start();
    await tick();
    port.events!.data(rdm6300('62E3086CED'));
    await tick();
    expect(port.written).toEqual(['15']);
    expect(state).toMatchObject({
      errors: 1,
      last_error: 'scan not decided: The reader is not assigned to an access point.',
    });
    await runner.stop();
  });

  it('looks for an absent device with back-off and says why once', async () => {
    const port = new FakePort();
    port.present = false;
    const { runner, state, lines } = harness(port, async () => ({ granted: true }));
    runner.start();
    await new Promise((r) => setTimeout(r, 150));
    expect(port.locates).toBeGreaterThan(3);
    expect(state).toMatchObject({ connected: false, last_error: '/dev/ttyFAKE is not there', errors: 0 });
    expect(lines.filter((l) => l.msg.startsWith('bridge device not present'))).toHaveLength(1);
    port.present = true;
    await new Promise((r) => setTimeout(r, 100));
    expect(state).toMatchObject({ connected: true, last_error: null });
    await runner.stop();
    expect(state.connected).toBe(false);
  });
});
