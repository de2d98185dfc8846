import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { generatePassword } from '../auth/password.js';
import { systemClock } from '../clock.js';
import type { Config } from '../config/schema.js';
import { parseJson } from '../json-depth.js';
import type { Logger } from '../logger.js';
import { Store } from '../store/database.js';
import { UserRepository, type User } from '../accounts/users.js';
import { TeamRepository, DEFAULT_TEAM_SLUG } from '../accounts/teams.js';
import { ProjectRepository } from '../accounts/projects.js';
import { MembershipRepository } from '../accounts/memberships.js';
import { isTimeZone, SLUG_PATTERN } from '../accounts/slug.js';
import { ensureDefaultProject } from '../accounts/bootstrap.js';
import { AttendeeImporter, parseCsv } from '../venue/attendee-import.js';
import { EventBus } from '../events/bus.js';
import { CliError } from './cli-error.js';
import { seedDemo } from './demo.js';

// Administration from the box's shell, on the same store the running appliance uses (WAL
// lets both at once). Each command prints JSON on success and one line on stderr on failure.

export { CliError } from './cli-error.js';

export const cliOptions = {
  email: { type: 'string' },
  name: { type: 'string' },
  password: { type: 'string' },
  admin: { type: 'boolean' },
  'no-admin': { type: 'boolean' },
  'read-only': { type: 'boolean' },
  'no-read-only': { type: 'boolean' },
  active: { type: 'boolean' },
  inactive: { type: 'boolean' },
  team: { type: 'string' },
  project: { type: 'string' },
  slug: { type: 'string' },
  timezone: { type: 'string' },
  partial: { type: 'boolean' },
} as const;

interface Repos {
  db: Store['db'];
  log: Logger;
  users: UserRepository;
  teams: TeamRepository;
  projects: ProjectRepository;
  memberships: MembershipRepository;
}

type Values = ReturnType<typeof parseArgs<{ options: typeof cliOptions; allowPositionals: true }>>['values'];

function need(value: string | undefined, flag: string): string {
  if (!value) throw new CliError(`--${flag} is required`);
  return value;
}

function findUser(repos: Repos, ref: string | undefined): User {
  const key = need(ref, 'email');
  const user = /^\d+$/.test(key) ? repos.users.find(Number(key)) : repos.users.findWithHash(key)?.user;
  if (!user) throw new CliError(`no user ${key}`);
  return user;
}

const emailSchema = z.email();

const commands: Record<string, (repos: Repos, v: Values, positionals: string[]) => Promise<unknown> | unknown> = {
  'users:list': (r) => r.users.list(0, 1_000_000).items,
  'users:create': async (r, v) => {
    const email = need(v.email, 'email').toLowerCase();
    if (!emailSchema.safeParse(email).success) throw new CliError(`--email ${email} is not an email address`);
    if (r.users.emailTaken(email)) throw new CliError(`the email ${email} is already taken`);
    const password = v.password ?? generatePassword();
    if (password.length < 8) throw new CliError('--password must have at least 8 characters');
    if (v.admin && v['read-only'])
      throw new CliError('an administrator cannot be read-only: give --admin or --read-only');
    const user = await r.users.create({
      name: v.name ?? email,
      email,
      password,
      is_admin: v.admin ?? false,
      read_only: v['read-only'] ?? false,
    });
    return v.password ? user : { ...user, generated_password: password };
  },
  'users:update': async (r, v, [ref]) => {
    const user = findUser(r, ref ?? v.email);
    if (v.password !== undefined && v.password.length < 8)
      throw new CliError('--password must have at least 8 characters');
    if ((v.admin || user.is_admin) && !v['no-admin'] && v['read-only'])
      throw new CliError('an administrator cannot be read-only: give --no-admin as well');
    if (v.admin && (user.read_only || v['read-only']) && !v['no-read-only'])
      throw new CliError('a read-only account cannot be an administrator: give --no-read-only as well');
    return r.users.update(user.id, {
      name: v.name,
      password: v.password,
      is_admin: v.admin ? true : v['no-admin'] ? false : undefined,
      is_active: v.active ? true : v.inactive ? false : undefined,
      read_only: v['read-only'] ? true : v['no-read-only'] ? false : undefined,
    });
  },
  'users:deactivate': (r, v, [ref]) => r.users.update(findUser(r, ref ?? v.email).id, { is_active: false }),
  'users:grant': (r, v, [ref]) => {
    const user = findUser(r, ref ?? v.email);
    if (v.project) {
      const [team, slug] = v.project.split('/');
      const project = team && slug ? r.projects.findBySlugs(team, slug) : null;
      if (!project) throw new CliError(`no project ${v.project} (write it as teamSlug/projectSlug)`);
      r.memberships.grantProject(user.id, project.id);
    } else {
      const team = r.teams.findBySlug(need(v.team, 'team'));
      if (!team) throw new CliError(`no team ${v.team}`);
      r.memberships.grantTeam(user.id, team.id);
    }
    return { user: user.email, ...r.memberships.grantsOf(user.id) };
  },
  'teams:create': (r, v) => {
    const slug = v.slug;
    if (slug && (!SLUG_PATTERN.test(slug) || r.teams.findBySlug(slug)))
      throw new CliError(`--slug ${slug} is invalid or taken`);
    return r.teams.create(need(v.name, 'name'), slug);
  },
  'attendees:import': (r, v, [file]) => {
    const [team, slug] = need(v.project, 'project').split('/');
    const project = team && slug ? r.projects.findBySlugs(team, slug) : null;
    if (!project) throw new CliError(`no project ${v.project} (write it as teamSlug/projectSlug)`);
    if (!file) throw new CliError('name the CSV or JSON file to import');
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new CliError(`cannot read ${file}: ${(err as Error).message}`);
    }
    let rows: unknown[];
    try {
      const parsed: unknown = file.endsWith('.json') ? parseJson(text) : parseCsv(text);
      rows = Array.isArray(parsed) ? parsed : ((parsed as { attendees?: unknown[] }).attendees ?? []);
    } catch (err) {
      throw new CliError(`${file}: ${(err as Error).message}`);
    }
    const importer = new AttendeeImporter(r.db, systemClock, new EventBus(r.log));
    const report = importer.run(project.id, rows, v.partial ? 'partial' : 'all');
    if (report.imported === 0 && report.failed > 0)
      throw new CliError(
        `nothing imported: ${report.failed} bad row(s)\n${JSON.stringify(report.errors.slice(0, 20), null, 2)}`,
      );
    return report;
  },
  'demo:seed': (r, v) => {
    const [team, slug] = (v.project ?? 'default/default').split('/');
    const project = team && slug ? r.projects.findBySlugs(team, slug) : null;
    if (!project) throw new CliError(`no project ${v.project} (write it as teamSlug/projectSlug)`);
    return seedDemo(r.db, systemClock, r.log, project);
  },
  'projects:list': (r) => r.projects.listReachable({ userId: 0, isAdmin: true }, 0, 1_000_000).items,
  'projects:create': (r, v, _p, config?: Readonly<Config>) => {
    const team = r.teams.findBySlug(v.team ?? DEFAULT_TEAM_SLUG);
    if (!team) throw new CliError(`no team ${v.team ?? DEFAULT_TEAM_SLUG}`);
    if (v.slug && (!SLUG_PATTERN.test(v.slug) || r.projects.slugTaken(team.id, v.slug)))
      throw new CliError(`--slug ${v.slug} is invalid or taken`);
    const timezone = v.timezone ?? config?.defaults.timezone ?? 'UTC';
    if (!isTimeZone(timezone)) throw new CliError(`--timezone ${timezone} is not an IANA time zone`);
    return r.projects.create({ teamId: team.id, name: need(v.name, 'name'), slug: v.slug, timezone });
  },
};

