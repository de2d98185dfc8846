import { describe, expect, it } from 'vitest';
import { cloudBehind, type LinkPosition } from '../../sync/cloud-rollback.js';
import { encodeCursor } from '../../sync/protocol.js';

// When an edge finds its cloud behind it (sync/cloud-rollback.ts; docs/sync.md: a cloud
// restored from a backup), and where its upload goes on from.

const link = (over: Partial<LinkPosition> = {}): LinkPosition => ({
  download_cursor: encodeCursor(500),
  revocation_cursor: encodeCursor(480),
  acked_access_event_id: 300,
  acked_domain_event_seq: 20,
  ...over,
});
const cursor = { accessEventId: 320, domainEventSeq: 22 };
const cloud = (high_water: number) => ({ incarnation: 'run-2', high_water });

describe('a cloud behind its edge', () => {
  it('is not behind when it holds what was acknowledged and knows every version read (a restart)', () => {
    expect(
      cloudBehind(link(), cursor, { uploaded: { access_event_id: 300, domain_event_seq: 20 }, cloud: cloud(500) }),
    ).toBeNull();
    expect(
      cloudBehind(link(), cursor, { uploaded: { access_event_id: 310, domain_event_seq: 25 }, cloud: cloud(900) }),
    ).toBeNull();
  });

  it('is behind when it holds less than it acknowledged: the upload goes on from what it holds', () => {
    const found = cloudBehind(link(), cursor, {
      uploaded: { access_event_id: 120, domain_event_seq: 20 },
      cloud: cloud(900),
    });
    expect(found?.uploadFrom).toEqual({ accessEventId: 120, domainEventSeq: 20 });
    expect(found?.reasons).toHaveLength(1);
    // Nothing held at all: from the start of what the edge keeps.
    expect(cloudBehind(link(), cursor, { uploaded: null, cloud: cloud(900) })?.uploadFrom).toEqual({
      accessEventId: 0,
      domainEventSeq: 0,
    });
  });

  it('is behind when its versions end below a cursor the edge read (either one); the upload never goes past its own cursor', () => {
    const found = cloudBehind(link(), cursor, {
      uploaded: { access_event_id: 400, domain_event_seq: 40 },
      cloud: cloud(490),
    });
    expect(found?.uploadFrom).toEqual(cursor);
    expect(
      cloudBehind(link({ download_cursor: null }), cursor, {
        uploaded: { access_event_id: 300, domain_event_seq: 20 },
        cloud: cloud(479),
      }),
    ).not.toBeNull();
  });

  it('takes an older cloud that says neither at its word, and an edge that never had a batch acknowledged as holding nothing to miss', () => {
    expect(cloudBehind(link(), cursor, {} as never)).toBeNull();
    expect(
      cloudBehind(link({ acked_access_event_id: null, acked_domain_event_seq: null }), cursor, {
        uploaded: null,
        cloud: cloud(500),
      }),
    ).toBeNull();
  });
});
