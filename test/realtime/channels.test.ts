import { describe, expect, it } from 'vitest';
import { ChannelRegistry, type Subscriber } from '../../src/realtime/channels.js';

// The registry joins a channel's broadcasts of one event-loop turn into one write per subscriber; who gets
// them is still decided at the moment of each broadcast.

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
});
