import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { EventBus } from '../../src/events/bus.js';
import { LocalVersions } from '../../src/access/local-versions.js';

// Which change versions the appliance announced itself, so the poll of the change sequence
// reads only those another process wrote (docs/engine.md, "Changes by another process").

describe('local versions', () => {
  it('records the version of every announced change and the range of every bulk import', () => {
    const bus = new EventBus(pino({ level: 'silent' }));
    const local = new LocalVersions();
    local.track(bus, {});
    bus.emit('reader.created', {
      projectId: 1,
      resource: {
        id: 1,
        identifier: 'R',
        type: 'qr',
        access_point_id: null,
        version: 3,
        created_at: '',
        updated_at: '',
      },
      version: 3,
    });
    bus.emit('blocklist_entry.deleted', { projectId: 1, id: 9, version: 4 });
    bus.emit('attendee.imported', { projectId: 1, count: 2, credentials: 2, fromVersion: 6, toVersion: 9 });
    // Not a venue write: carries no version and changes nothing.
    bus.emit('reader.login_requested', { projectId: 1, readerId: 1, identifier: 'R', expiresAt: '' });
    expect(local.unannounced(2, 10)).toEqual([[5, 10]]);
  });

  it('answers everything when nothing was announced, and nothing when all was', () => {
    const local = new LocalVersions();
    expect(local.unannounced(10, 15)).toEqual([[11, 15]]);
    local.add(11, 15);
    expect(local.unannounced(10, 15)).toEqual([]);
  });

  it('keeps a big local import between two foreign ranges unread, and joins ranges a few local versions apart', () => {
    const local = new LocalVersions();
    local.add(2);
    local.add(4, 5000);
    expect(local.unannounced(0, 5001)).toEqual([
      [1, 3],
      [5001, 5001],
    ]);
  });

  it('takes announcements out of order, and forgets what the poll is past', () => {
    const local = new LocalVersions();
    local.add(8);
    local.add(3, 5);
    expect(local.unannounced(0, 10)).toEqual([[1, 10]]); // only a few local versions between: one read
    local.add(1, 2);
    local.add(6, 7);
    local.add(9, 10);
    expect(local.unannounced(0, 10)).toEqual([]);
    local.forget(10);
    expect(local.size).toBe(0);
    local.add(12);
    expect(local.unannounced(10, 12)).toEqual([[11, 11]]);
  });
});
