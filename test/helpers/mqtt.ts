import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import { expect } from 'vitest';
import type { TestAppliance } from './appliance.js';

// Real MQTT clients (the `mqtt` package) against the appliance's embedded broker.

export const mqttPort = (gh: TestAppliance) => gh.app.deps.devices.mqttPorts().tcp;
export const mqttUrl = (gh: TestAppliance) => `mqtt://127.0.0.1:${mqttPort(gh)}`;

/** Connects and resolves once CONNACK accepted; rejects with the CONNACK error (err.code = return code). */
export function connect(url: string, options: IClientOptions = {}): Promise<MqttClient> {
  return new Promise((resolve, reject) => {
    const client = mqtt.connect(url, { reconnectPeriod: 0, connectTimeout: 3000, protocolVersion: 4, ...options });
    client.once('connect', () => resolve(client));
    client.once('error', (err) => {
      client.end(true);
      reject(err);
    });
  });
}

export interface Inbox {
  messages: { topic: string; payload: any }[];
  /** The next message on the topic matching `where` (already received or still to come). */
  next(
    where?: (m: { topic: string; payload: any }) => boolean,
    timeoutMs?: number,
  ): Promise<{ topic: string; payload: any }>;
}

/** Collects a client's messages (JSON payloads parsed, others kept as text). */
export function inbox(client: MqttClient): Inbox {
  const messages: { topic: string; payload: any }[] = [];
  const waiters: {
    where: (m: { topic: string; payload: any }) => boolean;
    resolve: (m: { topic: string; payload: any }) => void;
  }[] = [];
  client.on('message', (topic, raw) => {
    let payload: unknown = raw.toString();
    try {
      payload = JSON.parse(raw.toString());
    } catch {
      /* text */
    }
    const message = { topic, payload };
    const i = waiters.findIndex((w) => w.where(message));
    if (i >= 0) waiters.splice(i, 1)[0]!.resolve(message);
    else messages.push(message);
  });
  return {
    messages,
    next(where = () => true, timeoutMs = 3000) {
      const i = messages.findIndex(where);
      if (i >= 0) return Promise.resolve(messages.splice(i, 1)[0]!);
      return new Promise((resolve, reject) => {
        const waiter = { where, resolve: (m: { topic: string; payload: any }) => (clearTimeout(timer), resolve(m)) };
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(waiter), 1);
          reject(new Error(`no matching MQTT message within ${timeoutMs} ms; got ${JSON.stringify(messages)}`));
        }, timeoutMs);
        waiters.push(waiter);
      });
    },
  };
}

/** Resolves when the client is closed by the other side (or rejects after the timeout). */
export function closedBy(client: MqttClient, timeoutMs = 3000): Promise<void> {
  return new Promise((resolve, reject) => {
    if (!client.connected) return resolve();
    const timer = setTimeout(() => reject(new Error('the broker did not close the connection')), timeoutMs);
    client.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** SUBACK granted QoS per filter (128 = refused). */
export function subscribe(client: MqttClient, topic: string | string[]): Promise<number[]> {
  // mqtt.js reports any 0x80 as an error; the SUBACK packet still says which filter got what.
  return new Promise((resolve, reject) =>
    client.subscribe(topic, { qos: 1 }, (err, _granted, packet) => {
      if (packet && 'granted' in packet) resolve((packet.granted as number[]).map(Number));
      else reject(err ?? new Error('no SUBACK'));
    }),
  );
}

export interface ReaderCredentials {
  reader_token: string;
  expires_at: string | null;
  reader: { id: number; identifier: string; access_point_id: number | null };
  mqtt: {
    host: string;
    port: number;
    tls_port: number | null;
    ws_path: string;
    username: string;
    password: string;
    scans_topic: string;
    decisions_topic: string;
    qos: number;
  };
}

/** The whole reader login: ask for an OTP, read it as staff, verify it. */
export async function readerLogin(
  gh: TestAppliance,
  staffToken: string,
  projectPath: string,
  identifier: string,
): Promise<ReaderCredentials> {
  const asked = await gh.request('POST', `${projectPath}/readers/login`, { body: { reader_identifier: identifier } });
  expect(asked.status).toBe(202);
  const logins = await gh.request('GET', `${projectPath}/readers/logins`, { token: staffToken });
  const otp = logins.body.data.find((l: { reader_identifier: string }) => l.reader_identifier === identifier)
    .otp as string;
  const verified = await gh.request('POST', '/api/v1/reader-otp/verify', {
    body: { otp, reader_identifier: identifier },
  });
  expect(verified.status).toBe(200);
  return verified.body.data as ReaderCredentials;
}

/** Connects as the reader and subscribes to its decisions topic (to `url`, or the in-process appliance's broker). */
export async function connectReader(
  gh: TestAppliance | null,
  creds: ReaderCredentials,
  options: IClientOptions = {},
  url = mqttUrl(gh!),
): Promise<{ client: MqttClient; inbox: Inbox }> {
  const client = await connect(url, {
    username: creds.mqtt.username,
    password: creds.mqtt.password,
    clientId: `${creds.reader.identifier}-${Math.random().toString(36).slice(2, 8)}`,
    ...options,
  });
  const box = inbox(client);
  expect(await subscribe(client, creds.mqtt.decisions_topic)).toEqual([1]);
  return { client, inbox: box };
}
