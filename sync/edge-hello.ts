import { iso } from '../src/clock.js';
import { writeTransaction, writeWhenFree } from '../src/store/transactions.js';
import { blockOfEdge, setIdBlock } from '../src/venue/row-ids.js';
import { cloudBehind } from './cloud-rollback.js';
import { CONSUMER } from './edge-upload.js';
import type { EdgeRun } from './edge-run.js';
import { z } from 'zod';
import { followingProtocol, LinkError } from './link.js';
import { PROTOCOL_VERSION } from '../src/http/sync-protocol-version.js';
import { type Hello, helloSchema } from './protocol.js';
import { unsynced } from './unsynced.js';

// The edge's hello (docs/sync.md: the protocol; a cloud restored from a backup). At the first
// contact it links the edge: its id and block, its project under the cloud's slugs. At the first
// hello of each run, and whenever an answer names a new incarnation of the cloud, it checks
// that the cloud holds what this edge sent and knows every version it read; a cloud behind it
// (restored from a backup) gets again what it lacks, and everything is pulled again.

const HELLO = '/api/v1/sync/hello';
/** What every version's hello has: the version it speaks (the rest is read once it is ours). */
const spoken = z.looseObject({ protocol: z.number().int() });

export class EdgeHello {
  constructor(
    private readonly run: EdgeRun,
    /** Told when the cloud was found behind: the pull starts again from nothing. */
    private readonly pullAgain: () => void,
  ) {}

  /** Answers the cloud's incarnation (null: a cloud that does not say). */
  async hello(): Promise<string | null> {
    const { link, state } = this.run;
    // The version first: a hello of another version may have another shape.
    const answer = await link.call('GET', HELLO, spoken, { signal: this.run.signal() });
    if (answer.protocol !== PROTOCOL_VERSION) {
      throw new LinkError(
        `the cloud speaks sync protocol ${answer.protocol}, this edge ${PROTOCOL_VERSION}`,
        'http',
        409,
        { code: 'sync_protocol_unsupported' },
      );
    }
    const hello = followingProtocol(helloSchema, answer, `GET ${HELLO}`);
    if (!state.row()) this.#enrol(hello);
    await this.#check(hello);
    return hello.cloud?.incarnation ?? null;
  }

  #enrol(hello: Hello): void {
    const { d, state } = this.run;
    const team =
      d.teams.findBySlug(hello.project.team_slug) ?? d.teams.create(hello.project.team_slug, hello.project.team_slug);
    const project =
      d.projects.findBySlugs(team.slug, hello.project.slug) ??
      d.projects.create({
        teamId: team.id,
        name: hello.project.name,
        slug: hello.project.slug,
        timezone: hello.project.timezone,
      });
    writeTransaction(d.db, () => state.enrol(hello.edge.id, project.id, hello.project.id, hello.highest_ids));
    setIdBlock(d.db, blockOfEdge(hello.edge.id));
    d.log.info(
      { edgeId: hello.edge.id, project: `${team.slug}/${project.slug}` },
      'linked to the cloud: this edge hosts its project',
    );
  }

  /** A cloud behind this edge (restored from a backup): send again what it lacks, pull everything again. */
  async #check(hello: Hello): Promise<void> {
    const { d, state } = this.run;
    const link = state.row()!;
    const from = d.feed.cursor(CONSUMER) ?? { accessEventId: 0, domainEventSeq: 0 };
    const behind = cloudBehind(link, from, hello);
    if (!behind) return;
    const before = unsynced(d.db, from, link.project_id).backlog;
    await writeWhenFree(d.db, () => {
      d.feed.saveCursor(CONSUMER, behind.uploadFrom);
      d.replica.forgetVersions();
      state.cloudBehind(
        behind.uploadFrom,
        iso(d.clock.now()),
        unsynced(d.db, behind.uploadFrom, link.project_id).backlog - before,
      );
    });
    this.pullAgain();
    d.log.warn(
      { reasons: behind.reasons, uploadFrom: behind.uploadFrom },
      'the cloud is behind this edge (restored from a backup?): sending again what it lacks, pulling everything again',
    );
  }
}
