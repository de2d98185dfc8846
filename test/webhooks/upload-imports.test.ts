import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { createSource, ENDPOINTS, signedPost } from '../helpers/signed-webhooks.js';

// large-upload-finalized reads only regular files inside the import directory (docs/security.md, attack 8):
// no symlink (wherever it points), nothing resolving outside, nothing over the configured size,
// and no error that repeats what a file holds. Notices are signed webhooks; outcomes are read
// back over REST, as an operator would.

const A = '/api/v1/projects/default/default';
const MAX = 2048;

describe('upload imports', () => {
  let gh: TestAppliance;
  let api: ReturnType<typeof client>;
  let root: string;
  let importDir: string;
  let outside: string;
  let secret: string;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'gatehouse-upload-'));
    importDir = join(root, 'imports');
    outside = join(root, 'private');
    mkdirSync(importDir);
    mkdirSync(outside);
    writeFileSync(join(outside, 'secret.csv'), 'first_name,last_name\nMallory,Outside\n');
    writeFileSync(join(outside, 'passwd'), 'root:x:0:0:TOP-SECRET-LINE\n');
    gh = await startAppliance({
      GATEHOUSE_INCOMING_WEBHOOKS_IMPORT_BUCKET: 'drops',
      GATEHOUSE_INCOMING_WEBHOOKS_IMPORT_DIR: importDir,
      GATEHOUSE_INCOMING_WEBHOOKS_IMPORT_MAX_BYTES: String(MAX),
    });
    const token = await gh.token();
    api = client(gh, token);
    secret = (await createSource(gh, token, 'upload-finalized')).secret;
  });
  afterAll(async () => {
    await gh.destroy();
    rmSync(root, { recursive: true, force: true });
  });

  /** Sends the notice and waits (over REST) for the import's outcome. */
  const importOf = async (name: string, contentType = 'text/csv'): Promise<{ status: string; report: any }> => {
    const res = await signedPost(gh, ENDPOINTS['upload-finalized'], { name, bucket: 'drops', contentType }, secret);
    expect(res.status, res.text).toBe(200);
    const id = res.body.upload_id as number;
    const deadline = Date.now() + 20_000;
    for (;;) {
      const row = (
        (await api.get(`${A}/uploads?per_page=100`)).body.data as { id: number; status: string; report: any }[]
      ).find((u) => u.id === id)!;
      if (row.status !== 'queued') return { status: row.status, report: row.report };
      if (Date.now() > deadline) throw new Error(`upload ${id} still queued`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const attendees = async (search: string) => (await api.get(`${A}/attendees?search=${search}`)).body.data as unknown[];

  it('imports a regular file inside the directory', async () => {
    writeFileSync(join(importDir, 'wave.csv'), 'first_name,last_name\nLin,Inside\n');
    expect(await importOf('wave.csv')).toMatchObject({ status: 'imported', report: { imported: 1 } });
    expect(await attendees('Inside')).toHaveLength(1);
  });

  it('refuses a symlink to a file outside the directory, and imports nothing from it', async () => {
    symlinkSync(join(outside, 'secret.csv'), join(importDir, 'link-out.csv'));
    const outcome = await importOf('link-out.csv');
    expect(outcome).toEqual({
      status: 'failed',
      report: {
        error: 'The object "link-out.csv" is a symbolic link: only regular files in the import directory are imported.',
      },
    });
    expect(await attendees('Mallory')).toHaveLength(0);
  });

  it('refuses a symlink that points inside the directory too', async () => {
    writeFileSync(join(importDir, 'real.csv'), 'first_name,last_name\nLinked,Inside\n');
    symlinkSync('real.csv', join(importDir, 'link-in.csv'));
    expect(await importOf('link-in.csv')).toMatchObject({
      status: 'failed',
      report: { error: expect.stringContaining('is a symbolic link') },
    });
    expect(await attendees('Linked')).toHaveLength(0);
  });

  it('refuses a path through a symlinked directory that leads outside', async () => {
    symlinkSync(outside, join(importDir, 'sub'));
    const outcome = await importOf('sub/secret.csv');
    expect(outcome).toMatchObject({
      status: 'failed',
      report: {
        error:
          'The object "sub/secret.csv" is a symbolic link: only regular files in the import directory are imported.',
      },
    });
    expect(await attendees('Mallory')).toHaveLength(0);
  });

  it('refuses ../ and absolute names', async () => {
    for (const name of ['../private/secret.csv', 'a/../../private/secret.csv', join(outside, 'secret.csv')]) {
      expect(await importOf(name), name).toMatchObject({
        status: 'failed',
        report: { error: expect.stringContaining('leaves the import directory') },
      });
    }
    expect(await attendees('Mallory')).toHaveLength(0);
  });

  it('refuses a file over the configured maximum without importing any of it', async () => {
    writeFileSync(join(importDir, 'big.csv'), `first_name,last_name\nHuge,First\n${'x,y\n'.repeat(MAX)}`);
    expect(await importOf('big.csv')).toEqual({
      status: 'failed',
      report: {
        error: `The object "big.csv" is over the import limit of ${MAX} bytes (incomingWebhooks.importMaxBytes).`,
      },
    });
    expect(await attendees('Huge')).toHaveLength(0);
  });

  it('refuses what is not a regular file, and says a missing one is missing', async () => {
    mkdirSync(join(importDir, 'folder.csv'));
    expect(await importOf('folder.csv')).toMatchObject({
      status: 'failed',
      report: { error: expect.stringContaining('not a regular file') },
    });
    expect(await importOf('nope.csv')).toMatchObject({
      status: 'failed',
      report: { error: expect.stringContaining('ENOENT') },
    });
  });

  it('never repeats the bytes of a malformed file in its error', async () => {
    writeFileSync(join(importDir, 'broken.json'), 'root:x:0:0:TOP-SECRET-LINE\n');
    writeFileSync(join(importDir, 'broken.csv'), 'first_name,last_name\n"TOP-SECRET"x,"y\n');
    const json = await importOf('broken.json', 'application/json');
    const csv = await importOf('broken.csv');
    for (const outcome of [json, csv]) {
      expect(outcome.status).toBe('failed');
      expect(outcome.report.error).toEqual(expect.any(String));
      expect(outcome.report.error).not.toMatch(/TOP-SECRET|root:x/);
    }
    expect(json.report.error).toMatch(/not valid JSON/);
    expect(csv.report.error).toMatch(/CSV/);
  });
});