export const commandNames = new Set(Object.keys(commands).map((c) => c.split(':')[0]!));

export const usage = `Usage: gatehouse [config flags]                 start the appliance
       gatehouse users list
       gatehouse users create --email E [--name N] [--password P] [--admin|--read-only]
       gatehouse users update <email|id> [--name N] [--password P] [--admin|--no-admin] [--active|--inactive] [--read-only|--no-read-only]
       gatehouse users deactivate <email|id>
       gatehouse users grant <email|id> (--team SLUG | --project TEAM/PROJECT)
       gatehouse teams create --name N [--slug S]
       gatehouse attendees import FILE.csv|FILE.json --project TEAM/PROJECT [--partial]
       gatehouse demo seed [--project TEAM/PROJECT]   (npm run demo)
       gatehouse projects list
       gatehouse projects create --name N [--slug S] [--team SLUG] [--timezone TZ]
       gatehouse backup FILE [--force]               (docs/operations.md: backups)
       gatehouse cloud migrate --to postgres://…     (docs/operations.md: moving a cloud to PostgreSQL)
       gatehouse bridge simulate --framing F [--url U] [--token T | --email E --password P] [--values a,b] [--access-point ID] [--reader R] [--interval-ms N] [--keep]
       gatehouse plugin init <dir> [--yes] [--name N]
       gatehouse plugin dev <dir> [--url U] [--token T | --email E --password P] [--team SLUG] [--project SLUG] [--port N] [--host H]
       gatehouse plugin build <dir> [--out DIR] [--url U]
       gatehouse plugin add-dependency [<dir>] [--url U] [--token T] [--tag TAG --operations a,b|all --events E,F|none --identifier ID] [--replace]
Config flags (any command): --data-dir DIR, --config FILE, ... (docs/config.md); --help after any command prints this`;

/** Runs one administration command against the store; returns what to print. */
export async function runCommand(
  config: Readonly<Config>,
  log: Logger,
  group: string,
  args: string[],
): Promise<unknown> {
  const { values, positionals } = parseArgs({ args, options: cliOptions, allowPositionals: true, strict: true });
  const [action, ...rest] = positionals;
  const command = commands[`${group}:${action}`];
  if (!command) throw new CliError(`unknown command: ${group} ${action ?? ''}\n${usage}`);
  const store = new Store(
    {
      dataDir: config.dataDir,
      synchronous: config.store.synchronous,
      busyTimeoutMs: config.store.busyTimeoutMs,
      databaseUrl: config.databaseUrl,
    },
    log,
  );
  store.start();
  try {
    const repos: Repos = {
      db: store.db,
      log,
      users: new UserRepository(store.db, systemClock),
      teams: new TeamRepository(store.db, systemClock),
      projects: new ProjectRepository(store.db, systemClock),
      memberships: new MembershipRepository(store.db, systemClock),
    };
    // The same default team and project the first start makes, so commands work before it.
    ensureDefaultProject({ ...repos, log }, config.defaults.timezone);
    // Venue data written here takes change versions: an appliance running on this store reads
    // them into its index within about a second (access/external-changes.ts).
    return await (command as (r: Repos, v: Values, p: string[], c: Readonly<Config>) => unknown)(
      repos,
      values,
      rest,
      config,
    );
  } finally {
    store.stop();
  }
}
