import { describe, expect, it } from 'vitest';
import { eventId } from '../../src/access/event-id.js';

describe('access event ids (UUIDv7)', () => {
  it('are RFC 9562 version 7 UUIDs carrying the millisecond they were made in', () => {
    const at = Date.UTC(2026, 10, 23, 12, 34, 56, 789);
    const id = eventId(at);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).toBe(at);
    expect(eventId(0).slice(0, 13)).toBe('00000000-0000');
  });

  it('sort by time across milliseconds and do not repeat', () => {
    const seen = new Set<string>();
    let previous = '';
    for (let i = 0; i < 50_000; i++) {
      const id = eventId(1_700_000_000_000 + Math.floor(i / 10));
      expect(seen.has(id)).toBe(false);
      seen.add(id);
      if (i % 10 === 0) {
        expect(id > previous).toBe(true);
      }
      previous = id;
    }
  });

  it('spread their random bits (no stuck digit)', () => {
    const digits = new Set<string>();
    for (let i = 0; i < 2000; i++) digits.add(eventId(0).slice(-1));
    expect(digits.size).toBe(16);
  });
});
