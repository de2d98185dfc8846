import type { Client } from 'aedes';
import mqttPacket from 'mqtt-packet';

// Answers a publish on the connection it came in on, in one write with its PUBACK (docs/mqtt.md:
// acknowledgement and answer). aedes acknowledges a QoS 1 PUBLISH as soon as it is authorised
// and delivers a publish of the box a loop turn later through its pipeline (offline queue,
// topic matching, a setImmediate per subscriber): two writes and two TCP segments per scan, and
// an acknowledgement that promises nothing about the scan. Here the PUBACK waits for the scan's
// decision to be durable, and the PUBACK and the decision go out as one write (mqtt-packet corks
// the socket until the next tick). The decision's message id comes from the client's own
// counter, the one aedes numbers its deliveries with, so ids never collide; the client's PUBACK
// for it reaches aedes, which finds nothing to clear for a clean session, as for any QoS 1
// delivery to one. A socket that does not drain is handed to aedes' drain timeout, the same
// bound as for its own writes (aedes issue 1060).

/** The parts of aedes' Client this uses that its typings leave out. */
interface ClientInternals {
  _nextId: number;
  errored: boolean;
  subscriptions: Record<string, { qos: number } | undefined>;
  waitForDrain(done: () => void): void;
}

/** Whether `client` can take an answer on `topic` directly: connected, a clean session, subscribed to exactly that topic. */
export function canAnswerDirectly(client: Client, topic: string): boolean {
  const inner = client as unknown as ClientInternals & Client;
  return client.connected && client.clean && !inner.errored && inner.subscriptions[topic] !== undefined;
}

/**
 * Writes the PUBACK of a QoS 1 publish (when `messageId` is given) and, when given, a publish
 * of `payload` on `topic` at the client's subscription QoS (at most 1), in one write.
 */
export function writeAnswer(client: Client, ackMessageId: number | null, answer: { topic: string; payload: Buffer } | null): void {
  const inner = client as unknown as ClientInternals & Client;
  if (!client.connected || inner.errored) return;
  const conn = client.conn;
  let flowing = true;
  if (ackMessageId !== null) flowing = mqttPacket.writeToStream({ cmd: 'puback', messageId: ackMessageId }, conn);
  if (answer) {
    const qos = Math.min(inner.subscriptions[answer.topic]?.qos ?? 0, 1) as 0 | 1;
    const packet: mqttPacket.IPublishPacket = { cmd: 'publish', topic: answer.topic, payload: answer.payload, qos, retain: false, dup: false };
    if (qos === 1) packet.messageId = nextMessageId(inner);
    flowing = mqttPacket.writeToStream(packet, conn) && flowing;
  }
  if (!flowing) inner.waitForDrain(() => {});
}

/** aedes' allocation (lib/qos-packet.js): 1..65535, wrapping. */
function nextMessageId(client: ClientInternals): number {
  const id = client._nextId;
  client._nextId = id >= 65535 ? 1 : id + 1;
  return id;
}
