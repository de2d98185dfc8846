// The devices screen's logic without a browser (docs/mqtt.md, docs/bridge.md):
// readers, gateways and the devices plugged into the box as REST lists them, moved by the devices
// channel's events (realtime.md), and the pending reader logins staff read out.

export type OnlineState = 'online' | 'offline' | 'unknown';

export interface ReaderStatus {
  status: OnlineState;
  connected_via: 'mqtt' | 'bridge' | 'gateway' | null;
  gateway_status: string | null;
  last_seen: string | null;
  last_scan: string | null;
  /** Scans refused before a decision since the appliance started (malformed, undecidable); absent on an older appliance. */
  errors?: number;
  last_error?: string | null;
  last_error_at?: string | null;
}

export interface Reader {
  id: number;
  identifier: string;
  type: string;
  access_point_id: number | null;
  gateway_id: number | null;
  status: ReaderStatus;
}

/** ReaderStatusChanged (realtime.md): the reader's state, without its error counts. */
export interface ReaderStatusChanged extends ReaderStatus {
  reader_id: number;
  timestamp: string;
}

export interface Gateway {
  id: number;
  identifier: string;
  name: string | null;
  status: string;
  last_seen: string | null;
  reader_ids: number[];
  last_report: Record<string, unknown> | null;
}

export interface BridgeDevice {
  id: number;
  name: string;
  path: string | null;
  match: { vendor_id: string; product_id: string; serial_number: string | null } | null;
  reader_identifier: string;
  framing: string;
  enabled: boolean;
  managed_by: 'api' | 'config';
  connected: boolean;
  opened_path: string | null;
  last_scan_at: string | null;
  frames: number;
  bad_frames: number;
  errors: number;
  last_error: string | null;
}

/** The bridge list's meta.hid: whether USB HID works on this box (node-hid loads), and why not. */
export interface HidStatus {
  available: boolean;
  reason: string | null;
}

/** POST .../gateways answers the gateway and its MQTT password (the token) once, next to `data`. */
export interface GatewayIssued {
  data: Gateway & { status_topic: string };
  token: string;
}

/** BridgeDeviceConnected / BridgeDeviceDisconnected (bridge.md: hot plug). */
export interface BridgeDeviceEvent {
  id: number;
  name: string;
  reader_identifier: string;
  framing: string;
  connected: boolean;
  opened_path: string | null;
  last_error: string | null;
}

export interface PendingLogin {
  id: number;
  reader_id: number;
  reader_identifier: string;
  otp: string;
  attempts: number;
  requested_ip: string | null;
  created_at: string;
  expires_at: string;
}

/** ReaderTokenReplaced: a reader provisioned over its live token (a possible takeover). */
export interface TokenReplaced {
  reader_id: number;
  reader_identifier: string;
  replaced_token_created_at: string;
  requested_ip: string | null;
  timestamp: string;
}

/** The reader's new state; its error counts stay as the last list said (the event does not carry them). */
export function applyReaderStatus(readers: readonly Reader[], e: ReaderStatusChanged): Reader[] {
  return readers.map((r) => {
    if (r.id !== e.reader_id) return r;
    const { reader_id: _id, timestamp: _at, ...status } = e;
    // A last_scan the list already had stays when the event's is older (a scan is not announced).
    const lastScan = later(r.status.last_scan, status.last_scan);
    return { ...r, status: { ...r.status, ...status, last_scan: lastScan } };
  });
}

/** A gateway resource from GatewayOnline / GatewayOffline replaces the listed one, or joins the list. */
export function applyGateway(gateways: readonly Gateway[], g: Gateway): Gateway[] {
  return gateways.some((x) => x.id === g.id)
    ? gateways.map((x) => (x.id === g.id ? { ...x, ...g } : x))
    : [...gateways, g];
}

export function applyBridgeEvent(devices: readonly BridgeDevice[], e: BridgeDeviceEvent): BridgeDevice[] {
  return devices.map((d) =>
    d.id === e.id ? { ...d, connected: e.connected, opened_path: e.opened_path, last_error: e.last_error } : d,
  );
}

/** Logins still valid at `now`, newest first (the OTP staff read out is the latest one). */
export function pendingLogins(logins: readonly PendingLogin[], now: number): PendingLogin[] {
  return logins
    .filter((l) => Date.parse(l.expires_at) > now)
    .sort((a, b) => Date.parse(b.created_at) - Date.parse(a.created_at) || b.id - a.id);
}

/** Whole minutes and seconds left, "9:41"; "0:00" once past. */
export function timeLeft(expiresAt: string, now: number): string {
  const s = Math.max(0, Math.floor((Date.parse(expiresAt) - now) / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/** "123 456": an OTP in two groups, easier to read out. */
export const otpGroups = (otp: string): string => (otp.length === 6 ? `${otp.slice(0, 3)} ${otp.slice(3)}` : otp);

/** A gateway's status as one of the three states the page colours; what it reported otherwise is shown as text. */
export function gatewayState(status: string): OnlineState {
  const s = status.toLowerCase();
  if (s === 'online' || s === 'connected') return 'online';
  if (s === 'offline' || s === 'disconnected') return 'offline';
  return 'unknown';
}

/** Where a plugged-in device is: the path it is open on, its configured path, or its USB ids. */
export function deviceWhere(d: BridgeDevice): string {
  if (d.opened_path) return d.opened_path;
  if (d.path) return d.path;
  if (d.match)
    return `USB ${d.match.vendor_id}:${d.match.product_id}${d.match.serial_number ? ` (${d.match.serial_number})` : ''}`;
  return '';
}

/** The later of two ISO instants (null when both are). */
export function later(a: string | null, b: string | null): string | null {
  if (a === null) return b;
  if (b === null) return a;
  return Date.parse(b) >= Date.parse(a) ? b : a;
}

/**
 * Runs `fn` at most once per `ms`: a call within the interval is folded into one run at its end.
 * The counters and last scans move with every scan but are not announced (docs/mqtt.md: too
 * frequent), so the page reloads its lists after scans, at this pace whatever the scan rate.
 */
export function throttled(
  fn: () => void,
  ms: number,
  timers: { set: (run: () => void, ms: number) => unknown; clear: (timer: unknown) => void } = {
    set: (run, wait) => setTimeout(run, wait),
    clear: (t) => clearTimeout(t as ReturnType<typeof setTimeout>),
  },
) {
  let last = Number.NEGATIVE_INFINITY;
  let timer: unknown = null;
  const run = () => {
    timer = null;
    last = Date.now();
    fn();
  };
  return {
    call(): void {
      if (timer !== null) return;
      const wait = last + ms - Date.now();
      if (wait <= 0) run();
      else timer = timers.set(run, wait);
    },
    cancel(): void {
      if (timer !== null) timers.clear(timer);
      timer = null;
    },
  };
}

/** The framings a plugged-in reader may use (docs/bridge.md), serial ones first. */
export const BRIDGE_FRAMINGS = [
  'line',
  'rdm6300',
  'id12',
  'wiegand26',
  'wiegand34',
  'hid_pos',
  'hid_keyboard',
] as const;
/** Serial framings take a baud rate; the USB HID ones do not. */
export const isSerialFraming = (framing: string): boolean => !framing.startsWith('hid_');
