import type { Registry } from 'prom-client';
import { gaugesIn } from '../src/metrics.js';
import type { FirmwareBridge } from './bridge.js';

/** /metrics: devices plugged into the box, summed over devices (each one's own figures: GET .../bridge/devices). */
export function registerBridgeMetrics(registry: Registry, bridge: FirmwareBridge): void {
  const gauge = gaugesIn(registry);
  gauge('gatehouse_bridge_devices_connected', 'Bridge devices open now', () => bridge.totals().connected);
  gauge(
    'gatehouse_bridge_frames_total',
    'Frames read from bridge devices since start (good and bad)',
    () => bridge.totals().frames,
  );
  gauge(
    'gatehouse_bridge_bad_frames_total',
    'Bad frames (checksum, parity, garbage, cut, overlong, not text) since start',
    () => bridge.totals().badFrames,
  );
  gauge(
    'gatehouse_bridge_debounced_total',
    'Repeats within debounce_ms, not scanned again, since start',
    () => bridge.totals().debounced,
  );
  gauge(
    'gatehouse_bridge_errors_total',
    'Failures to open, read, write or decide since start',
    () => bridge.totals().errors,
  );
  gauge('gatehouse_bridge_hid_available', '1 when USB HID works on this box (node-hid loads)', () =>
    bridge.hidStatus().available ? 1 : 0,
  );
}
