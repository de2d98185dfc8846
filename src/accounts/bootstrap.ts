import type { Logger } from '../logger.js';
import { generatePassword, verifyPassword } from '../auth/password.js';
import type { UserRepository } from './users.js';
import { DEFAULT_TEAM_SLUG, type TeamRepository } from './teams.js';
import type { ProjectRepository } from './projects.js';

export interface BootstrapDeps {
  users: UserRepository;
  teams: TeamRepository;
  projects: ProjectRepository;
  log: Logger;
}

export interface BootstrapOptions {
  adminEmail: string;
  adminPassword: string | null;
  timezone: string;
}

/** First start: an administrator (the password from config, else generated and logged once),
 * a default team and a default project. Later starts change nothing. */
export async function bootstrapFirstRun(deps: BootstrapDeps, options: BootstrapOptions): Promise<void> {
  await ensureAdministrator(deps, options);
  ensureDefaultProject(deps, options.timezone);
}

/** An administrator exists: created when there is none (also the way back in if every
 * administrator was deleted). */
async function ensureAdministrator({ users, log }: BootstrapDeps, options: BootstrapOptions): Promise<void> {
  if (users.countAdmins() > 0) {
    await warnOfIgnoredPassword(users, log, options);
    return;
  }
  const email = options.adminEmail.toLowerCase();
  if (users.emailTaken(email)) {
    log.error(
      { email },
      'no administrator exists and the administrator email belongs to another user; set GATEHOUSE_ADMIN_EMAIL',
    );
    return;
  }
  const password = options.adminPassword ?? generatePassword();
  const admin = await users.create({ name: 'Administrator', email, password, is_admin: true });
  if (options.adminPassword) log.info({ email: admin.email }, 'administrator created');
  // Shown this once only; it is stored as a scrypt hash.
  else
    log.warn(
      { email: admin.email, generatedPassword: password },
      `administrator created with generated password: ${password}`,
    );
}

/** The default team, and a default project in it when there is no project at all. */
export function ensureDefaultProject({ teams, projects, log }: Omit<BootstrapDeps, 'users'>, timezone: string): void {
  const team = teams.findBySlug(DEFAULT_TEAM_SLUG) ?? teams.create('Default team', DEFAULT_TEAM_SLUG);
  if (projects.listReachable({ userId: 0, isAdmin: true }, 0, 1).total > 0) return;
  const project = projects.create({ teamId: team.id, name: 'Default project', slug: 'default', timezone });
  log.info({ team: team.slug, project: project.slug }, 'default project created');
}

/**
 * The administrator's password in config is taken on the first start only. Set on a later start
 * (the README's tour once did so after `npm start` had made a generated one), it would be ignored
 * without a word and the next sign-in would fail: say so, and how to set it.
 */
async function warnOfIgnoredPassword(users: UserRepository, log: Logger, options: BootstrapOptions): Promise<void> {
  if (!options.adminPassword) return;
  const email = options.adminEmail.toLowerCase();
  const held = users.findWithHash(email);
  if (held && (await verifyPassword(options.adminPassword, held.passwordHash))) return;
  const how = `npm run gatehouse -- users update ${email} --password '<the password>'`;
  log.warn(
    { email, command: how },
    held
      ? `GATEHOUSE_ADMIN_PASSWORD (admin.password) is set but ${email} has another password: it is taken on the first start only and was ignored. To set it: ${how}`
      : `GATEHOUSE_ADMIN_PASSWORD (admin.password) is set but no user ${email} exists here (an administrator was made before): it was ignored. Sign in as that administrator, or make this one: npm run gatehouse -- users create --email ${email} --admin --password '<the password>'`,
  );
}
