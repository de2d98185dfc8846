import type { Client } from 'aedes';
import { nextMessageId, subscriptionsOf, waitForDrain, writable } from './aedes-internals.js';
import { remainingLengthBytes, writeRemainingLength } from './remaining-length.js';

// Answers a publish on the connection it came in on, in one write with its PUBACK (docs/mqtt.md:
// acknowledgement and answer). aedes acknowledges a QoS 1 PUBLISH as soon as it is authorised
// and delivers a publish of the box a loop turn later through its pipeline (offline queue,
// topic matching, a setImmediate per subscriber): two writes and two TCP segments per scan, and
// an acknowledgement that promises nothing about the scan. Here the PUBACK waits for the scan's
// decision to be durable, and the PUBACK and the decision go out as one buffer in one write.
// The two packets are encoded here (MQTT 3.1.1, 3.3 PUBLISH and 3.4 PUBACK: a fixed header,
// the remaining length, topic, packet id, payload): one allocation, where mqtt-packet's
// generate costs ~3.4 us for the pair on this machine and its stream writer a writev of ~10
// chunks. The decision's packet id comes from the client's own counter, the one aedes numbers
// its deliveries with, so ids never collide; the client's PUBACK for it finds nothing to clear
// for a clean session, as for any QoS 1 delivery to one. A socket that does not drain is handed
// to aedes' drain timeout, the same bound as for its own writes (aedes issue #1060).
//
// A connection is written to from its CONNACK on, not from aedes' `connected`: a reader's scans
// are taken from the bytes as soon as the CONNACK is sent (reader-frames.ts), while aedes marks
// the client connected a few ticks later, at the end of its connect series. A scan answered at
// once (a retry answered from the request-id window, an error answer) could land in between;
// its PUBACK was then dropped and the reader waited for it forever (docs/mqtt.md, "Answered in bounded time": a
// mosquitto_pub repeating a request_id got no PUBACK for 9 minutes; docs/mqtt.md).

/** Whether `client` can take an answer on `topic` directly:
 * writable, a clean session, subscribed to exactly that topic. */
export function canReplyDirectly(client: Client, topic: string): boolean {
  return writable(client) && client.clean && subscriptionsOf(client)[topic] !== undefined;
}

const PUBACK = 0x40;
const PUBLISH = 0x30;

/**
 * Writes the PUBACK of a QoS 1 publish (when `ackMessageId` is given) and, when given, a publish
 * of `payload` on `topic` at the client's subscription QoS (at most 1), in one write. False when
 * the connection cannot be written to (closed or errored): nothing was written.
 */
export function writeReply(
  client: Client,
  ackMessageId: number | null,
  answer: { topic: string; payload: Buffer } | null,
): boolean {
  if (ackMessageId === null && !answer) return true;
  if (!writable(client)) return false;
  const qos = answer ? Math.min(subscriptionsOf(client)[answer.topic]?.qos ?? 0, 1) : 0;
  const topicBytes = answer ? Buffer.byteLength(answer.topic) : 0;
  const body = answer ? 2 + topicBytes + (qos === 1 ? 2 : 0) + answer.payload.length : 0;
  const buf = Buffer.allocUnsafe(
    (ackMessageId === null ? 0 : 4) + (answer ? 1 + remainingLengthBytes(body) + body : 0),
  );
  let at = 0;
  if (ackMessageId !== null) {
    buf[at++] = PUBACK;
    buf[at++] = 2;
    at = buf.writeUInt16BE(ackMessageId, at);
  }
  if (answer) {
    buf[at++] = PUBLISH | (qos << 1);
    at = writeRemainingLength(buf, at, body);
    at = buf.writeUInt16BE(topicBytes, at);
    at += buf.write(answer.topic, at, 'utf8');
    if (qos === 1) at = buf.writeUInt16BE(nextMessageId(client), at);
    answer.payload.copy(buf, at);
  }
  if (!client.conn.write(buf)) waitForDrain(client);
  return true;
}
