import { describe, expect, it } from 'vitest';
import { ChannelRegistry, type Subscriber } from '../../src/realtime/channels.js';

// The registry writes a channel's broadcasts out in passes over its subscribers, a bounded number
// of writes per event-loop turn, each subscriber getting all it has not had in one write; who
// gets a broadcast is still decided at the moment of it.

/** A subscriber that decodes what it is written (unmasked text frames, as fan-out.ts builds them). */
function collector(socketId: string): Subscriber & { texts: string[]; writes: number } {
  const texts: string[] = [];
  const self = {
    socketId,
    texts,
    writes: 0,
    sendFrames(frames: Buffer, count: number) {
      self.writes++;
      let at = 0;
      for (let i = 0; i < count; i++) {
        let length = frames[at + 1]! & 0x7f;
        let header = 2;
        if (length === 126) (length = frames.readUInt16BE(at + 2)), (header = 4);
        else if (length === 127) (length = frames.readUInt32BE(at + 6)), (header = 10);
        expect(frames[at]).toBe(0x81);
        texts.push(frames.subarray(at + header, at + header + length).toString());
        at += header + length;
      }
      expect(at).toBe(frames.length);
    },
  };
  return self;
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('channel registry fan-out', () => {
  it("writes a turn's broadcasts to each subscriber at once, in order, in every length class", async () => {
    const registry = new ChannelRegistry();
    const a = collector('1.1');
    const b = collector('1.2');
    registry.subscribe('news', a);
    registry.subscribe('news', b);
    const texts = ['one', 'x'.repeat(200), 'y'.repeat(70_000)];
    for (const text of texts) expect(registry.broadcast('news', text)).toBe(2);
    expect(a.texts).toEqual([]); // not before the turn ends
    await tick();
    expect(a.texts).toEqual(texts);
    expect(b.texts).toEqual(texts);
    expect(a.writes).toBe(1);
  });

  it('does not give a new subscriber what was published before it joined, and still gives a leaver what came before it left', async () => {
    const registry = new ChannelRegistry();
    const early = collector('1.1');
    const late = collector('1.2');
    registry.subscribe('news', early);
    registry.broadcast('news', 'before');
    registry.subscribe('news', late);
    registry.broadcast('news', 'after');
    registry.unsubscribe('news', early.socketId);
    registry.broadcast('news', 'gone');
    await tick();
    expect(early.texts).toEqual(['before', 'after']);
    expect(late.texts).toEqual(['after', 'gone']);
  });

  it('keeps order when a broadcast excludes a socket', async () => {
    const registry = new ChannelRegistry();
    const a = collector('1.1');
    const b = collector('1.2');
    registry.subscribe('news', a);
    registry.subscribe('news', b);
    registry.broadcast('news', 'first');
    expect(registry.broadcast('news', 'not-for-a', a.socketId)).toBe(1);
    registry.broadcast('news', 'third');
    await tick();
    expect(a.texts).toEqual(['first', 'third']);
    expect(b.texts).toEqual(['first', 'not-for-a', 'third']);
  });

  it('writes a large channel out over several turns; what comes in meanwhile joins the writes still to come, and the rest get it next', async () => {
    const registry = new ChannelRegistry();
    const subscribers = Array.from({ length: 300 }, (_, i) => collector(`1.${i}`));
    for (const s of subscribers) registry.subscribe('big', s);
    registry.broadcast('big', 'e1');
    await tick(); // the first step of the pass: some subscribers, not all
    const first = subscribers.filter((s) => s.writes === 1).length;
    expect(first).toBeGreaterThan(0);
    expect(first).toBeLessThan(300);
    registry.broadcast('big', 'e2'); // mid-pass
    const late = collector('9.9');
    registry.subscribe('big', late); // mid-pass too: gets only what comes after (e3)
    registry.broadcast('big', 'e3');
    registry.unsubscribe('big', subscribers[299]!.socketId); // not yet visited: gets its backlog as it leaves
    expect(subscribers[299]!.texts).toEqual(['e1', 'e2', 'e3']);
    for (let i = 0; i < 20; i++) await tick();
    for (const [i, s] of subscribers.entries()) {
      expect(s.texts, s.socketId).toEqual(['e1', 'e2', 'e3']);
      // Visited before e2 and e3: two writes; after: one write of all three.
      expect(s.writes, s.socketId).toBe(i < first ? 2 : 1);
    }
    expect(late.texts).toEqual(['e3']);
    registry.broadcast('big', 'e4');
    for (let i = 0; i < 20; i++) await tick();
    expect(late.texts).toEqual(['e3', 'e4']);
    expect(subscribers[0]!.texts).toEqual(['e1', 'e2', 'e3', 'e4']);
    expect(subscribers[299]!.texts).toEqual(['e1', 'e2', 'e3']);
  });
});
