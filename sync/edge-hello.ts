import { iso } from '../src/clock.js';
import { writeTransaction, writeWhenFree } from '../src/store/transactions.js';
import { blockOfEdge, setIdBlock } from '../src/venue/row-ids.js';
import { cloudBehind } from './cloud-rollback.js';
import { CONSUMER } from './edge-upload.js';
import type { EdgeRun } from './edge-run.js';
import { z } from 'zod';
import { followingProtocol, LinkError } from './link.js';
import {
  PROTOCOL_VERSION,
  SIGNED_CREDENTIALS_PROTOCOL,
  SUPPORTED_PROTOCOLS,
} from '../src/http/sync-protocol-version.js';
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
    const { d, link, state } = this.run;
    const answer = await this.#agree();
    const hello = followingProtocol(helloSchema, answer, `GET ${HELLO}`);
    if (!state.row()) this.#enrol(hello);
    const pullAgain = await writeWhenFree(d.db, () => state.agreedProtocol(link.protocol, SIGNED_CREDENTIALS_PROTOCOL));
    if (pullAgain) {
      this.pullAgain();
      d.log.info(
        { protocol: link.protocol },
        'the cloud now speaks a sync protocol with public keys: pulling everything again for the keys skipped before',
      );
    }
    await this.#check(hello);
    return hello.cloud?.incarnation ?? null;
  }

  /**
   * The hello in the newest version both speak (docs/sync.md: protocol versions): this build's
   * first; a cloud that refuses it names the versions it serves, and the newest of those this
   * edge also speaks is asked again. Answers the hello, in the version agreed (link.protocol).
   */
  async #agree(): Promise<z.output<typeof spoken>> {
    const { d, link } = this.run;
    link.protocol = PROTOCOL_VERSION;
    let answer: z.output<typeof spoken>;
    try {
      answer = await link.call('GET', HELLO, spoken, { signal: this.run.signal() });
    } catch (err) {
      const older = olderCommon(err);
      if (older === null) throw err;
      link.protocol = older;
      d.log.warn(
        { protocol: older, newest: PROTOCOL_VERSION },
        `the cloud does not serve sync protocol ${PROTOCOL_VERSION}: speaking ${older} (no signed credentials offline until the cloud is updated)`,
      );
      answer = await link.call('GET', HELLO, spoken, { signal: this.run.signal() });
    }
    // The version first: a hello of another version may have another shape.
    if (answer.protocol !== link.protocol) {
      throw new LinkError(
        `the cloud speaks sync protocol ${answer.protocol}, this edge ${link.protocol}`,
        'http',
        409,
        { code: 'sync_protocol_unsupported' },
      );
    }
    return answer;
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

/** The newest version this edge speaks among those a cloud's 409 sync_protocol_unsupported names; null otherwise. */
function olderCommon(err: unknown): number | null {
  if (!(err instanceof LinkError) || err.status !== 409 || err.body?.code !== 'sync_protocol_unsupported') return null;
  const served = err.body.supported_protocols;
  if (!Array.isArray(served)) return null;
  const common = SUPPORTED_PROTOCOLS.filter((v) => v < PROTOCOL_VERSION && served.includes(v));
  return common.length > 0 ? Math.max(...common) : null;
}
